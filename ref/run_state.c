/* run_state.c: one request's state: its KV cache (float32 or int8) and the
 * scratch of its forward passes. */
#include <stdlib.h>
#include <string.h>

#include "ref/run_state.h"

#include "ref/kernels/fast_layers.h"

/* The cache: float32, or int8 codes with a scale per (position, KV head).
 * Its size comes from the same functions `inspect` prints. */
static bool kv_cache_alloc(KVCache *k, const Config *c, int capacity, bool int8) {
    size_t rows = (size_t)c->n_layers * (size_t)capacity;
    bool mla = config_mla(c); /* the rotary key and the latent (mla.h) */
    size_t kv_dim = mla ? (size_t)c->qk_rope_head_dim : (size_t)config_kv_dim(c);
    size_t v_dim = mla ? (size_t)c->kv_lora_rank : kv_dim;
    *k = (KVCache){.capacity = capacity,
                   .n_layers = c->n_layers,
                   .kv_dim = (int)kv_dim,
                   .v_dim = (int)v_dim,
                   .n_kv_heads = c->n_kv_heads,
                   .bytes = kv_cache_bytes_of(c, capacity, int8)};
    if (!int8) {
        k->key = malloc(rows * kv_dim * sizeof(float));
        k->value = malloc(rows * v_dim * sizeof(float));
        return k->key && k->value;
    }
    k->key_q = malloc(rows * kv_dim);
    k->value_q = malloc(rows * kv_dim);
    k->key_s = malloc(rows * (size_t)c->n_kv_heads * sizeof(float));
    k->value_s = malloc(rows * (size_t)c->n_kv_heads * sizeof(float));
    return k->key_q && k->value_q && k->key_s && k->value_s;
}

bool run_state_init(RunState *s, const Config *c, int capacity, int max_tokens, StepError *err) {
    return run_state_init_quant(s, c, capacity, max_tokens, NULL, err);
}

bool run_state_init_quant(RunState *s, const Config *c, int capacity, int max_tokens,
                          const QuantRuntime *q, StepError *err) {
    memset(s, 0, sizeof *s);
    if (capacity < 1 || capacity > c->seq_len || max_tokens < 1 || max_tokens > capacity)
        return step_fail(err, "run state: capacity %d / max_tokens %d outside [1, seq_len %d]",
                         capacity, max_tokens, c->seq_len);
    if (q != NULL && q->kv && config_mla(c))
        return step_fail(err, "run state: an int8 cache of MLA's latents is not supported");
    if (q != NULL) s->quant = *q;
    if (s->quant.group < 1) s->quant.group = 32;
    s->exp = exp_kind_of_libm(); /* once: the library does not change while it runs */
    size_t T = (size_t)max_tokens, dim = (size_t)c->dim, hidden = (size_t)c->hidden_dim;
    size_t q_dim = (size_t)config_q_dim(c), kv_dim = (size_t)config_kv_dim(c);
    size_t dq = dim > q_dim ? dim : q_dim; /* xb holds a normed x, then attention's output */
    size_t v_out = (size_t)c->n_heads * (size_t)config_v_head_dim(c);
    dq = v_out > dq ? v_out : dq;
    size_t shared = (size_t)c->n_shared_experts * (size_t)c->expert_hidden_dim;
    hidden = shared > hidden ? shared : hidden; /* hb, hb2: the shared experts' too */
    size_t widest = dq > hidden ? dq : hidden;
    size_t ranks = (size_t)(c->kv_lora_rank > c->q_lora_rank ? c->kv_lora_rank : c->q_lora_rank);
    widest = ranks > widest ? ranks : widest; /* MLA's kv_b and q_b read a latent */
    widest = (size_t)c->expert_hidden_dim > widest ? (size_t)c->expert_hidden_dim : widest;
    bool ok = kv_cache_alloc(&s->cache, c, capacity, s->quant.kv);
    s->max_tokens = max_tokens;
    s->x = malloc(T * dim * sizeof(float));
    s->xb = malloc(T * dq * sizeof(float));
    s->xb2 = malloc(T * dim * sizeof(float));
    s->q = malloc(T * q_dim * sizeof(float));
    s->hb = malloc(T * hidden * sizeof(float));
    s->hb2 = malloc(T * hidden * sizeof(float));
    s->scores = malloc((size_t)c->n_heads * capacity * sizeof(float));
    s->logits = malloc(T * (size_t)c->vocab_size * sizeof(float));
    ok = ok && s->x && s->xb && s->xb2 && s->q && s->hb && s->hb2 && s->scores && s->logits;
    if (ok && c->n_experts > 0) { /* a mixture of experts' scratch */
        size_t E = (size_t)c->n_experts, k = (size_t)c->n_experts_used;
        size_t eh = (size_t)c->expert_hidden_dim;
        s->moe_logits = malloc(T * E * sizeof(float));
        s->moe_probs = malloc(T * E * sizeof(float));
        s->moe_experts = malloc(T * k * sizeof(int));
        s->moe_weights = malloc(T * k * sizeof(float));
        s->moe_rows = malloc(T * sizeof(int));
        s->moe_gate = malloc(T * sizeof(float));
        s->moe_x = malloc(T * dim * sizeof(float));
        s->moe_y = malloc(T * dim * sizeof(float));
        s->moe_h1 = malloc(T * eh * sizeof(float));
        s->moe_h3 = malloc(T * eh * sizeof(float));
        ok = s->moe_logits && s->moe_probs && s->moe_experts && s->moe_weights && s->moe_rows &&
             s->moe_gate && s->moe_x && s->moe_y && s->moe_h1 && s->moe_h3;
    }
    if (ok && s->quant.activations) {
        s->xq = malloc(T * widest);
        s->xs = malloc(T * widest * sizeof(float)); /* at most one scale per value */
        s->xsum = malloc(T * widest * sizeof(int32_t));
        s->xfake = malloc(T * widest * sizeof(float));
        ok = s->xq && s->xs && s->xsum && s->xfake;
    }
    /* new K and V rows before they go to an int8 cache, or a batch's rows */
    s->k_new = malloc(T * kv_dim * sizeof(float));
    s->v_new = malloc(T * kv_dim * sizeof(float));
    ok = ok && s->k_new && s->v_new;
    if (ok && max_tokens >= ATTENTION_TRANSPOSE_MIN_QUERIES) {
        s->key_t = malloc((size_t)capacity * kv_dim * sizeof(float));
        ok = s->key_t != NULL;
    }
    if (ok && s->quant.kv) {
        s->layer_k = malloc((size_t)capacity * kv_dim * sizeof(float));
        s->layer_v = malloc((size_t)capacity * kv_dim * sizeof(float));
        ok = s->layer_k && s->layer_v;
    }
    if (ok && config_mla(c)) { /* mla.h's */
        size_t rank = (size_t)c->kv_lora_rank, rope = (size_t)c->qk_rope_head_dim;
        size_t kv_b =
            (size_t)c->n_heads * (size_t)(config_head_dim(c) - c->qk_rope_head_dim) + v_out;
        s->mla_q_a = c->q_lora_rank > 0 ? malloc(T * (size_t)c->q_lora_rank * sizeof(float)) : NULL;
        s->mla_kv_a = malloc(T * (rank + rope) * sizeof(float));
        size_t head_rows = kv_b / (size_t)c->n_heads * rank; /* the absorbed form's one head */
        size_t kv_b_all = (size_t)capacity * kv_b;
        s->mla_kv_b = malloc((kv_b_all > head_rows ? kv_b_all : head_rows) * sizeof(float));
        s->mla_latent = malloc(2 * rank * sizeof(float));
        s->layer_k = malloc((size_t)capacity * q_dim * sizeof(float));
        s->layer_v = malloc((size_t)capacity * v_out * sizeof(float));
        ok = (c->q_lora_rank == 0 || s->mla_q_a) && s->mla_kv_a && s->mla_kv_b && s->mla_latent &&
             s->layer_k && s->layer_v;
    }
    if (!ok) {
        run_state_free(s);
        return step_fail(err, "run state: out of memory for %d positions", capacity);
    }
    return true;
}

void run_state_free(RunState *s) {
    void *all[] = {s->cache.key,   s->cache.value,
                   s->cache.key_q, s->cache.value_q,
                   s->cache.key_s, s->cache.value_s,
                   s->x,           s->xb,
                   s->xb2,         s->q,
                   s->hb,          s->hb2,
                   s->scores,      s->logits,
                   s->xq,          s->xs,
                   s->xsum,        s->xfake,
                   s->k_new,       s->v_new,
                   s->layer_k,     s->layer_v,
                   s->key_t,       s->moe_logits,
                   s->moe_probs,   s->moe_experts,
                   s->moe_weights, s->moe_rows,
                   s->moe_gate,    s->moe_x,
                   s->moe_y,       s->moe_h1,
                   s->moe_h3,      s->mla_q_a,
                   s->mla_kv_a,    s->mla_kv_b,
                   s->mla_latent};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) free(all[i]);
    memset(s, 0, sizeof *s);
}

void rows_emit(const ForwardRow *rows, int n_rows, int layer, HookPoint point, const float *x,
               int heads, int head_dim) {
    for (int r = 0, t0 = 0; r < n_rows; t0 += rows[r++].n_tokens) {
        HookSite site = {
            .obs = rows[r].obs, .layer = layer, .pos0 = rows[r].pos0, .tokens = rows[r].tokens};
        hook_emit_rows(&site, point, x + (size_t)t0 * heads * head_dim, rows[r].n_tokens, heads,
                       head_dim);
    }
}
