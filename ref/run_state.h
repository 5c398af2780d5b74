/* run_state.h: one request's state, what a forward pass reads and writes
 * (its KV cache and scratch), and a row of a pass: a state,
 * its observer and the tokens it feeds. forward.h runs the pass; the
 * blocks that need the state (moe.h) read it from here. */
#ifndef STEPWISE_RUN_STATE_H
#define STEPWISE_RUN_STATE_H

#include <stdbool.h>

#include "ref/config.h"
#include "ref/util/error.h"
#include "ref/hooks.h"
#include "ref/kernels/exp.h"
#include "ref/kernels/quant.h"
#include "ref/work.h"

/* The keys and values of every position seen so far. Q is never cached: a
 * query is only used by its own position. Multi-head latent attention
 * (config_mla) caches instead, in the same two arrays, the rotary key
 * shared by the heads (key, kv_dim = qk_rope_head_dim, after RoPE) and the
 * normed latent every head's key and value are made from (value, v_dim =
 * kv_lora_rank): mla.h. */
typedef struct {
    int capacity; /* positions it can hold */
    int n_layers;
    int kv_dim; /* a key row's width */
    int v_dim;  /* a value row's: kv_dim, but MLA's latent */
    int n_kv_heads;
    uint64_t bytes; /* of key and value together: kv_cache_bytes(_q8)(config, capacity) */
    float *key;     /* [n_layers, capacity, kv_dim] (after RoPE); NULL when int8 */
    float *value;   /* [n_layers, capacity, v_dim]; NULL when int8 */
    /* int8 (QuantRuntime.kv): codes and one scale per (position, KV head) */
    int8_t *key_q, *value_q; /* [n_layers, capacity, kv_dim] */
    float *key_s, *value_s;  /* [n_layers, capacity, n_kv_heads] */
} KVCache;

/* One request's state: its cache, and scratch for up to max_tokens tokens
 * per forward call. */
typedef struct {
    KVCache cache;
    WorkCount work; /* of the last forward_tokens call */
    int max_tokens;
    float *x;      /* [max_tokens, dim] residual stream */
    float *xb;     /* [max_tokens, max(dim, q_dim, n_heads x v_head_dim)] normed input, then
                      attention output */
    float *xb2;    /* [max_tokens, dim] projection output */
    float *q;      /* [max_tokens, q_dim] queries */
    float *hb;     /* [max_tokens, max(hidden_dim, S)] gate, then SwiGLU output (S: the
                      shared experts' width, n_shared_experts x expert_hidden_dim) */
    float *hb2;    /* [max_tokens, max(hidden_dim, S)] up */
    float *scores; /* [n_heads, capacity] attention scores, a row per query head */
    float *logits; /* [max_tokens, vocab_size] */
    ExpKind exp;   /* the C library's expf, which the fast path's exp_many follows (exp.h) */
    /* quantization while running (quant.h); scratch used only then */
    QuantRuntime quant;
    int8_t *xq;           /* [max(dim, hidden_dim)] one quantized input row */
    float *xs;            /* its scales */
    int32_t *xsum;        /* [max_tokens, groups] each group's sum of codes (q8_packed.h) */
    float *xfake;         /* [max_tokens, max(dim, hidden_dim)] quantized-then-dequantized input */
    float *k_new, *v_new; /* [max_tokens, kv_dim] new rows: before int8 storage, or a batch's */
    float *layer_k, *layer_v; /* [capacity, kv_dim] one layer's cache, dequantized; MLA's
                                 keys and values rebuilt, [capacity, n_heads x head_dim] and
                                 [capacity, n_heads x v_head_dim] */
    /* multi-head latent attention's scratch (mla.h), NULL without it */
    float *mla_q_a;    /* [max_tokens, q_lora_rank] the query's low-rank path */
    float *mla_kv_a;   /* [max_tokens, kv_lora_rank + qk_rope_head_dim] latents, rotary keys */
    float *mla_kv_b;   /* [capacity, n_heads x (nope + v_head_dim)] kv_b of every latent
                          (the absorbed form: one head's kv_b rows, [nope + v, kv_lora_rank]) */
    float *mla_latent; /* [2 x kv_lora_rank] a head's absorbed query, then its latent output */
    /* a mixture of experts' scratch (moe.h), NULL for a dense model */
    float *moe_logits, *moe_probs; /* [max_tokens, n_experts] */
    int *moe_experts;              /* [max_tokens, n_experts_used] */
    float *moe_weights;            /* [max_tokens, n_experts_used] */
    int *moe_rows;                 /* [max_tokens] the tokens one expert runs */
    float *moe_gate;               /* [max_tokens] and their weights */
    float *moe_x, *moe_y;          /* [max_tokens, dim] */
    float *moe_h1, *moe_h3;        /* [max_tokens, expert_hidden_dim] */
    /* [n_kv_heads, head_dim, capacity] one layer's keys transposed, for the
     * fast path's passes of many queries (NULL when max_tokens is fewer
     * than ATTENTION_TRANSPOSE_MIN_QUERIES) */
    float *key_t;
} RunState;

/* Allocate a state whose cache holds `capacity` positions (at most seq_len)
 * and whose forward calls take up to max_tokens tokens; float32 throughout. */
bool run_state_init(RunState *s, const Config *c, int capacity, int max_tokens, StepError *err);

/* The same, quantizing activations and/or the KV cache as q says (NULL:
 * float32). */
bool run_state_init_quant(RunState *s, const Config *c, int capacity, int max_tokens,
                          const QuantRuntime *q, StepError *err);
void run_state_free(RunState *s);

/* One row of a forward pass: a sequence's state (its KV cache and work
 * count), its observer, and the n_tokens tokens it feeds at
 * positions pos0, pos0 + 1, ... Prefill is one row of the whole prompt,
 * decode one row of one token, a batched decode step B rows of one token,
 * and a recompute without a cache one row of the whole window from 0. */
typedef struct {
    RunState *state;
    const StepObserver *obs; /* its hooks, or NULL */
    const int *tokens;       /* [n_tokens] */
    int n_tokens;
    int pos0;
    bool all_logits; /* the logits of every token, not only the last one's */
    bool no_logits;  /* none at all: a prefill chunk before the last (its cache rows only) */
} ForwardRow;

/* Emit x [N, heads × head_dim] at `point` of `layer`, each row of a pass
 * (its tokens t0 .. t0 + n_tokens - 1 of the N, in the rows' order) to its
 * own observer. */
void rows_emit(const ForwardRow *rows, int n_rows, int layer, HookPoint point, const float *x,
               int heads, int head_dim);

#endif
