/* generate_options.c: see generate_options.h. */
#include "generate_options.h"

#include "tokenizer.h"

#include <stdlib.h>
#include <string.h>

const char *stop_reason_name(StopReason r) {
    switch (r) {
        case STOP_BOS:
            return "bos";
        case STOP_EOS:
            return "eos";
        case STOP_STEPS:
            return "steps";
        case STOP_CONTEXT_FULL:
            return "context_full";
        case STOP_INTERRUPTED:
            return "interrupted";
    }
    return "unknown";
}

static const char *const POLICY_NAMES[] = {"stop", "drop-oldest", "keep-prefix"};

const char *context_policy_name(ContextPolicy p) {
    return POLICY_NAMES[p];
}

bool context_policy_parse(const char *text, ContextPolicy *p, StepError *err) {
    for (int i = 0; i < 3; i++) {
        if (strcmp(text, POLICY_NAMES[i]) == 0) {
            *p = (ContextPolicy)i;
            return true;
        }
    }
    return step_fail(err, "unknown --context-policy '%s' (stop, drop-oldest, keep-prefix)", text);
}

void generate_options_default(GenerateOptions *opt) {
    *opt = (GenerateOptions){.steps = 256,
                             .policy = CONTEXT_STOP,
                             .quant = {.group = 32},
                             .bos_id = TOKEN_BOS,
                             .eos_id = TOKEN_EOS};
    sampler_params_default(&opt->sampler);
}

int generate_window(const GenerateOptions *opt, const Config *c) {
    return opt->context > 0 ? opt->context : c->seq_len;
}

int generate_drop(const GenerateOptions *opt, int window) {
    return opt->context_drop > 0 ? opt->context_drop : window / 2;
}

bool generate_options_validate(const GenerateOptions *opt, const Config *c, StepError *err) {
    if (opt->steps < 1) return step_fail(err, "steps must be at least 1, got %d", opt->steps);
    if (opt->context != 0 && (opt->context < 2 || opt->context > c->seq_len))
        return step_fail(err, "--context %d is outside [2, %d] (the model's seq_len)", opt->context,
                         c->seq_len);
    int window = generate_window(opt, c), drop = generate_drop(opt, window);
    if (opt->keep < 0 || opt->keep >= window)
        return step_fail(err, "--keep %d must be smaller than the context window %d", opt->keep,
                         window);
    if (opt->policy == CONTEXT_STOP) return true; /* drop and keep are never used */
    if (window < 2)
        return step_fail(err,
                         "a context of %d position cannot drop tokens: use --context-policy "
                         "stop",
                         window);
    if (drop < 1 || drop >= window)
        return step_fail(err, "--context-drop %d is outside [1, %d]", drop, window - 1);
    if (opt->policy == CONTEXT_KEEP_PREFIX && opt->keep + 1 > window - drop)
        return step_fail(err,
                         "--keep %d leaves no recent tokens: keep-prefix keeps %d of the window "
                         "of %d (window - drop)",
                         opt->keep, window - drop, window);
    return true;
}

void generate_result_free(GenerateResult *r) {
    free(r->tokens);
    r->tokens = NULL;
}
