/* kernels/attention_spec.h: what attention needs to know of a layer, for
 * the plain loops (layers.h) and the fast ones (fast_layers.h) alike, and
 * the window rule, written once. config.h makes a layer's from the
 * architecture (config_attention_spec). */
#ifndef STEPWISE_KERNELS_ATTENTION_SPEC_H
#define STEPWISE_KERNELS_ATTENTION_SPEC_H

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
} AttentionSpec;

#endif
