/* matrix.h: a model's matrices: the kinds a layer holds (q, k, v, o and
 * the MLP's gate, down and up; an expert's gate, down and up), their
 * shapes from the architecture, and their order wherever all of them are
 * walked. One matrix, however it is stored, is kernels/matrix.h's. */
#ifndef STEPWISE_MATRIX_H
#define STEPWISE_MATRIX_H

#include "ref/config.h"
#include "ref/kernels/matrix.h"

/* The matrices of one layer, and their order wherever all of them are
 * walked (packing, quantizing, binding, freeing). */
typedef enum {
    MAT_WQ,
    MAT_WK,
    MAT_WV,
    MAT_WO,
    MAT_GATE,
    MAT_DOWN,
    MAT_UP,
    LAYER_MATRICES
} MatrixKind;

typedef struct {
    Matrix m[LAYER_MATRICES]; /* by MatrixKind */
} LayerMatrices;

/* The one table of shapes: a layer's matrix of this kind is [rows, cols]
 * (out, in). */
void layer_matrix_shape(const Config *c, MatrixKind k, int *rows, int *cols);

/* The matrices of one expert of a mixture (moe.h): the SwiGLU MLP's gate
 * [expert_hidden_dim, dim], down [dim, expert_hidden_dim] and up
 * [expert_hidden_dim, dim], in that order wherever they are walked. */
typedef enum { EXPERT_GATE, EXPERT_DOWN, EXPERT_UP, EXPERT_MATRICES } ExpertKind;

/* An expert matrix's shape [rows, cols] (out, in). */
void expert_matrix_shape(const Config *c, ExpertKind k, int *rows, int *cols);

/* "wq", "wk", ..., for messages. */
const char *layer_matrix_name(MatrixKind k);

#endif
