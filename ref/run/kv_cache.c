/* kv_cache.c: see kv_cache.h. */
#include "ref/run/kv_cache.h"

#include <stdlib.h>
#include <string.h>

#include "ref/kernels/matrix.h"
#include "ref/kernels/quant.h"
#include "ref/util/float16.h"

const char *const KV_TYPE_NAMES[KV_TYPES] = {"f32", "f16", "bf16", "int8", "mla_latent"};

bool kv_type_exists(const Config *c, KvType t) {
    switch (t) {
        case KV_INT8: /* no int8 form of MLA's latents yet */
            return !config_mla(c);
        case KV_MLA_LATENT:
            return config_mla(c);
        case KV_F32:
        case KV_F16:
        case KV_BF16:
            return true;
        case KV_TYPES:
            break;
    }
    return false;
}

KvType kv_type_for(const Config *c, KvType asked, bool kv_int8) {
    if (kv_int8) return KV_INT8;
    return config_mla(c) ? KV_MLA_LATENT : asked;
}

bool kv_type_half(KvType t) {
    return t == KV_F16 || t == KV_BF16;
}

uint64_t kv_type_row_bytes(const Config *c, KvType t) {
    if (!kv_type_half(t)) return kv_row_bytes(c, t == KV_INT8);
    /* two bytes a value */
    uint64_t floats = config_mla(c) ? config_cache_floats(c) : (uint64_t)config_kv_dim(c);
    return floats * sizeof(uint16_t);
}

uint64_t kv_cache_bytes_of(const Config *c, int tokens, KvType t) {
    uint64_t rows = config_mla(c) ? 1u : 2u; /* K and V, or MLA's one */
    return (uint64_t)tokens * (uint64_t)c->n_layers * rows * kv_type_row_bytes(c, t);
}

/* Float32 (or MLA's latents), 16-bit values, or int8 codes with a scale
 * per (position, KV head). Its size comes from the same functions
 * `inspect` prints. */
bool kv_cache_alloc(KVCache *k, const Config *c, int capacity, KvType t) {
    size_t rows = (size_t)c->n_layers * (size_t)capacity;
    bool mla = config_mla(c); /* the rotary key and the latent (mla.h) */
    size_t kv_dim = mla ? (size_t)c->qk_rope_head_dim : (size_t)config_kv_dim(c);
    size_t v_dim = mla ? (size_t)c->kv_lora_rank : kv_dim;
    *k = (KVCache){.type = t,
                   .capacity = capacity,
                   .n_layers = c->n_layers,
                   .kv_dim = (int)kv_dim,
                   .v_dim = (int)v_dim,
                   .n_kv_heads = c->n_kv_heads,
                   .bytes = kv_cache_bytes_of(c, capacity, t)};
    bool ok;
    if (kv_type_half(t)) { /* an engine's 16-bit cache, as it holds it */
        k->key_h = malloc(rows * kv_dim * sizeof(uint16_t));
        k->value_h = malloc(rows * v_dim * sizeof(uint16_t));
        ok = k->key_h && k->value_h;
    } else if (t != KV_INT8) {
        k->key = malloc(rows * kv_dim * sizeof(float));
        k->value = malloc(rows * v_dim * sizeof(float));
        ok = k->key && k->value;
    } else {
        k->key_q = malloc(rows * kv_dim);
        k->value_q = malloc(rows * kv_dim);
        k->key_s = malloc(rows * (size_t)c->n_kv_heads * sizeof(float));
        k->value_s = malloc(rows * (size_t)c->n_kv_heads * sizeof(float));
        ok = k->key_q && k->value_q && k->key_s && k->value_s;
    }
    if (!ok) kv_cache_free(k);
    return ok;
}

void kv_cache_free(KVCache *k) {
    void *all[] = {k->key,   k->value,   k->key_q, k->value_q,
                   k->key_s, k->value_s, k->key_h, k->value_h};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) free(all[i]);
    memset(k, 0, sizeof *k);
}

bool kv_cache_widened(const KVCache *k) {
    return k->type == KV_INT8 || kv_type_half(k->type);
}

void kv_cache_store_q8(KVCache *k, int l, int pos0, int T, int head_dim, const float *k_new,
                       const float *v_new, const StepObserver *obs, float *layer_k,
                       float *layer_v) {
    size_t kv = (size_t)k->kv_dim, H = (size_t)k->n_kv_heads, base = (size_t)l * k->capacity;
    for (int t = 0; t < T; t++) {
        size_t row = base + (size_t)(pos0 + t);
        quantize_row(k_new + t * kv, k->kv_dim, head_dim, k->key_q + row * kv, k->key_s + row * H);
        quantize_row(v_new + t * kv, k->kv_dim, head_dim, k->value_q + row * kv,
                     k->value_s + row * H);
        if (obs != NULL && obs->quant != NULL) {
            QuantRecord rk = {.tensor = "kv.k",
                              .layer = l,
                              .pos = pos0 + t,
                              .rows = 1,
                              .n = k->kv_dim,
                              .group = head_dim,
                              .values = k_new + t * kv,
                              .codes = k->key_q + row * kv,
                              .scales = k->key_s + row * H};
            QuantRecord rv = rk;
            rv.tensor = "kv.v", rv.values = v_new + t * kv;
            rv.codes = k->value_q + row * kv, rv.scales = k->value_s + row * H;
            obs->quant(obs->ctx, &rk);
            obs->quant(obs->ctx, &rv);
        }
    }
    kv_cache_widen(k, l, pos0 + T, head_dim, layer_k, layer_v);
}

/* x rounded to float16 or bfloat16: its 16 bits, and back. */
static uint16_t to_half(float x, KvType t) {
    return t == KV_F16 ? float_to_half(x) : float_to_bf16(x);
}
static float from_half(uint16_t h, KvType t) {
    return t == KV_F16 ? half_to_float(h) : bf16_widen(h);
}

void kv_cache_store_half(KVCache *k, int l, int pos0, int T, const float *k_new, const float *v_new,
                         float *layer_k, float *layer_v) {
    size_t kv = (size_t)k->kv_dim, base = (size_t)l * k->capacity * kv;
    for (size_t i = 0; i < (size_t)T * kv; i++) {
        k->key_h[base + (size_t)pos0 * kv + i] = to_half(k_new[i], k->type);
        k->value_h[base + (size_t)pos0 * kv + i] = to_half(v_new[i], k->type);
    }
    kv_cache_widen(k, l, pos0 + T, 0, layer_k, layer_v);
}

void kv_cache_widen(const KVCache *k, int l, int n, int head_dim, float *layer_k, float *layer_v) {
    size_t kv = (size_t)k->kv_dim, H = (size_t)k->n_kv_heads, base = (size_t)l * k->capacity;
    if (k->type != KV_INT8) {
        for (size_t i = 0; i < (size_t)n * kv; i++) {
            layer_k[i] = from_half(k->key_h[base * kv + i], k->type);
            layer_v[i] = from_half(k->value_h[base * kv + i], k->type);
        }
        return;
    }
    for (int p = 0; p < n; p++) {
        size_t row = base + (size_t)p;
        dequantize_row(k->key_q + row * kv, k->key_s + row * H, k->kv_dim, head_dim,
                       layer_k + p * kv);
        dequantize_row(k->value_q + row * kv, k->value_s + row * H, k->kv_dim, head_dim,
                       layer_v + p * kv);
    }
}
