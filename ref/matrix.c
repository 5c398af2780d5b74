/* matrix.c: see matrix.h. */
#include "ref/matrix.h"

void layer_matrix_shape(const Config *c, MatrixKind k, int *rows, int *cols) {
    int d = c->dim, h = c->hidden_dim, kv = config_kv_dim(c), qd = config_q_dim(c);
    bool mla = config_mla(c), q_lora = mla && c->q_lora_rank > 0;
    int heads = c->n_heads, v = heads * config_v_head_dim(c); /* attention's output width */
    int nope = config_head_dim(c) - c->qk_rope_head_dim;      /* MLA's unturned key dims */
    int shared = c->n_shared_experts * c->expert_hidden_dim;
    int out = 0, in = 0;
    switch (k) {
        case MAT_WQ:
            out = q_lora ? 0 : qd, in = d;
            break;
        case MAT_WK:
        case MAT_WV:
            out = mla ? 0 : kv, in = d;
            break;
        case MAT_WO:
            out = d, in = mla ? v : qd;
            break;
        case MAT_GATE:
        case MAT_UP:
            out = k == MAT_UP && c->mlp == MLP_GELU ? 0 : h, in = d;
            break; /* no up */
        case MAT_DOWN:
            out = d, in = h;
            break;
        case MAT_Q_A:
            out = q_lora ? c->q_lora_rank : 0, in = d;
            break;
        case MAT_Q_B:
            out = q_lora ? qd : 0, in = c->q_lora_rank;
            break;
        case MAT_KV_A:
            out = mla ? c->kv_lora_rank + c->qk_rope_head_dim : 0, in = d;
            break;
        case MAT_KV_B:
            out = mla ? heads * (nope + config_v_head_dim(c)) : 0, in = c->kv_lora_rank;
            break;
        case MAT_SHARED_GATE:
        case MAT_SHARED_UP:
            out = shared, in = d;
            break;
        case MAT_SHARED_DOWN:
            out = d, in = shared;
            break;
        case LAYER_MATRICES:
            break;
    }
    *rows = out, *cols = in;
    if (out == 0 || in == 0) *rows = 0; /* none of this kind */
}

int layer_kind_layers(const Config *c, MatrixKind k) {
    return layer_kind_slot(c, k, c->n_layers);
}

bool layer_has_kind(const Config *c, MatrixKind k, int l) {
    return layer_kind_slot(c, k, l + 1) > layer_kind_slot(c, k, l);
}

int layer_kind_slot(const Config *c, MatrixKind k, int l) {
    bool mlp = k == MAT_GATE || k == MAT_DOWN || k == MAT_UP;
    bool shared = k == MAT_SHARED_GATE || k == MAT_SHARED_DOWN || k == MAT_SHARED_UP;
    return mlp ? config_dense_slot(c, l) : shared ? config_moe_slot(c, l) : l;
}

void expert_matrix_shape(const Config *c, ExpertKind k, int *rows, int *cols) {
    *rows = k == EXPERT_DOWN ? c->dim : c->expert_hidden_dim;
    *cols = k == EXPERT_DOWN ? c->expert_hidden_dim : c->dim;
}

const char *layer_matrix_name(MatrixKind k) {
    static const char *const names[LAYER_MATRICES] = {
        "wq",  "wk",  "wv",   "wo",   "gate",        "down",        "up",
        "q_a", "q_b", "kv_a", "kv_b", "shared_gate", "shared_down", "shared_up"};
    return names[k];
}
