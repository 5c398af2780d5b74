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
 * model is loaded (model_pack). docs/performance.md. */
#ifndef STEPWISE_PACK_H
#define STEPWISE_PACK_H

#include "ref/matrix.h"
#include "ref/model.h"

/* Blocks of PACK_ROWS output rows in a packed matrix: the units threads
 * share out. */
int packed_blocks(const Matrix *w);

/* out[t][o] = Σ_i w[o][i] · x[t][i] for the output rows o of blocks b0..b1-1
 * of the packed w [OC, C]: x [T, C], out [T, OC]. Bitwise equal to the
 * row-major loops. */
void matmul_packed_blocks(float *out, const float *x, const Matrix *w, int T, int b0, int b1);

/* The same over every block. */
void matmul_packed(float *out, const float *x, const Matrix *w, int T);

/* w (MATRIX_ROWS) in the packed layout, owned, same element type: into *p. */
bool matrix_pack(Matrix *p, const Matrix *w);

/* Repack m's row-major float matrices (any element type) for the fast
 * kernels, giving each source's memory back as it is packed (a mapped file's
 * pages, an owned copy, the model's storage). A tied embedding is then read
 * from the packed classifier. Nothing to do for an int8 model. */
bool model_pack(Model *m, StepError *err);

#endif
