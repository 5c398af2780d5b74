/* q8_file.c: see q8_file.h. */
#include "ref/formats/q8_file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ref/kernels/quant.h"
#include "ref/util/file_util.h"

#define Q8_MAGIC   "SWQ8"
#define Q8_VERSION 1u

/* The file's int8 tensors, in its order: 0 the embedding, 1..7 the layer
 * kinds in MatrixKind order (each over every layer), 8 the classifier
 * (stored only when untied). How many matrices tensor t joins: */
static int q8_tensor_count(const Config *c, int t) {
    return t == 0 || t == 8 ? 1 : c->n_layers;
}

/* Matrix i of tensor t. */
static const Matrix *q8_tensor(const Model *m, int t, int i) {
    if (t == 0) return &m->embedding;
    if (t == 8) return &m->classifier;
    return &m->layers[i].m[t - 1];
}

/* The same, to fill (m is the loader's own). */
static Matrix *q8_tensor_slot(Model *m, int t, int i) {
    return (Matrix *)q8_tensor(m, t, i);
}

/* The norm the file stores before tensor `tensor` (rms_att before wq,
 * rms_ffn before the gate, rms_final before the classifier), with its length. */
static const float *q8_norm_before(const Model *m, int tensor, uint64_t *n) {
    const Config *c = &m->config;
    uint64_t L = (uint64_t)c->n_layers, d = (uint64_t)c->dim;
    *n = tensor == 8 ? d : L * d;
    if (tensor == 1) return model_vector(m, VEC_ATT_NORM, 0); /* every layer's rows in turn */
    if (tensor == 5) return model_vector(m, VEC_FFN_NORM, 0);
    if (tensor == 8) return model_vector(m, VEC_FINAL_NORM, 0);
    return NULL;
}

/* One file tensor: every row's codes of every matrix in turn, then every
 * row's scales. */
static bool write_q8_tensor(FILE *f, const Model *m, int t, int8_t *codes, float *scales) {
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < q8_tensor_count(&m->config, t); i++) {
            const Matrix *x = q8_tensor(m, t, i);
            size_t groups = (size_t)quant_groups(x->cols, x->group);
            for (int r = 0; r < x->rows; r++) {
                matrix_q8_row(x, r, codes, scales);
                bool ok = pass == 0 ? fwrite(codes, 1, (size_t)x->cols, f) == (size_t)x->cols
                                    : fwrite(scales, sizeof(float), groups, f) == groups;
                if (!ok) return false;
            }
        }
    }
    return true;
}

bool model_save_q8(const Model *m, const char *path, StepError *err) {
    if (!config_is_llama2c(&m->config))
        return step_fail(err, "%s: a .q8 file holds llama2.c's architecture only", path);
    const Config *c = &m->config;
    if (m->weight_group == 0) return step_fail(err, "save: the model is not quantized");
    AtomicFile out;
    if (!atomic_file_open(&out, path, err)) return false;
    uint32_t version = Q8_VERSION;
    int32_t header[8] = {c->dim,        c->hidden_dim,
                         c->n_layers,   c->n_heads,
                         c->n_kv_heads, c->shared_classifier ? c->vocab_size : -c->vocab_size,
                         c->seq_len,    m->weight_group};
    FILE *f = out.file;
    int8_t *codes = malloc((size_t)quant_widest_row(c));
    float *scales = malloc((size_t)quant_widest_row(c) * sizeof(float));
    bool ok = codes != NULL && scales != NULL && fwrite(Q8_MAGIC, 4, 1, f) == 1 &&
              fwrite(&version, 4, 1, f) == 1 && fwrite(header, sizeof header, 1, f) == 1;
    for (int t = 0; ok && t < 9; t++) {
        uint64_t n;
        const float *norm = q8_norm_before(m, t, &n);
        if (norm != NULL) ok = fwrite(norm, sizeof(float), n, f) == n;
        if (t < 8 || !c->shared_classifier) ok = ok && write_q8_tensor(f, m, t, codes, scales);
    }
    free(codes), free(scales);
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

/* Tensor t of the file into m's matrices (owned, row-major): every row's
 * codes of every matrix in turn, then every row's scales. */
static bool read_q8_tensor(FILE *f, Model *m, int t, int group) {
    const Config *c = &m->config;
    for (int i = 0; i < q8_tensor_count(c, t); i++) {
        int rows = c->vocab_size, cols = c->dim;
        if (t > 0 && t < 8) layer_matrix_shape(c, (MatrixKind)(t - 1), &rows, &cols);
        Matrix *x = q8_tensor_slot(m, t, i);
        size_t codes = (size_t)rows * (size_t)cols;
        if (!matrix_q8_alloc(x, MATRIX_Q8_ROWS, rows, cols, group) ||
            fread(matrix_q8_codes(x), 1, codes, f) != codes)
            return false;
    }
    for (int i = 0; i < q8_tensor_count(c, t); i++) {
        Matrix *x = q8_tensor_slot(m, t, i);
        size_t scales = (size_t)x->rows * (size_t)quant_groups(x->cols, group);
        if (fread(matrix_q8_scales(x), sizeof(float), scales, f) != scales) return false;
    }
    return true;
}

/* Long because it reads the file in its own order, header then each matrix,
 * checking every count against the file's size before anything is
 * allocated or read; split, the order of the checks would be harder to see. */
/* Long because it checks the header, the shape and the file's size before
 * it reads a weight, with one cleanup path. */
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
              fread(h, sizeof h, 1, f) == 1 && version == Q8_VERSION;
    if (!ok) {
        step_fail(err, "model %s: not a stepwise .q8 file of version %u (bad header)", path,
                  Q8_VERSION);
        goto done;
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
    if (!(ok = config_validate(c, what, err))) goto done;
    /* A .q8 file stores each weight kind of all layers as one matrix whose
     * row count is an int: refuse shapes beyond that before any size. */
    uint64_t L = (uint64_t)c->n_layers;
    if (L * (uint64_t)c->dim > INT32_MAX || L * (uint64_t)c->hidden_dim > INT32_MAX) {
        ok = step_fail(err, "model %s: %d layers of %d x %d are too many rows for a .q8 file", path,
                       c->n_layers, c->dim, c->hidden_dim);
        goto done;
    }
    if (group < 1 || group > c->dim * 64) {
        ok = step_fail(err, "model %s: group size %d is out of range", path, group);
        goto done;
    }
    uint64_t want = 4 + 4 + sizeof h + quant_weight_bytes(c, group);
    if ((uint64_t)st.st_size != want) {
        ok = step_fail(err, "model %s: header expects %llu bytes but the file has %llu (%s)", path,
                       (unsigned long long)want, (unsigned long long)st.st_size,
                       (uint64_t)st.st_size < want ? "truncated" : "oversized");
        goto done;
    }
    if (!(ok = model_alloc_vectors(m, err))) goto done;
    for (int t = 0; ok && t < 9; t++) {
        uint64_t n;
        const float *norm = q8_norm_before(m, t, &n);
        if (norm != NULL) ok = fread(model_weight_slot(m, norm), sizeof(float), n, f) == n;
        if (t < 8 || !c->shared_classifier) ok = ok && read_q8_tensor(f, m, t, group);
    }
    if (!ok) {
        step_fail(err, "model %s: read error in the weights", path);
        goto done;
    }
    if (c->shared_classifier) m->classifier = matrix_borrow(&m->embedding);
    m->weight_group = group;
    snprintf(m->source, sizeof m->source, "stepwise .q8 (int8, group %d)", group);
    ok = model_rope_init(m, err);
done:
    fclose(f);
    if (!ok) model_free(m);
    return ok;
}
