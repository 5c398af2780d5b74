/* forward.h: the transformer forward pass over a run of tokens, and the
 * per-request state it reads and writes (the KV cache and scratch buffers).
 *
 * Prefill and decode are the same function: prefill passes the whole prompt
 * (T tokens, one [T, dim] activation per layer, causal attention inside it);
 * decode passes T = 1, the new token, against the cached K and V. */
#ifndef STEPWISE_FORWARD_H
#define STEPWISE_FORWARD_H

#include "error.h"
#include "hooks.h"
#include "model.h"
#include "work.h"

/* The keys and values of every position seen so far. Q is never cached: a
 * query is only used by its own position. */
typedef struct {
    int capacity; /* positions it can hold */
    int n_layers;
    int kv_dim;
    uint64_t bytes; /* of key and value together: kv_cache_bytes(config, capacity) */
    float *key;     /* [n_layers, capacity, kv_dim] (after RoPE) */
    float *value;   /* [n_layers, capacity, kv_dim] */
} KVCache;

/* One request's state: its cache, and scratch for up to max_tokens tokens
 * per forward call. */
typedef struct {
    KVCache cache;
    WorkCount work; /* of the last forward_tokens call */
    int max_tokens;
    float *x;        /* [max_tokens, dim] residual stream */
    float *xb;       /* [max_tokens, dim] normed input, then attention output */
    float *xb2;      /* [max_tokens, dim] projection output */
    float *q;        /* [max_tokens, dim] queries */
    float *hb;       /* [max_tokens, hidden_dim] gate, then SwiGLU output */
    float *hb2;      /* [max_tokens, hidden_dim] up */
    float *scores;   /* [capacity] attention scores of one query head */
    float *logits;   /* [max_tokens, vocab_size] */
    float *rope_cos; /* [capacity, head_dim / 2] cos(pos · θ_i) */
    float *rope_sin; /* [capacity, head_dim / 2] sin(pos · θ_i) */
} RunState;

/* Allocate a state whose cache holds `capacity` positions (at most seq_len)
 * and whose forward calls take up to max_tokens tokens. */
bool run_state_init(RunState *s, const Config *c, int capacity, int max_tokens, StepError *err);
void run_state_free(RunState *s);

/* Run tokens[0..T) at positions pos0..pos0+T-1, writing their K and V into
 * the cache. Logits are computed for the last token only, or for all T when
 * all_logits; returns a pointer to the first computed row of [vocab_size]
 * logits (row t - (T - rows) for token t). Hooks fire at their named points. */
const float *forward_tokens(const Model *m, RunState *s, const int *tokens, int T, int pos0,
                            bool all_logits, const StepObserver *obs);

#endif
