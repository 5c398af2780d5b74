/* forward_jobs.c: the forward pass's threads and work count (forward_jobs.h). */
#include "ref/forward_jobs.h"

#include "ref/layers.h"
#include "ref/linear.h"
#include "ref/mla.h"
#include "ref/moe.h"
#include "ref/kernels/fast_layers.h"
#include "ref/kernels/threads.h"

static void rows_task(void *ctx, int t0, int t1) {
    const RowsJob *j = ctx;
    size_t at = (size_t)t0 * j->C;
    switch (j->op) {
        case ROWS_RMSNORM:
            rmsnorm_forward(j->out + at, j->in + at, j->weight, t1 - t0, j->C, j->eps);
            break;
        case ROWS_LAYERNORM:
            layernorm_forward(j->out + at, j->in + at, j->weight, j->bias, t1 - t0, j->C, j->eps);
            break;
        case ROWS_SWIGLU:
            swiglu_forward(j->out + at, j->in + at, (t1 - t0) * j->C);
            break;
        case ROWS_SWIGLU_MANY:
            swiglu_many_forward(j->out + at, j->in + at, (t1 - t0) * j->C, j->exp);
            break;
        case ROWS_GEGLU:
            geglu_forward(j->out + at, j->in + at, (t1 - t0) * j->C);
            break;
        case ROWS_GEGLU_GGML:
            geglu_ggml_forward(j->out + at, j->in + at, (t1 - t0) * j->C);
            break;
        case ROWS_GELU:
            gelu_forward(j->out + at, (t1 - t0) * j->C);
            break;
        case ROWS_GELU_GGML:
            gelu_ggml_forward(j->out + at, (t1 - t0) * j->C);
            break;
        case ROWS_RESIDUAL:
            residual_forward(j->out + at, j->in + at, (t1 - t0) * j->C);
            break;
    }
}

void rows_parallel(const Model *m, int N, const RowsJob *job) {
    parallel_for(model_threads(m), N, rows_task, (void *)job);
}

void norm_rows(const Model *m, float *out, const float *x, const float *weight, const float *bias,
               int N, int C) {
    RowsJob job = {.op = m->config.norm == NORM_LAYER ? ROWS_LAYERNORM : ROWS_RMSNORM,
                   .out = out,
                   .in = x,
                   .weight = weight,
                   .bias = bias,
                   .C = C,
                   .eps = config_norm_eps(&m->config)};
    rows_parallel(m, N, &job);
}

void gelu_rows(const Model *m, float *x, int N, int C) {
    RowsJob job = {.op = m->run.gelu_f16_table ? ROWS_GELU_GGML : ROWS_GELU, .out = x, .C = C};
    rows_parallel(m, N, &job);
}

void residual_rows(const Model *m, float *x, const float *y, int N, int C) {
    RowsJob job = {.op = ROWS_RESIDUAL, .out = x, .in = y, .C = C};
    rows_parallel(m, N, &job);
}

/* One row's attention, shared out over threads by query heads. */
typedef struct {
    float *out;
    const float *q, *key_l, *key_t, *value_l; /* key_t: NULL, or key_l transposed */
    float *scores;                            /* the pass's [n_heads, stride] */
    int stride;                               /* the pass's capacity */
    int T;
    const int *positions;
    const AttentionSpec *spec;
    ExpKind exp;
} AttentionJob;

static void attention_heads(void *ctx, int h0, int h1) {
    const AttentionJob *j = ctx;
    attention_heads_fast(j->out, j->q, j->key_l, j->key_t, j->value_l, j->scores, j->stride, j->T,
                         j->positions, j->spec, h0, h1, j->exp);
}

void attention_threads(const Model *m, float *out, const float *q, const float *key_l,
                       const float *value_l, const PassScratch *s, int T, const int *positions,
                       int slots, const AttentionSpec *spec) {
    /* many queries read every key: transpose them once, here, before
     * the heads are shared out (each KV head once, whatever the split) */
    const float *key_t = NULL;
    if (T >= ATTENTION_TRANSPOSE_MIN_QUERIES && s->key_t != NULL) {
        keys_transpose(s->key_t, s->capacity, key_l, slots, spec->n_kv_heads, spec->head_dim);
        key_t = s->key_t;
    }
    AttentionJob job = {.out = out,
                        .q = q,
                        .key_l = key_l,
                        .key_t = key_t,
                        .value_l = value_l,
                        .scores = s->scores,
                        .stride = s->capacity,
                        .T = T,
                        .positions = positions,
                        .spec = spec,
                        .exp = s->exp};
    parallel_for(model_threads(m), spec->n_heads, attention_heads, &job);
}

void count_attention(WorkCount *w, const AttentionSpec *spec, int T, const int *positions,
                     uint64_t row_bytes) {
    uint64_t pairs = 0; /* the (query, key) pairs: attention_visible's */
    for (int t = 0; t < T; t++) pairs += (uint64_t)attention_seen(spec, positions[t]);
    w->macs += pairs * (uint64_t)spec->n_heads * (uint64_t)spec->head_dim * 2u;
    w->kv_bytes_read += pairs * row_bytes * 2u;
}

uint64_t forward_body_macs(const Config *c, int T, int pos0) {
    uint64_t d = (uint64_t)c->dim, h = (uint64_t)c->hidden_dim, L = (uint64_t)c->n_layers;
    uint64_t mlp = c->mlp == MLP_GELU ? 2u : 3u;       /* GPT-2's has no up */
    uint64_t dense = (uint64_t)config_dense_layers(c); /* the others' MLP is experts (moe.h) */
    /* the attention's matrices a token runs through, from the one table of
     * shapes: wq, wk, wv and wo, or MLA's query path, kv_a and wo (kv_b is
     * mla_attention_macs', run over positions, not tokens) */
    static const MatrixKind per_token_kinds[] = {MAT_WQ,  MAT_WK,  MAT_WV,  MAT_WO,
                                                 MAT_Q_A, MAT_Q_B, MAT_KV_A};
    uint64_t attn = 0;
    for (size_t i = 0; i < sizeof per_token_kinds / sizeof per_token_kinds[0]; i++) {
        int rows, cols;
        layer_matrix_shape(c, per_token_kinds[i], &rows, &cols);
        attn += (uint64_t)rows * (uint64_t)cols;
    }
    uint64_t per_token = L * attn + dense * mlp * d * h + (L - dense) * (uint64_t)moe_token_macs(c);
    /* attention: the (query, position) pairs each layer scores and mixes
     * (attention_pairs, as forward counts them) */
    uint64_t pairs = 0, mla = 0;
    for (int l = 0; l < c->n_layers; l++) {
        AttentionSpec spec = config_attention_spec(c, l);
        uint64_t seen = attention_pairs(&spec, T, pos0);
        pairs += seen;
        if (config_mla(c)) mla += mla_attention_macs(c, MLA_REBUILT, T, seen, pos0 + T);
    }
    if (config_mla(c)) return per_token * (uint64_t)T + mla;
    return per_token * (uint64_t)T + pairs * (uint64_t)c->n_heads * config_head_dim(c) * 2u;
}
