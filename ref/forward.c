/* forward.c: the transformer over a batch of rows (forward.h). */
#include "ref/forward.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ref/forward_jobs.h"
#include "ref/layers.h"
#include "ref/mla.h"
#include "ref/moe.h"
#include "ref/linear.h"
#include "ref/run/kv_cache.h"
#include "ref/util/float16.h"

/* Passes of at least this many tokens report their progress per layer. */
#define PROGRESS_TOKENS 256

/* gate [N, C] = silu(gate) ⊙ up, or (GeGLU) gelu(gate) ⊙ up. */
static void glu_rows(const Model *m, const PassScratch *s, float *gate, const float *up, int N,
                     int C) {
    bool table = m->run.gelu_f16_table;
    RowsJob job = {.op = m->config.mlp == MLP_GEGLU  ? (table ? ROWS_GEGLU_GGML : ROWS_GEGLU)
                         : m->run.mlp == KERNEL_FAST ? ROWS_SWIGLU_MANY
                                                     : ROWS_SWIGLU,
                   .out = gate,
                   .in = up,
                   .C = C,
                   .exp = s->exp};
    rows_parallel(m, N, &job);
}

static void emit_kv_rows(const HookSite *site, const float *k, const float *v, int T, int kv_dim) {
    for (int t = 0; t < T; t++) {
        int pos = site->pos0 + t;
        if (!hook_wanted(site->obs, HOOK_KV_ROW, site->layer, pos)) continue;
        HookTensor h = {.point = HOOK_KV_ROW,
                        .layer = site->layer,
                        .pos = pos,
                        .head = -1,
                        .token = site->tokens[t],
                        .a = k + (size_t)t * kv_dim,
                        .rows = 1,
                        .cols = kv_dim,
                        .b = v + (size_t)t * kv_dim};
        site->obs->emit(site->obs->ctx, &h);
    }
}

/* After a pass: a layer's whole cache, positions 0..last, for observers that
 * watch it grow. */
static void emit_kv_snapshot(const HookSite *site, const float *key_l, const float *value_l,
                             int kv_dim, int last, int token) {
    if (!hook_wanted(site->obs, HOOK_KV_SNAPSHOT, site->layer, last)) return;
    HookTensor h = {.point = HOOK_KV_SNAPSHOT,
                    .layer = site->layer,
                    .pos = last,
                    .head = -1,
                    .token = token,
                    .a = key_l,
                    .rows = last + 1,
                    .cols = kv_dim,
                    .b = value_l};
    site->obs->emit(site->obs->ctx, &h);
}

/* x [dim] = the embedding row of token, widened or read back from its int8
 * codes as the embedding is held (a packed tied model: the classifier's
 * row), times Gemma's embed_scale. Returns the bytes it read. */
static uint64_t embed_token(const Model *m, int token, float *x) {
    matrix_row(&m->embedding, token, x);
    float scale = m->config.embed_scale;
    for (int i = 0; scale > 0 && i < m->config.dim; i++) x[i] *= scale;
    return matrix_bytes(&m->embedding) / (uint64_t)m->embedding.rows;
}

/* Rows in a pass: row r's tokens are rows t0(r) .. t0(r) + n_tokens - 1 of
 * every activation [N, width], N the tokens of all rows. */
#define EACH_ROW(r, t0, rows, n_rows)                                                              \
    for (int r = 0, t0 = 0; r < (n_rows); t0 += (rows)[r++].n_tokens)

/* Row r's cache of layer l as floats: the cache itself, or (int8, 16-bit)
 * the layer read back into the pass's scratch. */
static float *layer_keys(const PassScratch *s, SeqState *rs, int l) {
    return kv_cache_widened(&rs->cache)
               ? s->layer_k
               : rs->cache.key + (size_t)l * rs->cache.capacity * rs->cache.kv_dim;
}
static float *layer_values(const PassScratch *s, SeqState *rs, int l) {
    return kv_cache_widened(&rs->cache)
               ? s->layer_v
               : rs->cache.value + (size_t)l * rs->cache.capacity * rs->cache.kv_dim;
}

/* x [n] rounded to float16 in place (llama.cpp's query for K.Q). */
static void round_f16(float *x, size_t n) {
    for (size_t i = 0; i < n; i++) x[i] = half_round(x[i]);
}

/* Whether an observer wants this layer's attention scores or pattern at
 * any of the T positions: they are then computed in the order the hooks
 * fire (query by query), on one thread. */
static bool attention_watched(const HookSite *site, int T) {
    for (int t = 0; t < T; t++) {
        int pos = site->pos0 + t;
        if (hook_wanted(site->obs, HOOK_ATTN_SCORES, site->layer, pos) ||
            hook_wanted(site->obs, HOOK_ATTN_PATTERN, site->layer, pos))
            return true;
    }
    return false;
}

/* One row's part of attention in layer l: RoPE on its queries and new keys
 * (k, v: its rows of the pass's new K and V) by their positions (pos: the
 * row's), the new rows into its cache slots, then attention over its cache
 * by the visibility rule into out. */
static void attend_row(const Model *m, const PassScratch *s, const ForwardRow *row, const int *pos,
                       int l, float *q, float *k, float *v, float *out) {
    const Config *c = &m->config;
    SeqState *rs = row->state;
    int T = row->n_tokens, pos0 = row->pos0, kv_dim = config_kv_dim(c);
    int head_dim = config_head_dim(c), n_heads = c->n_heads, n_kv = c->n_kv_heads;
    uint64_t row_bytes = kv_type_row_bytes(c, rs->cache.type);
    HookSite site = {.obs = row->obs, .layer = l, .pos0 = pos0, .tokens = row->tokens};
    AttentionSpec spec =
        config_attention_spec(c, l);          /* the layer's window, RoPE's and the scores' */
    spec.f16_probs = m->run.kv_rounding_ggml; /* llama.cpp's rounding of the probabilities */
    if (c->position == POS_ROPE) {            /* GPT-2's positions came in with the embedding */
        int rot = config_rope_dims(c);
        const float *cos_t, *sin_t;
        rope_tables_for(&m->rope, c, spec.window > 0, positions_last(pos, T), &cos_t, &sin_t);
        rope_forward(q, T, config_q_dim(c), head_dim, rot, pos, cos_t, sin_t, c->rope_layout);
        rope_forward(k, T, kv_dim, head_dim, rot, pos, cos_t, sin_t, c->rope_layout);
    }
    rs->work.kv_bytes_written += (uint64_t)T * row_bytes * 2u;
    hook_emit_rows(&site, HOOK_ATTN_Q, q, T, n_heads, head_dim);
    hook_emit_rows(&site, HOOK_ATTN_K, k, T, n_kv, head_dim);
    hook_emit_rows(&site, HOOK_ATTN_V, v, T, n_kv, head_dim);
    /* with llama.cpp's rounding (a float16 cache) the query as it multiplies K */
    if (m->run.kv_rounding_ggml) round_f16(q, (size_t)T * config_q_dim(c));
    float *key_l = layer_keys(s, rs, l), *value_l = layer_values(s, rs, l);
    if (rs->cache.type == KV_INT8) {
        kv_cache_store_q8(&rs->cache, l, pos0, T, head_dim, k, v, row->obs, s->layer_k, s->layer_v);
    } else if (kv_type_half(rs->cache.type)) { /* an engine's float16 or bfloat16 cache */
        kv_cache_store_half(&rs->cache, l, pos0, T, k, v, s->layer_k, s->layer_v);
    } else { /* K is cached after RoPE; Q never is */
        memcpy(key_l + (size_t)pos0 * kv_dim, k, (size_t)T * kv_dim * sizeof(float));
        memcpy(value_l + (size_t)pos0 * kv_dim, v, (size_t)T * kv_dim * sizeof(float));
    }
    emit_kv_rows(&site, key_l + (size_t)pos0 * kv_dim, value_l + (size_t)pos0 * kv_dim, T, kv_dim);
    if (m->run.attention == KERNEL_PLAIN || attention_watched(&site, T)) {
        attention_forward(out, q, key_l, value_l, s->scores, T, pos, &spec, &site);
    } else {
        attention_threads(m, out, q, key_l, value_l, s, T, pos, pos0 + T, &spec);
    }
    count_attention(&rs->work, &spec, T, pos, row_bytes);
}

/* The architecture's extras between the projections and RoPE, for all N
 * tokens: q/k/v biases (Qwen2), then RMSNorm of each head of q and k with
 * the layer's q_norm and k_norm (Qwen3). llama2.c's models have neither. */
static void qkv_extras(const Model *m, PassScratch *s, int N, int l) {
    const Config *c = &m->config;
    int q_dim = config_q_dim(c), kv_dim = config_kv_dim(c), head_dim = config_head_dim(c);
    if (c->qkv_bias) {
        bias_forward(s->q, model_vector(m, VEC_Q_BIAS, l), N, q_dim);
        bias_forward(s->k_new, model_vector(m, VEC_K_BIAS, l), N, kv_dim);
        bias_forward(s->v_new, model_vector(m, VEC_V_BIAS, l), N, kv_dim);
    }
    if (c->qk_norm) { /* each head a row of head_dim: [N * heads, head_dim] */
        float eps = config_norm_eps(c);
        rmsnorm_forward(s->q, s->q, model_vector(m, VEC_Q_NORM, l), N * c->n_heads, head_dim, eps);
        rmsnorm_forward(s->k_new, s->k_new, model_vector(m, VEC_K_NORM, l), N * c->n_kv_heads,
                        head_dim, eps);
    }
}

/* x [N, dim] += wo · attention(rope(wq · x̂), cache ∪ rope(wk · x̂), wv · x̂),
 * x̂ = the block's norm of x (norm_rows), and wo's bias where the family has
 * one (proj_bias); q [N, q_dim], k and v [N, kv_dim]. */
static void attention_block(const Model *m, PassScratch *s, const ForwardRow *rows, int n_rows,
                            int N, int l) {
    const Config *c = &m->config;
    const Matrix *mats = m->layers[l].m;
    int dim = c->dim, q_dim = config_q_dim(c), kv_dim = config_kv_dim(c);
    norm_rows(m, s->xb, s->x, model_vector(m, VEC_ATT_NORM, l),
              model_vector(m, VEC_ATT_NORM_BIAS, l), N, dim); /* xb [N, dim] */
    rows_emit(rows, n_rows, l, HOOK_LN1, s->xb, 1, dim);
    if (config_mla(c)) { /* DeepSeek-V2's latent attention (mla.h): xb [N, n_heads x v] */
        mla_attention(m, s, rows, n_rows, N, l);
    } else {
        LinearInput normed = linear_input(s, s->xb, N, &mats[MAT_WQ]); /* once, for q, k, v */
        linear_rows(m, rows, n_rows, s->q, &normed, &mats[MAT_WQ]);
        linear_rows(m, rows, n_rows, s->k_new, &normed, &mats[MAT_WK]);
        linear_rows(m, rows, n_rows, s->v_new, &normed, &mats[MAT_WV]);
        qkv_extras(m, s, N, l);
        rows_emit(rows, n_rows, l, HOOK_ATTN_Q_PRE, s->q, c->n_heads, config_head_dim(c));
        rows_emit(rows, n_rows, l, HOOK_ATTN_K_PRE, s->k_new, c->n_kv_heads, config_head_dim(c));
        EACH_ROW(r, t0, rows, n_rows) /* xb [N, q_dim] = each row's attention output */
        attend_row(m, s, &rows[r], s->positions + t0, l, s->q + (size_t)t0 * q_dim,
                   s->k_new + (size_t)t0 * kv_dim, s->v_new + (size_t)t0 * kv_dim,
                   s->xb + (size_t)t0 * q_dim);
    }
    rows_emit(rows, n_rows, l, HOOK_ATTN_Z, s->xb, c->n_heads, config_v_head_dim(c));
    linear_rows_of(m, s, rows, n_rows, s->xb2, s->xb, N, &mats[MAT_WO]);
    if (c->proj_bias) bias_forward(s->xb2, model_vector(m, VEC_O_BIAS, l), N, dim);
    rows_emit(rows, n_rows, l, HOOK_ATTN_OUT, s->xb2, 1, dim);
    if (c->post_norms) { /* Gemma: the output normalised before it joins the residual */
        norm_rows(m, s->xb2, s->xb2, model_vector(m, VEC_POST_ATT_NORM, l), NULL, N, dim);
        rows_emit(rows, n_rows, l, HOOK_ATTN_POST_NORM, s->xb2, 1, dim);
    }
    residual_rows(m, s->x, s->xb2, N, dim);
    rows_emit(rows, n_rows, l, HOOK_RESID_MID, s->x, 1, dim);
}

/* x [N, dim] += down · gelu(gate · x̂ + b_gate) + b_down, x̂ = layernorm(x): GPT-2's
 * MLP (its c_fc in the gate slot, which llama.cpp and the hooks call up). */
static void gelu_mlp(const Model *m, PassScratch *s, const ForwardRow *rows, int n_rows, int N,
                     int l) {
    int dim = m->config.dim, hidden = m->config.hidden_dim;
    const Matrix *mats = m->layers[l].m;
    linear_rows_of(m, s, rows, n_rows, s->hb, s->xb, N, &mats[MAT_GATE]);
    if (m->config.proj_bias) bias_forward(s->hb, model_vector(m, VEC_GATE_BIAS, l), N, hidden);
    rows_emit(rows, n_rows, l, HOOK_MLP_UP, s->hb, 1, hidden);
    gelu_rows(m, s->hb, N, hidden);
    rows_emit(rows, n_rows, l, HOOK_MLP_HIDDEN, s->hb, 1, hidden);
    linear_rows_of(m, s, rows, n_rows, s->xb, s->hb, N, &mats[MAT_DOWN]);
    if (m->config.proj_bias) bias_forward(s->xb, model_vector(m, VEC_DOWN_BIAS, l), N, dim);
}

/* x [N, dim] += down · (silu(gate · x̂) ⊙ (up · x̂)), x̂ = rmsnorm(x): SwiGLU
 * (GeGLU: gelu for silu; Gemma's output normalised by post_ffn_norm
 * before the add); or GPT-2's (gelu_mlp). */
static void mlp_block(const Model *m, PassScratch *s, const ForwardRow *rows, int n_rows, int N,
                      int l) {
    int dim = m->config.dim, hidden = m->config.hidden_dim;
    const Matrix *mats = m->layers[l].m;
    norm_rows(m, s->xb, s->x, model_vector(m, VEC_FFN_NORM, l),
              model_vector(m, VEC_FFN_NORM_BIAS, l), N, dim);
    rows_emit(rows, n_rows, l, HOOK_LN2, s->xb, 1, dim);
    if (config_layer_moe(&m->config, l)) {
        moe_forward(m, s, rows, n_rows, N, l); /* the experts (moe.h) */
    } else if (m->config.mlp == MLP_GELU) {
        gelu_mlp(m, s, rows, n_rows, N, l);
    } else {
        LinearInput normed = linear_input(s, s->xb, N, &mats[MAT_GATE]); /* once, for both */
        linear_rows(m, rows, n_rows, s->hb, &normed, &mats[MAT_GATE]);
        linear_rows(m, rows, n_rows, s->hb2, &normed, &mats[MAT_UP]);
        rows_emit(rows, n_rows, l, HOOK_MLP_GATE, s->hb, 1, hidden);
        rows_emit(rows, n_rows, l, HOOK_MLP_UP, s->hb2, 1, hidden);
        glu_rows(m, s, s->hb, s->hb2, N, hidden); /* hb [N, hidden] */
        rows_emit(rows, n_rows, l, HOOK_MLP_HIDDEN, s->hb, 1, hidden);
        linear_rows_of(m, s, rows, n_rows, s->xb, s->hb, N, &mats[MAT_DOWN]);
    }
    rows_emit(rows, n_rows, l, HOOK_MLP_OUT, s->xb, 1, dim);
    if (m->config.post_norms) { /* Gemma: the output normalised before it joins the residual */
        norm_rows(m, s->xb, s->xb, model_vector(m, VEC_POST_FFN_NORM, l), NULL, N, dim);
        rows_emit(rows, n_rows, l, HOOK_MLP_POST_NORM, s->xb, 1, dim);
    }
    residual_rows(m, s->x, s->xb, N, dim);
    rows_emit(rows, n_rows, l, HOOK_RESID_POST, s->x, 1, dim);
}

/* The tokens whose logits a row wants: all of them, its last, or none. */
static int wanted(const ForwardRow *row) {
    return row->no_logits ? 0 : row->all_logits ? row->n_tokens : 1;
}

/* logits [W, vocab] = wcls · norm(x) for the W wanted tokens, gathered
 * row by row into xb first (the others never reach the classifier). */
static const float *classify(const Model *m, PassScratch *s, const ForwardRow *rows, int n_rows) {
    int dim = m->config.dim, V = m->config.vocab_size, W = 0;
    EACH_ROW(r, t0, rows, n_rows) {
        int n = wanted(&rows[r]), first = t0 + rows[r].n_tokens - n;
        memcpy(s->xb + (size_t)W * dim, s->x + (size_t)first * dim,
               (size_t)n * dim * sizeof(float));
        W += n;
    }
    if (W == 0) return s->logits; /* no row wants any: the classifier is not read */
    const Matrix *cls = &m->classifier;
    norm_rows(m, s->xb, s->xb, model_vector(m, VEC_FINAL_NORM, 0),
              model_vector(m, VEC_FINAL_NORM_BIAS, 0), W, dim);
    LinearInput normed = linear_input(s, s->xb, W, cls);
    linear_forward(m, s->logits, &normed, cls);
    if (m->config.final_softcap > 0) /* Gemma 2: every logit within (-cap, cap) */
        logits_softcap_forward(s->logits, W * V, m->config.final_softcap);
    for (int r = 0, w0 = 0; r < n_rows; w0 += wanted(&rows[r++])) {
        const ForwardRow *row = &rows[r];
        int n = wanted(row), first = row->n_tokens - n;
        HookSite site = {
            .obs = row->obs, .layer = -1, .pos0 = row->pos0 + first, .tokens = row->tokens + first};
        row->state->work.weight_bytes += config_final_vector_floats(&m->config) * sizeof(float);
        work_add_matmul(&row->state->work, n, dim, V, matrix_bytes(cls));
        hook_emit_rows(&site, HOOK_FINAL_NORM, s->xb + (size_t)w0 * dim, n, 1, dim);
        hook_emit_rows(&site, HOOK_LOGITS, s->logits + (size_t)w0 * V, n, 1, V);
    }
    return s->logits;
}

/* x [N, dim] += each token's learned position embedding (GPT-2's wpe),
 * shown at embed.pos; xb holds the rows added. */
static void add_positions(const Model *m, PassScratch *s, const ForwardRow *rows, int n_rows,
                          int N) {
    int dim = m->config.dim;
    EACH_ROW(r, t0, rows, n_rows) {
        for (int t = 0; t < rows[r].n_tokens; t++)
            memcpy(s->xb + (size_t)(t0 + t) * dim,
                   model_vector(m, VEC_POSITIONS, s->positions[t0 + t]),
                   (size_t)dim * sizeof(float));
        rows[r].state->work.weight_bytes += (uint64_t)rows[r].n_tokens * dim * sizeof(float);
    }
    rows_emit(rows, n_rows, -1, HOOK_EMBED_POS, s->xb, 1, dim);
    residual_rows(m, s->x, s->xb, N, dim);
}

const float *forward(const Model *m, PassScratch *s, const ForwardRow *rows, int n_rows) {
    const Config *c = &m->config;
    int dim = c->dim, N = 0;
    EACH_ROW(r, t0, rows, n_rows) { /* x [N, dim] = the embedding rows of every token */
        SeqState *rs = rows[r].state;
        rs->work = (WorkCount){0};
        row_positions(&rows[r], s->positions + t0); /* each token's position, for the pass */
        for (int t = 0; t < rows[r].n_tokens; t++)
            rs->work.weight_bytes +=
                embed_token(m, rows[r].tokens[t], s->x + (size_t)(t0 + t) * dim);
        N = t0 + rows[r].n_tokens;
    }
    rows_emit(rows, n_rows, -1, HOOK_EMBED, s->x, 1, dim);
    if (c->position == POS_LEARNED) add_positions(m, s, rows, n_rows, N);
    uint64_t layer_vector_bytes = config_layer_vector_floats(c) * sizeof(float);
    for (int l = 0; l < c->n_layers; l++) {
        if (N >= PROGRESS_TOKENS) /* a long pass: how far through the layers */
            progress_report(m->progress, "forward pass (layers)", (uint64_t)l,
                            (uint64_t)c->n_layers);
        rows_emit(rows, n_rows, l, HOOK_RESID_PRE, s->x, 1, dim);
        for (int r = 0; r < n_rows; r++) /* the layer's norms and biases, read once a pass */
            rows[r].state->work.weight_bytes += layer_vector_bytes;
        attention_block(m, s, rows, n_rows, N, l);
        mlp_block(m, s, rows, n_rows, N, l);
        for (int r = 0; r < n_rows && !config_mla(c); r++) { /* MLA's rows: attn.latent, k_rope */
            const ForwardRow *row = &rows[r];
            int last = row->pos0 + row->n_tokens - 1;
            HookSite site = {.obs = row->obs, .layer = l, .pos0 = row->pos0, .tokens = row->tokens};
            if (!hook_wanted(site.obs, HOOK_KV_SNAPSHOT, l, last)) continue;
            KVCache *k = &row->state->cache;
            if (kv_cache_widened(k)) /* the pass's copy is the last row's: this row's again */
                kv_cache_widen(k, l, last + 1, config_head_dim(c), s->layer_k, s->layer_v);
            emit_kv_snapshot(&site, layer_keys(s, row->state, l), layer_values(s, row->state, l),
                             config_kv_dim(c), last, row->tokens[row->n_tokens - 1]);
        }
    }
    return classify(m, s, rows, n_rows);
}

const float *forward_tokens(const Model *m, RunState *s, const int *tokens, int T, int pos0,
                            bool all_logits, const StepObserver *obs) {
    ForwardRow row = {.state = &s->seq,
                      .obs = obs,
                      .tokens = tokens,
                      .n_tokens = T,
                      .pos0 = pos0,
                      .all_logits = all_logits};
    return forward(m, &s->pass, &row, 1);
}
