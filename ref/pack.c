/* pack.c: see pack.h. */
#include "pack.h"

#include <stdlib.h>
#include <string.h>

#include "clones.h"

#define PREFILL_TOKENS 6 /* tokens sharing each loaded weight vector */

#define PACK_RELEASE_ROWS 256 /* rows of the source released at a time */

/* Pack w [rows, cols] of model m, releasing the source rows' pages of a
 * mapped checkpoint (or a folder's anonymous storage) as they are done
 * (model_discard_pages), so that the two
 * layouts never both hold the whole matrix. */
static bool pack_matrix(const Model *m, PackedMatrix *p, const float *w, int rows, int cols) {
    p->rows = rows, p->cols = cols;
    size_t bytes =
        (size_t)packed_blocks(p) * cols * PACK_ROWS * sizeof(float); /* a multiple of 64 */
    p->data = aligned_alloc(64, bytes);                              /* one vector per cache line */
    if (p->data == NULL) return false;
    memset(p->data, 0, bytes);
    for (int r0 = 0; r0 < rows; r0 += PACK_RELEASE_ROWS) {
        int r1 = r0 + PACK_RELEASE_ROWS < rows ? r0 + PACK_RELEASE_ROWS : rows;
        for (int r = r0; r < r1; r++) {
            float *dst = p->data + (size_t)(r / PACK_ROWS) * cols * PACK_ROWS + r % PACK_ROWS;
            for (int i = 0; i < cols; i++) dst[(size_t)i * PACK_ROWS] = w[(size_t)r * cols + i];
        }
        model_discard_pages(m, w + (size_t)r0 * cols, (uint64_t)(r1 - r0) * (uint64_t)cols);
    }
    return true;
}

void packed_row(const PackedMatrix *m, int r, float *out) {
    const float *src = m->data + (size_t)(r / PACK_ROWS) * m->cols * PACK_ROWS + r % PACK_ROWS;
    for (int i = 0; i < m->cols; i++) out[i] = src[(size_t)i * PACK_ROWS];
}

/* One token against one block (decode): PACK_ROWS independent sums, one
 * per output row, each over i in order; the loop over l is what the
 * compiler turns into one vector operation. Reads the block as one stream. */
FAST_CLONES static void block_token(float *out, const float *x, const float *block, int C, int row0,
                                    int rows) {
    float s[PACK_ROWS] = {0};
    for (int i = 0; i < C; i++) {
        const float *wi = block + (size_t)i * PACK_ROWS;
        float xi = x[i];
        for (int l = 0; l < PACK_ROWS; l++) s[l] += wi[l] * xi;
    }
    for (int l = 0; l < rows; l++) out[row0 + l] = s[l];
}

/* Prefill: up to PREFILL_TOKENS tokens against one block: each weight
 * vector loaded once serves six tokens' sums. xt[k] is token k's input
 * row [C]; the first n sums are stored, out[k] [OC] at column row0. A
 * shorter tile (the last of a pass) repeats its last token's row in the
 * unused places: the same work as a full tile, twice as fast as tokens one
 * by one. */
FAST_CLONES static void block_tokens(float *const out[PREFILL_TOKENS],
                                     const float *const xt[PREFILL_TOKENS], int n,
                                     const float *block, int C, int row0, int rows) {
    float s[PREFILL_TOKENS][PACK_ROWS] = {{0}};
    const float *x0 = xt[0], *x1 = xt[1], *x2 = xt[2], *x3 = xt[3], *x4 = xt[4], *x5 = xt[5];
    for (int i = 0; i < C; i++) {
        const float *wi = block + (size_t)i * PACK_ROWS;
        float a0 = x0[i], a1 = x1[i], a2 = x2[i], a3 = x3[i], a4 = x4[i], a5 = x5[i];
        for (int l = 0; l < PACK_ROWS; l++) {
            s[0][l] += wi[l] * a0;
            s[1][l] += wi[l] * a1;
            s[2][l] += wi[l] * a2;
            s[3][l] += wi[l] * a3;
            s[4][l] += wi[l] * a4;
            s[5][l] += wi[l] * a5;
        }
    }
    for (int t = 0; t < n; t++) {
        for (int l = 0; l < rows; l++) out[t][row0 + l] = s[t][l];
    }
}

int packed_blocks(const PackedMatrix *w) {
    return (w->rows + PACK_ROWS - 1) / PACK_ROWS;
}

void matmul_packed_blocks(float *out, const float *x, const PackedMatrix *w, int T, int b0,
                          int b1) {
    int C = w->cols, OC = w->rows;
    size_t stride = (size_t)C * PACK_ROWS; /* floats per block */
    for (int b = b0; b < b1; b++) {
        const float *block = w->data + b * stride;
        int row0 = b * PACK_ROWS, rows = OC - row0 < PACK_ROWS ? OC - row0 : PACK_ROWS;
        if (T == 1) {
            block_token(out, x, block, C, row0, rows);
            continue;
        }
        for (int t0 = 0; t0 < T; t0 += PREFILL_TOKENS) {
            int n = T - t0 < PREFILL_TOKENS ? T - t0 : PREFILL_TOKENS;
            float *outs[PREFILL_TOKENS];
            const float *xs[PREFILL_TOKENS];
            for (int k = 0; k < PREFILL_TOKENS; k++) {
                int t = t0 + (k < n ? k : n - 1);
                outs[k] = out + (size_t)t * OC, xs[k] = x + (size_t)t * C;
            }
            block_tokens(outs, xs, n, block, C, row0, rows);
        }
    }
}

void matmul_packed(float *out, const float *x, const PackedMatrix *w, int T) {
    matmul_packed_blocks(out, x, w, T, 0, packed_blocks(w));
}

void packed_weights_free(PackedWeights *p, int n_layers) {
    if (p == NULL) return;
    PackedMatrix *per_layer[] = {p->wq, p->wk, p->wv, p->wo, p->w1, p->w2, p->w3};
    for (int k = 0; k < 7; k++) {
        for (int l = 0; per_layer[k] != NULL && l < n_layers; l++) free(per_layer[k][l].data);
        free(per_layer[k]);
    }
    free(p->wcls.data);
    free(p);
}

bool model_pack(Model *m, StepError *err) {
    if (m->quant != NULL || m->packed != NULL) return true;
    const Config *c = &m->config;
    const Weights *w = &m->weights;
    int L = c->n_layers, d = c->dim, h = c->hidden_dim, kv = config_kv_dim(c), qd = config_q_dim(c);
    PackedWeights *p = calloc(1, sizeof *p);
    bool ok = p != NULL;
    PackedMatrix **lists[] = {&p->wq, &p->wk, &p->wv, &p->wo, &p->w1, &p->w2, &p->w3};
    const float *src[] = {w->wq, w->wk, w->wv, w->wo, w->w1, w->w2, w->w3};
    int out[] = {qd, kv, kv, d, h, d, h}, in[] = {d, d, d, qd, d, h, d};
    for (int k = 0; ok && k < 7; k++) {
        *lists[k] = calloc((size_t)L, sizeof(PackedMatrix));
        ok = *lists[k] != NULL;
        for (int l = 0; ok && l < L; l++) {
            ok =
                pack_matrix(m, &(*lists[k])[l], src[k] + (size_t)l * out[k] * in[k], out[k], in[k]);
            progress_report(m->progress, "packing the weights (matrices)", (uint64_t)k * L + l + 1,
                            7u * (uint64_t)L + 1);
        }
    }
    if (ok) ok = pack_matrix(m, &p->wcls, w->wcls, c->vocab_size, d);
    /* What stays row-major: the norms, an untied embedding (for lookups),
     * and the architecture's biases and q/k norms (added, not multiplied). */
    uint64_t norms = (uint64_t)(2 * L + 1) * d,
             emb = c->shared_classifier ? 0 : (uint64_t)c->vocab_size * d;
    uint64_t bias = c->qkv_bias ? (uint64_t)L * (qd + 2 * kv) : 0;
    uint64_t qk = c->qk_norm ? (uint64_t)L * 2 * config_head_dim(c) : 0;
    float *storage = ok ? malloc((norms + emb + bias + qk) * sizeof(float)) : NULL;
    if (storage == NULL) {
        packed_weights_free(p, L);
        return step_fail(err, "pack: out of memory for the weights");
    }
    memcpy(storage, w->rms_att, (size_t)L * d * sizeof(float));
    memcpy(storage + (size_t)L * d, w->rms_ffn, (size_t)L * d * sizeof(float));
    memcpy(storage + (size_t)2 * L * d, w->rms_final, (size_t)d * sizeof(float));
    if (emb > 0) memcpy(storage + norms, w->token_embedding, emb * sizeof(float));
    /* the biases and q/k norms lie together, bq..k_norm (model_bind_weights) */
    if (bias + qk > 0) {
        const float *first = c->qkv_bias ? w->bq : w->q_norm;
        memcpy(storage + norms + emb, first, (size_t)(bias + qk) * sizeof(float));
    }
    Weights kept = {.rms_att = storage,
                    .rms_ffn = storage + (size_t)L * d,
                    .rms_final = storage + (size_t)2 * L * d,
                    .token_embedding = emb > 0 ? storage + norms : NULL};
    const float *extra = storage + norms + emb;
    if (c->qkv_bias) {
        kept.bq = extra, kept.bk = extra + (size_t)L * qd, kept.bv = kept.bk + (size_t)L * kv;
        extra += bias;
    }
    if (c->qk_norm) kept.q_norm = extra, kept.k_norm = extra + (size_t)L * config_head_dim(c);
    model_release_storage(m);
    m->storage = storage;
    m->weights = kept;
    m->packed = p;
    m->free_packed = packed_weights_free;
    return true;
}
