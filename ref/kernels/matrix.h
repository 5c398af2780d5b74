/* kernels/matrix.h: one weight matrix, however it is stored.
 *
 * forward() reads every matrix through this one type: what it holds (float32,
 * float16 or bfloat16 elements, or int8 codes with group scales) and how it
 * lies (row-major, or a fast kernel's packed layout). A matrix either points
 * into memory someone else owns (a mapped file, the model's storage) or owns
 * its data (`owned`, freed by matrix_free).
 *
 * Half-precision elements are widened to float32 as they are read. Every
 * float16 and every bfloat16 is exactly a float32, so a kernel that widens
 * in registers sums exactly the products that widening the whole matrix at
 * load would: the same bits (docs/forward-pass.md). */
#ifndef STEPWISE_KERNELS_MATRIX_H
#define STEPWISE_KERNELS_MATRIX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ref/kernels/rope_rows.h"

typedef enum { ELEM_F32, ELEM_F16, ELEM_BF16 } ElementType;

typedef enum {
    MATRIX_ROWS,      /* elements row-major [rows, cols] */
    MATRIX_PACKED,    /* elements in pack.h's layout [blocks, cols, PACK_ROWS] */
    MATRIX_Q8_ROWS,   /* int8 codes [rows, cols], scales [rows, groups] (quant.h) */
    MATRIX_Q8_PACKED, /* int8 in blocks of Q8_ROWS output rows interleaved along the
                         input: codes [blocks, cols, Q8_ROWS], scales [blocks, groups,
                         Q8_ROWS] (q8_packed.h's kernel) */
    MATRIX_BLOCKS,    /* a GGUF file's quantized blocks (gguf_dequant.h), row-major: each
                         row cols / block_values blocks of block_bytes, dequantized a block
                         at a time as read, exactly as at load */
} MatrixLayout;

/* The fast kernels' layouts (pack.h, q8_packed.h): blocks of this many
 * output rows interleaved along the input. 16 floats fill one AVX-512
 * vector; 64 int8 codes do too (with fewer, gcc picks 256-bit vectors for
 * the whole loop and its 16-bit products take twice the instructions). */
#define PACK_ROWS 16
#define Q8_ROWS   64

typedef struct {
    MatrixLayout layout;
    ElementType elem; /* MATRIX_ROWS, MATRIX_PACKED */
    int rows, cols;
    const void *data;    /* the elements, or the int8 codes (MATRIX_Q8_*) */
    const float *scales; /* MATRIX_Q8_*: one per group of a row, laid out as the codes */
    int group;           /* MATRIX_Q8_*: values per scale */
    /* MATRIX_Q8_PACKED for VNNI dot products (q8_packed.c): each block's
     * codes in quads of inputs, [cols / 4, Q8_ROWS, 4], each code stored
     * plus 128 as an unsigned byte (matrix_q8_packed_code reads one back) */
    bool q8_quads;
    /* MATRIX_PACKED of float16 or bfloat16: the instruction set its kernels
     * widen with (pack_kernels.h's HalfIsa), chosen once by matrix_pack */
    int half_isa;
    /* MATRIX_PACKED: whether a prefill tile takes two blocks a step
     * (pack.c's block_tokens2_f32), chosen once by matrix_pack where its
     * sums stay in registers (pack_tile_pairs_fit) */
    bool tile_pairs;
    uint32_t block_type; /* MATRIX_BLOCKS: ggml's type number */
    size_t row_bytes;    /* MATRIX_BLOCKS: bytes of one row */
    /* MATRIX_ROWS of a Hugging Face q or k projection read in place: output
     * row r is stored row rope_source_row(r, head_dim, ROWS_TO_INTERLEAVED)
     * (hf_interleave_heads), 0 when rows are stored in order */
    int interleave_head_dim;
    void *owned; /* what matrix_free frees, or NULL: a view */
} Matrix;

/* Bytes of one element. */
size_t element_bytes(ElementType e);

/* "float32", "float16", "bfloat16". */
const char *element_name(ElementType e);

/* A row-major view of `data` [rows, cols]. */
Matrix matrix_view(ElementType e, const void *data, int rows, int cols);

/* A row-major view of GGUF blocks of ggml type `type` [rows, cols]; cols must
 * be a whole number of blocks (gguf_block_bytes). */
Matrix matrix_blocks_view(uint32_t type, const void *data, int rows, int cols);

/* A view of m's data that does not own it (a tied classifier's embedding). */
Matrix matrix_borrow(const Matrix *m);

/* Memory for a matrix's data of `bytes` (freed with free): on a cache
 * line, and from 2 MiB up in huge pages where the system gives them
 * (madvise), which a matrix read front to back at every step wants: a
 * 4 KiB page a 4 KiB read is a page walk each, and a fault each when it
 * is first written. */
void *matrix_alloc_data(size_t bytes);

/* Copy m's `bytes` of data to owned memory when they do not start at a
 * multiple of its element's size (a file's odd offset): false when out of
 * memory. */
bool matrix_align(Matrix *m, size_t bytes);

/* An owned int8 matrix [rows, cols] in `layout` (MATRIX_Q8_ROWS or
 * MATRIX_Q8_PACKED), codes and scales zeroed, in one allocation: false when
 * out of memory. */
bool matrix_q8_alloc(Matrix *m, MatrixLayout layout, int rows, int cols, int group);

/* Writable codes and scales of an owned int8 matrix (matrix_q8_alloc). */
int8_t *matrix_q8_codes(Matrix *m);
float *matrix_q8_scales(Matrix *m);

/* Row r of an int8 m, in either layout: its codes [cols] and scales
 * [groups]. */
void matrix_q8_row(const Matrix *m, int r, int8_t *codes, float *scales);

/* The code of output row b · Q8_ROWS + l, input i, of a MATRIX_Q8_PACKED
 * m, in either of its forms. */
static inline int8_t matrix_q8_packed_code(const Matrix *m, size_t b, size_t i, size_t l) {
    const uint8_t *q = (const uint8_t *)m->data + b * (size_t)m->cols * Q8_ROWS;
    if (!m->q8_quads) return (int8_t)q[i * Q8_ROWS + l];
    return (int8_t)(q[(i & ~(size_t)3) * Q8_ROWS + l * 4 + (i & 3)] ^ 0x80u);
}

/* Blocks of Q8_ROWS output rows in a MATRIX_Q8_PACKED m: the units threads
 * share out. */
int q8_blocks(const Matrix *m);

/* Output row r of a MATRIX_BLOCKS m of ggml's Q8_0 or Q4_0 as it is
 * stored: int8 codes [cols] and one scale per block of 32 [cols / 32]
 * (gguf_block_codes). False for any other matrix. */
bool matrix_blocks_codes(const Matrix *m, int r, int8_t *codes, float *scales);

/* Bytes of one stored row of a MATRIX_ROWS or MATRIX_BLOCKS m. */
size_t matrix_row_bytes(const Matrix *m);

/* Bytes a pass reads of m: every element, or codes and scales. */
uint64_t matrix_bytes(const Matrix *m);

/* The stored row that holds output row r of a MATRIX_ROWS m. */
size_t matrix_source_row(const Matrix *m, int r);

/* Row r of m widened (or dequantized) to float32 into out [cols]: exact for
 * float elements. */
void matrix_row(const Matrix *m, int r, float *out);

/* out[t][o] = Σ_i w[o][i] · x[t][i]: x is [T, C], w is [OC, C] (one row per
 * output), out is [T, OC]. One dot product at a time, each in index order
 * from 0.0f, as run.c's matmul: the plain kernel (--kernels plain), which
 * every other kernel's sums equal. */
void matmul_forward(float *out, const float *x, const float *w, int T, int C, int OC);

/* Plain kernel for a MATRIX_ROWS or MATRIX_BLOCKS m [OC, C]: out[t][o] =
 * Σ_i m[o][i] · x[t][i], each element widened (each block dequantized) as it
 * is read, summed in index order from 0.0f. */
void matmul_rows(float *out, const float *x, const Matrix *m, int T);

/* Widen n stored elements of type e to float32 (exact). */
void widen_elements(ElementType e, const void *src, size_t n, float *dst);

/* The float32 value of a bfloat16 or an IEEE half, bit for bit, in a form
 * compilers vectorise (no branches, no table). */
static inline float bf16_widen(uint16_t h) {
    union {
        uint32_t u;
        float f;
    } v = {.u = (uint32_t)h << 16};
    return v.f;
}
static inline float f16_widen(uint16_t h) {
    /* Move exponent and mantissa into float32's places and rescale by
     * 2^(127 - 15): exact for normal and subnormal halves (a power of two
     * times a float), then give infinities and NaNs float32's top exponent. */
    union {
        uint32_t u;
        float f;
    } v = {.u = (uint32_t)(h & 0x7fffu) << 13};
    v.f *= 0x1p112f;
    uint32_t top = (h & 0x7c00u) == 0x7c00u ? 0x7f800000u : 0u;
    v.u |= top | ((uint32_t)(h & 0x8000u) << 16);
    return v.f;
}

void matrix_free(Matrix *m);

#endif
