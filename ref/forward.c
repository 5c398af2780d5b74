/* forward.c: one forward pass of the transformer over T tokens. */
#include "forward.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "layers.h"
#include "pack.h"
#include "quant_model.h"

/* A matmul of T rows through a [OC, C] weight of `bytes`: T·C·OC
 * multiply-adds. */
static void count_matmul(WorkCount *w, int T, int C, int OC, uint64_t bytes) {
    w->macs += (uint64_t)T * (uint64_t)C * (uint64_t)OC;
    w->weight_bytes += bytes;
}

/* Attention of T queries from pos0: query t scores and mixes pos0 + t + 1
 * positions in each head (2 · head_dim multiply-adds each), and reads that
 * many K and V rows of the layer. */
static void count_attention(WorkCount *w, int T, int pos0, int n_heads, int head_dim,
                            uint64_t row_bytes) {
    for (int t = 0; t < T; t++) {
        uint64_t seen = (uint64_t)(pos0 + t + 1);
        w->macs += seen * (uint64_t)n_heads * (uint64_t)head_dim * 2u;
        w->kv_bytes_read += seen * row_bytes * 2u;
    }
}

/* A weight matrix in every form the model may hold it. */
typedef struct {
    const float *w;         /* row-major float32 [OC, C], or NULL */
    const PackedMatrix *pm; /* float32, fast layout (pack.h), or NULL */
    const PackedQ8 *pq;     /* int8, fast layout (quant_model.h), or NULL */
} Weight;

typedef enum { M_WQ, M_WK, M_WV, M_WO, M_W1, M_W2, M_W3, M_CLS } MatrixKind;

/* Layer l's matrix of this kind, as the model holds it. */
static Weight weight_of(const Model *m, MatrixKind k, int l) {
    const Config *c = &m->config;
    const Weights *w = &m->weights;
    const QuantWeights *q = m->quant;
    const PackedWeights *p = m->packed;
    size_t d = (size_t)c->dim, h = (size_t)c->hidden_dim, kv = (size_t)config_kv_dim(c);
    switch (k) {
        case M_WQ:
            return (Weight){w->wq ? w->wq + l * d * d : NULL, p ? &p->wq[l] : NULL,
                            q ? &q->pwq[l] : NULL};
        case M_WK:
            return (Weight){w->wk ? w->wk + l * kv * d : NULL, p ? &p->wk[l] : NULL,
                            q ? &q->pwk[l] : NULL};
        case M_WV:
            return (Weight){w->wv ? w->wv + l * kv * d : NULL, p ? &p->wv[l] : NULL,
                            q ? &q->pwv[l] : NULL};
        case M_WO:
            return (Weight){w->wo ? w->wo + l * d * d : NULL, p ? &p->wo[l] : NULL,
                            q ? &q->pwo[l] : NULL};
        case M_W1:
            return (Weight){w->w1 ? w->w1 + l * h * d : NULL, p ? &p->w1[l] : NULL,
                            q ? &q->pw1[l] : NULL};
        case M_W2:
            return (Weight){w->w2 ? w->w2 + l * d * h : NULL, p ? &p->w2[l] : NULL,
                            q ? &q->pw2[l] : NULL};
        case M_W3:
            return (Weight){w->w3 ? w->w3 + l * h * d : NULL, p ? &p->w3[l] : NULL,
                            q ? &q->pw3[l] : NULL};
        case M_CLS:
            return (Weight){w->wcls, p ? &p->wcls : NULL, q ? &q->pcls : NULL};
    }
    return (Weight){NULL, NULL, NULL};
}

/* Bytes a pass reads of this weight: int8 codes and scales, or floats. */
static uint64_t weight_bytes(const Weight *w, int C, int OC) {
    if (w->pq != NULL) return quant_matrix_bytes(OC, C, w->pq->group);
    return (uint64_t)C * OC * sizeof(float);
}

/* out [T, OC] = x [T, C] · Wᵀ, with W int8 (then, with quantized
 * activations, each input row is quantized with the weights' grouping and
 * every dot product is int8 × int8 in int32 per group), or float32 in the
 * fast layout, or row-major (then, with quantized activations, the input is
 * quantized and read back first). Every form sums each dot product in index
 * order: the fast layouts are bitwise the plain loops. */
static void linear(RunState *s, float *out, const float *x, int T, int C, int OC, Weight w) {
    if (w.pq != NULL) {
        const int8_t *qx = NULL;
        if (s->quant.activations) {
            int groups = quant_groups(C, w.pq->group);
            for (int t = 0; t < T; t++)
                quantize_row(x + (size_t)t * C, C, w.pq->group, s->xq + (size_t)t * C,
                             s->xs + (size_t)t * groups);
            qx = s->xq;
        }
        matmul_q8_packed(out, x, qx, s->xs, w.pq, T);
    } else {
        if (s->quant.activations) {
            for (int t = 0; t < T; t++) {
                quantize_row(x + (size_t)t * C, C, s->quant.group, s->xq, s->xs);
                dequantize_row(s->xq, s->xs, C, s->quant.group, s->xfake + (size_t)t * C);
            }
            x = s->xfake;
        }
        if (w.pm != NULL)
            matmul_packed(out, x, w.pm, T);
        else if (s->matmul_override != NULL)
            s->matmul_override(out, x, w.w, T, C, OC);
        else
            matmul_forward(out, x, w.w, T, C, OC, s->xT);
    }
    count_matmul(&s->work, T, C, OC, weight_bytes(&w, C, OC));
}

/* Store T new K and V rows of layer l from pos0 as int8 (one scale per KV
 * head), then read the layer's rows 0..pos0+T-1 back as floats for
 * attention. */
static void kv_store_q8(RunState *s, int l, int pos0, int T, int head_dim,
                        const StepObserver *obs) {
    KVCache *k = &s->cache;
    size_t kv = (size_t)k->kv_dim, H = (size_t)k->n_kv_heads, base = (size_t)l * k->capacity;
    for (int t = 0; t < T; t++) {
        size_t row = base + (size_t)(pos0 + t);
        quantize_row(s->k_new + t * kv, k->kv_dim, head_dim, k->key_q + row * kv,
                     k->key_s + row * H);
        quantize_row(s->v_new + t * kv, k->kv_dim, head_dim, k->value_q + row * kv,
                     k->value_s + row * H);
        if (obs != NULL && obs->quant != NULL) {
            QuantRecord rk = {.tensor = "kv.k",
                              .layer = l,
                              .pos = pos0 + t,
                              .rows = 1,
                              .n = k->kv_dim,
                              .group = head_dim,
                              .values = s->k_new + t * kv,
                              .codes = k->key_q + row * kv,
                              .scales = k->key_s + row * H};
            QuantRecord rv = rk;
            rv.tensor = "kv.v", rv.values = s->v_new + t * kv;
            rv.codes = k->value_q + row * kv, rv.scales = k->value_s + row * H;
            obs->quant(obs->ctx, &rk);
            obs->quant(obs->ctx, &rv);
        }
    }
    for (int p = 0; p < pos0 + T; p++) {
        size_t row = base + (size_t)p;
        dequantize_row(k->key_q + row * kv, k->key_s + row * H, k->kv_dim, head_dim,
                       s->layer_k + p * kv);
        dequantize_row(k->value_q + row * kv, k->value_s + row * H, k->kv_dim, head_dim,
                       s->layer_v + p * kv);
    }
}

static void emit_kv_rows(const HookSite *site, const float *k, const float *v, int T, int kv_dim) {
    for (int t = 0; t < T; t++) {
        int pos = site->pos0 + t;
        if (!hook_wanted(site->obs, HOOK_KV_ROW, site->layer, pos)) continue;
        HookTensor h = {HOOK_KV_ROW, site->layer,     pos,
                        -1,          site->tokens[t], k + (size_t)t * kv_dim,
                        1,           kv_dim,          v + (size_t)t * kv_dim};
        site->obs->emit(site->obs->ctx, &h);
    }
}

/* After a pass: a layer's whole cache, positions 0..last, for observers that
 * watch it grow. */
static void emit_kv_snapshot(const HookSite *site, const float *key_l, const float *value_l,
                             int kv_dim, int last, int token) {
    if (!hook_wanted(site->obs, HOOK_KV_SNAPSHOT, site->layer, last)) return;
    HookTensor h = {HOOK_KV_SNAPSHOT, site->layer, last,   -1, token, key_l,
                    last + 1,         kv_dim,      value_l};
    site->obs->emit(site->obs->ctx, &h);
}

/* x [dim] = the embedding row of token (int8: read back from its codes; a
 * packed tied model: the classifier's row). Returns the bytes it read. */
static uint64_t embed_token(const Model *m, int token, float *x) {
    int dim = m->config.dim;
    const QuantWeights *qw = m->quant;
    if (qw != NULL) {
        const QuantMatrix *e = &qw->token_embedding;
        dequantize_row(e->q + (size_t)token * dim, e->scales + (size_t)token * e->groups_per_row,
                       dim, e->group, x);
        return quant_matrix_bytes(1, dim, qw->group);
    }
    if (m->weights.token_embedding == NULL)
        packed_row(&m->packed->wcls, token, x);
    else
        memcpy(x, m->weights.token_embedding + (size_t)token * dim, (size_t)dim * sizeof(float));
    return (uint64_t)dim * sizeof(float);
}

const float *forward_tokens(const Model *m, RunState *s, const int *tokens, int T, int pos0,
                            bool all_logits, const StepObserver *obs) {
    const Config *c = &m->config;
    const Weights *w = &m->weights;
    int dim = c->dim, hidden = c->hidden_dim, kv_dim = config_kv_dim(c);
    int head_dim = config_head_dim(c), n_heads = c->n_heads, n_kv = c->n_kv_heads;
    size_t layer_kv = (size_t)s->cache.capacity * kv_dim; /* values per layer of cache */
    bool kv8 = s->quant.kv;
    uint64_t row_bytes = kv_row_bytes(c, kv8);
    HookSite site = {obs, -1, pos0, tokens};
    WorkCount *work = &s->work;
    *work = (WorkCount){0};

    /* x[t] = embedding row of tokens[t] */
    for (int t = 0; t < T; t++)
        work->weight_bytes += embed_token(m, tokens[t], s->x + (size_t)t * dim);
    hook_emit_rows(&site, HOOK_EMBED, s->x, T, 1, dim);

    for (int l = 0; l < c->n_layers; l++) {
        size_t ld = (size_t)l * dim;
        /* float cache: new rows go straight into it; int8: through k_new/v_new */
        float *key_l = kv8 ? s->layer_k : s->cache.key + l * layer_kv;
        float *value_l = kv8 ? s->layer_v : s->cache.value + l * layer_kv;
        float *k_new = kv8 ? s->k_new : key_l + (size_t)pos0 * kv_dim;
        float *v_new = kv8 ? s->v_new : value_l + (size_t)pos0 * kv_dim;
        site.layer = l;
        hook_emit_rows(&site, HOOK_RESID_PRE, s->x, T, 1, dim);

        /* attention: Q, K, V of the new tokens */
        rmsnorm_forward(s->xb, s->x, w->rms_att + ld, T, dim);
        work->weight_bytes += 2u * dim * sizeof(float); /* rms_att and rms_ffn */
        hook_emit_rows(&site, HOOK_LN1, s->xb, T, 1, dim);
        linear(s, s->q, s->xb, T, dim, dim, weight_of(m, M_WQ, l));
        linear(s, k_new, s->xb, T, dim, kv_dim, weight_of(m, M_WK, l));
        linear(s, v_new, s->xb, T, dim, kv_dim, weight_of(m, M_WV, l));
        rope_forward(s->q, T, dim, head_dim, pos0, s->rope_cos, s->rope_sin);
        rope_forward(k_new, T, kv_dim, head_dim, pos0, s->rope_cos, s->rope_sin);
        work->kv_bytes_written += (uint64_t)T * row_bytes * 2u;
        hook_emit_rows(&site, HOOK_ATTN_Q, s->q, T, n_heads, head_dim);
        hook_emit_rows(&site, HOOK_ATTN_K, k_new, T, n_kv, head_dim);
        hook_emit_rows(&site, HOOK_ATTN_V, v_new, T, n_kv, head_dim);
        if (kv8) kv_store_q8(s, l, pos0, T, head_dim, obs);
        emit_kv_rows(&site, key_l + (size_t)pos0 * kv_dim, value_l + (size_t)pos0 * kv_dim, T,
                     kv_dim);
        attention_forward(s->xb, s->q, key_l, value_l, s->scores, T, pos0, n_heads, n_kv, head_dim,
                          &site);
        count_attention(work, T, pos0, n_heads, head_dim, row_bytes);
        hook_emit_rows(&site, HOOK_ATTN_Z, s->xb, T, n_heads, head_dim);
        linear(s, s->xb2, s->xb, T, dim, dim, weight_of(m, M_WO, l));
        hook_emit_rows(&site, HOOK_ATTN_OUT, s->xb2, T, 1, dim);
        residual_forward(s->x, s->xb2, T * dim);
        hook_emit_rows(&site, HOOK_RESID_MID, s->x, T, 1, dim);

        /* feed-forward: x += w2 · (silu(w1 · x̂) ⊙ (w3 · x̂)) */
        rmsnorm_forward(s->xb, s->x, w->rms_ffn + ld, T, dim);
        hook_emit_rows(&site, HOOK_LN2, s->xb, T, 1, dim);
        linear(s, s->hb, s->xb, T, dim, hidden, weight_of(m, M_W1, l));
        linear(s, s->hb2, s->xb, T, dim, hidden, weight_of(m, M_W3, l));
        hook_emit_rows(&site, HOOK_MLP_GATE, s->hb, T, 1, hidden);
        hook_emit_rows(&site, HOOK_MLP_UP, s->hb2, T, 1, hidden);
        swiglu_forward(s->hb, s->hb2, T * hidden);
        hook_emit_rows(&site, HOOK_MLP_HIDDEN, s->hb, T, 1, hidden);
        linear(s, s->xb, s->hb, T, hidden, dim, weight_of(m, M_W2, l));
        hook_emit_rows(&site, HOOK_MLP_OUT, s->xb, T, 1, dim);
        residual_forward(s->x, s->xb, T * dim);
        hook_emit_rows(&site, HOOK_RESID_POST, s->x, T, 1, dim);
        emit_kv_snapshot(&site, key_l, value_l, kv_dim, pos0 + T - 1, tokens[T - 1]);
    }

    /* Only the rows whose logits are wanted go through the classifier. */
    int rows = all_logits ? T : 1;
    float *x_rows = s->x + (size_t)(T - rows) * dim;
    HookSite last = {obs, -1, pos0 + T - rows, tokens + (T - rows)};
    rmsnorm_forward(x_rows, x_rows, w->rms_final, rows, dim);
    work->weight_bytes += (uint64_t)dim * sizeof(float); /* rms_final */
    hook_emit_rows(&last, HOOK_FINAL_NORM, x_rows, rows, 1, dim);
    linear(s, s->logits, x_rows, rows, dim, c->vocab_size, weight_of(m, M_CLS, 0));
    hook_emit_rows(&last, HOOK_LOGITS, s->logits, rows, 1, c->vocab_size);
    return s->logits;
}

/* The work of a linear of C → OC for one row, as linear() counts it. */
static void count_linear_row(WorkCount *w, int C, int OC, Weight weight) {
    count_matmul(w, 1, C, OC, weight_bytes(&weight, C, OC));
}

/* Hook emissions of row b alone. */
static void emit_row(const BatchRow *r, int layer, HookPoint point, const float *x, int rows,
                     int cols) {
    HookSite site = {r->obs, layer, r->pos, &r->token};
    hook_emit_rows(&site, point, x, 1, rows, cols);
}

const float *forward_batch(const Model *m, RunState *s, const BatchRow *rows, int B) {
    const Config *c = &m->config;
    const Weights *w = &m->weights;
    int dim = c->dim, hidden = c->hidden_dim, kv_dim = config_kv_dim(c), V = c->vocab_size;
    int head_dim = config_head_dim(c), n_heads = c->n_heads, n_kv = c->n_kv_heads;

    for (int b = 0; b < B; b++) {
        RunState *rs = rows[b].state;
        rs->work = (WorkCount){0};
        float *xb = s->x + (size_t)b * dim;
        rs->work.weight_bytes = embed_token(m, rows[b].token, xb);
        emit_row(&rows[b], -1, HOOK_EMBED, xb, 1, dim);
    }
    for (int l = 0; l < c->n_layers; l++) {
        size_t ld = (size_t)l * dim;
        for (int b = 0; b < B; b++)
            emit_row(&rows[b], l, HOOK_RESID_PRE, s->x + (size_t)b * dim, 1, dim);
        rmsnorm_forward(s->xb, s->x, w->rms_att + ld, B, dim);
        /* Q, K, V of all rows at once; each row's K and V then go to its own cache */
        float *k_rows = s->k_new, *v_rows = s->v_new;
        linear(s, s->q, s->xb, B, dim, dim, weight_of(m, M_WQ, l));
        linear(s, k_rows, s->xb, B, dim, kv_dim, weight_of(m, M_WK, l));
        linear(s, v_rows, s->xb, B, dim, kv_dim, weight_of(m, M_WV, l));
        for (int b = 0; b < B; b++) {
            const BatchRow *r = &rows[b];
            RunState *rs = r->state;
            bool kv8 = rs->quant.kv;
            uint64_t row_bytes = kv_row_bytes(c, kv8);
            size_t layer_kv = (size_t)rs->cache.capacity * kv_dim;
            float *q = s->q + (size_t)b * dim, *k = k_rows + (size_t)b * kv_dim;
            float *v = v_rows + (size_t)b * kv_dim;
            rs->work.weight_bytes += 2u * dim * sizeof(float);
            count_linear_row(&rs->work, dim, dim, weight_of(m, M_WQ, l));
            count_linear_row(&rs->work, dim, kv_dim, weight_of(m, M_WK, l));
            count_linear_row(&rs->work, dim, kv_dim, weight_of(m, M_WV, l));
            emit_row(r, l, HOOK_LN1, s->xb + (size_t)b * dim, 1, dim);
            rope_forward(q, 1, dim, head_dim, r->pos, rs->rope_cos, rs->rope_sin);
            rope_forward(k, 1, kv_dim, head_dim, r->pos, rs->rope_cos, rs->rope_sin);
            rs->work.kv_bytes_written += row_bytes * 2u;
            emit_row(r, l, HOOK_ATTN_Q, q, n_heads, head_dim);
            emit_row(r, l, HOOK_ATTN_K, k, n_kv, head_dim);
            emit_row(r, l, HOOK_ATTN_V, v, n_kv, head_dim);
            float *key_l = kv8 ? rs->layer_k : rs->cache.key + l * layer_kv;
            float *value_l = kv8 ? rs->layer_v : rs->cache.value + l * layer_kv;
            if (kv8) {
                memcpy(rs->k_new, k, (size_t)kv_dim * sizeof(float));
                memcpy(rs->v_new, v, (size_t)kv_dim * sizeof(float));
                kv_store_q8(rs, l, r->pos, 1, head_dim, r->obs);
            } else {
                memcpy(key_l + (size_t)r->pos * kv_dim, k, (size_t)kv_dim * sizeof(float));
                memcpy(value_l + (size_t)r->pos * kv_dim, v, (size_t)kv_dim * sizeof(float));
            }
            HookSite site = {r->obs, l, r->pos, &r->token};
            emit_kv_rows(&site, key_l + (size_t)r->pos * kv_dim, value_l + (size_t)r->pos * kv_dim,
                         1, kv_dim);
            attention_forward(s->xb + (size_t)b * dim, q, key_l, value_l, rs->scores, 1, r->pos,
                              n_heads, n_kv, head_dim, &site);
            count_attention(&rs->work, 1, r->pos, n_heads, head_dim, row_bytes);
            emit_row(r, l, HOOK_ATTN_Z, s->xb + (size_t)b * dim, n_heads, head_dim);
            count_linear_row(&rs->work, dim, dim, weight_of(m, M_WO, l));
            count_linear_row(&rs->work, dim, hidden, weight_of(m, M_W1, l));
            count_linear_row(&rs->work, dim, hidden, weight_of(m, M_W3, l));
            count_linear_row(&rs->work, hidden, dim, weight_of(m, M_W2, l));
        }
        linear(s, s->xb2, s->xb, B, dim, dim, weight_of(m, M_WO, l));
        for (int b = 0; b < B; b++)
            emit_row(&rows[b], l, HOOK_ATTN_OUT, s->xb2 + (size_t)b * dim, 1, dim);
        residual_forward(s->x, s->xb2, B * dim);
        for (int b = 0; b < B; b++)
            emit_row(&rows[b], l, HOOK_RESID_MID, s->x + (size_t)b * dim, 1, dim);
        rmsnorm_forward(s->xb, s->x, w->rms_ffn + ld, B, dim);
        linear(s, s->hb, s->xb, B, dim, hidden, weight_of(m, M_W1, l));
        linear(s, s->hb2, s->xb, B, dim, hidden, weight_of(m, M_W3, l));
        for (int b = 0; b < B; b++) {
            emit_row(&rows[b], l, HOOK_LN2, s->xb + (size_t)b * dim, 1, dim);
            emit_row(&rows[b], l, HOOK_MLP_GATE, s->hb + (size_t)b * hidden, 1, hidden);
            emit_row(&rows[b], l, HOOK_MLP_UP, s->hb2 + (size_t)b * hidden, 1, hidden);
        }
        swiglu_forward(s->hb, s->hb2, B * hidden);
        for (int b = 0; b < B; b++)
            emit_row(&rows[b], l, HOOK_MLP_HIDDEN, s->hb + (size_t)b * hidden, 1, hidden);
        linear(s, s->xb, s->hb, B, hidden, dim, weight_of(m, M_W2, l));
        for (int b = 0; b < B; b++)
            emit_row(&rows[b], l, HOOK_MLP_OUT, s->xb + (size_t)b * dim, 1, dim);
        residual_forward(s->x, s->xb, B * dim);
        for (int b = 0; b < B; b++) {
            const BatchRow *r = &rows[b];
            RunState *rs = r->state;
            emit_row(r, l, HOOK_RESID_POST, s->x + (size_t)b * dim, 1, dim);
            size_t layer_kv = (size_t)rs->cache.capacity * kv_dim;
            HookSite site = {r->obs, l, r->pos, &r->token};
            emit_kv_snapshot(&site, rs->quant.kv ? rs->layer_k : rs->cache.key + l * layer_kv,
                             rs->quant.kv ? rs->layer_v : rs->cache.value + l * layer_kv, kv_dim,
                             r->pos, r->token);
        }
    }
    rmsnorm_forward(s->x, s->x, w->rms_final, B, dim);
    linear(s, s->logits, s->x, B, dim, V, weight_of(m, M_CLS, 0));
    for (int b = 0; b < B; b++) {
        RunState *rs = rows[b].state;
        rs->work.weight_bytes += (uint64_t)dim * sizeof(float);
        count_linear_row(&rs->work, dim, V, weight_of(m, M_CLS, 0));
        emit_row(&rows[b], -1, HOOK_FINAL_NORM, s->x + (size_t)b * dim, 1, dim);
        emit_row(&rows[b], -1, HOOK_LOGITS, s->logits + (size_t)b * V, 1, V);
    }
    return s->logits;
}
