/* generate.c: the prefill / pick / append / decode loop. */
#include "generate.h"

#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "sampler.h"
#include "tokenizer.h"

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
    *opt = (GenerateOptions){.steps = 256, .policy = CONTEXT_STOP, .quant = {.group = 32}};
    sampler_params_default(&opt->sampler);
}

static int window_of(const GenerateOptions *opt, const Config *c) {
    return opt->context > 0 ? opt->context : c->seq_len;
}

static int drop_of(const GenerateOptions *opt, int window) {
    return opt->context_drop > 0 ? opt->context_drop : window / 2;
}

bool generate_options_validate(const GenerateOptions *opt, const Config *c, StepError *err) {
    if (opt->steps < 1) return step_fail(err, "steps must be at least 1, got %d", opt->steps);
    if (opt->context != 0 && (opt->context < 2 || opt->context > c->seq_len))
        return step_fail(err, "--context %d is outside [2, %d] (the model's seq_len)", opt->context,
                         c->seq_len);
    int window = window_of(opt, c), drop = drop_of(opt, window);
    if (opt->keep < 0 || opt->keep >= window)
        return step_fail(err, "--keep %d must be smaller than the context window %d", opt->keep,
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

/* The loop's state beyond the cache: the tokens now in the window. */
typedef struct {
    const Model *m;
    RunState s;
    const StepObserver *obs;
    int *window_tokens; /* [window] the tokens at positions 0..n-1 */
    int n;
    GenerateResult *result;
} Loop;

/* One forward pass of tokens[0..T) from pos0, reported before and after. */
static const float *run_pass(Loop *L, const char *phase, const int *tokens, int T, int pos0,
                             bool all_logits) {
    const StepObserver *obs = L->obs;
    if (obs != NULL && obs->forward != NULL) obs->forward(obs->ctx, phase, pos0, tokens, T);
    const float *logits = forward_tokens(L->m, &L->s, tokens, T, pos0, all_logits, obs);
    work_add(&L->result->work, &L->s.work);
    if (obs != NULL && obs->work != NULL) obs->work(obs->ctx, phase, pos0, T, &L->s.work);
    if (all_logits) logits += (size_t)(T - 1) * L->m->config.vocab_size;
    return logits;
}

/* The window is full: drop tokens by the policy, keeping the survivors in
 * order at positions 0..kept-1. The cache cannot just be shifted: each K row
 * carries the RoPE rotation of the position it was computed at, and every
 * kept token moves to a new position, so they are all prefilled again. */
static void shift_window(Loop *L, const GenerateOptions *opt, int window) {
    int drop = drop_of(opt, window);
    int first = opt->policy == CONTEXT_KEEP_PREFIX ? opt->keep : 0;
    ContextShift shift = {context_policy_name(opt->policy),
                          window,
                          first,
                          L->window_tokens + first,
                          drop,
                          L->n - drop,
                          L->n,
                          L->n - drop + 1};
    if (L->obs != NULL && L->obs->context != NULL) L->obs->context(L->obs->ctx, &shift);
    memmove(L->window_tokens + first, L->window_tokens + first + drop,
            (size_t)(L->n - first - drop) * sizeof(int));
    L->n -= drop;
    L->result->context_shifts++;
}

bool generate(const Model *m, const int *prompt, int n_prompt, const GenerateOptions *opt,
              const StepObserver *obs, const TokenSink *sink, GenerateResult *result,
              StepError *err) {
    const Config *c = &m->config;
    *result = (GenerateResult){0};
    if (!generate_options_validate(opt, c, err)) return false;
    int window = window_of(opt, c);
    if (n_prompt < 1) return step_fail(err, "the prompt has no tokens (not even BOS)");
    if (n_prompt > window)
        return step_fail(err, "the prompt has %d tokens but the context holds %d", n_prompt,
                         window);
    for (int i = 0; i < n_prompt; i++) {
        if (prompt[i] < 0 || prompt[i] >= c->vocab_size)
            return step_fail(err, "prompt token %d is outside the vocabulary [0, %d)", prompt[i],
                             c->vocab_size);
    }
    /* Positions actually fed: the prompt, then every generated token but the
     * last, capped by the window. The cache is sized for exactly that. Passes
     * of more than the prompt (recompute, rebuild) need scratch for them all. */
    long fed = (long)n_prompt + opt->steps - 1;
    int capacity = fed < window ? (int)fed : window;
    bool long_passes = opt->no_kv_cache || opt->policy != CONTEXT_STOP;
    Loop L = {.m = m,
              .obs = obs,
              .window_tokens = malloc((size_t)window * sizeof(int)),
              .result = result};
    Sampler sampler;
    if (L.window_tokens == NULL) return step_fail(err, "out of memory for the window");
    if (!sampler_init(&sampler, c->vocab_size, &opt->sampler, err)) {
        free(L.window_tokens);
        return false;
    }
    if (!run_state_init_quant(&L.s, c, capacity, long_passes ? capacity : n_prompt, &opt->quant,
                              err)) {
        sampler_free(&sampler);
        free(L.window_tokens);
        return false;
    }
    result->tokens = malloc(((size_t)n_prompt + (size_t)opt->steps) * sizeof(int));
    if (result->tokens == NULL) {
        run_state_free(&L.s);
        sampler_free(&sampler);
        free(L.window_tokens);
        return step_fail(err, "out of memory for %d tokens", n_prompt + opt->steps);
    }
    memcpy(result->tokens, prompt, (size_t)n_prompt * sizeof(int));
    memcpy(L.window_tokens, prompt, (size_t)n_prompt * sizeof(int));
    result->n_tokens = result->n_prompt = L.n = n_prompt;
    result->cache_capacity = capacity;

    /* Prefill: the whole prompt in one pass; the last row's logits pick token 1. */
    double t0 = clock_seconds();
    const float *logits = run_pass(&L, "prefill", prompt, n_prompt, 0, opt->all_logits);
    result->prefill_seconds = clock_seconds() - t0;
    result->positions_filled = L.n;

    bool ok = true;
    for (int generated = 0;;) {
        int prev = result->tokens[result->n_tokens - 1];
        int next;
        if (!sampler_sample(&sampler, logits, &next, err)) {
            ok = false;
            break;
        }
        if (obs != NULL && obs->sample != NULL) obs->sample(obs->ctx, L.n - 1, logits, &sampler);
        result->tokens[result->n_tokens++] = next;
        generated++;
        if (generated == 1) result->first_token_seconds = clock_seconds() - t0;
        if (next == TOKEN_BOS || next == TOKEN_EOS) {
            result->stop_reason = next == TOKEN_BOS ? STOP_BOS : STOP_EOS;
            break;
        }
        if (sink != NULL && sink->on_token != NULL) sink->on_token(sink->ctx, prev, next);
        if (generated == opt->steps) {
            result->stop_reason = STOP_STEPS;
            break;
        }
        if (L.n == window && opt->policy == CONTEXT_STOP) {
            result->stop_reason = STOP_CONTEXT_FULL;
            break;
        }
        if (opt->interrupt != NULL && *opt->interrupt) {
            result->stop_reason = STOP_INTERRUPTED;
            break;
        }
        double d0 = clock_seconds();
        const char *phase = "decode";
        if (L.n == window) {
            shift_window(&L, opt, window);
            phase = "rebuild";
        } else if (opt->no_kv_cache) {
            phase = "recompute";
        }
        L.window_tokens[L.n++] = next;
        if (strcmp(phase, "decode") == 0)
            logits = run_pass(&L, phase, &L.window_tokens[L.n - 1], 1, L.n - 1, false);
        else /* every token in the window, from position 0 */
            logits = run_pass(&L, phase, L.window_tokens, L.n, 0, false);
        result->decode_seconds += clock_seconds() - d0;
        result->n_decoded++;
        if (L.n > result->positions_filled) result->positions_filled = L.n;
    }
    run_state_free(&L.s);
    sampler_free(&sampler);
    free(L.window_tokens);
    if (!ok) generate_result_free(result);
    return ok;
}

void generate_result_free(GenerateResult *r) {
    free(r->tokens);
    r->tokens = NULL;
}
