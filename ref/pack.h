/* pack.h: the float32 weights in the layout the fast matmul reads.
 *
 * A matrix [rows, C] is stored in blocks of PACK_ROWS output rows,
 * interleaved along the input: block b holds, for i = 0..C-1, the values
 * w[16b + 0][i], ..., w[16b + 15][i] side by side (rows past the end are
 * zeros). A kernel then reads 16 output rows' weights for input i with one
 * contiguous load, and keeps 16 independent sums, one per row, each summed in
 * index order from 0.0f: bitwise the one-at-a-time result. The layout is
 * chosen once, when the model is loaded (model_pack). docs/performance.md. */
#ifndef STEPWISE_PACK_H
#define STEPWISE_PACK_H

#include "model.h"

#define PACK_ROWS 16 /* one AVX-512 vector of floats */

typedef struct {
    int rows, cols;
    float *data; /* [ceil(rows / PACK_ROWS), cols, PACK_ROWS] */
} PackedMatrix;

typedef struct PackedWeights {
    PackedMatrix *wq, *wk, *wv, *wo, *w1, *w2, *w3; /* [n_layers] each */
    PackedMatrix wcls;                              /* the classifier (the embedding if tied) */
} PackedWeights;

/* out[t][o] = Σ_i w[o][i] · x[t][i] for the packed w [OC, C]: x [T, C],
 * out [T, OC]. Bitwise equal to the row-major loops. */
void matmul_packed(float *out, const float *x, const PackedMatrix *w, int T);

/* Blocks of PACK_ROWS output rows in w: the units threads share out. */
int packed_blocks(const PackedMatrix *w);

/* matmul_packed for the output rows of blocks b0..b1-1 only. */
void matmul_packed_blocks(float *out, const float *x, const PackedMatrix *w, int T, int b0, int b1);

/* Row r of a packed matrix, unpacked into out [cols]. */
void packed_row(const PackedMatrix *m, int r, float *out);

/* Repack m's float matrices for the fast kernels and drop their row-major
 * copies (m->weights' matrix views become NULL; a tied embedding is then
 * read from the packed classifier). Nothing to do for an int8 model. */
bool model_pack(Model *m, StepError *err);

void packed_weights_free(PackedWeights *p, int n_layers);

#endif
