/* pack.h: float matrices in the layout the fast matmul reads.
 *
 * A matrix [rows, C] is stored in blocks of PACK_ROWS output rows,
 * interleaved along the input: block b holds, for i = 0..C-1, the values
 * w[16b + 0][i], ..., w[16b + 15][i] side by side (rows past the end are
 * zeros). A kernel then reads 16 output rows' weights for input i with one
 * contiguous load, and keeps 16 independent sums, one per row, each summed in
 * index order from 0.0f: bitwise the one-at-a-time result. The elements keep
 * the type they were stored in (float32, float16, bfloat16), and are widened
 * in registers as they are read: half-precision weights are packed in half
 * the bytes, and give the same bits. The layout is chosen once, when the
 * model is loaded (model_pack.h). docs/performance.md. */
#ifndef STEPWISE_PACK_H
#define STEPWISE_PACK_H

#include "ref/kernels/matrix.h"

/* Blocks of PACK_ROWS output rows in a packed matrix: the units threads
 * share out. */
int packed_blocks(const Matrix *w);

/* out[t][o] = Σ_i w[o][i] · x[t][i] for the output rows o of blocks b0..b1-1
 * of the packed w [OC, C]: x [T, C], out [T, OC]. Bitwise equal to the
 * row-major loops. */
void matmul_packed_blocks(float *out, const float *x, const Matrix *w, int T, int b0, int b1);

/* The same over every block. */
void matmul_packed(float *out, const float *x, const Matrix *w, int T);

/* Whether the prefill tile's two-blocks-a-step form keeps its twelve
 * sums in registers on this processor: what matrix_pack sets tile_pairs
 * to. Either form gives the same bits. */
bool pack_tile_pairs_fit(void);

/* w (MATRIX_ROWS) in the packed layout, owned, same element type: into *p. */
bool matrix_pack(Matrix *p, const Matrix *w);

/* Told the source rows r0..r1-1 a packing is done with, so that whoever
 * holds them may give their memory back as it goes (model_pack.h). */
typedef void (*PackReleaseRows)(void *ctx, const Matrix *w, int r0, int r1);

/* matrix_pack telling release (may be NULL) after each run of rows, so that
 * the two layouts never both hold the whole matrix. Elements keep their
 * type; GGUF blocks are dequantized into float32, as at load. */
bool matrix_pack_releasing(Matrix *p, const Matrix *w, PackReleaseRows release, void *ctx);

#endif
