/* batch.h: one model serving many requests. Each request owns its
 * sequence (tokens, KV cache, sampler); the weights are shared, read-only.
 * Up to max_batch sequences are active at once; each step decodes one token
 * for every active sequence together (one row each of forward()); requests are prefilled
 * as they arrive and leave the batch as soon as they finish (continuous
 * batching). Every request's tokens, logits and trace are bitwise those of
 * running it alone with `generate`. */
#ifndef STEPWISE_BATCH_H
#define STEPWISE_BATCH_H

#include "ref/text/chat.h"
#include "ref/serve/prefix_cache.h"
#include "ref/sequence.h"

/* Serving metrics of one request, named as vLLM names them (milliseconds). */
typedef struct {
    double queue_ms;    /* arrival to admission into the batch */
    double ttft_ms;     /* arrival to the first token: time to first token */
    double itl_mean_ms; /* inter-token latency: between successive tokens */
    double itl_p95_ms;
    double itl_max_ms;        /* the longest wait between two tokens (a stall) */
    double e2e_ms;            /* arrival to the last token: end-to-end latency */
    double tokens_per_second; /* generated tokens / end-to-end latency */
} RequestMetrics;

/* PREFILLING: admitted, its prompt computed a chunk a step (--prefill-chunk);
 * ACTIVE: decoding, a token a step. */
typedef enum { REQUEST_PENDING, REQUEST_PREFILLING, REQUEST_ACTIVE, REQUEST_DONE } RequestState;

typedef struct BatchRequest {
    /* given */
    char *id;
    char *prompt_text; /* the "prompt" field, or NULL for a chat */
    int *prompt;       /* the tokens (owned) */
    int n_prompt;
    ChatPrompt chat; /* for a chat request: its tokens' origins */
    GenerateOptions opt;
    double arrival_ms;
    char *error; /* a request that cannot run: why (owned); it is not scheduled */
    /* filled while serving */
    const StepObserver *obs; /* its trace, set by the sink's `admitted`, or NULL */
    RequestState state;
    Sequence seq;
    GenerateResult result;
    RequestMetrics metrics;
    double t_admitted, t_finished; /* seconds since the batch started */
    double *token_times;           /* [opt.steps] when each token was picked */
    int prefix_reused;             /* prompt positions copied from the prefix cache */
} BatchRequest;

/* What the run did as a whole. */
typedef struct {
    int requests, completed, failed;
    long generated;         /* tokens */
    double seconds;         /* the whole run */
    double throughput;      /* generated tokens / seconds: total tokens/s */
    int peak_active;        /* the most sequences in the batch at once */
    uint64_t peak_kv_bytes; /* the most KV-cache bytes allocated at once */
    double mean_ttft_ms, mean_itl_ms, mean_e2e_ms;
    int steps; /* batched decode steps */
    /* the prefix cache (batch_run's prefix): positions copied instead of
     * computed, the prefills' multiply-adds that saved (the blocks'; the
     * classifier runs either way), and the cache's end state */
    long prefix_tokens_reused;
    uint64_t prefill_macs_saved;
    uint64_t prefix_cache_bytes;
    int prefix_cache_entries, prefix_cache_evicted;
} BatchMetrics;

typedef struct {
    void *ctx;
    /* A request enters the batch (before its prefill): it may set r->obs. */
    void (*admitted)(void *ctx, BatchRequest *r);
    /* A request finished (r->result, r->metrics) or failed (r->error). */
    void (*finished)(void *ctx, BatchRequest *r);
} BatchSink;

/* Serve reqs[0..n) in arrival order (arrival_ms, then file order) with at
 * most max_batch active, activations quantized as `activations` says (the
 * weights: the model's). Requests with an error are reported and skipped.
 * prefix (NULL: none) is a cache of prompts' KV rows that each prefill
 * first copies from and then adds to: the same bits either way.
 * prefill_chunk > 0 computes an admitted prompt at most that many positions
 * a step, between the decode steps of the others (chunked prefill), so that
 * a long prompt does not stall their tokens; 0: each prompt in one pass. The
 * same bits either way. */
bool batch_run(const Model *m, BatchRequest *reqs, int n, int max_batch, int prefill_chunk,
               const QuantRuntime *activations, PrefixCache *prefix, const BatchSink *sink,
               BatchMetrics *out, StepError *err);

void batch_request_free(BatchRequest *r);

#endif
