/* quant_model.c: see quant_model.h. */
#include "quant_model.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "clones.h"
#include "file_util.h"

#define Q8_MAGIC   "SWQ8"
#define Q8_VERSION 1u

const QuantMatrix *quant_classifier(const QuantWeights *q) {
    return q->wcls.q != NULL ? &q->wcls : &q->token_embedding;
}

/* The matrices in file order, with their shapes. rows = n_layers × out. */
typedef struct {
    QuantMatrix *m;
    const float *src; /* float weights to quantize, or NULL */
    int rows, cols;
} QuantSlot;

static int quant_slots(QuantWeights *q, const Model *m, QuantSlot slots[9]) {
    const Config *c = &m->config;
    const Weights *w = &m->weights;
    int L = c->n_layers, d = c->dim, h = c->hidden_dim, kv = config_kv_dim(c), qd = config_q_dim(c);
    int n = 0;
    slots[n++] = (QuantSlot){
        .m = &q->token_embedding, .src = w->token_embedding, .rows = c->vocab_size, .cols = d};
    slots[n++] = (QuantSlot){.m = &q->wq, .src = w->wq, .rows = L * qd, .cols = d};
    slots[n++] = (QuantSlot){.m = &q->wk, .src = w->wk, .rows = L * kv, .cols = d};
    slots[n++] = (QuantSlot){.m = &q->wv, .src = w->wv, .rows = L * kv, .cols = d};
    slots[n++] = (QuantSlot){.m = &q->wo, .src = w->wo, .rows = L * d, .cols = qd};
    slots[n++] = (QuantSlot){.m = &q->w1, .src = w->w1, .rows = L * h, .cols = d};
    slots[n++] = (QuantSlot){.m = &q->w2, .src = w->w2, .rows = L * d, .cols = h};
    slots[n++] = (QuantSlot){.m = &q->w3, .src = w->w3, .rows = L * h, .cols = d};
    if (!c->shared_classifier)
        slots[n++] = (QuantSlot){.m = &q->wcls, .src = w->wcls, .rows = c->vocab_size, .cols = d};
    return n;
}

static bool pack_q8(PackedQ8 *p, const QuantMatrix *m, int row0, int rows) {
    int C = m->cols, gpr = m->groups_per_row, blocks = (rows + Q8_ROWS - 1) / Q8_ROWS;
    *p = (PackedQ8){.rows = rows,
                    .cols = C,
                    .group = m->group,
                    .groups_per_row = gpr,
                    .q = calloc((size_t)blocks * C * Q8_ROWS, 1),
                    .scales = calloc((size_t)blocks * gpr * Q8_ROWS, sizeof(float))};
    if (p->q == NULL || p->scales == NULL) return false;
    for (int r = 0; r < rows; r++) {
        int b = r / Q8_ROWS, l = r % Q8_ROWS;
        const int8_t *src = m->q + (size_t)(row0 + r) * C;
        const float *ss = m->scales + (size_t)(row0 + r) * gpr;
        for (int i = 0; i < C; i++) p->q[((size_t)b * C + i) * Q8_ROWS + l] = src[i];
        for (int g = 0; g < gpr; g++) p->scales[((size_t)b * gpr + g) * Q8_ROWS + l] = ss[g];
    }
    return true;
}

static void packed_q8_free(PackedQ8 *p, int n) {
    for (int i = 0; p != NULL && i < n; i++) free(p[i].q), free(p[i].scales);
    free(p);
}

/* One block of Q8_ROWS rows against one token: float activations. */
FAST_CLONES static void q8_block_f32(float *out, const float *x, const int8_t *q, const float *sc,
                                     int C, int group, int rows) {
    float sum[Q8_ROWS] = {0};
    for (int g = 0, start = 0; start < C; g++, start += group) {
        int end = start + group < C ? start + group : C;
        float acc[Q8_ROWS] = {0};
        for (int i = start; i < end; i++) {
            float xi = x[i];
            for (int l = 0; l < Q8_ROWS; l++) acc[l] += xi * (float)q[(size_t)i * Q8_ROWS + l];
        }
        for (int l = 0; l < Q8_ROWS; l++) sum[l] += acc[l] * sc[(size_t)g * Q8_ROWS + l];
    }
    for (int l = 0; l < rows; l++) out[l] = sum[l];
}

/* acc[l] += x · w[l] for one input's Q8_ROWS weights (a group's odd end). */
static inline void q8_add_input(int32_t acc[Q8_ROWS], int32_t x, const int8_t *w) {
    for (int l = 0; l < Q8_ROWS; l++) acc[l] += x * (int32_t)w[l];
}

/* A group's integer sums into the float sums: sum[l] += acc[l] · (sx · sc[l]). */
static inline void q8_add_group(float sum[Q8_ROWS], const int32_t acc[Q8_ROWS], float sx,
                                const float *sc) {
    for (int l = 0; l < Q8_ROWS; l++) sum[l] += (float)acc[l] * (sx * sc[l]);
}

/* One block of Q8_ROWS rows against one token: int8 activations. Integer
 * sums do not depend on their order, so two inputs' products are added
 * first, in 16 bits (activation codes lie in [-127, 127] and weight codes in
 * [-128, 127], so |a·w + b·v| <= 2 · 127 · 128 = 32,512 < 32,767: exact),
 * and two such pairs are widened and added before they join the 32-bit
 * sum: four inputs per step, the same integers, the same bits. */
FAST_CLONES static void q8_block_q8(float *out, const int8_t *qx, const float *sx, const int8_t *q,
                                    const float *sc, int C, int group, int rows) {
    float sum[Q8_ROWS] = {0};
    for (int g = 0, start = 0; start < C; g++, start += group) {
        int end = start + group < C ? start + group : C;
        int32_t acc[Q8_ROWS] = {0};
        int i = start;
        for (; i + 3 < end; i += 4) {
            int16_t a = qx[i], b = qx[i + 1], c = qx[i + 2], d = qx[i + 3];
            const int8_t *w = q + (size_t)i * Q8_ROWS;
            for (int l = 0; l < Q8_ROWS; l++)
                acc[l] += (int32_t)(int16_t)(a * w[l] + b * w[Q8_ROWS + l]) +
                          (int32_t)(int16_t)(c * w[2 * Q8_ROWS + l] + d * w[3 * Q8_ROWS + l]);
        }
        for (; i < end; i++) q8_add_input(acc, qx[i], q + (size_t)i * Q8_ROWS);
        q8_add_group(sum, acc, sx[g], sc + (size_t)g * Q8_ROWS);
    }
    for (int l = 0; l < rows; l++) out[l] = sum[l];
}

/* Prefill: the same sums for two tokens against one block. Each step's
 * weights, loaded and widened to 16 bits once, serve both tokens; their
 * sums and the widened weights stay in AVX-512's 32 registers. Per token
 * the same integers: the same bits. */
FAST_CLONES static void q8_block_q8_pair(float *out0, float *out1, const int8_t *qx0,
                                         const int8_t *qx1, const float *sx0, const float *sx1,
                                         const int8_t *q, const float *sc, int C, int group,
                                         int rows) {
    float sum0[Q8_ROWS] = {0}, sum1[Q8_ROWS] = {0};
    for (int g = 0, start = 0; start < C; g++, start += group) {
        int end = start + group < C ? start + group : C;
        int32_t acc0[Q8_ROWS] = {0}, acc1[Q8_ROWS] = {0};
        int i = start;
        for (; i + 3 < end; i += 4) {
            int16_t a0 = qx0[i], a1 = qx0[i + 1], a2 = qx0[i + 2], a3 = qx0[i + 3];
            int16_t b0 = qx1[i], b1 = qx1[i + 1], b2 = qx1[i + 2], b3 = qx1[i + 3];
            const int8_t *w = q + (size_t)i * Q8_ROWS;
            for (int l = 0; l < Q8_ROWS; l++) {
                int16_t w0 = w[l], w1 = w[Q8_ROWS + l], w2 = w[2 * Q8_ROWS + l],
                        w3 = w[3 * Q8_ROWS + l];
                acc0[l] +=
                    (int32_t)(int16_t)(a0 * w0 + a1 * w1) + (int32_t)(int16_t)(a2 * w2 + a3 * w3);
                acc1[l] +=
                    (int32_t)(int16_t)(b0 * w0 + b1 * w1) + (int32_t)(int16_t)(b2 * w2 + b3 * w3);
            }
        }
        for (; i < end; i++) {
            q8_add_input(acc0, qx0[i], q + (size_t)i * Q8_ROWS);
            q8_add_input(acc1, qx1[i], q + (size_t)i * Q8_ROWS);
        }
        q8_add_group(sum0, acc0, sx0[g], sc + (size_t)g * Q8_ROWS);
        q8_add_group(sum1, acc1, sx1[g], sc + (size_t)g * Q8_ROWS);
    }
    for (int l = 0; l < rows; l++) out0[l] = sum0[l], out1[l] = sum1[l];
}

int q8_blocks(const PackedQ8 *w) {
    return (w->rows + Q8_ROWS - 1) / Q8_ROWS;
}

void matmul_q8_packed_blocks(float *out, const float *x, const int8_t *qx, const float *sx,
                             const PackedQ8 *w, int T, int b0, int b1) {
    int C = w->cols, OC = w->rows, gpr = w->groups_per_row;
    for (int b = b0; b < b1; b++) {
        const int8_t *q = w->q + (size_t)b * C * Q8_ROWS;
        const float *sc = w->scales + (size_t)b * gpr * Q8_ROWS;
        int row0 = b * Q8_ROWS, rows = OC - row0 < Q8_ROWS ? OC - row0 : Q8_ROWS;
        int t = 0;
        for (; qx != NULL && t + 1 < T; t += 2) /* int8 activations: tokens in pairs */
            q8_block_q8_pair(out + (size_t)t * OC + row0, out + (size_t)(t + 1) * OC + row0,
                             qx + (size_t)t * C, qx + (size_t)(t + 1) * C, sx + (size_t)t * gpr,
                             sx + (size_t)(t + 1) * gpr, q, sc, C, w->group, rows);
        for (; t < T; t++) {
            float *o = out + (size_t)t * OC + row0;
            if (qx != NULL)
                q8_block_q8(o, qx + (size_t)t * C, sx + (size_t)t * gpr, q, sc, C, w->group, rows);
            else
                q8_block_f32(o, x + (size_t)t * C, q, sc, C, w->group, rows);
        }
    }
}

/* Build the fast layout of every matrix, per layer. */
static bool quant_pack(QuantWeights *q, const Config *c) {
    int L = c->n_layers;
    PackedQ8 **lists[LAYER_MATRICES] = {&q->pwq, &q->pwk, &q->pwv, &q->pwo,
                                        &q->pw1, &q->pw2, &q->pw3};
    const QuantMatrix *mats[LAYER_MATRICES] = {&q->wq, &q->wk, &q->wv, &q->wo,
                                               &q->w1, &q->w2, &q->w3};
    for (int k = 0; k < LAYER_MATRICES; k++) {
        int rows, cols;
        layer_matrix_shape(c, (MatrixKind)k, &rows, &cols);
        *lists[k] = calloc((size_t)L, sizeof(PackedQ8));
        if (*lists[k] == NULL) return false;
        for (int l = 0; l < L; l++)
            if (!pack_q8(&(*lists[k])[l], mats[k], l * rows, rows)) return false;
    }
    const QuantMatrix *cls = quant_classifier(q);
    return pack_q8(&q->pcls, cls, 0, cls->rows);
}

/* Layer l's rows of a matrix holding every layer's: a view. */
static Matrix q8_rows_view(const QuantMatrix *q, int row0, int rows) {
    return (Matrix){.layout = MATRIX_Q8_ROWS,
                    .rows = rows,
                    .cols = q->cols,
                    .data = q->q + (size_t)row0 * q->cols,
                    .scales = q->scales + (size_t)row0 * q->groups_per_row,
                    .group = q->group};
}

static Matrix q8_packed_view(const PackedQ8 *p) {
    return (Matrix){
        .layout = MATRIX_Q8_PACKED, .rows = p->rows, .cols = p->cols, .group = p->group, .q8 = p};
}

bool model_bind_quant(Model *m) {
    QuantWeights *q = m->quant;
    if (q == NULL) return model_bind_matrices(m);
    const Config *c = &m->config;
    if (m->layers == NULL) m->layers = calloc((size_t)c->n_layers, sizeof *m->layers);
    if (m->layers == NULL) return false;
    const QuantMatrix *all[LAYER_MATRICES] = {&q->wq, &q->wk, &q->wv, &q->wo,
                                              &q->w1, &q->w2, &q->w3};
    const PackedQ8 *packed[LAYER_MATRICES] = {q->pwq, q->pwk, q->pwv, q->pwo,
                                              q->pw1, q->pw2, q->pw3};
    for (int k = 0; k < LAYER_MATRICES; k++) {
        int rows, cols;
        layer_matrix_shape(c, (MatrixKind)k, &rows, &cols);
        for (int l = 0; l < c->n_layers; l++)
            m->layers[l].m[k] = packed[k] != NULL ? q8_packed_view(&packed[k][l])
                                                  : q8_rows_view(all[k], l * rows, rows);
    }
    const QuantMatrix *cls = quant_classifier(q);
    m->classifier = q->pwq != NULL ? q8_packed_view(&q->pcls) : q8_rows_view(cls, 0, cls->rows);
    m->embedding = q8_rows_view(&q->token_embedding, 0, q->token_embedding.rows);
    return true;
}

void quant_weights_free(QuantWeights *q) {
    if (q == NULL) return;
    PackedQ8 *lists[] = {q->pwq, q->pwk, q->pwv, q->pwo, q->pw1, q->pw2, q->pw3};
    for (int k = 0; k < 7; k++) packed_q8_free(lists[k], q->n_layers);
    free(q->pcls.q), free(q->pcls.scales);
    QuantMatrix *all[] = {
        &q->token_embedding, &q->wq, &q->wk, &q->wv, &q->wo, &q->w1, &q->w2, &q->w3, &q->wcls};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) quant_matrix_free(all[i]);
    free(q);
}

bool model_quantize(Model *m, int group, StepError *err) {
    if (group < 1) return step_fail(err, "quantization group must be >= 1, got %d", group);
    QuantWeights *q = calloc(1, sizeof *q);
    if (q == NULL) return step_fail(err, "quantize: out of memory");
    q->group = group;
    QuantSlot slots[9];
    int n = quant_slots(q, m, slots);
    for (int i = 0; i < n; i++) {
        if (!quant_matrix_init(slots[i].m, slots[i].src, slots[i].rows, slots[i].cols, group)) {
            quant_weights_free(q);
            return step_fail(err, "quantize: out of memory");
        }
        /* The float copy is read again only if someone asks (compare-quant's
         * float runs); until then it need not be resident. */
        model_release_pages(m, slots[i].src, (uint64_t)slots[i].rows * (uint64_t)slots[i].cols);
        progress_report(m->progress, "quantizing to int8 (tensors)", (uint64_t)i + 1, (uint64_t)n);
    }
    q->n_layers = m->config.n_layers;
    quant_weights_free(m->quant);
    m->quant = q;
    m->free_quant = quant_weights_free;
    if (!model_bind_quant(m)) return step_fail(err, "quantize: out of memory");
    return true;
}

bool model_pack_q8(Model *m, StepError *err) {
    if (m->quant == NULL || m->quant->pwq != NULL) return true;
    if (!quant_pack(m->quant, &m->config) || !model_bind_quant(m))
        return step_fail(err, "int8 packing: out of memory");
    return true;
}

uint64_t quant_weight_bytes(const Config *c, int group) {
    uint64_t L = (uint64_t)c->n_layers, d = (uint64_t)c->dim, h = (uint64_t)c->hidden_dim;
    uint64_t kv = (uint64_t)config_kv_dim(c);
    uint64_t bytes = quant_matrix_bytes(c->vocab_size, c->dim, group) +
                     quant_matrix_bytes((int)(L * d), c->dim, group) * 2 +    /* wq, wo */
                     quant_matrix_bytes((int)(L * kv), c->dim, group) * 2 +   /* wk, wv */
                     quant_matrix_bytes((int)(L * h), c->dim, group) * 2 +    /* w1, w3 */
                     quant_matrix_bytes((int)(L * d), c->hidden_dim, group) + /* w2 */
                     (2 * L * d + d) * sizeof(float);                         /* norms */
    if (!c->shared_classifier) bytes += quant_matrix_bytes(c->vocab_size, c->dim, group);
    return bytes;
}

/* The norms, in file order: rms_att, rms_ffn (after wo), rms_final (last). */
bool model_save_q8(const Model *m, const char *path, StepError *err) {
    if (!config_is_llama2c(&m->config))
        return step_fail(err, "%s: a .q8 file holds llama2.c's architecture only", path);
    const Config *c = &m->config;
    const QuantWeights *q = m->quant;
    if (q == NULL) return step_fail(err, "save: the model is not quantized");
    AtomicFile out;
    if (!atomic_file_open(&out, path, err)) return false;
    uint32_t version = Q8_VERSION;
    int32_t header[8] = {c->dim,        c->hidden_dim,
                         c->n_layers,   c->n_heads,
                         c->n_kv_heads, c->shared_classifier ? c->vocab_size : -c->vocab_size,
                         c->seq_len,    q->group};
    FILE *f = out.file;
    bool ok = fwrite(Q8_MAGIC, 4, 1, f) == 1 && fwrite(&version, 4, 1, f) == 1 &&
              fwrite(header, sizeof header, 1, f) == 1;
    const QuantMatrix *mats[] = {
        &q->token_embedding, &q->wq, &q->wk, &q->wv, &q->wo, &q->w1, &q->w2, &q->w3, &q->wcls};
    const float *norms[] = {m->weights.rms_att, m->weights.rms_ffn, m->weights.rms_final};
    uint64_t norm_n[] = {(uint64_t)c->n_layers * c->dim, (uint64_t)c->n_layers * c->dim,
                         (uint64_t)c->dim};
    for (int i = 0; ok && i < 9; i++) {
        if (i == 1) ok = fwrite(norms[0], sizeof(float), norm_n[0], f) == norm_n[0];
        if (i == 5) ok = ok && fwrite(norms[1], sizeof(float), norm_n[1], f) == norm_n[1];
        if (i == 8) ok = ok && fwrite(norms[2], sizeof(float), norm_n[2], f) == norm_n[2];
        const QuantMatrix *qm = mats[i];
        if (!ok || qm->q == NULL) continue; /* a tied classifier is not stored */
        size_t codes = (size_t)qm->rows * qm->cols, scales = (size_t)qm->rows * qm->groups_per_row;
        ok = fwrite(qm->q, 1, codes, f) == codes &&
             fwrite(qm->scales, sizeof(float), scales, f) == scales;
    }
    if (!ok) {
        atomic_file_discard(&out);
        return step_fail(err, "%s: write failed", path);
    }
    return atomic_file_commit(&out, err);
}

bool model_file_is_q8(const char *path) {
    StepError ignored; /* the loader that runs next says what is wrong */
    FILE *f = file_open_input(path, "model", &ignored);
    char magic[4] = {0};
    bool yes = f != NULL && fread(magic, 1, 4, f) == 4 && memcmp(magic, Q8_MAGIC, 4) == 0;
    if (f != NULL) fclose(f);
    return yes;
}

static bool read_matrix(FILE *f, QuantMatrix *m, int rows, int cols, int group) {
    if (!quant_matrix_init(m, NULL, rows, cols, group)) return false;
    size_t codes = (size_t)rows * cols, scales = (size_t)rows * m->groups_per_row;
    return fread(m->q, 1, codes, f) == codes &&
           fread(m->scales, sizeof(float), scales, f) == scales;
}

/* Long because it reads the file in its own order, header then each matrix,
 * checking every count against the file's size before anything is
 * allocated or read; split, the order of the checks would be harder to see. */
bool model_load_q8(Model *m, const char *path, StepError *err) {
    memset(m, 0, sizeof *m);
    FILE *f = file_open_input(path, "model", err);
    if (f == NULL) return false;
    struct stat st;
    char magic[4];
    uint32_t version;
    int32_t h[8];
    bool ok = fstat(fileno(f), &st) == 0 && fread(magic, 4, 1, f) == 1 &&
              memcmp(magic, Q8_MAGIC, 4) == 0 && fread(&version, 4, 1, f) == 1 &&
              fread(h, sizeof h, 1, f) == 1;
    if (!ok || version != Q8_VERSION) {
        fclose(f);
        return step_fail(err, "model %s: not a stepwise .q8 file of version %u (bad header)", path,
                         Q8_VERSION);
    }
    Config *c = &m->config;
    *c = (Config){.dim = h[0],
                  .hidden_dim = h[1],
                  .n_layers = h[2],
                  .n_heads = h[3],
                  .n_kv_heads = h[4],
                  .vocab_size = h[5] == INT32_MIN ? 0 : abs(h[5]),
                  .seq_len = h[6],
                  .shared_classifier = h[5] > 0};
    int group = h[7];
    char what[600];
    snprintf(what, sizeof what, "model %s", path);
    if (!config_validate(c, what, err)) {
        fclose(f);
        return false;
    }
    /* A .q8 file stores each weight kind of all layers as one matrix whose
     * row count is an int: refuse shapes beyond that before any size. */
    uint64_t L = (uint64_t)c->n_layers;
    if (L * (uint64_t)c->dim > INT32_MAX || L * (uint64_t)c->hidden_dim > INT32_MAX) {
        fclose(f);
        return step_fail(err, "model %s: %d layers of %d x %d are too many rows for a .q8 file",
                         path, c->n_layers, c->dim, c->hidden_dim);
    }
    if (group < 1 || group > c->dim * 64) {
        fclose(f);
        return step_fail(err, "model %s: group size %d is out of range", path, group);
    }
    uint64_t want = 4 + 4 + sizeof h + quant_weight_bytes(c, group);
    if ((uint64_t)st.st_size != want) {
        fclose(f);
        return step_fail(err, "model %s: header expects %llu bytes but the file has %llu (%s)",
                         path, (unsigned long long)want, (unsigned long long)st.st_size,
                         (uint64_t)st.st_size < want ? "truncated" : "oversized");
    }
    uint64_t d = (uint64_t)c->dim;
    m->storage = malloc((2 * L * d + d) * sizeof(float));
    QuantWeights *q = calloc(1, sizeof *q);
    ok = m->storage != NULL && q != NULL;
    if (ok) {
        q->group = group;
        m->quant = q;
        m->free_quant = quant_weights_free;
        m->weights.rms_att = m->storage;
        m->weights.rms_ffn = m->storage + L * d;
        m->weights.rms_final = m->storage + 2 * L * d;
        int Li = c->n_layers, di = c->dim, hd = c->hidden_dim, kv = config_kv_dim(c);
        ok = read_matrix(f, &q->token_embedding, c->vocab_size, di, group) &&
             fread(m->storage, sizeof(float), L * d, f) == L * d &&
             read_matrix(f, &q->wq, Li * di, di, group) &&
             read_matrix(f, &q->wk, Li * kv, di, group) &&
             read_matrix(f, &q->wv, Li * kv, di, group) &&
             read_matrix(f, &q->wo, Li * di, di, group) &&
             fread(m->storage + L * d, sizeof(float), L * d, f) == L * d &&
             read_matrix(f, &q->w1, Li * hd, di, group) &&
             read_matrix(f, &q->w2, Li * di, hd, group) &&
             read_matrix(f, &q->w3, Li * hd, di, group) &&
             fread(m->storage + 2 * L * d, sizeof(float), d, f) == d &&
             (c->shared_classifier || read_matrix(f, &q->wcls, c->vocab_size, di, group));
        q->n_layers = c->n_layers;
        ok = ok && model_bind_quant(m);
        snprintf(m->source, sizeof m->source, "stepwise .q8 (int8, group %d)", group);
    } else {
        free(q);
    }
    fclose(f);
    if (!ok) {
        model_free(m);
        return step_fail(err, "model %s: read error in the weights", path);
    }
    return true;
}
