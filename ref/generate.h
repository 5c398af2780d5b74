/* generate.h: the generation loop. Prefill the prompt in one pass, take the
 * distribution at its last position, pick a token, append it, decode it
 * against the cache, and repeat until a stop condition. */
#ifndef STEPWISE_GENERATE_H
#define STEPWISE_GENERATE_H

#include <signal.h>

#include "forward.h"
#include "hooks.h"
#include "model.h"
#include "sampler.h"

typedef enum {
    STOP_BOS,          /* the model emitted BOS (stories models do, between stories) */
    STOP_EOS,          /* the model emitted EOS */
    STOP_STEPS,        /* --steps new tokens were generated */
    STOP_CONTEXT_FULL, /* the next token would sit at position seq_len */
    STOP_INTERRUPTED,  /* the caller's interrupt flag was raised (Ctrl-C) */
} StopReason;

/* "bos", "eos", "steps", "context_full" or "interrupted". */
const char *stop_reason_name(StopReason r);

typedef struct {
    int steps;             /* most new tokens to generate (≥ 1) */
    bool all_logits;       /* also compute the logits of every prompt position */
    SamplerParams sampler; /* how each next token is chosen (see sampler.h) */
    /* When not NULL and raised (non-zero), the loop stops before the next
     * decode step with STOP_INTERRUPTED. Set from a signal handler. */
    const volatile sig_atomic_t *interrupt;
} GenerateOptions;

/* Greedy, 256 steps, prompt logits off. */
void generate_options_default(GenerateOptions *opt);

/* Called for every token as it is chosen (prompt tokens are not reported). */
typedef struct {
    void *ctx;
    void (*on_token)(void *ctx, int prev, int token);
} TokenSink;

typedef struct {
    int *tokens; /* [n_tokens] prompt then generated tokens (the stop token included) */
    int n_tokens;
    int n_prompt;
    StopReason stop_reason;
    double prefill_seconds;     /* the prompt's forward pass */
    double first_token_seconds; /* prefill plus the first pick: time to first token */
    double decode_seconds;      /* every decode step */
    int n_decoded;              /* decode forward passes */
    int cache_capacity;         /* positions the KV cache was allocated for */
    int positions_filled;       /* positions written to it: n_prompt + n_decoded */
} GenerateResult;

/* Run the loop on prompt[0..n_prompt). The caller frees result->tokens with
 * generate_result_free. Fails (with err) if the prompt is empty or does not
 * fit in the context. */
bool generate(const Model *m, const int *prompt, int n_prompt, const GenerateOptions *opt,
              const StepObserver *obs, const TokenSink *sink, GenerateResult *result,
              StepError *err);

void generate_result_free(GenerateResult *r);

#endif
