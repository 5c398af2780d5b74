/* kernels/attention_spec.h: what attention needs to know of a layer, for
 * the plain loops (layers.h), the fast ones (fast_layers.h) and MLA
 * (mla.h) alike, and the visibility rule, written once. config.h makes a
 * layer's from the architecture (config_attention_spec). */
#ifndef STEPWISE_KERNELS_ATTENTION_SPEC_H
#define STEPWISE_KERNELS_ATTENTION_SPEC_H

#include <stdbool.h>
#include <stdint.h>

/* What attention needs to know of the architecture, for one layer: its
 * heads, the width of a head's query and key (head_dim) and of its value
 * (v_head_dim: MLA's is narrower; else head_dim), the number whose square root divides q·k
 * (head_dim, or Gemma's query_pre_attn_scalar), the soft-cap on the scores (Gemma 2; 0: none),
 * and which keys a query sees (attention_visible): the layer's sliding window, chunk and sinks
 * (each 0: none). */
typedef struct {
    int n_heads, n_kv_heads, head_dim, v_head_dim;
    float query_scale;
    float softcap;
    int window;     /* a query sees the last `window` positions, itself included (Mistral, Gemma) */
    int chunk;      /* ... only those of its own chunk of `chunk` positions (Llama 4's chunked
                       attention: chunk c is positions c·chunk .. c·chunk + chunk - 1) */
    int sink;       /* ... and always positions 0 .. sink - 1 (attention sinks, StreamingLLM) */
    bool f16_probs; /* the probabilities rounded to float16 before they weight V (llama.cpp's
                       rounding with a float16 cache: the run's kv_rounding_ggml) */
} AttentionSpec;

/* The first position of the band a query at q sees: the later of its
 * window's first position (q - window + 1) and its chunk's (q rounded down
 * to a multiple of chunk); 0 with neither. */
static inline int attention_band_first(const AttentionSpec *a, int q) {
    int first = a->window > 0 && q >= a->window ? q - a->window + 1 : 0;
    int chunk_first = a->chunk > 0 ? q - q % a->chunk : 0;
    return chunk_first > first ? chunk_first : first;
}

/* The visibility rule, the one every attention reads (the plain loops, the
 * fast kernels, MLA and the work count): a query at position q sees the
 * key at position k when k is not in its future (causal), and k is a sink
 * (k < sink) or in the query's band (attention_band_first .. q: its
 * window and its chunk). With window, chunk and sink 0, every k <= q.
 * Positions, not cache slots: a key's position is its cache slot's index
 * (run_state.h's ForwardRow). */
static inline bool attention_visible(const AttentionSpec *a, int q, int k) {
    return k <= q && (k < a->sink || k >= attention_band_first(a, q));
}

/* The lowest position a query at q sees (the keys the loops read are
 * first .. q, those attention_visible drops among them skipped): 0 when
 * there are sinks, else its band's first. */
static inline int attention_first_seen(const AttentionSpec *a, int q) {
    return a->sink > 0 ? 0 : attention_band_first(a, q);
}

/* Whether the keys a query sees can have a gap (sinks, then the band
 * further on): only then must the loops over first .. q ask
 * attention_visible of each key. */
static inline bool attention_has_gaps(const AttentionSpec *a) {
    return a->sink > 0;
}

/* The number of positions a query at q sees: its band (band_first .. q)
 * and the sinks before the band. */
static inline int attention_seen(const AttentionSpec *a, int q) {
    int first = attention_band_first(a, q);
    int sinks = a->sink < first ? a->sink : first;
    return q + 1 - first + sinks;
}

/* The (query, key) pairs T queries at positions pos0 .. pos0 + T - 1 score
 * and mix: Σ_t attention_seen(pos0 + t); causal alone, Σ_{t<T} (pos0 + t +
 * 1) = T·pos0 + T(T+1)/2. The one count of attention's work (forward_jobs.c's
 * count_attention and its closed-form total forward_body_macs). */
static inline uint64_t attention_pairs(const AttentionSpec *a, int T, int pos0) {
    if (a->window == 0 && a->chunk == 0)
        return (uint64_t)T * (uint64_t)pos0 + (uint64_t)T * (uint64_t)(T + 1) / 2u;
    uint64_t pairs = 0;
    for (int t = 0; t < T; t++) pairs += (uint64_t)attention_seen(a, pos0 + t);
    return pairs;
}

#endif
