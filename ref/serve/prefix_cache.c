/* prefix_cache.c: see prefix_cache.h. */
#include "ref/serve/prefix_cache.h"

#include <stdlib.h>
#include <string.h>

uint64_t prefix_cache_position_bytes(const Config *c, KvType kv) {
    return kv_cache_bytes_of(c, 1, kv) + sizeof(int);
}

bool prefix_cache_init(PrefixCache *p, const Config *c, KvType kv, uint64_t budget,
                       StepError *err) {
    memset(p, 0, sizeof *p);
    uint64_t one = prefix_cache_position_bytes(c, kv);
    if (budget < one)
        return step_fail(err,
                         "--prefix-cache-bytes %llu cannot hold one position (%llu bytes: its "
                         "rows and token id)",
                         (unsigned long long)budget, (unsigned long long)one);
    p->budget = budget;
    for (int t = 0; t < KV_TYPES; t++)
        p->position_bytes[t] = prefix_cache_position_bytes(c, (KvType)t);
    return true;
}

static void entry_free(PrefixEntry *e) {
    void *all[] = {e->tokens, e->key,     e->value, e->key_q,  e->value_q,
                   e->key_s,  e->value_s, e->key_h, e->value_h};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) free(all[i]);
    memset(e, 0, sizeof *e);
}

/* Copy positions [0, n) of every layer between a cache of `from_cap`
 * positions per layer and one of `to_cap`, `row` bytes per position. */
static void copy_rows(void *to, int to_cap, const void *from, int from_cap, int layers, int n,
                      size_t row) {
    for (int l = 0; l < layers; l++)
        memcpy((char *)to + (size_t)l * to_cap * row,
               (const char *)from + (size_t)l * from_cap * row, (size_t)n * row);
}

/* Copy n positions from entry e into cache k (or from k into e): K and V,
 * float32, or int8 codes and their scales. The cache's arrays are written
 * through its pointers, not its struct. */
typedef struct {
    void *cache, *entry; /* the same array in the cache and in the entry */
    size_t row;          /* bytes per position */
} RowArray;

static void transfer(PrefixEntry *e, const KVCache *k, int n, bool into_cache) {
    RowArray arrays[4];
    size_t kv = (size_t)k->kv_dim, scales = (size_t)k->n_kv_heads * sizeof(float);
    int n_arrays = 0;
    if (e->type == KV_INT8) {
        arrays[n_arrays++] = (RowArray){k->key_q, e->key_q, kv};
        arrays[n_arrays++] = (RowArray){k->value_q, e->value_q, kv};
        arrays[n_arrays++] = (RowArray){k->key_s, e->key_s, scales};
        arrays[n_arrays++] = (RowArray){k->value_s, e->value_s, scales};
    } else if (kv_type_half(e->type)) {
        arrays[n_arrays++] = (RowArray){k->key_h, e->key_h, kv * sizeof(uint16_t)};
        arrays[n_arrays++] =
            (RowArray){k->value_h, e->value_h, (size_t)k->v_dim * sizeof(uint16_t)};
    } else {
        arrays[n_arrays++] = (RowArray){k->key, e->key, kv * sizeof(float)};
        arrays[n_arrays++] = (RowArray){k->value, e->value, (size_t)k->v_dim * sizeof(float)};
    }
    for (int i = 0; i < n_arrays; i++) {
        if (into_cache)
            copy_rows(arrays[i].cache, k->capacity, arrays[i].entry, e->n, k->n_layers, n,
                      arrays[i].row);
        else
            copy_rows(arrays[i].entry, e->n, arrays[i].cache, k->capacity, k->n_layers, n,
                      arrays[i].row);
    }
}

/* Tokens the two sequences share from their start. */
static int common_prefix(const int *a, int na, const int *b, int nb) {
    int i = 0;
    while (i < na && i < nb && a[i] == b[i]) i++;
    return i;
}

int prefix_cache_take(PrefixCache *p, const int *tokens, int n, KVCache *dst) {
    int best = 0, at = -1;
    for (int i = 0; i < p->n; i++) {
        if (p->entries[i].type != dst->type) continue;
        int shared = common_prefix(p->entries[i].tokens, p->entries[i].n, tokens, n);
        if (shared > best) best = shared, at = i;
    }
    if (best > n - 1) best = n - 1; /* the last token is computed: its logits are needed */
    if (best > dst->capacity) best = dst->capacity;
    if (at < 0 || best < 1) return 0;
    p->entries[at].last_used = ++p->clock;
    transfer(&p->entries[at], dst, best, true);
    return best;
}

bool prefix_cache_put(PrefixCache *p, const int *tokens, int n, const KVCache *src) {
    for (int i = 0; i < p->n; i++) { /* already held as (the start of) a kept prompt */
        if (p->entries[i].type == src->type && p->entries[i].n >= n &&
            common_prefix(p->entries[i].tokens, p->entries[i].n, tokens, n) == n) {
            p->entries[i].last_used = ++p->clock;
            return true;
        }
    }
    uint64_t bytes = (uint64_t)n * p->position_bytes[src->type];
    if (bytes > p->budget || n < 1) return true;       /* too large to keep: not an error */
    while (p->bytes + bytes > p->budget && p->n > 0) { /* evict the least recently used */
        int lru = 0;
        for (int i = 1; i < p->n; i++)
            if (p->entries[i].last_used < p->entries[lru].last_used) lru = i;
        p->bytes -= p->entries[lru].bytes;
        entry_free(&p->entries[lru]);
        p->entries[lru] = p->entries[--p->n];
        p->evicted++;
    }
    if (p->n == p->cap) {
        int cap = p->cap ? 2 * p->cap : 8;
        PrefixEntry *grown = realloc(p->entries, (size_t)cap * sizeof *grown);
        if (grown == NULL) return false;
        p->entries = grown, p->cap = cap;
    }
    PrefixEntry e = {.n = n, .type = src->type, .bytes = bytes, .last_used = ++p->clock};
    size_t rows = (size_t)src->n_layers * n, kv = (size_t)src->kv_dim;
    size_t heads = (size_t)src->n_kv_heads;
    e.tokens = malloc((size_t)n * sizeof(int));
    bool ok = e.tokens != NULL;
    if (kv_type_half(src->type)) {
        e.key_h = malloc(rows * kv * sizeof(uint16_t));
        e.value_h = malloc(rows * (size_t)src->v_dim * sizeof(uint16_t));
        ok = ok && e.key_h && e.value_h;
    } else if (src->type != KV_INT8) {
        e.key = malloc(rows * kv * sizeof(float));
        e.value = malloc(rows * (size_t)src->v_dim * sizeof(float));
        ok = ok && e.key && e.value;
    } else {
        e.key_q = malloc(rows * kv);
        e.value_q = malloc(rows * kv);
        e.key_s = malloc(rows * heads * sizeof(float));
        e.value_s = malloc(rows * heads * sizeof(float));
        ok = ok && e.key_q && e.value_q && e.key_s && e.value_s;
    }
    if (!ok) {
        entry_free(&e);
        return false;
    }
    memcpy(e.tokens, tokens, (size_t)n * sizeof(int));
    transfer(&e, src, n, false);
    p->entries[p->n++] = e;
    p->bytes += bytes;
    return true;
}

void prefix_cache_free(PrefixCache *p) {
    for (int i = 0; i < p->n; i++) entry_free(&p->entries[i]);
    free(p->entries);
    memset(p, 0, sizeof *p);
}
