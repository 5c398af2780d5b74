/* forward_jobs.h: the forward pass's plumbing, apart from the transformer
 * (forward.c) so that it reads as the block top to bottom: the per-token
 * steps between the matmuls and one row's attention shared out over
 * threads (each token's or head's numbers exactly as on one thread), and
 * the count of attention's work. */
#ifndef STEPWISE_FORWARD_JOBS_H
#define STEPWISE_FORWARD_JOBS_H

#include <stdbool.h>
#include <stdint.h>

#include "ref/kernels/attention_spec.h"
#include "ref/kernels/exp.h"
#include "ref/model/model.h"
#include "ref/run_state.h"
#include "ref/work.h"

/* The per-token steps between the matmuls (RMSNorm, SwiGLU, the residual
 * add), shared out over threads by tokens: each token's row is computed
 * exactly as on one thread. With the plain kernels, one call over all N. */
typedef enum {
    ROWS_RMSNORM,
    ROWS_LAYERNORM,
    ROWS_SWIGLU,
    ROWS_SWIGLU_MANY, /* the fast path's: the exponentials many at once, the same bits */
    ROWS_GEGLU,
    ROWS_GEGLU_GGML, /* through ggml's float16 table (the run's gelu_f16_table) */
    ROWS_GELU,
    ROWS_GELU_GGML,
    ROWS_RESIDUAL
} RowsOp;

typedef struct {
    RowsOp op;
    float *out;                 /* [N, C]: a norm's output, a GLU's gate, gelu's x, residual's x */
    const float *in;            /* [N, C]: a norm's x, a GLU's up, residual's y */
    const float *weight, *bias; /* a norm's (bias: LayerNorm's) */
    int C;
    float eps;
    ExpKind exp; /* ROWS_SWIGLU_MANY's: the run state's */
} RowsJob;

/* job over N tokens, shared out over m's threads. */
void rows_parallel(const Model *m, int N, const RowsJob *job);

/* out [N, C] = the block's norm of x: rmsnorm with weight, or (NORM_LAYER)
 * layernorm with weight and bias (out may be x). */
void norm_rows(const Model *m, float *out, const float *x, const float *weight, const float *bias,
               int N, int C);

/* x [N, C] = gelu(x). */
void gelu_rows(const Model *m, float *x, int N, int C);

/* x [N, C] += y. */
void residual_rows(const Model *m, float *x, const float *y, int N, int C);

/* One row's attention by the fast kernels (fast_layers.h), its query heads
 * shared out over m's threads: out [T, n_heads × head_dim] for the queries
 * q [T, q_dim], query t at positions[t], over key_l and value_l, the row's
 * cache of the layer as floats, its first `slots` slots filled; the scores
 * in the pass's room (s->scores). A pass of many queries has the keys
 * transposed once first (s->key_t), each KV head once whatever the split. */
void attention_threads(const Model *m, float *out, const float *q, const float *key_l,
                       const float *value_l, const PassScratch *s, int T, const int *positions,
                       int slots, const AttentionSpec *spec);

/* Attention of T queries at positions[0..T) in a layer, into w: each
 * (query, key) pair it scores and mixes (attention_seen: the visibility
 * rule's) costs head_dim multiply-adds a head twice and reads a K and a V
 * row. */
void count_attention(WorkCount *w, const AttentionSpec *spec, int T, const int *positions,
                     uint64_t row_bytes);

/* Multiply-adds of the blocks (every layer's matmuls and attention, not
 * the classifier) for T tokens at positions pos0.. : what forward's work
 * counters add up for them. */
uint64_t forward_body_macs(const Config *c, int T, int pos0);

#endif
