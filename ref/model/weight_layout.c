/* weight_layout.c: see weight_layout.h. */
#include "ref/model/weight_layout.h"

#include <math.h>

/* The storage order. llama2.c's checkpoint body first (its RoPE tables
 * aside), then the extras, each after the one it was added beside. The
 * order is a file format's (a .bin's body) and the seeded random stream's:
 * a part moved here changes every random model. */
static const WeightPart STORAGE_ORDER[WEIGHT_PARTS] = {
    {PART_EMBEDDING, 0},
    {PART_VECTOR, VEC_ATT_NORM},
    {PART_MATRIX, MAT_WQ},
    {PART_MATRIX, MAT_WK},
    {PART_MATRIX, MAT_WV},
    {PART_MATRIX, MAT_WO},
    {PART_VECTOR, VEC_FFN_NORM},
    {PART_MATRIX, MAT_GATE},
    {PART_MATRIX, MAT_DOWN},
    {PART_MATRIX, MAT_UP},
    {PART_VECTOR, VEC_FINAL_NORM},
    {PART_CLASSIFIER, 0},
    /* the architectures' extras, after llama2.c's layout */
    {PART_VECTOR, VEC_Q_BIAS},
    {PART_VECTOR, VEC_K_BIAS},
    {PART_VECTOR, VEC_V_BIAS},
    {PART_VECTOR, VEC_Q_NORM},
    {PART_VECTOR, VEC_K_NORM},
    {PART_VECTOR, VEC_ATT_NORM_BIAS},
    {PART_VECTOR, VEC_FFN_NORM_BIAS},
    {PART_VECTOR, VEC_FINAL_NORM_BIAS},
    {PART_VECTOR, VEC_O_BIAS},
    {PART_VECTOR, VEC_GATE_BIAS},
    {PART_VECTOR, VEC_DOWN_BIAS},
    {PART_VECTOR, VEC_POSITIONS},
    {PART_VECTOR, VEC_POST_ATT_NORM},
    {PART_VECTOR, VEC_POST_FFN_NORM},
    {PART_VECTOR, VEC_Q_A_NORM},
    {PART_VECTOR, VEC_KV_A_NORM},
    {PART_VECTOR, VEC_ROUTER},
    {PART_EXPERT, EXPERT_GATE},
    {PART_EXPERT, EXPERT_DOWN},
    {PART_EXPERT, EXPERT_UP},
    /* MLA's matrices and the shared experts, each kind over the layers that hold it */
    {PART_MATRIX, MAT_Q_A},
    {PART_MATRIX, MAT_Q_B},
    {PART_MATRIX, MAT_KV_A},
    {PART_MATRIX, MAT_KV_B},
    {PART_MATRIX, MAT_SHARED_GATE},
    {PART_MATRIX, MAT_SHARED_DOWN},
    {PART_MATRIX, MAT_SHARED_UP},
};

WeightPart weight_part(int i) {
    return STORAGE_ORDER[i];
}

/* What a vector's random values are scaled by: nothing (a norm's ones) or
 * 1/sqrt of the width of what it is added to's input. */
typedef enum { FAN_ONES, FAN_DIM, FAN_Q_DIM, FAN_HIDDEN } FanIn;

static const struct {
    const char *name;
    FanIn fan_in;
    VectorRows rows;
} VECTORS[VECTOR_KINDS] = {
    [VEC_ATT_NORM] = {"attn.rms", FAN_ONES, ROWS_LAYERS},
    [VEC_FFN_NORM] = {"mlp.rms", FAN_ONES, ROWS_LAYERS},
    [VEC_FINAL_NORM] = {"final_norm", FAN_ONES, ROWS_ONE},
    /* biases as small as a weight row's contribution (a bias of 0 would
     * hide its use), q/k norms ones (as a trained model starts) */
    [VEC_Q_BIAS] = {"attn.bq", FAN_DIM, ROWS_LAYERS},
    [VEC_K_BIAS] = {"attn.bk", FAN_DIM, ROWS_LAYERS},
    [VEC_V_BIAS] = {"attn.bv", FAN_DIM, ROWS_LAYERS},
    [VEC_Q_NORM] = {"attn.q_norm", FAN_ONES, ROWS_LAYERS},
    [VEC_K_NORM] = {"attn.k_norm", FAN_ONES, ROWS_LAYERS},
    [VEC_ATT_NORM_BIAS] = {"attn.norm_bias", FAN_DIM, ROWS_LAYERS},
    [VEC_FFN_NORM_BIAS] = {"mlp.norm_bias", FAN_DIM, ROWS_LAYERS},
    [VEC_FINAL_NORM_BIAS] = {"final_norm_bias", FAN_DIM, ROWS_ONE},
    [VEC_O_BIAS] = {"attn.bo", FAN_Q_DIM, ROWS_LAYERS},
    [VEC_GATE_BIAS] = {"mlp.b_gate", FAN_DIM, ROWS_LAYERS},
    [VEC_DOWN_BIAS] = {"mlp.b_down", FAN_HIDDEN, ROWS_LAYERS},
    [VEC_POSITIONS] = {"position_embedding", FAN_DIM, ROWS_POSITIONS},
    [VEC_POST_ATT_NORM] = {"attn.post_norm", FAN_ONES,
                           ROWS_LAYERS}, /* Gemma's: ones, as the other norms */
    [VEC_POST_FFN_NORM] = {"mlp.post_norm", FAN_ONES, ROWS_LAYERS},
    [VEC_Q_A_NORM] = {"attn.q_a_norm", FAN_ONES, ROWS_LAYERS},
    [VEC_KV_A_NORM] = {"attn.kv_a_norm", FAN_ONES, ROWS_LAYERS},
    [VEC_ROUTER] = {"moe.router", FAN_DIM, ROWS_MOE_LAYERS},
};

VectorRows weight_vector_rows(VectorKind k) {
    return VECTORS[k].rows;
}

const char *weight_vector_name(VectorKind k) {
    return VECTORS[k].name;
}

void weight_vector_shape(const Config *c, VectorKind k, int *count, int *width) {
    int L = c->n_layers, d = c->dim;
    int moe = c->n_experts > 0 ? c->n_layers - config_dense_layers(c) : 0;
    bool mla = config_mla(c), layer_norm = c->norm == NORM_LAYER;
    int n = 0, w = 0;
    switch (k) {
        case VEC_ATT_NORM:
        case VEC_FFN_NORM:
            n = L, w = d;
            break;
        case VEC_FINAL_NORM:
            n = 1, w = d;
            break;
        case VEC_Q_BIAS:
            n = c->qkv_bias ? L : 0, w = config_q_dim(c);
            break;
        case VEC_K_BIAS:
        case VEC_V_BIAS:
            n = c->qkv_bias ? L : 0, w = config_kv_dim(c);
            break;
        case VEC_Q_NORM:
        case VEC_K_NORM:
            n = c->qk_norm ? L : 0, w = config_head_dim(c);
            break;
        case VEC_ATT_NORM_BIAS:
        case VEC_FFN_NORM_BIAS:
            n = layer_norm ? L : 0, w = d;
            break;
        case VEC_FINAL_NORM_BIAS:
            n = layer_norm ? 1 : 0, w = d;
            break;
        case VEC_O_BIAS:
        case VEC_DOWN_BIAS:
            n = c->proj_bias ? L : 0, w = d;
            break;
        case VEC_GATE_BIAS:
            n = c->proj_bias ? L : 0, w = c->hidden_dim;
            break;
        case VEC_POSITIONS:
            n = c->position == POS_LEARNED ? c->seq_len : 0, w = d;
            break;
        case VEC_POST_ATT_NORM:
        case VEC_POST_FFN_NORM:
            n = c->post_norms ? L : 0, w = d;
            break;
        case VEC_Q_A_NORM:
            n = mla && c->q_lora_rank > 0 ? L : 0, w = c->q_lora_rank;
            break;
        case VEC_KV_A_NORM:
            n = mla ? L : 0, w = c->kv_lora_rank;
            break;
        case VEC_ROUTER:
            n = moe, w = c->n_experts * d;
            break;
        case VECTOR_KINDS:
            break;
    }
    *count = w > 0 ? n : 0, *width = w;
}

uint64_t weight_part_floats(const Config *c, WeightPart p) {
    uint64_t embedding = (uint64_t)c->vocab_size * (uint64_t)c->dim;
    int count, width, rows, cols;
    switch (p.type) {
        case PART_EMBEDDING:
            return embedding;
        case PART_CLASSIFIER:
            return c->shared_classifier ? 0 : embedding;
        case PART_VECTOR:
            weight_vector_shape(c, (VectorKind)p.kind, &count, &width);
            return (uint64_t)count * (uint64_t)width;
        case PART_MATRIX:
            layer_matrix_shape(c, (MatrixKind)p.kind, &rows, &cols);
            return (uint64_t)layer_kind_layers(c, (MatrixKind)p.kind) * (uint64_t)rows *
                   (uint64_t)cols;
        case PART_EXPERT: {
            if (c->n_experts == 0) return 0;
            expert_matrix_shape(c, (ExpertKind)p.kind, &rows, &cols);
            uint64_t moe = (uint64_t)(c->n_layers - config_dense_layers(c));
            return moe * (uint64_t)c->n_experts * (uint64_t)rows * (uint64_t)cols;
        }
    }
    return 0;
}

float weight_part_scale(const Config *c, WeightPart p) {
    int rows = 0, cols = c->dim; /* the embedding's and classifier's fan-in */
    if (p.type == PART_MATRIX) layer_matrix_shape(c, (MatrixKind)p.kind, &rows, &cols);
    if (p.type == PART_EXPERT) expert_matrix_shape(c, (ExpertKind)p.kind, &rows, &cols);
    if (p.type == PART_VECTOR) {
        FanIn fan = VECTORS[p.kind].fan_in;
        if (fan == FAN_ONES) return 0;
        cols = fan == FAN_Q_DIM ? config_q_dim(c) : fan == FAN_HIDDEN ? c->hidden_dim : c->dim;
    }
    return cols > 0 ? 1.0f / sqrtf((float)cols) : 0;
}
