/* kernels/fast_layers.h: the fast path's forms of layers.c's attention and
 * SwiGLU: the same sums, each in index order from 0.0f with no fused
 * multiply-add, several at once (four positions' scores, 64 dimensions
 * of the values, four query heads of one KV head on each key and value
 * row read, the exponentials many at once), so the same bits. The block
 * calls them when the run chose the fast kernels (RunOptions, run/run_options.h) and no
 * observer watches the layer's attention: they fire no hooks (layers.c's
 * loops do, query by query). */
#ifndef STEPWISE_KERNELS_FAST_LAYERS_H
#define STEPWISE_KERNELS_FAST_LAYERS_H

#include "ref/kernels/attention_spec.h"
#include "ref/kernels/exp.h"

/* A pass of at least this many queries reads every key that often: the
 * fast path copies the keys transposed first (keys_transpose). */
#define ATTENTION_TRANSPOSE_MIN_QUERIES 8

/* key_t [n_kv_heads, head_dim, stride] from key_cache [n, n_kv_heads ×
 * head_dim]: key_t[g][i][p] = k_p[g·head_dim + i] for p < n <= stride. */
void keys_transpose(float *key_t, int stride, const float *key_cache, int n, int n_kv_heads,
                    int head_dim);

/* attention_forward's numbers (layers.h) for query heads h0..h1-1 of T
 * queries, query t at positions[t], head by head (a thread's share).
 * scores: scratch of [n_heads, stride] floats, one row per head, stride >
 * every positions[t]. key_t: NULL, or the keys transposed by keys_transpose with the same
 * stride, from which sixteen positions' scores advance together. exp:
 * exp_kind_of_libm(), for the softmax's exponentials (expf's bits). */
void attention_heads_fast(float *out, const float *q, const float *key_cache, const float *key_t,
                          const float *value_cache, float *scores, int stride, int T,
                          const int *positions, const AttentionSpec *a, int h0, int h1,
                          ExpKind exp);

/* swiglu_forward (layers.h) with the exponentials many at once (exp.h:
 * the C library's bits when kind is exp_kind_of_libm(), so the same
 * numbers). */
void swiglu_many_forward(float *gate, const float *up, int n, ExpKind kind);

#endif
