/* forward.c: one forward pass of the transformer over T tokens. */
#include "forward.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "layers.h"

/* RoPE angle for position pos and pair i of a head: pos · θ_i with
 * θ_i = 10000^(-2i / head_dim), in run.c's float arithmetic. */
static void rope_tables_fill(float *cos_t, float *sin_t, int capacity, int head_dim) {
    int half = head_dim / 2;
    for (int pos = 0; pos < capacity; pos++) {
        for (int i = 0; i < half; i++) {
            float freq = 1.0f / powf(10000.0f, (float)(2 * i) / (float)head_dim);
            float angle = (float)pos * freq;
            cos_t[(size_t)pos * half + i] = cosf(angle);
            sin_t[(size_t)pos * half + i] = sinf(angle);
        }
    }
}

bool run_state_init(RunState *s, const Config *c, int capacity, int max_tokens, StepError *err) {
    memset(s, 0, sizeof *s);
    if (capacity < 1 || capacity > c->seq_len || max_tokens < 1 || max_tokens > capacity)
        return step_fail(err, "run state: capacity %d / max_tokens %d outside [1, seq_len %d]",
                         capacity, max_tokens, c->seq_len);
    size_t T = (size_t)max_tokens, dim = (size_t)c->dim, hidden = (size_t)c->hidden_dim;
    size_t half = (size_t)config_head_dim(c) / 2;
    /* The same function sizes the cache here and reports it in `inspect`. */
    uint64_t bytes = kv_cache_bytes(c, capacity);
    s->cache = (KVCache){capacity, c->n_layers,       config_kv_dim(c),
                         bytes,    malloc(bytes / 2), malloc(bytes / 2)};
    s->max_tokens = max_tokens;
    s->x = malloc(T * dim * sizeof(float));
    s->xb = malloc(T * dim * sizeof(float));
    s->xb2 = malloc(T * dim * sizeof(float));
    s->q = malloc(T * dim * sizeof(float));
    s->hb = malloc(T * hidden * sizeof(float));
    s->hb2 = malloc(T * hidden * sizeof(float));
    s->scores = malloc((size_t)capacity * sizeof(float));
    s->logits = malloc(T * (size_t)c->vocab_size * sizeof(float));
    s->rope_cos = malloc((size_t)capacity * half * sizeof(float));
    s->rope_sin = malloc((size_t)capacity * half * sizeof(float));
    if (!s->cache.key || !s->cache.value || !s->x || !s->xb || !s->xb2 || !s->q || !s->hb ||
        !s->hb2 || !s->scores || !s->logits || !s->rope_cos || !s->rope_sin) {
        run_state_free(s);
        return step_fail(err, "run state: out of memory for %d positions", capacity);
    }
    rope_tables_fill(s->rope_cos, s->rope_sin, capacity, config_head_dim(c));
    return true;
}

void run_state_free(RunState *s) {
    free(s->cache.key);
    free(s->cache.value);
    free(s->x);
    free(s->xb);
    free(s->xb2);
    free(s->q);
    free(s->hb);
    free(s->hb2);
    free(s->scores);
    free(s->logits);
    free(s->rope_cos);
    free(s->rope_sin);
    memset(s, 0, sizeof *s);
}

/* A matmul of T rows through a [OC, C] weight: T·C·OC multiply-adds, and
 * the weight's C·OC floats. */
static void count_matmul(WorkCount *w, int T, int C, int OC) {
    w->macs += (uint64_t)T * (uint64_t)C * (uint64_t)OC;
    w->weight_bytes += (uint64_t)C * (uint64_t)OC * sizeof(float);
}

/* Attention of T queries from pos0: query t scores and mixes pos0 + t + 1
 * positions in each head (2 · head_dim multiply-adds each), and reads that
 * many K and V rows of the layer. */
static void count_attention(WorkCount *w, int T, int pos0, int n_heads, int head_dim, int kv_dim) {
    for (int t = 0; t < T; t++) {
        uint64_t seen = (uint64_t)(pos0 + t + 1);
        w->macs += seen * (uint64_t)n_heads * (uint64_t)head_dim * 2u;
        w->kv_bytes_read += seen * (uint64_t)kv_dim * 2u * sizeof(float);
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
static void emit_kv_snapshot(const HookSite *site, const KVCache *cache, int last, int token) {
    if (!hook_wanted(site->obs, HOOK_KV_SNAPSHOT, site->layer, last)) return;
    size_t layer_off = (size_t)site->layer * cache->capacity * cache->kv_dim;
    HookTensor h = {HOOK_KV_SNAPSHOT,
                    site->layer,
                    last,
                    -1,
                    token,
                    cache->key + layer_off,
                    last + 1,
                    cache->kv_dim,
                    cache->value + layer_off};
    site->obs->emit(site->obs->ctx, &h);
}

const float *forward_tokens(const Model *m, RunState *s, const int *tokens, int T, int pos0,
                            bool all_logits, const StepObserver *obs) {
    const Config *c = &m->config;
    const Weights *w = &m->weights;
    int dim = c->dim, hidden = c->hidden_dim, kv_dim = config_kv_dim(c);
    int head_dim = config_head_dim(c), n_heads = c->n_heads, n_kv = c->n_kv_heads;
    size_t layer_kv = (size_t)s->cache.capacity * kv_dim; /* floats per layer of cache */
    HookSite site = {obs, -1, pos0, tokens};
    WorkCount *work = &s->work;
    *work = (WorkCount){0};
    work->weight_bytes = (uint64_t)T * dim * sizeof(float); /* embedding rows */

    /* x[t] = embedding row of tokens[t] */
    for (int t = 0; t < T; t++)
        memcpy(s->x + (size_t)t * dim, w->token_embedding + (size_t)tokens[t] * dim,
               (size_t)dim * sizeof(float));
    hook_emit_rows(&site, HOOK_EMBED, s->x, T, 1, dim);

    for (int l = 0; l < c->n_layers; l++) {
        size_t ld = (size_t)l * dim, lkv = (size_t)l * kv_dim;
        float *key_l = s->cache.key + l * layer_kv, *value_l = s->cache.value + l * layer_kv;
        float *k_new = key_l + (size_t)pos0 * kv_dim, *v_new = value_l + (size_t)pos0 * kv_dim;
        site.layer = l;
        hook_emit_rows(&site, HOOK_RESID_PRE, s->x, T, 1, dim);

        /* attention: Q, K, V of the new tokens; K and V go straight into the cache */
        rmsnorm_forward(s->xb, s->x, w->rms_att + ld, T, dim);
        work->weight_bytes += 2u * dim * sizeof(float); /* rms_att and rms_ffn */
        hook_emit_rows(&site, HOOK_LN1, s->xb, T, 1, dim);
        matmul_forward(s->q, s->xb, w->wq + ld * dim, T, dim, dim);
        matmul_forward(k_new, s->xb, w->wk + lkv * dim, T, dim, kv_dim);
        matmul_forward(v_new, s->xb, w->wv + lkv * dim, T, dim, kv_dim);
        count_matmul(work, T, dim, dim);
        count_matmul(work, T, dim, kv_dim);
        count_matmul(work, T, dim, kv_dim);
        work->kv_bytes_written += (uint64_t)T * kv_dim * 2u * sizeof(float);
        rope_forward(s->q, T, dim, head_dim, pos0, s->rope_cos, s->rope_sin);
        rope_forward(k_new, T, kv_dim, head_dim, pos0, s->rope_cos, s->rope_sin);
        hook_emit_rows(&site, HOOK_ATTN_Q, s->q, T, n_heads, head_dim);
        hook_emit_rows(&site, HOOK_ATTN_K, k_new, T, n_kv, head_dim);
        hook_emit_rows(&site, HOOK_ATTN_V, v_new, T, n_kv, head_dim);
        emit_kv_rows(&site, k_new, v_new, T, kv_dim);
        attention_forward(s->xb, s->q, key_l, value_l, s->scores, T, pos0, n_heads, n_kv, head_dim,
                          &site);
        count_attention(work, T, pos0, n_heads, head_dim, kv_dim);
        hook_emit_rows(&site, HOOK_ATTN_Z, s->xb, T, n_heads, head_dim);
        matmul_forward(s->xb2, s->xb, w->wo + ld * dim, T, dim, dim);
        count_matmul(work, T, dim, dim);
        hook_emit_rows(&site, HOOK_ATTN_OUT, s->xb2, T, 1, dim);
        residual_forward(s->x, s->xb2, T * dim);
        hook_emit_rows(&site, HOOK_RESID_MID, s->x, T, 1, dim);

        /* feed-forward: x += w2 · (silu(w1 · x̂) ⊙ (w3 · x̂)) */
        rmsnorm_forward(s->xb, s->x, w->rms_ffn + ld, T, dim);
        hook_emit_rows(&site, HOOK_LN2, s->xb, T, 1, dim);
        matmul_forward(s->hb, s->xb, w->w1 + (size_t)l * hidden * dim, T, dim, hidden);
        matmul_forward(s->hb2, s->xb, w->w3 + (size_t)l * hidden * dim, T, dim, hidden);
        hook_emit_rows(&site, HOOK_MLP_GATE, s->hb, T, 1, hidden);
        hook_emit_rows(&site, HOOK_MLP_UP, s->hb2, T, 1, hidden);
        swiglu_forward(s->hb, s->hb2, T * hidden);
        hook_emit_rows(&site, HOOK_MLP_HIDDEN, s->hb, T, 1, hidden);
        matmul_forward(s->xb, s->hb, w->w2 + (size_t)l * dim * hidden, T, hidden, dim);
        count_matmul(work, T, dim, hidden);
        count_matmul(work, T, dim, hidden);
        count_matmul(work, T, hidden, dim);
        hook_emit_rows(&site, HOOK_MLP_OUT, s->xb, T, 1, dim);
        residual_forward(s->x, s->xb, T * dim);
        hook_emit_rows(&site, HOOK_RESID_POST, s->x, T, 1, dim);
        emit_kv_snapshot(&site, &s->cache, pos0 + T - 1, tokens[T - 1]);
    }

    /* Only the rows whose logits are wanted go through the classifier. */
    int rows = all_logits ? T : 1;
    float *x_rows = s->x + (size_t)(T - rows) * dim;
    HookSite last = {obs, -1, pos0 + T - rows, tokens + (T - rows)};
    rmsnorm_forward(x_rows, x_rows, w->rms_final, rows, dim);
    hook_emit_rows(&last, HOOK_FINAL_NORM, x_rows, rows, 1, dim);
    matmul_forward(s->logits, x_rows, w->wcls, rows, dim, c->vocab_size);
    work->weight_bytes += (uint64_t)dim * sizeof(float); /* rms_final */
    count_matmul(work, rows, dim, c->vocab_size);
    hook_emit_rows(&last, HOOK_LOGITS, s->logits, rows, 1, c->vocab_size);
    return s->logits;
}
