/* weight_layout.h: a model's float32 weights as one table of parts: the
 * embedding, the vectors (norms, biases, positions, a mixture's routers),
 * each kind of layer matrix, the experts' and the classifier, in the one
 * order a model's storage keeps them (llama2.c's checkpoint order first,
 * then each architecture's extras). Binding storage, the seeded random
 * stream and the vectors-only storage are all walks of this table. */
#ifndef STEPWISE_WEIGHT_LAYOUT_H
#define STEPWISE_WEIGHT_LAYOUT_H

#include <stdint.h>

#include "ref/config.h"
#include "ref/matrix.h"

/* The float32 vectors a model keeps whatever holds its matrices. Each kind
 * is [count, width] (weight_vector_shape): one row per layer, per MoE layer
 * (the router: its experts' rows side by side), per position (learned
 * positions) or one in all (the final norm and its bias). */
typedef enum {
    VEC_ATT_NORM,        /* [n_layers, dim] */
    VEC_FFN_NORM,        /* [n_layers, dim] */
    VEC_FINAL_NORM,      /* [1, dim] */
    VEC_Q_BIAS,          /* qkv_bias: [n_layers, q_dim] */
    VEC_K_BIAS,          /* qkv_bias: [n_layers, kv_dim] */
    VEC_V_BIAS,          /* qkv_bias: [n_layers, kv_dim] */
    VEC_Q_NORM,          /* qk_norm: [n_layers, head_dim] */
    VEC_K_NORM,          /* qk_norm: [n_layers, head_dim] */
    VEC_ATT_NORM_BIAS,   /* NORM_LAYER: [n_layers, dim] */
    VEC_FFN_NORM_BIAS,   /* NORM_LAYER: [n_layers, dim] */
    VEC_FINAL_NORM_BIAS, /* NORM_LAYER: [1, dim] */
    VEC_O_BIAS,          /* proj_bias: [n_layers, dim] */
    VEC_GATE_BIAS,       /* proj_bias: [n_layers, hidden_dim] */
    VEC_DOWN_BIAS,       /* proj_bias: [n_layers, dim] */
    VEC_POSITIONS,       /* POS_LEARNED: [seq_len, dim] */
    VEC_POST_ATT_NORM,   /* post_norms: [n_layers, dim] */
    VEC_POST_FFN_NORM,   /* post_norms: [n_layers, dim] */
    VEC_Q_A_NORM,        /* MLA's query path: [n_layers, q_lora_rank] */
    VEC_KV_A_NORM,       /* MLA's latent: [n_layers, kv_lora_rank] */
    VEC_ROUTER,          /* a mixture's: [M MoE layers, n_experts x dim] */
    VECTOR_KINDS
} VectorKind;

/* Vector kind k's shape in c: count 0 when the architecture has none. */
void weight_vector_shape(const Config *c, VectorKind k, int *count, int *width);

/* What a vector kind's rows are: one a layer, one in all, one a position,
 * one a MoE layer (config_moe_slot). */
typedef enum { ROWS_LAYERS, ROWS_ONE, ROWS_POSITIONS, ROWS_MOE_LAYERS } VectorRows;
VectorRows weight_vector_rows(VectorKind k);

/* "attn.rms", "attn.bq", "final_norm", ..., for messages: a layer's
 * under "blocks.<l>." (weight_vector_rows). */
const char *weight_vector_name(VectorKind k);

/* One part of the table: the embedding [vocab_size, dim], a vector kind
 * over all its rows, one kind of layer matrix over the layers that hold it
 * (layer_kind_slot), one kind of expert matrix over [M, n_experts], or the
 * classifier [vocab_size, dim] (none when tied to the embedding). */
typedef enum { PART_EMBEDDING, PART_VECTOR, PART_MATRIX, PART_EXPERT, PART_CLASSIFIER } PartType;
typedef struct {
    PartType type;
    int kind; /* VectorKind, MatrixKind or ExpertKind */
} WeightPart;

#define WEIGHT_PARTS 39

/* The i-th part (0 <= i < WEIGHT_PARTS), in storage order. */
WeightPart weight_part(int i);

/* How many floats part p takes in c (0: c has none of it). */
uint64_t weight_part_floats(const Config *c, WeightPart p);

/* How model_init_random draws part p: uniform in ±1/sqrt(fan-in) (a
 * matrix's columns, or a bias's input width), or 0 for a norm's ones,
 * which take no draws. */
float weight_part_scale(const Config *c, WeightPart p);

#endif
