/* generate.c: the prefill / pick / append / decode loop. */
#include "generate.h"

#include <stdlib.h>

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

void generate_options_default(GenerateOptions *opt) {
    *opt = (GenerateOptions){.steps = 256, .all_logits = false};
    sampler_params_default(&opt->sampler);
}

bool generate(const Model *m, const int *prompt, int n_prompt, const GenerateOptions *opt,
              const StepObserver *obs, const TokenSink *sink, GenerateResult *result,
              StepError *err) {
    const Config *c = &m->config;
    *result = (GenerateResult){0};
    if (n_prompt < 1) return step_fail(err, "the prompt has no tokens (not even BOS)");
    if (n_prompt > c->seq_len)
        return step_fail(err, "the prompt has %d tokens but the context holds %d", n_prompt,
                         c->seq_len);
    if (opt->steps < 1) return step_fail(err, "steps must be at least 1, got %d", opt->steps);
    for (int i = 0; i < n_prompt; i++) {
        if (prompt[i] < 0 || prompt[i] >= c->vocab_size)
            return step_fail(err, "prompt token %d is outside the vocabulary [0, %d)", prompt[i],
                             c->vocab_size);
    }
    /* Positions actually fed: the prompt, then every generated token but the
     * last, capped by the window. The cache is sized for exactly that. */
    long fed = (long)n_prompt + opt->steps - 1;
    int capacity = fed < c->seq_len ? (int)fed : c->seq_len;
    Sampler sampler;
    if (!sampler_init(&sampler, c->vocab_size, &opt->sampler, err)) return false;
    RunState s;
    if (!run_state_init(&s, c, capacity, n_prompt, err)) {
        sampler_free(&sampler);
        return false;
    }
    result->tokens = malloc(((size_t)n_prompt + (size_t)opt->steps) * sizeof(int));
    if (result->tokens == NULL) {
        run_state_free(&s);
        sampler_free(&sampler);
        return step_fail(err, "out of memory for %d tokens", n_prompt + opt->steps);
    }
    for (int i = 0; i < n_prompt; i++) result->tokens[i] = prompt[i];
    result->n_tokens = result->n_prompt = n_prompt;

    /* Prefill: the whole prompt in one pass; the last row's logits pick token 1. */
    double t0 = clock_seconds();
    if (obs != NULL && obs->forward != NULL) obs->forward(obs->ctx, "prefill", 0, prompt, n_prompt);
    const float *logits = forward_tokens(m, &s, prompt, n_prompt, 0, opt->all_logits, obs);
    if (opt->all_logits) logits += (size_t)(n_prompt - 1) * c->vocab_size;
    result->prefill_seconds = clock_seconds() - t0;

    int pos = n_prompt - 1; /* position of the token whose logits we hold */
    bool ok = true;
    for (int generated = 0;;) {
        int prev = result->tokens[result->n_tokens - 1];
        int next;
        if (!sampler_sample(&sampler, logits, &next, err)) {
            ok = false;
            break;
        }
        if (obs != NULL && obs->sample != NULL) obs->sample(obs->ctx, pos, logits, &sampler);
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
        if (pos + 1 >= c->seq_len) {
            result->stop_reason = STOP_CONTEXT_FULL;
            break;
        }
        if (opt->interrupt != NULL && *opt->interrupt) {
            result->stop_reason = STOP_INTERRUPTED;
            break;
        }
        /* Decode: only the new token, against the cache. */
        double d0 = clock_seconds();
        pos++;
        if (obs != NULL && obs->forward != NULL) obs->forward(obs->ctx, "decode", pos, &next, 1);
        logits = forward_tokens(m, &s, &next, 1, pos, false, obs);
        result->decode_seconds += clock_seconds() - d0;
        result->n_decoded++;
    }
    result->cache_capacity = capacity;
    result->positions_filled = n_prompt + result->n_decoded;
    run_state_free(&s);
    sampler_free(&sampler);
    if (!ok) generate_result_free(result);
    return ok;
}

void generate_result_free(GenerateResult *r) {
    free(r->tokens);
    r->tokens = NULL;
}
