/* kernels/fast_layers.c: see fast_layers.h. */
#include "ref/kernels/fast_layers.h"

#include <math.h>
#include <string.h>

#include "ref/kernels/clones.h"
#include "ref/util/float16.h"

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
    for (; p <= pos; p++) { /* the last few, one at a time: head_scores' loop */
        const float *k = key_cache + (size_t)p * kv_dim + kv_off;
        float score = 0.0f;
        for (int i = 0; i < head_dim; i++) score += qh[i] * k[i];
        scores[p] = score / div;
    }
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
 * 64 and then 16, each block's sums held in registers through the whole sum
 * over p (the fast path; the plain one walks p outside and i inside, adding
 * into out: same sums, same order, same bits). A block of 64 is four
 * vectors' independent chains of additions: one chain would wait on its
 * adder's latency every p. Four named arrays, not one of 64, as gcc keeps
 * those in registers. */
FAST_CLONES static void head_values(float *out, const float *w, const float *value_cache, int first,
                                    int pos, int kv_dim, int kv_off, int head_dim) {
    const float *v0 = value_cache + kv_off;
    int i0 = 0;
    for (; i0 + 64 <= head_dim; i0 += 64) {
        float a0[16] = {0}, a1[16] = {0}, a2[16] = {0}, a3[16] = {0};
        for (int p = first; p <= pos; p++) {
            const float *v = v0 + (size_t)p * kv_dim + i0;
            float a = w[p];
            for (int l = 0; l < 16; l++) {
                a0[l] += a * v[l], a1[l] += a * v[16 + l];
                a2[l] += a * v[32 + l], a3[l] += a * v[48 + l];
            }
        }
        memcpy(out + i0, a0, sizeof a0), memcpy(out + i0 + 16, a1, sizeof a1);
        memcpy(out + i0 + 32, a2, sizeof a2), memcpy(out + i0 + 48, a3, sizeof a3);
    }
    for (; i0 + 16 <= head_dim; i0 += 16) {
        float acc[16] = {0};
        for (int p = first; p <= pos; p++) {
            const float *v = v0 + (size_t)p * kv_dim + i0;
            float a = w[p];
            for (int l = 0; l < 16; l++) acc[l] += a * v[l];
        }
        memcpy(out + i0, acc, sizeof acc);
    }
    for (int i = i0; i < head_dim; i++) {
        float acc = 0.0f;
        for (int p = first; p <= pos; p++) acc += w[p] * v0[(size_t)p * kv_dim + i];
        out[i] = acc;
    }
}

/* The key rows a few positions on come from memory, not cache, after a
 * decode step's weights have streamed through: group_scores4 asks for them
 * ahead, each row's bytes (rows kv_dim floats apart are not one stream to
 * the processor's own prefetcher). A hint: it changes no value, and past
 * the cache's last row it is not made. The same hint in group_values4
 * measured no faster (docs/runs/2026-12-06-kv-prefetch-profile.txt). */
#define KV_ROWS_AHEAD 8
static inline void prefetch_kv_row(const float *row, int width) {
    for (int b = 0; b < width; b += 16) __builtin_prefetch(row + b);
}

/* Four query heads h..h+3 that share one KV head (grouped-query
 * attention), scored together: each key row is read once for the four, not
 * once for each, and the four heads' sums run side by side. Each is still a
 * sum over i in order from 0.0f: head_scores4's bits. qt [head_dim][4]: the
 * four queries side by side; key_cache: the KV head's first column;
 * scores: head h's row, the other three stride floats apart. */
FAST_CLONES static void group_scores4(float *scores, int stride, const float *qt,
                                      const float *key_cache, int first, int pos, int kv_dim,
                                      int head_dim, float div) {
    int p = first;
    for (; p + 3 <= pos; p += 4) {
        const float *k0 = key_cache + (size_t)p * kv_dim, *k1 = k0 + kv_dim, *k2 = k1 + kv_dim,
                    *k3 = k2 + kv_dim;
        float s0[4] = {0}, s1[4] = {0}, s2[4] = {0}, s3[4] = {0};
        for (int r = 0; r < 4 && p + KV_ROWS_AHEAD + r <= pos; r++)
            prefetch_kv_row(k0 + (size_t)(KV_ROWS_AHEAD + r) * kv_dim, head_dim);
        for (int i = 0; i < head_dim; i++) {
            const float *qi = qt + 4 * i;
            for (int j = 0; j < 4; j++) {
                s0[j] += qi[j] * k0[i], s1[j] += qi[j] * k1[i];
                s2[j] += qi[j] * k2[i], s3[j] += qi[j] * k3[i];
            }
        }
        for (int j = 0; j < 4; j++) {
            float *row = scores + (size_t)j * stride + p;
            row[0] = s0[j] / div, row[1] = s1[j] / div;
            row[2] = s2[j] / div, row[3] = s3[j] / div;
        }
    }
    for (; p <= pos; p++) { /* the last few, one position at a time */
        const float *k = key_cache + (size_t)p * kv_dim;
        float s[4] = {0};
        for (int i = 0; i < head_dim; i++)
            for (int j = 0; j < 4; j++) s[j] += qt[4 * i + j] * k[i];
        for (int j = 0; j < 4; j++) scores[(size_t)j * stride + p] = s[j] / div;
    }
}

/* The four heads' values together: each value row read once for the four
 * (w: head h's weights, the others stride floats apart; out: head h's
 * output, the others head_dim apart; value_cache: the KV head's first
 * column), 32 dimensions at a time as eight chains of additions (four
 * heads by two vectors), the rest head by head (head_values). Each out[i]
 * is still Σ_p w[p] · v_p[i] in order from 0.0f: head_values' bits. */
FAST_CLONES static void group_values4(float *out, const float *w, int stride,
                                      const float *value_cache, int first, int pos, int kv_dim,
                                      int head_dim) {
    const float *w0 = w, *w1 = w0 + stride, *w2 = w1 + stride, *w3 = w2 + stride;
    int i0 = 0;
    for (; i0 + 32 <= head_dim; i0 += 32) {
        float a0[16] = {0}, b0[16] = {0}, a1[16] = {0}, b1[16] = {0};
        float a2[16] = {0}, b2[16] = {0}, a3[16] = {0}, b3[16] = {0};
        for (int p = first; p <= pos; p++) {
            const float *v = value_cache + (size_t)p * kv_dim + i0;
            float x0 = w0[p], x1 = w1[p], x2 = w2[p], x3 = w3[p];
            for (int l = 0; l < 16; l++) {
                a0[l] += x0 * v[l], b0[l] += x0 * v[16 + l];
                a1[l] += x1 * v[l], b1[l] += x1 * v[16 + l];
                a2[l] += x2 * v[l], b2[l] += x2 * v[16 + l];
                a3[l] += x3 * v[l], b3[l] += x3 * v[16 + l];
            }
        }
        float *o = out + i0;
        memcpy(o, a0, sizeof a0), memcpy(o + 16, b0, sizeof b0), o += head_dim;
        memcpy(o, a1, sizeof a1), memcpy(o + 16, b1, sizeof b1), o += head_dim;
        memcpy(o, a2, sizeof a2), memcpy(o + 16, b2, sizeof b2), o += head_dim;
        memcpy(o, a3, sizeof a3), memcpy(o + 16, b3, sizeof b3);
    }
    if (i0 < head_dim) /* the last dimensions as a narrower head of their own */
        for (int j = 0; j < 4; j++)
            head_values(out + (size_t)j * head_dim + i0, w + (size_t)j * stride, value_cache + i0,
                        first, pos, kv_dim, 0, head_dim - i0);
}

/* Gemma 2's soft-capping, as layers.c's: s = tanh(s / cap) · cap. */
static void softcap(float *x, int n, float cap) {
    for (int i = 0; i < n; i++) x[i] = tanhf(x[i] / cap) * cap;
}

/* Scores into weights, as layers.c's: the soft-cap, the softmax with the
 * exponentials many at once over the positions the query sees
 * (attention_visible: a key in a gap weighs e^-inf = 0), 0 before the
 * first, llama.cpp's rounding. */
static void head_weights(float *scores, int first, int pos, const AttentionSpec *a, ExpKind exp) {
    if (a->softcap > 0) softcap(scores + first, pos + 1 - first, a->softcap);
    if (attention_has_gaps(a))
        for (int p = first; p <= pos; p++)
            if (!attention_visible(a, pos, p)) scores[p] = -INFINITY;
    softmax_many(scores + first, pos + 1 - first, exp);
    memset(scores, 0, (size_t)first * sizeof(float)); /* before the first it sees */
    if (a->f16_probs)
        for (int p = first; p <= pos; p++) scores[p] = half_round(scores[p]);
}

/* Query t's head h, at position pos, as layers.c's attention_query_head
 * computes it, by the kernels above: the scores of the positions it sees (from kt,
 * the KV head's keys transposed with stride kt_n, or four positions at a
 * time), the weights (head_weights), and the values 64 (then 16)
 * dimensions at a time. */
static void query_head(float *out, const float *q, const float *key_cache, const float *value_cache,
                       float *scores, int t, int h, int pos, const AttentionSpec *a,
                       const float *kt, int kt_n, ExpKind exp) {
    int head_dim = a->head_dim, dim = a->n_heads * head_dim, kv_dim = a->n_kv_heads * head_dim;
    int group = a->n_heads / a->n_kv_heads;   /* query heads per KV head */
    int first = attention_first_seen(a, pos); /* it sees first..pos (attention_visible) */
    float div = sqrtf(a->query_scale);
    const float *qh = q + (size_t)t * dim + (size_t)h * head_dim;
    int kv_head_off = (h / group) * head_dim;
    if (kt != NULL)
        head_scores_kt(scores + first, qh, kt + first, kt_n, pos - first, head_dim, div);
    else
        head_scores4(scores + first, qh, key_cache + (size_t)first * kv_dim, pos - first, kv_dim,
                     kv_head_off, head_dim, div);
    head_weights(scores, first, pos, a, exp);
    head_values(out + (size_t)t * dim + (size_t)h * head_dim, scores, value_cache, first, pos,
                kv_dim, kv_head_off, head_dim);
}

/* The widest head that query_heads4 takes (its queries side by side on the
 * stack); wider ones go head by head. */
#define GROUP4_MAX_HEAD_DIM 256

/* Query t's heads h..h+3, which share a KV head: query_head's numbers for
 * each, with the keys and values read once for the four (group_scores4,
 * group_values4). scores: head h's row, the others stride floats apart. */
static void query_heads4(float *out, const float *q, const float *key_cache,
                         const float *value_cache, float *scores, int stride, int t, int h, int pos,
                         const AttentionSpec *a, ExpKind exp) {
    int head_dim = a->head_dim, dim = a->n_heads * head_dim, kv_dim = a->n_kv_heads * head_dim;
    int first = attention_first_seen(a, pos);
    int kv_head_off = (h / (a->n_heads / a->n_kv_heads)) * head_dim;
    const float *qh = q + (size_t)t * dim + (size_t)h * head_dim; /* the four, head_dim apart */
    float qt[4 * GROUP4_MAX_HEAD_DIM];
    for (int i = 0; i < head_dim; i++)
        for (int j = 0; j < 4; j++) qt[4 * i + j] = qh[(size_t)j * head_dim + i];
    group_scores4(scores, stride, qt, key_cache + kv_head_off, first, pos, kv_dim, head_dim,
                  sqrtf(a->query_scale));
    for (int j = 0; j < 4; j++) head_weights(scores + (size_t)j * stride, first, pos, a, exp);
    group_values4(out + (size_t)t * dim + (size_t)h * head_dim, scores, stride,
                  value_cache + kv_head_off, first, pos, kv_dim, head_dim);
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

void attention_heads_fast(float *out, const float *q, const float *key_cache, const float *key_t,
                          const float *value_cache, float *scores, int stride, int T,
                          const int *positions, const AttentionSpec *a, int h0, int h1,
                          ExpKind exp) {
    int group = a->n_heads / a->n_kv_heads;
    for (int h = h0; h < h1;) {
        /* four heads of one KV head together when the keys are not
         * transposed (a decode step, a short pass) */
        if (key_t == NULL && h + 4 <= h1 && h / group == (h + 3) / group &&
            a->head_dim <= GROUP4_MAX_HEAD_DIM) {
            for (int t = 0; t < T; t++)
                query_heads4(out, q, key_cache, value_cache, scores + (size_t)h * stride, stride, t,
                             h, positions[t], a, exp);
            h += 4;
            continue;
        }
        const float *kt = key_t != NULL ? key_t + (size_t)(h / group) * a->head_dim * stride : NULL;
        for (int t = 0; t < T; t++)
            query_head(out, q, key_cache, value_cache, scores + (size_t)h * stride, t, h,
                       positions[t], a, kt, stride, exp);
        h++;
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
