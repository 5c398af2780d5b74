/* layers.c: the arithmetic of one transformer block, kept in run.c's order. */
#include "layers.h"

#include <math.h>
#include <string.h>

void rmsnorm_forward(float *out, const float *x, const float *weight, int T, int C) {
    for (int t = 0; t < T; t++) {
        const float *xt = x + (size_t)t * C;
        float *ot = out + (size_t)t * C;
        float ss = 0.0f;
        for (int i = 0; i < C; i++) ss += xt[i] * xt[i];
        ss /= C;
        ss += 1e-5f;
        ss = 1.0f / sqrtf(ss);
        for (int i = 0; i < C; i++) ot[i] = weight[i] * (ss * xt[i]);
    }
}

/* The kernels below compute many dot products at once, so that the
 * processor has independent additions in flight and the compiler can put
 * them in vector lanes. Every dot product still sums w[o][i] · x[t][i] over
 * i = 0, 1, ..., C-1 in order, starting from 0.0f, with no fused
 * multiply-add (-ffp-contract=off): the results are bitwise those of the
 * one-at-a-time loop (tests/test_speed.c keeps one to compare).
 * docs/performance.md explains. */

#define MM_TOKENS 16 /* tokens per vector tile (prefill, batches) */
#define MM_ROWS   8  /* output rows per tile (decode) */

#if defined(__GNUC__) && defined(__x86_64__) && !defined(__clang__)
#define MM_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define MM_CLONES
#endif

/* Row o against tokens t0..t0+MM_TOKENS-1 of xT [C, T] (x transposed):
 * lane l accumulates token t0 + l. */
MM_CLONES static void tile_tokens(float *out, const float *xT, const float *wo, int t0, int T,
                                  int C, int OC, int o) {
    float acc[MM_TOKENS] = {0.0f};
    for (int i = 0; i < C; i++) {
        float wi = wo[i];
        const float *xi = xT + (size_t)i * T + t0;
        for (int l = 0; l < MM_TOKENS; l++) acc[l] += wi * xi[l];
    }
    for (int l = 0; l < MM_TOKENS; l++) out[(size_t)(t0 + l) * OC + o] = acc[l];
}

/* Rows o..o+MM_ROWS-1 against one token x [C]: lane r accumulates row o + r. */
MM_CLONES static void tile_rows(float *out, const float *x, const float *w, int C, int o) {
    float acc[MM_ROWS] = {0.0f};
    const float *wo = w + (size_t)o * C;
    for (int i = 0; i < C; i++) {
        float xi = x[i];
        for (int r = 0; r < MM_ROWS; r++) acc[r] += wo[(size_t)r * C + i] * xi;
    }
    for (int r = 0; r < MM_ROWS; r++) out[o + r] = acc[r];
}

static float dot_in_order(const float *a, const float *b, int n) {
    float sum = 0.0f;
    for (int i = 0; i < n; i++) sum += a[i] * b[i];
    return sum;
}

void matmul_forward(float *out, const float *x, const float *w, int T, int C, int OC, float *xT) {
    int t_tiled = xT != NULL ? T / MM_TOKENS * MM_TOKENS : 0;
    if (t_tiled > 0) {
        /* transpose x once: xT[i][t] = x[t][i] */
        for (int t = 0; t < T; t++)
            for (int i = 0; i < C; i++) xT[(size_t)i * T + t] = x[(size_t)t * C + i];
        for (int o = 0; o < OC; o++) {
            const float *wo = w + (size_t)o * C;
            for (int t0 = 0; t0 < t_tiled; t0 += MM_TOKENS)
                tile_tokens(out, xT, wo, t0, T, C, OC, o);
        }
    }
    /* the remaining tokens one at a time, MM_ROWS output rows at once */
    for (int t = t_tiled; t < T; t++) {
        const float *xt = x + (size_t)t * C;
        float *ot = out + (size_t)t * OC;
        int o = 0;
        for (; o + MM_ROWS <= OC; o += MM_ROWS) tile_rows(ot, xt, w, C, o);
        for (; o < OC; o++) ot[o] = dot_in_order(w + (size_t)o * C, xt, C);
    }
}

void rope_forward(float *x, int T, int width, int head_dim, int pos0, const float *rope_cos,
                  const float *rope_sin) {
    int half = head_dim / 2;
    for (int t = 0; t < T; t++) {
        const float *c = rope_cos + (size_t)(pos0 + t) * half;
        const float *s = rope_sin + (size_t)(pos0 + t) * half;
        float *xt = x + (size_t)t * width;
        for (int i = 0; i < width; i += 2) {
            int pair = (i % head_dim) / 2;
            float v0 = xt[i], v1 = xt[i + 1];
            xt[i] = v0 * c[pair] - v1 * s[pair];
            xt[i + 1] = v0 * s[pair] + v1 * c[pair];
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

/* Hand one head's row of attention (scores or pattern) to the observer. */
static void emit_head(const HookSite *site, HookPoint point, int t, int head, const float *row,
                      int n) {
    if (site == NULL || !hook_wanted(site->obs, point, site->layer, site->pos0 + t)) return;
    HookTensor h = {point, site->layer, site->pos0 + t, head, site->tokens[t], row, 1, n, NULL};
    site->obs->emit(site->obs->ctx, &h);
}

void attention_forward(float *out, const float *q, const float *key_cache, const float *value_cache,
                       float *scores, int T, int pos0, int n_heads, int n_kv_heads, int head_dim,
                       const HookSite *site) {
    int dim = n_heads * head_dim, kv_dim = n_kv_heads * head_dim;
    int group = n_heads / n_kv_heads; /* query heads per KV head */
    float scale = sqrtf((float)head_dim);
    for (int t = 0; t < T; t++) {
        int pos = pos0 + t; /* this query sees positions 0..pos */
        for (int h = 0; h < n_heads; h++) {
            const float *qh = q + (size_t)t * dim + (size_t)h * head_dim;
            int kv_off = (h / group) * head_dim;
            /* scores[p] = q·k_p / sqrt(head_dim) */
            for (int p = 0; p <= pos; p++) {
                const float *k = key_cache + (size_t)p * kv_dim + kv_off;
                float score = 0.0f;
                for (int i = 0; i < head_dim; i++) score += qh[i] * k[i];
                scores[p] = score / scale;
            }
            emit_head(site, HOOK_ATTN_SCORES, t, h, scores, pos + 1);
            softmax_forward(scores, pos + 1);
            emit_head(site, HOOK_ATTN_PATTERN, t, h, scores, pos + 1);
            /* out = Σ_p softmax(scores)[p] · v_p, accumulated in position order */
            float *oh = out + (size_t)t * dim + (size_t)h * head_dim;
            memset(oh, 0, (size_t)head_dim * sizeof(float));
            for (int p = 0; p <= pos; p++) {
                const float *v = value_cache + (size_t)p * kv_dim + kv_off;
                float a = scores[p];
                for (int i = 0; i < head_dim; i++) oh[i] += a * v[i];
            }
        }
    }
}

void residual_forward(float *x, const float *y, int n) {
    for (int i = 0; i < n; i++) x[i] += y[i];
}

void swiglu_forward(float *gate, const float *up, int n) {
    for (int i = 0; i < n; i++) {
        float v = gate[i];
        v *= 1.0f / (1.0f + expf(-v)); /* silu(v) = v · σ(v) */
        gate[i] = v * up[i];
    }
}
