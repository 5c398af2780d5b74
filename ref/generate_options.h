/* generate_options.h: what a generation is asked to do (GenerateOptions)
 * and what it did (GenerateResult), with the window arithmetic both the loop
 * (sequence.c) and its callers use. Apart from generate.h so that the
 * sequence, which generate drives, does not depend on generate. */
#ifndef STEPWISE_GENERATE_OPTIONS_H
#define STEPWISE_GENERATE_OPTIONS_H

#include <signal.h>

#include "ref/config.h"
#include "ref/util/error.h"
#include "ref/kernels/quant.h"
#include "ref/sampler.h"
#include "ref/work.h"

typedef enum {
    STOP_BOS,          /* the model emitted BOS (stories models do, between stories) */
    STOP_EOS,          /* the model emitted EOS */
    STOP_STEPS,        /* --steps new tokens were generated */
    STOP_CONTEXT_FULL, /* the next token would need a position past the window */
    STOP_INTERRUPTED,  /* the caller's interrupt flag was raised (Ctrl-C) */
} StopReason;

/* "bos", "eos", "steps", "context_full" or "interrupted". */
const char *stop_reason_name(StopReason r);

/* What happens when the next token would need a position past the window. */
typedef enum {
    CONTEXT_STOP,        /* stop with STOP_CONTEXT_FULL */
    CONTEXT_DROP_OLDEST, /* drop the oldest `drop` tokens, re-prefill the rest */
    CONTEXT_KEEP_PREFIX, /* keep the first `keep` tokens and the most recent
                            (window - drop - keep), re-prefill them */
    CONTEXT_SUMMARIZE,   /* after the first `keep`, replace the oldest `drop`
                            tokens by the model's own summary of them
                            (summarize_span in sequence.c) */
    CONTEXT_RETRIEVE,    /* after the first `keep`, move the oldest `drop` tokens
                            to a store and bring the best-ranked chunks back (retrieve.h) */
} ContextPolicy;

/* "stop", "drop-oldest", "keep-prefix", "summarize", "retrieve". */
const char *context_policy_name(ContextPolicy p);
bool context_policy_parse(const char *text, ContextPolicy *p, StepError *err);

typedef struct {
    int steps;             /* most new tokens to generate (≥ 1) */
    int context;           /* the window in positions; 0 means the model's seq_len */
    ContextPolicy policy;  /* at a full window */
    int context_drop;      /* tokens dropped at a full window; 0 means half the window */
    int keep;              /* keep-prefix: the prefix kept (a system prompt, say) */
    bool no_kv_cache;      /* recompute K and V of the whole sequence at every step */
    QuantRuntime quant;    /* int8 activations and/or KV cache (weights: the model's) */
    bool all_logits;       /* also compute the logits of every prompt position */
    SamplerParams sampler; /* how each next token is chosen (see sampler.h) */
    /* summarize: the summary's prompt is summary_before, the span, then
     * summary_after (token ids: the CLI encodes --summary-prompt); it is
     * generated greedily, up to summary_tokens tokens (< drop; 0: see
     * generate_summary_tokens). */
    const int *summary_before, *summary_after;
    int n_summary_before, n_summary_after;
    int summary_tokens;
    /* retrieve: the user's message the store is ranked against, and the most
     * chunks brought back (≥ 1). */
    const int *query;
    int n_query;
    int retrieve_k;
    int bos_id, eos_id; /* the tokens that end a run (-1: none); the tokenizer's */
    /* When not NULL and raised (non-zero), the loop stops before the next
     * decode step with STOP_INTERRUPTED. Set from a signal handler. */
    const volatile sig_atomic_t *interrupt;
} GenerateOptions;

/* Greedy, 256 steps, the model's whole window with policy stop, the cache on,
 * prompt logits off, stopping at llama2.c's BOS (1) and EOS (2); summaries
 * as long as generate_summary_tokens says, 2 chunks retrieved. */
void generate_options_default(GenerateOptions *opt);

/* Check the window options against the model: context in [2, seq_len],
 * keep < context, drop in [1, window - 1], keep-prefix leaving room for
 * at least one recent token; summarize: summary_tokens in [1, drop - 1],
 * a summary prompt that is not empty and fits seq_len with the span and
 * the summary; retrieve: retrieve_k ≥ 1, keep + drop + drop / 2 ≤ window. */
bool generate_options_validate(const GenerateOptions *opt, const Config *c, StepError *err);

/* The window in positions (context, or seq_len), and the tokens a full window
 * drops (context_drop, or half the window). */
int generate_window(const GenerateOptions *opt, const Config *c);
int generate_drop(const GenerateOptions *opt, int window);
/* The longest summary of a span of drop tokens: summary_tokens when given,
 * else half the span, at most 32 and at least 1. */
int generate_summary_tokens(const GenerateOptions *opt, int drop);

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
    double decode_seconds;      /* every pass after the prefill */
    int n_decoded;              /* passes after the prefill (decode, recompute, rebuild) */
    int cache_capacity;         /* positions the KV cache was allocated for */
    bool kv_int8;               /* the cache holds int8 codes and scales */
    int positions_filled;       /* the most positions the cache held at once */
    int context_shifts;         /* times a policy dropped tokens */
    WorkCount work;             /* the work of every pass */
} GenerateResult;

void generate_result_free(GenerateResult *r);

#endif
