/* layers.h: the transformer's building blocks, each over T tokens at once.
 *
 * Every function takes its shapes explicitly. Activations are row-major
 * [T, width]: row t belongs to token t. Each dot product sums its terms in
 * index order starting from 0.0f, as llama2.c's run.c does, so results are
 * bitwise-identical to it whatever T is. */
#ifndef STEPWISE_LAYERS_H
#define STEPWISE_LAYERS_H

#include "ref/config.h"
#include "ref/hooks.h"
#include "ref/kernels/matrix.h"

/* out[t] = weight ⊙ x[t] / sqrt(mean(x[t]²) + eps), for each of T rows of
 * width C (eps: 1e-5 in llama2.c). out may alias x. */
void rmsnorm_forward(float *out, const float *x, const float *weight, int T, int C, float eps);

/* x[t] += b for each of T rows of width C: a projection's bias. */
void bias_forward(float *x, const float *b, int T, int C);

/* LayerNorm of each of T rows of C (GPT-2): out = (x − mean) · rstd · w + b,
 * mean and variance over the row, rstd = 1 / sqrt(var + eps), every sum in
 * index order from 0.0f. out may be x. */
void layernorm_forward(float *out, const float *x, const float *weight, const float *bias, int T,
                       int C, float eps);

/* x[i] = gelu(x[i]) with the tanh approximation (GPT-2's "gelu_new"):
 * 0.5 · x · (1 + tanh(sqrt(2/π) · (x + 0.044715 · x³))). */
void gelu_forward(float *x, int n);

/* The matmul, out[t][o] = Σ_i w[o][i] · x[t][i], is matmul_forward in
 * kernels/matrix.h (included here): the one plain matmul, which every
 * float matrix of any element type (matmul_rows) reaches. */

/* Rotate each pair of dimensions of every head of x [T, width] by the angle
 * of its position and the pair's frequency: pair i is (2i, 2i+1) with
 * ROPE_INTERLEAVED, (i, i + rot/2) with ROPE_HALVES, for the rot / 2 pairs
 * of the first rot dimensions of each head (rot = head_dim but for Phi-3's
 * partial RoPE: the rest pass through). x is T rows, row t at
 * positions[t], with heads of head_dim; cos/sin tables are [positions,
 * rot / 2]. */
void rope_forward(float *x, int T, int width, int head_dim, int rot, const int *positions,
                  const float *rope_cos, const float *rope_sin, RopeLayout layout);

/* Attention of T queries, query t at positions[t], over the cached keys
 * and values of positions 0..positions[t] (the key of cache slot k at
 * position k), those the visibility rule lets it see (attention_visible:
 * causal, and a's window, chunk and sinks).
 * q: [T, n_heads × head_dim]; key_cache: [positions, n_kv_heads × head_dim];
 * value_cache: [positions, n_kv_heads × v_head_dim]; out: [T, n_heads ×
 * v_head_dim] (v_head_dim: MLA's narrower value, else head_dim); query head h reading KV head
 * h / (n_heads / n_kv_heads); scores: scratch of [max positions[t] + 1] floats.
 * site (may be NULL) receives each head's scores and pattern when wanted. */
void attention_forward(float *out, const float *q, const float *key_cache, const float *value_cache,
                       float *scores, int T, const int *positions, const AttentionSpec *a,
                       const HookSite *site);

/* In place over n values: x[i] = x[i] + y[i]. */
void residual_forward(float *x, const float *y, int n);

/* GeGLU (Gemma): gate[i] = gelu(gate[i]) · up[i], GELU's tanh form as gelu_forward. */
void geglu_forward(float *gate, const float *up, int n);

/* GELU as ggml computes it (ggml_vec_gelu_f32, llama.cpp's): 0 at x <= -10,
 * x at x >= 10, and between them a float16 table's entry for f16(x), the
 * tanh form in float32 (ggml's arithmetic: 0.5 x (1 + tanh(sqrt(2/π) x (1 +
 * 0.044715 x²)))) rounded to float16; and GeGLU through it
 * (ggml_vec_geglu_f32). The same numbers the table holds, computed per
 * value. */
void gelu_ggml_forward(float *x, int n);
void geglu_ggml_forward(float *gate, const float *up, int n);

/* Gemma 2's final soft-capping: logits[i] = tanh(logits[i] / cap) · cap. */
void logits_softcap_forward(float *logits, int n, float cap);

/* SwiGLU: gate[i] = silu(gate[i]) · up[i], with silu(v) = v · σ(v), over n values. */
void swiglu_forward(float *gate, const float *up, int n);

/* Softmax over n values in place: subtract the max, exponentiate, divide by
 * the sum (summed in index order). */
void softmax_forward(float *x, int n);

#endif
