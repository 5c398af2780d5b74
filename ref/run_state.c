/* run_state.c: a sequence's state (its KV cache, run/kv_cache.h) and a
 * pass's scratch (its activations and attention's room). */
#include <stdlib.h>
#include <string.h>

#include "ref/run_state.h"

#include "ref/kernels/fast_layers.h"

bool seq_state_init(SeqState *s, const Config *c, int capacity, KvType kv, StepError *err) {
    memset(s, 0, sizeof *s);
    if (capacity < 1 || capacity > c->seq_len)
        return step_fail(err, "run state: capacity %d outside [1, seq_len %d]", capacity,
                         c->seq_len);
    if (!kv_type_exists(c, kv))
        return kv == KV_INT8
                   ? step_fail(err, "run state: an int8 cache of MLA's latents is not supported")
                   : step_fail(err, "run state: no %s cache for this model", KV_TYPE_NAMES[kv]);
    if (!kv_cache_alloc(&s->cache, c, capacity, kv))
        return step_fail(err, "run state: out of memory for %d positions", capacity);
    return true;
}

void seq_state_free(SeqState *s) {
    kv_cache_free(&s->cache);
    memset(s, 0, sizeof *s);
}

/* The room attention works in, in floats: one row at a time, over at most
 * `capacity` positions. */
typedef struct {
    size_t scores, layer_k, layer_v, key_t, mla_kv_b, mla_latent;
} AttentionRoom;

static AttentionRoom attention_room(const Config *c, int max_tokens, int capacity, KvType kv) {
    size_t P = (size_t)capacity, kv_dim = (size_t)config_kv_dim(c);
    AttentionRoom r = {.scores = (size_t)c->n_heads * P};
    if (config_mla(c)) { /* mla.h's: every head's keys and values rebuilt from the latents */
        size_t rank = (size_t)c->kv_lora_rank;
        size_t v_out = (size_t)c->n_heads * (size_t)config_v_head_dim(c);
        size_t kv_b =
            (size_t)c->n_heads * (size_t)(config_head_dim(c) - c->qk_rope_head_dim) + v_out;
        size_t head_rows = kv_b / (size_t)c->n_heads * rank; /* the absorbed form's one head */
        r.mla_kv_b = P * kv_b > head_rows ? P * kv_b : head_rows;
        r.mla_latent = 2 * rank;
        r.layer_k = P * (size_t)config_q_dim(c);
        r.layer_v = P * v_out;
        return r;
    }
    if (max_tokens >= ATTENTION_TRANSPOSE_MIN_QUERIES) r.key_t = P * kv_dim;
    if (kv == KV_INT8 || kv_type_half(kv)) /* a layer's rows widened for attention */
        r.layer_k = r.layer_v = P * kv_dim;
    return r;
}

uint64_t pass_attention_bytes(const Config *c, int max_tokens, int capacity, KvType kv) {
    AttentionRoom r = attention_room(c, max_tokens, capacity, kv);
    return (uint64_t)(r.scores + r.layer_k + r.layer_v + r.key_t + r.mla_kv_b + r.mla_latent) *
           sizeof(float);
}

/* NULL for none. */
static float *floats_or_null(size_t n, bool *ok) {
    if (n == 0) return NULL;
    float *p = malloc(n * sizeof(float));
    *ok = *ok && p != NULL;
    return p;
}

bool pass_scratch_init(PassScratch *p, const Config *c, int max_tokens, int capacity, KvType kv,
                       const QuantRuntime *q, StepError *err) {
    memset(p, 0, sizeof *p);
    if (max_tokens < 1)
        return step_fail(err, "run state: max_tokens %d is not positive", max_tokens);
    if (capacity < 1 || capacity > c->seq_len)
        return step_fail(err, "run state: capacity %d outside [1, seq_len %d]", capacity,
                         c->seq_len);
    p->int8_activations = q != NULL && q->activations; /* q->kv is the sequences' */
    p->activation_group = q != NULL && q->group >= 1 ? q->group : 32;
    p->exp = exp_kind_of_libm(); /* once: the library does not change while it runs */
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
    p->max_tokens = max_tokens;
    p->x = malloc(T * dim * sizeof(float));
    p->xb = malloc(T * dq * sizeof(float));
    p->xb2 = malloc(T * dim * sizeof(float));
    p->q = malloc(T * q_dim * sizeof(float));
    p->hb = malloc(T * hidden * sizeof(float));
    p->hb2 = malloc(T * hidden * sizeof(float));
    p->logits = malloc(T * (size_t)c->vocab_size * sizeof(float));
    /* new K and V rows before they go to an int8 cache, or a batch's rows */
    p->k_new = malloc(T * kv_dim * sizeof(float));
    p->v_new = malloc(T * kv_dim * sizeof(float));
    p->positions = malloc(T * sizeof(int));
    bool ok = p->x && p->xb && p->xb2 && p->q && p->hb && p->hb2 && p->logits && p->k_new &&
              p->v_new && p->positions;
    if (ok && c->n_experts > 0) { /* a mixture of experts' scratch */
        size_t E = (size_t)c->n_experts, k = (size_t)c->n_experts_used;
        size_t eh = (size_t)c->expert_hidden_dim;
        p->moe_logits = malloc(T * E * sizeof(float));
        p->moe_probs = malloc(T * E * sizeof(float));
        p->moe_experts = malloc(T * k * sizeof(int));
        p->moe_weights = malloc(T * k * sizeof(float));
        p->moe_rows = malloc(T * sizeof(int));
        p->moe_gate = malloc(T * sizeof(float));
        p->moe_x = malloc(T * dim * sizeof(float));
        p->moe_y = malloc(T * dim * sizeof(float));
        p->moe_h1 = malloc(T * eh * sizeof(float));
        p->moe_h3 = malloc(T * eh * sizeof(float));
        ok = p->moe_logits && p->moe_probs && p->moe_experts && p->moe_weights && p->moe_rows &&
             p->moe_gate && p->moe_x && p->moe_y && p->moe_h1 && p->moe_h3;
    }
    if (ok && p->int8_activations) {
        p->xq = malloc(T * widest);
        p->xs = malloc(T * widest * sizeof(float)); /* at most one scale per value */
        p->xsum = malloc(T * widest * sizeof(int32_t));
        p->xfake = malloc(T * widest * sizeof(float));
        ok = p->xq && p->xs && p->xsum && p->xfake;
    }
    if (ok && config_mla(c)) { /* mla.h's */
        size_t rank = (size_t)c->kv_lora_rank, rope = (size_t)c->qk_rope_head_dim;
        p->mla_q_a = c->q_lora_rank > 0 ? malloc(T * (size_t)c->q_lora_rank * sizeof(float)) : NULL;
        p->mla_kv_a = malloc(T * (rank + rope) * sizeof(float));
        ok = (c->q_lora_rank == 0 || p->mla_q_a) && p->mla_kv_a;
    }
    if (ok) { /* attention's room, one row at a time */
        AttentionRoom r = attention_room(c, max_tokens, capacity, kv);
        p->capacity = capacity;
        p->attention_bytes = pass_attention_bytes(c, max_tokens, capacity, kv);
        p->scores = floats_or_null(r.scores, &ok);
        p->layer_k = floats_or_null(r.layer_k, &ok);
        p->layer_v = floats_or_null(r.layer_v, &ok);
        p->key_t = floats_or_null(r.key_t, &ok);
        p->mla_kv_b = floats_or_null(r.mla_kv_b, &ok);
        p->mla_latent = floats_or_null(r.mla_latent, &ok);
    }
    if (!ok) {
        pass_scratch_free(p);
        return step_fail(err, "run state: out of memory for passes of %d tokens", max_tokens);
    }
    return true;
}

void pass_scratch_free(PassScratch *p) {
    void *all[] = {p->x,          p->xb,        p->xb2,         p->q,           p->hb,
                   p->hb2,        p->logits,    p->k_new,       p->v_new,       p->xq,
                   p->xs,         p->xsum,      p->xfake,       p->mla_q_a,     p->mla_kv_a,
                   p->moe_logits, p->moe_probs, p->moe_experts, p->moe_weights, p->moe_rows,
                   p->moe_gate,   p->moe_x,     p->moe_y,       p->moe_h1,      p->moe_h3,
                   p->scores,     p->layer_k,   p->layer_v,     p->key_t,       p->mla_kv_b,
                   p->mla_latent, p->positions};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) free(all[i]);
    memset(p, 0, sizeof *p);
}

bool run_state_init(RunState *s, const Config *c, int capacity, int max_tokens, StepError *err) {
    return run_state_init_quant(s, c, capacity, max_tokens, NULL, err);
}

bool run_state_init_quant(RunState *s, const Config *c, int capacity, int max_tokens,
                          const QuantRuntime *q, StepError *err) {
    return run_state_init_kv(s, c, capacity, max_tokens, q, KV_F32, err);
}

bool run_state_init_kv(RunState *s, const Config *c, int capacity, int max_tokens,
                       const QuantRuntime *q, KvType kv, StepError *err) {
    memset(s, 0, sizeof *s);
    if (capacity < 1 || capacity > c->seq_len || max_tokens < 1 || max_tokens > capacity)
        return step_fail(err, "run state: capacity %d / max_tokens %d outside [1, seq_len %d]",
                         capacity, max_tokens, c->seq_len);
    KvType type = kv_type_for(c, kv, q != NULL && q->kv);
    if (!seq_state_init(&s->seq, c, capacity, type, err)) return false;
    if (!pass_scratch_init(&s->pass, c, max_tokens, capacity, type, q, err)) {
        seq_state_free(&s->seq);
        return false;
    }
    return true;
}

void run_state_free(RunState *s) {
    seq_state_free(&s->seq);
    pass_scratch_free(&s->pass);
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

void row_positions(const ForwardRow *row, int *positions) {
    for (int t = 0; t < row->n_tokens; t++)
        positions[t] = row->positions != NULL ? row->positions[t] : row->pos0 + t;
}

int positions_last(const int *positions, int n) {
    int last = positions[0];
    for (int t = 1; t < n; t++) last = positions[t] > last ? positions[t] : last;
    return last;
}
