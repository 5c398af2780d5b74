/* kv_cache.h: the KV cache as one module: its type (one enum for every
 * form it takes), the one rule saying which types a model's attention has,
 * its bytes, its arrays, and how new rows are stored in it and read back
 * as floats for attention.
 *
 * The keys and values of every position seen so far. Q is never cached: a
 * query is only used by its own position. Multi-head latent attention
 * (config_mla) caches instead, in the same two arrays, the rotary key
 * shared by the heads (key, kv_dim = qk_rope_head_dim, after RoPE) and the
 * normed latent every head's key and value are made from (value, v_dim =
 * kv_lora_rank): mla.h. */
#ifndef STEPWISE_KV_CACHE_H
#define STEPWISE_KV_CACHE_H

#include <stdbool.h>
#include <stdint.h>

#include "ref/config.h"
#include "ref/hooks.h"

/* What one cached value is. A run asks for KV_F32, KV_F16 or KV_BF16
 * (--kv-dtype: an engine's 16-bit cache, as it holds it) or KV_INT8
 * (--quant-kv int8: codes and a scale per position and KV head); an MLA
 * model's cache is its float32 latents and rotary keys, KV_MLA_LATENT. */
typedef enum { KV_F32, KV_F16, KV_BF16, KV_INT8, KV_MLA_LATENT, KV_TYPES } KvType;

/* "f32", "f16", "bf16", "int8", "mla_latent": the run header's names. */
extern const char *const KV_TYPE_NAMES[KV_TYPES];

/* The one place that says which cache types a model's attention has: an
 * MLA model has no int8 form of its cache of latents (yet), and only an
 * MLA model has a cache of latents. Every check of a combination (the
 * command line's, inspect's, the run state's) asks this. */
bool kv_type_exists(const Config *c, KvType t);

/* The type a run's cache is: int8 when kv_int8, an MLA model's latents,
 * else what the run asked (KV_F32, KV_F16 or KV_BF16). */
KvType kv_type_for(const Config *c, KvType asked, bool kv_int8);

/* Whether t holds 16 bits a value (key_h, value_h). */
bool kv_type_half(KvType t);

/* Bytes of one cached K (or V) row of type t (MLA's one row: the latent and
 * the rotary key): kv_row_bytes's float32 and int8, 2 bytes a value for
 * the 16-bit types. */
uint64_t kv_type_row_bytes(const Config *c, KvType t);

/* A request's cache of type t for `tokens` positions: tokens × n_layers ×
 * rows (2, MLA's 1) × kv_type_row_bytes. Every report of a run's cache
 * size uses this. */
uint64_t kv_cache_bytes_of(const Config *c, int tokens, KvType t);

typedef struct {
    KvType type;
    int capacity; /* positions it can hold */
    int n_layers;
    int kv_dim; /* a key row's width */
    int v_dim;  /* a value row's: kv_dim, but MLA's latent */
    int n_kv_heads;
    uint64_t bytes; /* of key and value together: kv_cache_bytes_of(config, capacity, type) */
    float *key;     /* [n_layers, capacity, kv_dim] (after RoPE); NULL unless f32 or MLA */
    float *value;   /* [n_layers, capacity, v_dim] */
    uint16_t *key_h, *value_h; /* f16, bf16: [n_layers, capacity, kv_dim] their 16 bits */
    /* int8: codes and one scale per (position, KV head) */
    int8_t *key_q, *value_q; /* [n_layers, capacity, kv_dim] */
    float *key_s, *value_s;  /* [n_layers, capacity, n_kv_heads] */
} KVCache;

/* Allocate k for `capacity` positions of c's layers in type t (which
 * kv_type_exists for c). False when out of memory (k then freed). */
bool kv_cache_alloc(KVCache *k, const Config *c, int capacity, KvType t);
void kv_cache_free(KVCache *k);

/* Whether attention reads the cache through a widened copy (int8, f16,
 * bf16) rather than the float32 rows themselves. */
bool kv_cache_widened(const KVCache *k);

/* Store T new K and V rows (k_new, v_new [T, kv_dim]) of layer l from pos0
 * as int8 (one scale per KV head, reported to obs's quant hook), then read
 * the layer's rows 0..pos0+T-1 back as floats into layer_k, layer_v
 * [pos0 + T, kv_dim] for attention. */
void kv_cache_store_q8(KVCache *k, int l, int pos0, int T, int head_dim, const float *k_new,
                       const float *v_new, const StepObserver *obs, float *layer_k, float *layer_v);

/* Layer l's rows 0..n-1 of a widened cache (int8: in groups of head_dim,
 * one scale each; 16-bit: head_dim unused) read back as floats into
 * layer_k, layer_v [n, kv_dim]. */
void kv_cache_widen(const KVCache *k, int l, int n, int head_dim, float *layer_k, float *layer_v);

/* The same in the 16-bit cache (an engine's float16 or bfloat16 cache),
 * then the layer's rows widened: the values a cache of that type holds,
 * exactly. */
void kv_cache_store_half(KVCache *k, int l, int pos0, int T, const float *k_new, const float *v_new,
                         float *layer_k, float *layer_v);

#endif
