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
    /* multi-head latent attention's (DeepSeek-V2; rows 0 elsewhere): the
     * query's low-rank path (q_a, then its norm, then q_b: for wq), the
     * latent and rotary key from x (kv_a) and each head's key and value
     * from the latent (kv_b; wk and wv have rows 0) */
    MAT_Q_A,
    MAT_Q_B,
    MAT_KV_A,
    MAT_KV_B,
    /* the shared experts beside the routed ones, as one SwiGLU MLP of
     * n_shared_experts x expert_hidden_dim (DeepSeek-V2's MoE layers) */
    MAT_SHARED_GATE,
    MAT_SHARED_DOWN,
    MAT_SHARED_UP,
    LAYER_MATRICES
} MatrixKind;

typedef struct {
    Matrix m[LAYER_MATRICES]; /* by MatrixKind */
} LayerMatrices;

/* The one table of shapes: a layer's matrix of this kind is [rows, cols]
 * (out, in); rows 0 for a kind the architecture has none of. */
void layer_matrix_shape(const Config *c, MatrixKind k, int *rows, int *cols);

/* How many layers hold a matrix of kind k, and layer l's place among them
 * (the order storage keeps them in): the dense MLP's in the dense layers
 * (config_dense_slot), the shared experts' in the MoE layers
 * (config_moe_slot), the rest in every layer. */
int layer_kind_layers(const Config *c, MatrixKind k);
bool layer_has_kind(const Config *c, MatrixKind k, int l);
int layer_kind_slot(const Config *c, MatrixKind k, int l);

/* The matrices of one expert of a mixture (moe.h): the SwiGLU MLP's gate
 * [expert_hidden_dim, dim], down [dim, expert_hidden_dim] and up
 * [expert_hidden_dim, dim], in that order wherever they are walked. */
typedef enum { EXPERT_GATE, EXPERT_DOWN, EXPERT_UP, EXPERT_MATRICES } ExpertKind;

/* An expert matrix's shape [rows, cols] (out, in). */
void expert_matrix_shape(const Config *c, ExpertKind k, int *rows, int *cols);

/* "wq", "wk", ..., for messages. */
const char *layer_matrix_name(MatrixKind k);

#endif
