/* layers.c: the arithmetic of one transformer block, kept in run.c's order. */
#include "ref/layers.h"

#include <math.h>
#include <string.h>

#include "ref/kernels/clones.h"
#include "ref/kernels/exp.h"

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

/* The plain kernel: one dot product at a time, each summed in index order
 * from 0.0f, with no fused multiply-add (-ffp-contract=off): the loop of
 * run.c's matmul, over T tokens. `--kernels plain` runs the model on this
 * (and quant.c's matmul_q8_rows); the fast kernels (pack.c,
 * quant_model.c) compute the same sums in the same order, many at once,
 * and give the same bits. docs/performance.md explains. */
void matmul_forward(float *out, const float *x, const float *w, int T, int C, int OC) {
    for (int t = 0; t < T; t++) {
        const float *xt = x + (size_t)t * C;
        for (int o = 0; o < OC; o++) {
            const float *wo = w + (size_t)o * C;
            float sum = 0.0f;
            for (int i = 0; i < C; i++) sum += wo[i] * xt[i];
            out[(size_t)t * OC + o] = sum;
        }
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

void rope_forward(float *x, int T, int width, int head_dim, int rot, int pos0,
                  const float *rope_cos, const float *rope_sin, RopeLayout layout) {
    int pairs = rot / 2; /* the tables' rows hold as many */
    for (int t = 0; t < T; t++) {
        const float *c = rope_cos + (size_t)(pos0 + t) * pairs;
        const float *s = rope_sin + (size_t)(pos0 + t) * pairs;
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

/* softmax_forward by exp_many (kind: exp_kind_of_libm()), the fast path:
 * the same steps, the exponentials many at once, the same bits. */
FAST_CLONES static void softmax_many(float *x, int n, ExpKind kind) {
    float max_val = x[0];
    for (int i = 1; i < n; i++) {
        if (x[i] > max_val) max_val = x[i];
    }
    for (int i = 0; i < n; i++) x[i] -= max_val;
    exp_many(x, n, kind);
    float sum = 0.0f;
    for (int i = 0; i < n; i++) sum += x[i];
    for (int i = 0; i < n; i++) x[i] /= sum;
}

/* Hand one head's row of attention (scores or pattern) to the observer. */
static void emit_head(const HookSite *site, HookPoint point, int t, int head, const float *row,
                      int n) {
#ifdef STEPWISE_INJECT_BUG /* every head's row at that position (docs/first-wrong-number.md) */
    if (site != NULL) hook_inject(point, site->layer, site->pos0 + t, (float *)row, n);
#endif
    if (site == NULL || !hook_wanted(site->obs, point, site->layer, site->pos0 + t)) return;
    HookTensor h = {.point = point,
                    .layer = site->layer,
                    .pos = site->pos0 + t,
                    .head = head,
                    .token = site->tokens[t],
                    .a = row,
                    .rows = 1,
                    .cols = n};
    site->obs->emit(site->obs->ctx, &h);
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

/* The same scores, four positions at a time: four independent sums, each
 * over i in order, so that the processor is not waiting on one chain of
 * additions (the fast path: attention_heads_forward). Same bits. */
FAST_CLONES static void head_scores4(float *scores, const float *qh, const float *key_cache,
                                     int pos, int kv_dim, int kv_off, int head_dim, float div) {
    int p = 0;
    for (; p + 3 <= pos; p += 4) {
        const float *k0 = key_cache + (size_t)p * kv_dim + kv_off, *k1 = k0 + kv_dim,
                    *k2 = k1 + kv_dim, *k3 = k2 + kv_dim;
        float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;
        for (int i = 0; i < head_dim; i++) {
            s0 += qh[i] * k0[i];
            s1 += qh[i] * k1[i];
            s2 += qh[i] * k2[i];
            s3 += qh[i] * k3[i];
        }
        scores[p] = s0 / div, scores[p + 1] = s1 / div;
        scores[p + 2] = s2 / div, scores[p + 3] = s3 / div;
    }
    if (p <= pos)
        head_scores(scores + p, qh, key_cache + (size_t)p * kv_dim, pos - p, kv_dim, kv_off,
                    head_dim, div);
}

/* The same scores from the head's keys transposed, kt[i][p] = k_p[i]
 * (stride n: keys_transpose): sixteen positions at once, each still a sum over i in order
 * from 0, so that the vector runs across positions and never along one dot
 * product. Same bits as head_scores. */
FAST_CLONES static void head_scores_kt(float *scores, const float *qh, const float *kt, int n,
                                       int pos, int head_dim, float div) {
    int p0 = 0;
    for (; p0 + 16 <= pos + 1; p0 += 16) {
        float acc[16] = {0};
        for (int i = 0; i < head_dim; i++) {
            const float *k = kt + (size_t)i * n + p0;
            float a = qh[i];
            for (int l = 0; l < 16; l++) acc[l] += a * k[l];
        }
        for (int l = 0; l < 16; l++) scores[p0 + l] = acc[l] / div;
    }
    for (int p = p0; p <= pos; p++) {
        float acc = 0.0f;
        for (int i = 0; i < head_dim; i++) acc += qh[i] * kt[(size_t)i * n + p];
        scores[p] = acc / div;
    }
}

/* out[i] = Σ_p w[p] · v_p[i] over p = first..pos in order, for i in blocks of
 * 16 held in registers through the whole sum over p (the fast path; the
 * plain one walks p outside and i inside, adding into out: same sums, same
 * order, same bits). */
FAST_CLONES static void head_values16(float *out, const float *w, const float *value_cache,
                                      int first, int pos, int kv_dim, int kv_off, int head_dim) {
    int i0 = 0;
    for (; i0 + 16 <= head_dim; i0 += 16) {
        float acc[16] = {0};
        for (int p = first; p <= pos; p++) {
            const float *v = value_cache + (size_t)p * kv_dim + kv_off + i0;
            float a = w[p];
            for (int l = 0; l < 16; l++) acc[l] += a * v[l];
        }
        memcpy(out + i0, acc, sizeof acc);
    }
    for (int i = i0; i < head_dim; i++) {
        float acc = 0.0f;
        for (int p = first; p <= pos; p++)
            acc += w[p] * value_cache[(size_t)p * kv_dim + kv_off + i];
        out[i] = acc;
    }
}

/* Gemma 2's soft-capping: s = tanh(s / cap) · cap keeps every score in
 * (-cap, cap) while leaving small ones nearly as they were. */
static void softcap_forward(float *x, int n, float cap) {
    for (int i = 0; i < n; i++) x[i] = tanhf(x[i] / cap) * cap;
}

/* Query t's head h: scores against positions 0..pos0+t, softmax over
 * those its window keeps (first..pos), and the weighted sum of their
 * values, into out's row t, head h. scores: [pos0+t+1]. A sliding layer's
 * scores row holds every position's q·k, the ones its window then drops
 * too; its pattern is 0 there. four_at_once: the scores by head_scores_kt
 * from kt (the KV head's keys transposed, stride kt_n) or, without kt, by
 * head_scores4; the values by head_values16 (same bits). */
static void attention_query_head(float *out, const float *q, const float *key_cache,
                                 const float *value_cache, float *scores, int t, int h, int pos0,
                                 const AttentionSpec *a, const HookSite *site, bool four_at_once,
                                 const float *kt, int kt_n, ExpKind exp) {
    int head_dim = a->head_dim, dim = a->n_heads * head_dim, kv_dim = a->n_kv_heads * head_dim;
    int group = a->n_heads / a->n_kv_heads; /* query heads per KV head */
    int pos = pos0 + t;                     /* this query sees positions first..pos */
    int first = window_first_seen(a->window, pos);
    float div = sqrtf(a->query_scale);
    const float *qh = q + (size_t)t * dim + (size_t)h * head_dim;
    int kv_off = (h / group) * head_dim;
    /* the positions the window drops are scored only for a hook that shows
     * them; the others' scores are the same sums either way */
    bool shown = site != NULL && hook_wanted(site->obs, HOOK_ATTN_SCORES, site->layer, pos);
    int from = shown ? 0 : first;
    const float *keys = key_cache + (size_t)from * kv_dim;
    if (kt != NULL)
        head_scores_kt(scores + from, qh, kt + from, kt_n, pos - from, head_dim, div);
    else if (four_at_once)
        head_scores4(scores + from, qh, keys, pos - from, kv_dim, kv_off, head_dim, div);
    else
        head_scores(scores + from, qh, keys, pos - from, kv_dim, kv_off, head_dim, div);
    if (a->softcap > 0) softcap_forward(scores + from, pos + 1 - from, a->softcap);
    emit_head(site, HOOK_ATTN_SCORES, t, h, scores, pos + 1);
    if (four_at_once)
        softmax_many(scores + first, pos + 1 - first, exp);
    else
        softmax_forward(scores + first, pos + 1 - first);
    memset(scores, 0, (size_t)first * sizeof(float)); /* outside the window */
    emit_head(site, HOOK_ATTN_PATTERN, t, h, scores, pos + 1);
    /* out = Σ_p softmax(scores)[p] · v_p, accumulated in position order */
    float *oh = out + (size_t)t * dim + (size_t)h * head_dim;
    if (four_at_once) {
        head_values16(oh, scores, value_cache, first, pos, kv_dim, kv_off, head_dim);
        return;
    }
    memset(oh, 0, (size_t)head_dim * sizeof(float));
    for (int p = first; p <= pos; p++) {
        const float *v = value_cache + (size_t)p * kv_dim + kv_off;
        float w = scores[p];
        for (int i = 0; i < head_dim; i++) oh[i] += w * v[i];
    }
}

void attention_forward(float *out, const float *q, const float *key_cache, const float *value_cache,
                       float *scores, int T, int pos0, const AttentionSpec *a,
                       const HookSite *site) {
    for (int t = 0; t < T; t++) {
        for (int h = 0; h < a->n_heads; h++)
            attention_query_head(out, q, key_cache, value_cache, scores, t, h, pos0, a, site, false,
                                 NULL, 0, EXP_LIBM);
    }
}

void keys_transpose(float *key_t, int stride, const float *key_cache, int n, int n_kv_heads,
                    int head_dim) {
    int kv_dim = n_kv_heads * head_dim;
    for (int g = 0; g < n_kv_heads; g++) {
        float *kt = key_t + (size_t)g * head_dim * stride;
        for (int p = 0; p < n; p++)
            for (int i = 0; i < head_dim; i++)
                kt[(size_t)i * stride + p] = key_cache[(size_t)p * kv_dim + g * head_dim + i];
    }
}

void attention_heads_forward(float *out, const float *q, const float *key_cache, const float *key_t,
                             const float *value_cache, float *scores, int stride, int T, int pos0,
                             const AttentionSpec *a, int h0, int h1, const HookSite *site,
                             ExpKind exp) {
    int group = a->n_heads / a->n_kv_heads;
    for (int h = h0; h < h1; h++) {
        const float *kt = key_t != NULL ? key_t + (size_t)(h / group) * a->head_dim * stride : NULL;
        for (int t = 0; t < T; t++)
            attention_query_head(out, q, key_cache, value_cache, scores + (size_t)h * stride, t, h,
                                 pos0, a, site, true, kt, stride, exp);
    }
}

void residual_forward(float *x, const float *y, int n) {
    for (int i = 0; i < n; i++) x[i] += y[i];
}

void geglu_forward(float *gate, const float *up, int n) {
    gelu_forward(gate, n);
    for (int i = 0; i < n; i++) gate[i] *= up[i];
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

/* The same steps with the exponentials many at once (exp_many). */
FAST_CLONES static void swiglu_chunk(float *gate, const float *up, int n, ExpKind kind) {
    float e[64];
    for (int i = 0; i < n; i++) e[i] = -gate[i];
    exp_many(e, n, kind);
    for (int i = 0; i < n; i++) {
        float v = gate[i];
        v *= 1.0f / (1.0f + e[i]);
        gate[i] = v * up[i];
    }
}

void swiglu_many_forward(float *gate, const float *up, int n, ExpKind kind) {
    for (int i = 0; i < n; i += 64) swiglu_chunk(gate + i, up + i, n - i < 64 ? n - i : 64, kind);
}
