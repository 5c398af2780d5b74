/* layers.c: the arithmetic of one transformer block, kept in run.c's order:
 * the obvious loops, one sum at a time (the fast path's forms of the same
 * sums are kernels/fast_layers.c's). */
#include "ref/layers.h"
#include "ref/util/float16.h"

#include <math.h>
#include <string.h>

void rmsnorm_forward(float *out, const float *x, const float *weight, int T, int C, float eps) {
    for (int t = 0; t < T; t++) {
        const float *xt = x + (size_t)t * C;
        float *ot = out + (size_t)t * C;
        float ss = 0.0f;
        for (int i = 0; i < C; i++) ss += xt[i] * xt[i];
        ss /= C;
        ss += eps;
        ss = 1.0f / sqrtf(ss);
        for (int i = 0; i < C; i++) ot[i] = weight[i] * (ss * xt[i]);
    }
}

void bias_forward(float *x, const float *b, int T, int C) {
    for (int t = 0; t < T; t++) {
        for (int i = 0; i < C; i++) x[(size_t)t * C + i] += b[i];
    }
}

void layernorm_forward(float *out, const float *x, const float *weight, const float *bias, int T,
                       int C, float eps) {
    for (int t = 0; t < T; t++) {
        const float *xt = x + (size_t)t * C;
        float *ot = out + (size_t)t * C;
        float mean = 0.0f;
        for (int i = 0; i < C; i++) mean += xt[i];
        mean /= C;
        float var = 0.0f;
        for (int i = 0; i < C; i++) {
            float d = xt[i] - mean;
            var += d * d;
        }
        var /= C;
        float rstd = 1.0f / sqrtf(var + eps);
        for (int i = 0; i < C; i++) ot[i] = (xt[i] - mean) * rstd * weight[i] + bias[i];
    }
}

void gelu_forward(float *x, int n) {
    const float scale = 0.7978845608f; /* sqrt(2 / pi) */
    for (int i = 0; i < n; i++) {
        float v = x[i], cube = 0.044715f * v * v * v;
        x[i] = 0.5f * v * (1.0f + tanhf(scale * (v + cube)));
    }
}

void rope_forward(float *x, int T, int width, int head_dim, int rot, const int *positions,
                  const float *rope_cos, const float *rope_sin, RopeLayout layout) {
    int pairs = rot / 2; /* the tables' rows hold as many */
    for (int t = 0; t < T; t++) {
        const float *c = rope_cos + (size_t)positions[t] * pairs; /* its position's angles */
        const float *s = rope_sin + (size_t)positions[t] * pairs;
        for (int h0 = 0; h0 < width; h0 += head_dim) {
            float *xh = x + (size_t)t * width + h0;
            for (int pair = 0; pair < pairs; pair++) { /* dimensions past rot pass through */
                /* the two dimensions this pair rotates together */
                int a = layout == ROPE_HALVES ? pair : 2 * pair;
                int b = layout == ROPE_HALVES ? pair + pairs : 2 * pair + 1;
                float v0 = xh[a], v1 = xh[b];
                xh[a] = v0 * c[pair] - v1 * s[pair];
                xh[b] = v0 * s[pair] + v1 * c[pair];
            }
        }
    }
}

void softmax_forward(float *x, int n) {
    float max_val = x[0];
    for (int i = 1; i < n; i++) {
        if (x[i] > max_val) max_val = x[i];
    }
    float sum = 0.0f;
    for (int i = 0; i < n; i++) {
        x[i] = expf(x[i] - max_val);
        sum += x[i];
    }
    for (int i = 0; i < n; i++) x[i] /= sum;
}

/* scores[p] = q·k_p / div for p = 0..pos (div = sqrt(head_dim), or of
 * Gemma's query_pre_attn_scalar): the obvious loop, one dot product at a
 * time. */
static void head_scores(float *scores, const float *qh, const float *key_cache, int pos, int kv_dim,
                        int kv_off, int head_dim, float div) {
    for (int p = 0; p <= pos; p++) {
        const float *k = key_cache + (size_t)p * kv_dim + kv_off;
        float score = 0.0f;
        for (int i = 0; i < head_dim; i++) score += qh[i] * k[i];
        scores[p] = score / div;
    }
}

/* Gemma 2's soft-capping: s = tanh(s / cap) · cap keeps every score in
 * (-cap, cap) while leaving small ones nearly as they were. */
static void softcap_forward(float *x, int n, float cap) {
    for (int i = 0; i < n; i++) x[i] = tanhf(x[i] / cap) * cap;
}

/* Query t's head h, at position pos: scores against positions 0..pos,
 * softmax over those it sees (attention_visible: first..pos, less any gap
 * between the sinks and its band), and the weighted sum of their values,
 * into out's row t, head h. scores: [pos+1]. A layer with a window or chunks has
 * in its scores row every position's q·k, the ones the rule then drops
 * too; its pattern is 0 there. */
static void attention_query_head(float *out, const float *q, const float *key_cache,
                                 const float *value_cache, float *scores, int t, int h, int pos,
                                 const AttentionSpec *a, const HookSite *site) {
    int head_dim = a->head_dim, dim = a->n_heads * head_dim, kv_dim = a->n_kv_heads * head_dim;
    int v_dim = a->v_head_dim > 0 ? a->v_head_dim : head_dim; /* a value's width (MLA: narrower) */
    int group = a->n_heads / a->n_kv_heads;                   /* query heads per KV head */
    int first = attention_first_seen(a, pos); /* it sees positions first..pos (attention_visible) */
    float div = sqrtf(a->query_scale);
    const float *qh = q + (size_t)t * dim + (size_t)h * head_dim;
    int kv_off = (h / group) * head_dim;
    /* the positions the rule drops are scored only for a hook that shows
     * them; the others' scores are the same sums either way */
    bool shown = site != NULL && hook_wanted(site->obs, HOOK_ATTN_SCORES, site->layer, pos);
    int from = shown ? 0 : first;
    head_scores(scores + from, qh, key_cache + (size_t)from * kv_dim, pos - from, kv_dim, kv_off,
                head_dim, div);
    if (a->softcap > 0) softcap_forward(scores + from, pos + 1 - from, a->softcap);
    hook_emit_head(site, HOOK_ATTN_SCORES, t, h, scores, pos + 1);
    /* a key it does not see weighs e^-inf = 0: the softmax's max, sum and
     * quotients of the others are theirs alone */
    for (int p = first; p <= pos; p++)
        if (!attention_visible(a, pos, p)) scores[p] = -INFINITY;
    softmax_forward(scores + first, pos + 1 - first);
    memset(scores, 0, (size_t)first * sizeof(float)); /* before the first it sees */
    hook_emit_head(site, HOOK_ATTN_PATTERN, t, h, scores, pos + 1);
    if (a->f16_probs) /* llama.cpp's float16 operand for the multiply by V */
        for (int p = first; p <= pos; p++) scores[p] = half_round(scores[p]);
    /* out = Σ_p softmax(scores)[p] · v_p over the positions it sees, in
     * position order */
    float *oh = out + ((size_t)t * a->n_heads + (size_t)h) * v_dim;
    memset(oh, 0, (size_t)v_dim * sizeof(float));
    for (int p = first; p <= pos; p++) {
        if (!attention_visible(a, pos, p)) continue;
        const float *v = value_cache + ((size_t)p * a->n_kv_heads + (size_t)(h / group)) * v_dim;
        float w = scores[p];
        for (int i = 0; i < v_dim; i++) oh[i] += w * v[i];
    }
}

void attention_forward(float *out, const float *q, const float *key_cache, const float *value_cache,
                       float *scores, int T, const int *positions, const AttentionSpec *a,
                       const HookSite *site) {
    for (int t = 0; t < T; t++) {
        for (int h = 0; h < a->n_heads; h++)
            attention_query_head(out, q, key_cache, value_cache, scores, t, h, positions[t], a,
                                 site);
    }
}

void residual_forward(float *x, const float *y, int n) {
    for (int i = 0; i < n; i++) x[i] += y[i];
}

void geglu_forward(float *gate, const float *up, int n) {
    gelu_forward(gate, n);
    for (int i = 0; i < n; i++) gate[i] *= up[i];
}

/* One value of ggml's float16 GELU table (ggml_table_gelu_f16 at f16(x)). */
static float gelu_ggml(float x) {
    if (x <= -10.0f) return 0.0f;
    if (x >= 10.0f) return x;
    float v = half_round(x); /* the table's index, as a value */
    const float sqrt_2_over_pi = 0.79788456080286535587989211986876f, coef_a = 0.044715f;
    float g = 0.5f * v * (1.0f + tanhf(sqrt_2_over_pi * v * (1.0f + coef_a * v * v)));
    return half_round(g);
}

void gelu_ggml_forward(float *x, int n) {
    for (int i = 0; i < n; i++) x[i] = gelu_ggml(x[i]);
}

void geglu_ggml_forward(float *gate, const float *up, int n) {
    for (int i = 0; i < n; i++) gate[i] = gelu_ggml(gate[i]) * up[i];
}

void logits_softcap_forward(float *logits, int n, float cap) {
    softcap_forward(logits, n, cap);
}

void swiglu_forward(float *gate, const float *up, int n) {
    for (int i = 0; i < n; i++) {
        float v = gate[i];
        v *= 1.0f / (1.0f + expf(-v)); /* silu(v) = v · σ(v) */
        gate[i] = v * up[i];
    }
}
