/* config.h: the shape of a Llama-architecture transformer, and the facts that
 * follow from it (head size, KV width, parameter count, cache bytes). */
#ifndef STEPWISE_CONFIG_H
#define STEPWISE_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

typedef struct {
    int dim;                /* width of the residual stream */
    int hidden_dim;         /* width of the feed-forward (SwiGLU) layer */
    int n_layers;           /* transformer blocks */
    int n_heads;            /* query heads */
    int n_kv_heads;         /* key/value heads; n_heads / n_kv_heads query heads share one */
    int vocab_size;         /* tokens in the vocabulary (always positive here) */
    int seq_len;            /* context window: the most positions the model was trained on */
    bool shared_classifier; /* true: the classifier is the token embedding (tied) */
} Config;

/* head_dim = dim / n_heads: the width of one attention head. */
int config_head_dim(const Config *c);
/* kv_dim = n_kv_heads * head_dim: the width of one cached K (or V) row. */
int config_kv_dim(const Config *c);
/* "MHA" (n_kv_heads == n_heads), "MQA" (n_kv_heads == 1 < n_heads) or "GQA". */
const char *config_attention_kind(const Config *c);

/* Check every rule a usable shape obeys: positive sizes, dim divisible by
 * n_heads, n_heads by n_kv_heads, an even head size (RoPE rotates pairs), and
 * products that fit in memory arithmetic. `what` names the source in errors. */
bool config_validate(const Config *c, const char *what, StepError *err);

/* Number of float32 weights, classifier included once if tied. Only valid for
 * a validated config (no overflow then). */
uint64_t config_param_count(const Config *c);

/* Bytes of one cached K (or V) row: one position of one layer. float32:
 * kv_dim × 4; int8: kv_dim one-byte codes and one float32 scale per KV head. */
uint64_t kv_row_bytes(const Config *c, bool int8);

/* Bytes of KV cache for `tokens` positions of one request:
 * tokens × n_layers × kv_dim × 2 (K and V) × sizeof(float). */
uint64_t kv_cache_bytes(const Config *c, int tokens);

/* The same cache stored in int8: per position, layer and K or V, kv_dim
 * one-byte codes and one float32 scale per KV head:
 * tokens × n_layers × 2 × (kv_dim + n_kv_heads × 4). */
uint64_t kv_cache_bytes_q8(const Config *c, int tokens);

/* The cache of the type a run chose: kv_cache_bytes_q8 when int8, else
 * kv_cache_bytes. Every report of a run's cache size uses this. */
uint64_t kv_cache_bytes_of(const Config *c, int tokens, bool int8);

#endif
