/* kernels/matrix.c: see matrix.h. */

/* madvise and MADV_HUGEPAGE are not POSIX; _DEFAULT_SOURCE declares them. */
#define _DEFAULT_SOURCE
#include "ref/kernels/matrix.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "ref/kernels/gguf_dequant.h"
#include "ref/kernels/quant.h"

size_t element_bytes(ElementType e) {
    return e == ELEM_F32 ? 4u : 2u;
}

const char *element_name(ElementType e) {
    return e == ELEM_F32 ? "float32" : e == ELEM_F16 ? "float16" : "bfloat16";
}

#define HUGE_PAGE ((size_t)2 << 20)

void *matrix_alloc_data(size_t bytes) {
    bytes = (bytes + 63) / 64 * 64;
    if (bytes < HUGE_PAGE) return aligned_alloc(64, bytes);
    /* C11's aligned_alloc takes a multiple of the alignment; the pages past
     * `bytes` are never touched, so never resident. */
    void *data = aligned_alloc(HUGE_PAGE, (bytes + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE);
#ifdef MADV_HUGEPAGE
    /* Advice only, and over the whole huge pages: the tail stays in small
     * pages, so that no matrix holds up to 2 MiB it never uses. */
    if (data != NULL) madvise(data, bytes / HUGE_PAGE * HUGE_PAGE, MADV_HUGEPAGE);
#endif
    return data;
}

Matrix matrix_view(ElementType e, const void *data, int rows, int cols) {
    return (Matrix){.layout = MATRIX_ROWS, .elem = e, .rows = rows, .cols = cols, .data = data};
}

Matrix matrix_blocks_view(uint32_t type, const void *data, int rows, int cols) {
    uint64_t values, bytes = gguf_block_bytes(type, &values);
    return (Matrix){.layout = MATRIX_BLOCKS,
                    .rows = rows,
                    .cols = cols,
                    .data = data,
                    .block_type = type,
                    .row_bytes = (size_t)((uint64_t)cols / values * bytes)};
}

/* Output row r of a MATRIX_BLOCKS m, dequantized into out [cols]. */
static void blocks_row(const Matrix *m, int r, float *out) {
    uint64_t values, bytes = gguf_block_bytes(m->block_type, &values);
    const unsigned char *row =
        (const unsigned char *)m->data + matrix_source_row(m, r) * m->row_bytes;
    for (uint64_t k = 0; k < (uint64_t)m->cols / values; k++)
        gguf_dequantize_block(m->block_type, row + k * bytes, out + k * values);
}

bool matrix_blocks_codes(const Matrix *m, int r, int8_t *codes, float *scales) {
    uint64_t values, bytes = gguf_block_bytes(m->block_type, &values);
    if (m->layout != MATRIX_BLOCKS || values != 32) return false;
    const unsigned char *row =
        (const unsigned char *)m->data + matrix_source_row(m, r) * m->row_bytes;
    for (uint64_t k = 0; k < (uint64_t)m->cols / 32; k++)
        if (!gguf_block_codes(m->block_type, row + k * bytes, codes + k * 32, scales + k))
            return false;
    return true;
}

Matrix matrix_borrow(const Matrix *m) {
    Matrix v = *m;
    v.owned = NULL;
    return v;
}

bool matrix_align(Matrix *m, size_t bytes) {
    size_t unit = m->layout == MATRIX_BLOCKS ? 1 : element_bytes(m->elem);
    if ((uintptr_t)m->data % unit == 0) return true;
    m->owned = malloc(bytes);
    if (m->owned == NULL) return false;
    memcpy(m->owned, m->data, bytes);
    m->data = m->owned;
    return true;
}

/* Rows a Q8 matrix's arrays hold: a packed one pads its last block. */
static size_t q8_stored_rows(MatrixLayout layout, int rows) {
    if (layout == MATRIX_Q8_ROWS) return (size_t)rows;
    return (size_t)((rows + Q8_ROWS - 1) / Q8_ROWS) * Q8_ROWS;
}

/* The codes come first, rounded up to a cache line, then the scales. */
static size_t q8_codes_bytes(const Matrix *m) {
    size_t bytes = q8_stored_rows(m->layout, m->rows) * (size_t)m->cols;
    return (bytes + 63) / 64 * 64;
}

bool matrix_q8_alloc(Matrix *m, MatrixLayout layout, int rows, int cols, int group) {
    *m = (Matrix){.layout = layout, .rows = rows, .cols = cols, .group = group};
    size_t scales = q8_stored_rows(layout, rows) * (size_t)quant_groups(cols, group);
    size_t bytes = q8_codes_bytes(m) + scales * sizeof(float);
    m->owned = matrix_alloc_data(bytes);
    if (m->owned == NULL) return false;
    memset(m->owned, 0, bytes); /* a last block's missing rows stay zeros */
    m->data = m->owned;
    m->scales = (const float *)((const char *)m->owned + q8_codes_bytes(m));
    return true;
}

int8_t *matrix_q8_codes(Matrix *m) {
    return m->owned;
}

float *matrix_q8_scales(Matrix *m) {
    return (float *)((char *)m->owned + q8_codes_bytes(m));
}

void matrix_q8_row(const Matrix *m, int r, int8_t *codes, float *scales) {
    size_t C = (size_t)m->cols, groups = (size_t)quant_groups(m->cols, m->group);
    const int8_t *q = m->data;
    if (m->layout == MATRIX_Q8_ROWS) {
        memcpy(codes, q + (size_t)r * C, C);
        memcpy(scales, m->scales + (size_t)r * groups, groups * sizeof(float));
        return;
    }
    size_t b = (size_t)(r / Q8_ROWS), l = (size_t)(r % Q8_ROWS);
    for (size_t i = 0; i < C; i++) codes[i] = matrix_q8_packed_code(m, b, i, l);
    for (size_t g = 0; g < groups; g++) scales[g] = m->scales[(b * groups + g) * Q8_ROWS + l];
}

int q8_blocks(const Matrix *m) {
    return (m->rows + Q8_ROWS - 1) / Q8_ROWS;
}

size_t matrix_row_bytes(const Matrix *m) {
    if (m->layout == MATRIX_BLOCKS) return m->row_bytes;
    return (size_t)m->cols * element_bytes(m->elem);
}

uint64_t matrix_bytes(const Matrix *m) {
    if (m->layout == MATRIX_BLOCKS) return (uint64_t)m->rows * m->row_bytes;
    if (m->layout == MATRIX_Q8_ROWS || m->layout == MATRIX_Q8_PACKED)
        return quant_matrix_bytes(m->rows, m->cols, m->group);
    return (uint64_t)m->rows * (uint64_t)m->cols * element_bytes(m->elem);
}

size_t matrix_source_row(const Matrix *m, int r) {
    if (m->interleave_head_dim == 0) return (size_t)r;
    return (size_t)rope_source_row((uint64_t)r, m->interleave_head_dim, ROWS_TO_INTERLEAVED);
}

void widen_elements(ElementType e, const void *src, size_t n, float *dst) {
    const uint16_t *h = src;
    switch (e) {
        case ELEM_F32:
            memcpy(dst, src, n * sizeof(float));
            break;
        case ELEM_F16:
            for (size_t i = 0; i < n; i++) dst[i] = f16_widen(h[i]);
            break;
        case ELEM_BF16:
            for (size_t i = 0; i < n; i++) dst[i] = bf16_widen(h[i]);
            break;
    }
}

/* Element i of a packed matrix's row r. */
static void packed_matrix_row(const Matrix *m, int r, float *out) {
    size_t at = (size_t)(r / PACK_ROWS) * m->cols * PACK_ROWS + r % PACK_ROWS;
    size_t size = element_bytes(m->elem);
    for (int i = 0; i < m->cols; i++)
        widen_elements(m->elem, (const char *)m->data + (at + (size_t)i * PACK_ROWS) * size, 1,
                       out + i);
}

void matrix_row(const Matrix *m, int r, float *out) {
    size_t C = (size_t)m->cols;
    switch (m->layout) {
        case MATRIX_ROWS:
            widen_elements(m->elem,
                           (const char *)m->data +
                               matrix_source_row(m, r) * C * element_bytes(m->elem),
                           C, out);
            break;
        case MATRIX_PACKED:
            packed_matrix_row(m, r, out);
            break;
        case MATRIX_Q8_ROWS: {
            size_t groups = (size_t)quant_groups(m->cols, m->group);
            dequantize_row((const int8_t *)m->data + (size_t)r * C, m->scales + (size_t)r * groups,
                           m->cols, m->group, out);
            break;
        }
        case MATRIX_Q8_PACKED: { /* code · its group's scale, as dequantize_row */
            size_t b = (size_t)(r / Q8_ROWS), l = (size_t)(r % Q8_ROWS);
            size_t groups = (size_t)quant_groups(m->cols, m->group);
            for (size_t i = 0; i < C; i++)
                out[i] = (float)matrix_q8_packed_code(m, b, i, l) *
                         m->scales[(b * groups + i / (size_t)m->group) * Q8_ROWS + l];
            break;
        }
        case MATRIX_BLOCKS:
            blocks_row(m, r, out);
            break;
    }
}

/* Σ_i row[i] · x[i] for a row of C elements of type e, each widened as it
 * is read, summed in index order from 0.0f. */
static float dot_elements(ElementType e, const void *row, const float *x, int C) {
    const uint16_t *h = row;
    const float *f = row;
    float sum = 0.0f;
    switch (e) {
        case ELEM_F32:
            for (int i = 0; i < C; i++) sum += f[i] * x[i];
            break;
        case ELEM_F16:
            for (int i = 0; i < C; i++) sum += f16_widen(h[i]) * x[i];
            break;
        case ELEM_BF16:
            for (int i = 0; i < C; i++) sum += bf16_widen(h[i]) * x[i];
            break;
    }
    return sum;
}

/* The blocks kernel: each row is read a block at a time, dequantized once
 * into a block's worth of floats (as at load) for every token, and each
 * token's sum out[t][o], started at 0.0f, goes on in index order: the same
 * sum as over the row widened whole. */
static void matmul_blocks(float *out, const float *x, const Matrix *m, int T) {
    int C = m->cols, OC = m->rows;
    uint64_t values, bytes = gguf_block_bytes(m->block_type, &values);
    float block[GGUF_MAX_BLOCK_VALUES];
    for (int o = 0; o < OC; o++) {
        const unsigned char *row =
            (const unsigned char *)m->data + matrix_source_row(m, o) * m->row_bytes;
        for (int t = 0; t < T; t++) out[(size_t)t * OC + o] = 0.0f;
        for (int k = 0; k < C / (int)values; k++) {
            gguf_dequantize_block(m->block_type, row + (size_t)k * bytes, block);
            for (int t = 0; t < T; t++) {
                const float *xt = x + (size_t)t * C + (size_t)k * values;
                float sum = out[(size_t)t * OC + o];
                for (int i = 0; i < (int)values; i++) sum += block[i] * xt[i];
                out[(size_t)t * OC + o] = sum;
            }
        }
    }
}

/* The plain kernel: one dot product at a time, each summed in index order
 * from 0.0f, with no fused multiply-add (-ffp-contract=off): the loop of
 * run.c's matmul, over T tokens. `--kernels plain` runs the model on this
 * (and quant.c's matmul_q8_rows); the fast kernels (pack.c,
 * q8_packed.c) compute the same sums in the same order, many at once,
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

void matmul_rows(float *out, const float *x, const Matrix *m, int T) {
    int C = m->cols, OC = m->rows;
    if (m->layout == MATRIX_BLOCKS) {
        matmul_blocks(out, x, m, T);
        return;
    }
    if (m->elem == ELEM_F32 && m->interleave_head_dim == 0) { /* the textbook loop */
        matmul_forward(out, x, m->data, T, C, OC);
        return;
    }
    size_t size = element_bytes(m->elem);
    for (int t = 0; t < T; t++) {
        const float *xt = x + (size_t)t * C;
        for (int o = 0; o < OC; o++) {
            const char *row = (const char *)m->data + matrix_source_row(m, o) * C * size;
            out[(size_t)t * OC + o] = dot_elements(m->elem, row, xt, C);
        }
    }
}

void matrix_free(Matrix *m) {
    free(m->owned);
    *m = (Matrix){0};
}
