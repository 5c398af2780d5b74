/* kernels/attention_spec.h: what attention needs to know of a layer, for
 * the plain loops (layers.h) and the fast ones (fast_layers.h) alike, and
 * the window rule, written once. config.h makes a layer's from the
 * architecture (config_attention_spec). */
#ifndef STEPWISE_KERNELS_ATTENTION_SPEC_H
#define STEPWISE_KERNELS_ATTENTION_SPEC_H

#include <stdbool.h>
#include <stdint.h>

/* The window rule, written once: the first position a query at pos sees
 * through a window of `window` positions (0: none), itself included. */
static inline int window_first_seen(int window, int pos) {
    return window > 0 && pos >= window ? pos - window + 1 : 0;
}

/* What attention needs to know of the architecture, for one layer: its
 * heads, the width of a head's query and key (head_dim) and of its value
 * (v_head_dim: MLA's is narrower; else head_dim), the number whose square root divides q·k
 * (head_dim, or Gemma's query_pre_attn_scalar), the soft-cap on the scores (Gemma 2; 0: none) and
 * the layer's sliding window (0: none; window_first_seen reads it). */
typedef struct {
    int n_heads, n_kv_heads, head_dim, v_head_dim;
    float query_scale;
    float softcap;
    int window;
    bool f16_probs; /* the probabilities rounded to float16 before they weight V (llama.cpp's
                       rounding with a float16 cache: the run's kv_rounding_ggml) */
} AttentionSpec;

/* The (query, position) pairs T queries from pos0 score and mix: query t
 * sees pos0 + t + 1 positions, or those its window keeps. Without a window
 * Σ_{t<T} (pos0 + t + 1) = T·pos0 + T(T+1)/2; with one, counted one by
 * one. The one count of attention's work (forward.c's WorkCount, its
 * closed-form total forward_body_macs). */
static inline uint64_t attention_pairs(const AttentionSpec *a, int T, int pos0) {
    if (a->window == 0) return (uint64_t)T * (uint64_t)pos0 + (uint64_t)T * (uint64_t)(T + 1) / 2u;
    uint64_t pairs = 0;
    for (int t = 0; t < T; t++)
        pairs += (uint64_t)(pos0 + t + 1 - window_first_seen(a->window, pos0 + t));
    return pairs;
}

#endif
