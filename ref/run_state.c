/* run_state.c: one request's state: its KV cache (float32 or int8) and the
 * scratch of its forward passes. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ref/run_state.h"

#include "ref/kernels/fast_layers.h"

/* YaRN's share of pair i's own frequency (1: kept, 0: divided by the
 * factor), as DeepSeek-V2's yarn_linear_ramp_mask: the pair index at which
 * a wavelength fits original_context b times is rot · ln(context / (2π b))
 * / (2 ln theta); from beta_fast's (floored) to beta_slow's (ceiled) the
 * share falls linearly from 1 to 0. */
static float yarn_kept(int i, int rot, float theta, const RopeScaling *s) {
    const double two_pi = 6.28318530717958647692;
    double context = (double)s->original_context, twice_log = 2.0 * log((double)theta);
    double low = floor((double)rot * log(context / (s->beta_fast * two_pi)) / twice_log);
    double high = ceil((double)rot * log(context / (s->beta_slow * two_pi)) / twice_log);
    low = low < 0 ? 0 : low, high = high > rot - 1 ? rot - 1 : high;
    if (low == high) high += 0.001;
    double ramp = ((double)i - low) / (high - low);
    ramp = ramp < 0 ? 0 : ramp > 1 ? 1 : ramp;
    return (float)(1.0 - ramp);
}

/* The frequency of pair i after scaling. Linear divides every frequency
 * by the factor. Llama 3's keeps the high frequencies (wavelength below
 * original_context / high_freq_factor), divides the low ones (wavelength
 * above original_context / low_freq_factor) by the factor, and blends the
 * two linearly in 1/wavelength between, as Hugging Face's
 * _compute_llama3_parameters does. Per-frequency factors (a GGUF file's
 * rope_freqs.weight, which is how llama.cpp's converter writes Llama 3's
 * rule) divide frequency i by factors[i]; longrope by its short or long
 * factor i. YaRN keeps pair i's frequency by yarn_kept(i) and takes the
 * rest from it divided by the factor. */
static float scaled_frequency(float freq, int i, int rot, float theta, const RopeScaling *s,
                              bool long_factors) {
    const float two_pi = 6.28318530717958647692f;
    switch (s->type) {
        case ROPE_SCALING_NONE:
            return freq;
        case ROPE_SCALING_LINEAR:
            return freq / s->factor;
        case ROPE_SCALING_LLAMA3: {
            float wavelen = two_pi / freq, old = (float)s->original_context;
            if (wavelen < old / s->high_freq_factor) return freq;
            if (wavelen > old / s->low_freq_factor) return freq / s->factor;
            float smooth =
                (old / wavelen - s->low_freq_factor) / (s->high_freq_factor - s->low_freq_factor);
            return (1.0f - smooth) * freq / s->factor + smooth * freq;
        }
        case ROPE_SCALING_FACTORS:
            return freq / s->factors[i];
        case ROPE_SCALING_LONGROPE:
            return freq / (long_factors ? s->long_factors[i] : s->factors[i]);
        case ROPE_SCALING_YARN: {
            float kept = yarn_kept(i, rot, theta, s);
            return freq / s->factor * (1.0f - kept) + freq * kept;
        }
    }
    return freq;
}

/* RoPE angle for position pos and pair i of a head: pos · θ_i with
 * θ_i = theta^(-2i / rot) (theta 10000 in llama2.c; rot the dims RoPE
 * turns, head_dim but for a partial RoPE), scaled as the
 * architecture says, in run.c's float arithmetic. longrope multiplies cos
 * and sin by its attention factor, as Hugging Face's rotary embedding
 * does: q·k grows by its square. */
static void rope_tables_fill(float *cos_t, float *sin_t, int capacity, const Config *c, float theta,
                             const RopeScaling *scaling, bool long_factors) {
    int rot = config_rope_dims(c), half = rot / 2; /* the turned dims' pairs (partial RoPE) */
    bool amplified = scaling->type == ROPE_SCALING_LONGROPE || scaling->type == ROPE_SCALING_YARN;
    float amplitude = amplified ? scaling->attention_factor : 1.0f;
    for (int pos = 0; pos < capacity; pos++) {
        for (int i = 0; i < half; i++) {
            float freq = 1.0f / powf(theta, (float)(2 * i) / (float)rot);
            freq = scaled_frequency(freq, i, rot, theta, scaling, long_factors);
            float angle = (float)pos * freq;
            cos_t[(size_t)pos * half + i] = cosf(angle) * amplitude; /* x 1: the same bits */
            sin_t[(size_t)pos * half + i] = sinf(angle) * amplitude;
        }
    }
}

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
    size_t half = (size_t)config_rope_dims(c) / 2; /* RoPE's pairs a head */
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
    s->rope_cos = malloc((size_t)capacity * half * sizeof(float));
    s->rope_sin = malloc((size_t)capacity * half * sizeof(float));
    ok = ok && s->x && s->xb && s->xb2 && s->q && s->hb && s->hb2 && s->scores && s->logits &&
         s->rope_cos && s->rope_sin;
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
    if (ok && c->rope_scaling.type == ROPE_SCALING_LONGROPE) { /* Phi-3's long factors */
        s->rope_cos_long = malloc((size_t)capacity * half * sizeof(float));
        s->rope_sin_long = malloc((size_t)capacity * half * sizeof(float));
        ok = s->rope_cos_long && s->rope_sin_long;
    }
    if (ok && c->rope_local_theta > 0) { /* Gemma 3's sliding layers turn at their own base */
        s->rope_cos_local = malloc((size_t)capacity * half * sizeof(float));
        s->rope_sin_local = malloc((size_t)capacity * half * sizeof(float));
        ok = s->rope_cos_local && s->rope_sin_local;
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
    rope_tables_fill(s->rope_cos, s->rope_sin, capacity, c, config_rope_theta(c), &c->rope_scaling,
                     false);
    if (s->rope_cos_long != NULL)
        rope_tables_fill(s->rope_cos_long, s->rope_sin_long, capacity, c, config_rope_theta(c),
                         &c->rope_scaling, true);
    if (s->rope_cos_local != NULL)
        rope_tables_fill(s->rope_cos_local, s->rope_sin_local, capacity, c, c->rope_local_theta,
                         &(RopeScaling){.type = ROPE_SCALING_NONE}, false);
    return true;
}

void run_state_free(RunState *s) {
    void *all[] = {s->cache.key,
                   s->cache.value,
                   s->cache.key_q,
                   s->cache.value_q,
                   s->cache.key_s,
                   s->cache.value_s,
                   s->x,
                   s->xb,
                   s->xb2,
                   s->q,
                   s->hb,
                   s->hb2,
                   s->scores,
                   s->logits,
                   s->rope_cos,
                   s->rope_sin,
                   s->xq,
                   s->xs,
                   s->xsum,
                   s->xfake,
                   s->k_new,
                   s->v_new,
                   s->layer_k,
                   s->layer_v,
                   s->key_t,
                   s->rope_cos_local,
                   s->rope_sin_local,
                   s->rope_cos_long,
                   s->rope_sin_long,
                   s->moe_logits,
                   s->moe_probs,
                   s->moe_experts,
                   s->moe_weights,
                   s->moe_rows,
                   s->moe_gate,
                   s->moe_x,
                   s->moe_y,
                   s->moe_h1,
                   s->moe_h3,
                   s->mla_q_a,
                   s->mla_kv_a,
                   s->mla_kv_b,
                   s->mla_latent};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) free(all[i]);
    memset(s, 0, sizeof *s);
}

void run_state_rope_tables(const RunState *s, const Config *c, int l, int last, const float **cos_t,
                           const float **sin_t) {
    if (s->rope_cos_local != NULL && config_layer_slides(c, l)) { /* Gemma 3's sliding layers */
        *cos_t = s->rope_cos_local, *sin_t = s->rope_sin_local;
    } else if (config_rope_long(c, last)) { /* Phi-3's longrope, per pass */
        *cos_t = s->rope_cos_long, *sin_t = s->rope_sin_long;
    } else {
        *cos_t = s->rope_cos, *sin_t = s->rope_sin;
    }
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
