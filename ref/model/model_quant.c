/* model_quant.c: see model_quant.h. */
#include "ref/model/model_quant.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ref/util/file_util.h"
#include "ref/kernels/gguf_dequant.h"
#include "ref/kernels/q8_packed.h"
#include "ref/model/model_pack.h"

int quant_widest_row(const Config *c) {
    int widest = c->dim;
    for (int k = 0; k < LAYER_MATRICES; k++) {
        int rows, cols;
        layer_matrix_shape(c, (MatrixKind)k, &rows, &cols);
        widest = cols > widest ? cols : widest;
    }
    return c->expert_hidden_dim > widest ? c->expert_hidden_dim : widest;
}

#define QUANT_RELEASE_ROWS 256 /* rows of a source released at a time */

/* q = src quantized a row at a time (owned, row-major), from whatever src
 * holds: each row widened or dequantized to float32 first (row [cols]).
 * A source in a mapped file gives its pages back as it goes (read again
 * from the file if the trace asks for the originals), so that the two
 * copies never both hold a whole matrix. */
static bool quantize_matrix(const Model *m, Matrix *q, const Matrix *src, int group, float *row) {
    if (!matrix_q8_alloc(q, MATRIX_Q8_ROWS, src->rows, src->cols, group)) return false;
    int8_t *codes = matrix_q8_codes(q);
    float *scales = matrix_q8_scales(q);
    /* GGUF Q8_0 or Q4_0 in groups of 32 already is int8 with a scale a
     * group: its own codes and scales, as stored (for a file quantized by
     * ggml's rule, what quantizing its dequantized values gives) */
    size_t per_row = (size_t)quant_groups(src->cols, group);
    bool as_stored = group == 32 && matrix_blocks_codes(src, 0, codes, scales);
    for (int r0 = 0; as_stored && r0 < src->rows; r0 += QUANT_RELEASE_ROWS) {
        int r1 = r0 + QUANT_RELEASE_ROWS < src->rows ? r0 + QUANT_RELEASE_ROWS : src->rows;
        for (int r = r0; r < r1; r++)
            matrix_blocks_codes(src, r, codes + (size_t)r * src->cols,
                                scales + (size_t)r * per_row);
        if (src->owned == NULL) /* a mapped file's blocks: their pages go back as copied */
            model_release_bytes(m, (const char *)src->data + (size_t)r0 * src->row_bytes,
                                (size_t)(r1 - r0) * src->row_bytes);
    }
    if (as_stored) return true;
    size_t C = (size_t)src->cols, groups = (size_t)quant_groups(src->cols, group);
    bool stored =
        (src->layout == MATRIX_ROWS || src->layout == MATRIX_BLOCKS) && src->owned == NULL;
    size_t row_bytes = stored ? matrix_row_bytes(src) : 0;
    const char *data = src->data;
    for (int r0 = 0; r0 < src->rows; r0 += QUANT_RELEASE_ROWS) {
        int r1 = r0 + QUANT_RELEASE_ROWS < src->rows ? r0 + QUANT_RELEASE_ROWS : src->rows;
        for (int r = r0; r < r1; r++) {
            matrix_row(src, r, row);
            quantize_row(row, src->cols, group, codes + (size_t)r * C, scales + (size_t)r * groups);
        }
        if (stored && src->interleave_head_dim == 0) /* these rows are the stored ones */
            model_release_bytes(m, data + (size_t)r0 * row_bytes, (size_t)(r1 - r0) * row_bytes);
    }
    if (stored && src->interleave_head_dim != 0) /* read out of order: all at the end */
        model_release_bytes(m, data, (size_t)src->rows * row_bytes);
    return true;
}

/* Put the int8 q where the float matrix *slot was (an owned float copy is
 * freed). */
static void replace_matrix(Matrix *slot, Matrix *q) {
    matrix_free(slot);
    *slot = *q;
}

/* Long because it walks every matrix in one order, layers then the
 * embedding and the classifier, with one cleanup path. */
bool model_quantize(Model *m, int group, StepError *err) {
    if (group < 1) return step_fail(err, "quantization group must be >= 1, got %d", group);
    if (m->weight_group > 0) return step_fail(err, "quantize: the model is already int8");
    const Config *c = &m->config;
    int n = model_matrix_count(m), total = n + 2;
    float *row = malloc((size_t)quant_widest_row(c) * sizeof(float));
    bool ok = row != NULL && m->layers != NULL;
    for (int i = 0; ok && i < n; i++) {
        Matrix *w = model_matrix_at(m, i), q;
        if (w->rows == 0) continue; /* a kind the architecture has none of */
        ok = quantize_matrix(m, &q, w, group, row);
        if (ok) replace_matrix(w, &q);
        progress_report(m->progress, "quantizing to int8 (matrices)", (uint64_t)i + 1,
                        (uint64_t)total);
    }
    /* A tied classifier is the embedding: quantized once, and borrowed. */
    bool tied = c->shared_classifier;
    Matrix embedding = {0}, classifier = {0};
    ok = ok && quantize_matrix(m, &embedding, &m->embedding, group, row);
    ok = ok && (tied || quantize_matrix(m, &classifier, &m->classifier, group, row));
    if (ok) {
        replace_matrix(&m->classifier, tied ? &(Matrix){0} : &classifier);
        replace_matrix(&m->embedding, &embedding);
        if (tied) m->classifier = matrix_borrow(&m->embedding);
        m->weight_group = group;
        progress_report(m->progress, "quantizing to int8 (matrices)", total, total);
    } else {
        matrix_free(&embedding), matrix_free(&classifier);
    }
    free(row);
    /* On failure some matrices are int8 and some not: m is fit only for
     * model_free. */
    return ok || step_fail(err, "quantize: out of memory");
}

/* Whether w is GGUF blocks whose codes and scales are int8 in groups of
 * 32 as stored (matrix_blocks_codes reads them): Q8_0, Q4_0. */
static bool int8_blocks(const Matrix *w) {
    return w->layout == MATRIX_BLOCKS && (w->block_type == GGML_Q8_0 || w->block_type == GGML_Q4_0);
}

bool model_adopt_q8_blocks(Model *m) {
    if (m->weight_group > 0 || m->layers == NULL) return false;
    for (int i = 0; i < model_matrix_count(m); i++) {
        const Matrix *w = model_matrix_at(m, i);
        if (w->rows > 0 && !int8_blocks(w)) return false;
    }
    if (!int8_blocks(&m->embedding) || !int8_blocks(&m->classifier)) return false;
    m->weight_group = 32;
    return true;
}

bool model_pack_q8(Model *m, bool int8_activations, StepError *err) {
    if (m->classifier.layout == MATRIX_Q8_PACKED) m->fast_kernels = true;
    if (m->weight_group == 0 || m->classifier.layout == MATRIX_Q8_PACKED) return true;
    bool tied = m->embedding.data == m->classifier.data, ok = true;
    for (int i = 0; ok && i < model_matrix_count(m); i++) {
        Matrix *w = model_matrix_at(m, i), p;
        if (w->rows == 0) continue;
        ok = matrix_pack_q8_releasing(&p, w, int8_activations, model_pack_release_rows, m);
        if (ok) matrix_free(w), *w = p;
    }
    Matrix classifier;
    ok = ok && matrix_pack_q8_releasing(&classifier, &m->classifier, int8_activations,
                                        model_pack_release_rows, m);
    if (ok) {
        matrix_free(&m->classifier), m->classifier = classifier;
        /* a tied embedding is looked up in the packed classifier, as floats are */
        if (tied) matrix_free(&m->embedding), m->embedding = matrix_borrow(&m->classifier);
        model_choose_fast_kernels(m); /* the block's fast kernels from here on */
    }
    return ok || step_fail(err, "int8 packing: out of memory");
}

uint64_t quant_weight_bytes(const Config *c, int group) {
    uint64_t L = (uint64_t)c->n_layers, d = (uint64_t)c->dim;
    /* every float32 vector: the norms (and their biases), the biases, the
     * q/k norms, MLA's norms, GPT-2's position table: the same count as the
     * parameters' (config_param_count) */
    uint64_t floats = L * config_layer_vector_floats(c) + config_final_vector_floats(c);
    if (c->position == POS_LEARNED) floats += (uint64_t)c->seq_len * d;
    uint64_t bytes = quant_matrix_bytes(c->vocab_size, c->dim, group) + /* the embedding */
                     floats * sizeof(float);
    if (!c->shared_classifier) bytes += quant_matrix_bytes(c->vocab_size, c->dim, group);
    for (int k = 0; k < LAYER_MATRICES; k++) { /* each kind in every layer that has it */
        int rows, cols;
        layer_matrix_shape(c, (MatrixKind)k, &rows, &cols);
        if (rows > 0)
            bytes += (uint64_t)layer_kind_layers(c, (MatrixKind)k) *
                     quant_matrix_bytes(rows, cols, group);
    }
    if (c->n_experts > 0) { /* each expert's three, and the float32 router */
        uint64_t experts = (L - (uint64_t)config_dense_layers(c)) * (uint64_t)c->n_experts;
        for (int k = 0; k < EXPERT_MATRICES; k++) {
            int rows, cols;
            expert_matrix_shape(c, (ExpertKind)k, &rows, &cols);
            bytes += experts * quant_matrix_bytes(rows, cols, group);
        }
        bytes += experts * d * sizeof(float);
    }
    return bytes;
}
