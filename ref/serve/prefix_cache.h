/* prefix_cache.h: KV rows kept across requests, keyed by the tokens that
 * made them (vLLM's automatic prefix caching, llama.cpp's prompt cache).
 *
 * Row p of a layer's K and V depends only on the tokens at positions
 * 0..p, so a request whose prompt begins with tokens another request
 * already prefilled may copy those rows instead of computing them, and
 * prefill only the rest from that position. Prefill and decode give the
 * same bits for a row whatever the pass that computes it, so a copied row
 * is exactly the row a fresh prefill would write, float32 or int8
 * (docs/batching.md, "A shared prefix"). The cache holds at most
 * `budget` bytes of rows; the least recently used prompt goes first. */
#ifndef STEPWISE_PREFIX_CACHE_H
#define STEPWISE_PREFIX_CACHE_H

#include "ref/forward.h"

/* The rows of one prompt: positions 0..n-1 of every layer. */
typedef struct {
    int *tokens; /* [n] */
    int n;
    KvType type;               /* the cache's (run/kv_cache.h) */
    float *key, *value;        /* float32: [n_layers, n, kv_dim] */
    uint16_t *key_h, *value_h; /* half: [n_layers, n, kv_dim] */
    int8_t *key_q, *value_q;   /* int8: [n_layers, n, kv_dim] */
    float *key_s, *value_s;    /* int8: [n_layers, n, n_kv_heads] */
    uint64_t bytes;
    uint64_t last_used;
} PrefixEntry;

typedef struct {
    PrefixEntry *entries;
    int n, cap;
    uint64_t bytes, budget;            /* held, and the most it may hold */
    uint64_t position_bytes[KV_TYPES]; /* a kept position's charge, by the rows' type */
    uint64_t clock;                    /* uses so far: the LRU order */
    int evicted;                       /* prompts dropped to make room */
} PrefixCache;

/* What the cache charges for one position it keeps: the position's K and V
 * rows in every layer (of type kv: float32, 16-bit, or int8 codes and
 * scales) and its token id, which a later prompt is matched against. */
uint64_t prefix_cache_position_bytes(const Config *c, KvType kv);

/* An empty cache of at most budget bytes: refused when the budget cannot
 * hold one position (prefix_cache_position_bytes). */
bool prefix_cache_init(PrefixCache *p, const Config *c, KvType kv, uint64_t budget, StepError *err);

/* Copy into dst the rows of the longest prefix of tokens[0..n) the cache
 * holds, at most n - 1 positions (the last token is always computed: its
 * logits are the first pick's), rows of dst's kind only; returns how many
 * positions were copied (0: none). */
int prefix_cache_take(PrefixCache *p, const int *tokens, int n, KVCache *dst);

/* Keep rows 0..n-1 of src, made from tokens[0..n), unless a kept prompt
 * already begins with them; evict the least recently used to make room;
 * a prompt larger than the budget is not kept. False only when out of
 * memory (the cache is then unchanged). */
bool prefix_cache_put(PrefixCache *p, const int *tokens, int n, const KVCache *src);

void prefix_cache_free(PrefixCache *p);

#endif
