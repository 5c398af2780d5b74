/* matrix.c: see matrix.h. */
#include "ref/matrix.h"

void layer_matrix_shape(const Config *c, MatrixKind k, int *rows, int *cols) {
    int d = c->dim, h = c->hidden_dim, kv = config_kv_dim(c), qd = config_q_dim(c);
    static const struct {
        int out, in; /* 0: dim, 1: q_dim, 2: kv_dim, 3: hidden_dim */
    } shape[LAYER_MATRICES] = {
        [MAT_WQ] = {1, 0},   [MAT_WK] = {2, 0},   [MAT_WV] = {2, 0}, [MAT_WO] = {0, 1},
        [MAT_GATE] = {3, 0}, [MAT_DOWN] = {0, 3}, [MAT_UP] = {3, 0}};
    const int size[4] = {d, qd, kv, h};
    *rows = k == MAT_UP && c->mlp == MLP_GELU ? 0 : size[shape[k].out]; /* GELU has no up */
    *cols = size[shape[k].in];
}

void expert_matrix_shape(const Config *c, ExpertKind k, int *rows, int *cols) {
    *rows = k == EXPERT_DOWN ? c->dim : c->expert_hidden_dim;
    *cols = k == EXPERT_DOWN ? c->expert_hidden_dim : c->dim;
}

const char *layer_matrix_name(MatrixKind k) {
    static const char *const names[LAYER_MATRICES] = {"wq", "wk", "wv", "wo", "gate", "down", "up"};
    return names[k];
}
