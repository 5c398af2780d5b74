/* generate_options.c: see generate_options.h. */
#include "ref/generate_options.h"

#include "ref/text/tokenizer.h"

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

static const char *const POLICY_NAMES[] = {"stop", "drop-oldest", "keep-prefix", "summarize",
                                           "retrieve"};

const char *context_policy_name(ContextPolicy p) {
    return POLICY_NAMES[p];
}

bool context_policy_parse(const char *text, ContextPolicy *p, StepError *err) {
    for (int i = 0; i < 5; i++) {
        if (strcmp(text, POLICY_NAMES[i]) == 0) {
            *p = (ContextPolicy)i;
            return true;
        }
    }
    return step_fail(err,
                     "unknown --context-policy '%s' (stop, drop-oldest, keep-prefix, summarize, "
                     "retrieve)",
                     text);
}

void generate_options_default(GenerateOptions *opt) {
    *opt = (GenerateOptions){.steps = 256,
                             .policy = CONTEXT_STOP,
                             .quant = {.group = 32},
                             .bos_id = TOKEN_BOS,
                             .eos_id = TOKEN_EOS,
                             .retrieve_k = 2};
    sampler_params_default(&opt->sampler);
}

int generate_window(const GenerateOptions *opt, const Config *c) {
    return opt->context > 0 ? opt->context : c->seq_len;
}

int generate_drop(const GenerateOptions *opt, int window) {
    return opt->context_drop > 0 ? opt->context_drop : window / 2;
}

/* Half the span, so that a summary shrinks the window by at least as much
 * as it keeps, and at most 32 tokens (a sentence); at least 1. */
int generate_summary_tokens(const GenerateOptions *opt, int drop) {
    if (opt->summary_tokens > 0) return opt->summary_tokens;
    int half = drop / 2;
    return half < 1 ? 1 : half > 32 ? 32 : half;
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
    if (opt->policy == CONTEXT_SUMMARIZE) {
        if (opt->keep + drop > window)
            return step_fail(err, "--keep %d and --context-drop %d are more than the window %d",
                             opt->keep, drop, window);
        int summary_tokens = generate_summary_tokens(opt, drop);
        if (summary_tokens >= drop)
            return step_fail(err,
                             "--summary-tokens %d must be in [1, %d]: a summary must be shorter "
                             "than the %d tokens it replaces",
                             summary_tokens, drop - 1, drop);
        if (opt->n_summary_before + opt->n_summary_after == 0)
            return step_fail(err, "the summary prompt is empty");
        long need = (long)opt->n_summary_before + drop + opt->n_summary_after + summary_tokens;
        if (need > c->seq_len)
            return step_fail(err,
                             "the summary prompt (%d + %d + %d tokens) and %d summary tokens need "
                             "%ld positions but the model holds %d",
                             opt->n_summary_before, drop, opt->n_summary_after, summary_tokens,
                             need, c->seq_len);
    }
    if (opt->policy == CONTEXT_RETRIEVE) {
        if (opt->retrieve_k < 1)
            return step_fail(err, "--retrieve-k %d: at least one chunk must come back",
                             opt->retrieve_k);
        if (drop < 2)
            return step_fail(err, "retrieve needs --context-drop of at least 2 (half comes back)");
        if (opt->keep + drop + drop / 2 > window)
            return step_fail(err,
                             "retrieve needs --keep + drop + drop/2 <= the window: %d + %d + %d > "
                             "%d",
                             opt->keep, drop, drop / 2, window);
    }
    return true;
}

void generate_result_free(GenerateResult *r) {
    free(r->tokens);
    r->tokens = NULL;
}
