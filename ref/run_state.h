/* run_state.h: what a forward pass reads and writes, in two parts: a
 * sequence's state (its KV cache, kept from pass to pass: run/kv_cache.h)
 * and a pass's scratch (the activations of the tokens it runs and the room
 * its attention works in, shared by every row of a batched pass); and a
 * row of a pass: a sequence, its observer and the tokens it feeds. forward.h runs the pass;
 * the blocks that need the scratch (moe.h, mla.h) read it from here. */
#ifndef STEPWISE_RUN_STATE_H
#define STEPWISE_RUN_STATE_H

#include <stdbool.h>

#include "ref/config.h"
#include "ref/util/error.h"
#include "ref/hooks.h"
#include "ref/kernels/exp.h"
#include "ref/kernels/quant.h"
#include "ref/run/kv_cache.h"
#include "ref/work.h"

/* One sequence's state: its cache and what its last pass did. Kept from
 * pass to pass (a request owns one); the room attention works in is the
 * pass's (PassScratch), not sized by each sequence's context: a batched
 * pass runs many sequences against one. */
typedef struct {
    KVCache cache;
    WorkCount work; /* of the last forward pass it was a row of */
} SeqState;

/* Allocate a sequence whose cache holds `capacity` positions (at most
 * seq_len) of type kv (kv_type_for; refused unless kv_type_exists). */
bool seq_state_init(SeqState *s, const Config *c, int capacity, KvType kv, StepError *err);
void seq_state_free(SeqState *s);

/* A pass's scratch: the activations of up to max_tokens tokens (of one
 * row, or of every row of a batched pass), the quantization of them, and
 * the room one row's attention works in (rows run attention one after the
 * other), for rows whose caches hold at most `capacity` positions. */
typedef struct {
    int max_tokens;
    int capacity; /* the most positions a row's attention sees */
    ExpKind exp;  /* the C library's expf, which the fast path's exp_many follows (exp.h) */
    bool int8_activations; /* each matrix's input quantized (QuantRuntime.activations) */
    int activation_group;  /* in groups of this many (with float weights; int8 weights impose
                              theirs) */
    float *x;              /* [max_tokens, dim] residual stream */
    float *xb;             /* [max_tokens, max(dim, q_dim, n_heads x v_head_dim)] normed input, then
                              attention output */
    float *xb2;            /* [max_tokens, dim] projection output */
    float *q;              /* [max_tokens, q_dim] queries */
    float *hb;     /* [max_tokens, max(hidden_dim, S)] gate, then SwiGLU output (S: the shared
                      experts' width, n_shared_experts x expert_hidden_dim) */
    float *hb2;    /* [max_tokens, max(hidden_dim, S)] up */
    float *logits; /* [max_tokens, vocab_size] */
    float *k_new, *v_new; /* [max_tokens, kv_dim] new rows: before int8 storage, or a batch's */
    int *positions;       /* [max_tokens] each token's position (ForwardRow), for the pass */
    /* scratch used only when quantizing activations */
    int8_t *xq;    /* [max(dim, hidden_dim)] one quantized input row */
    float *xs;     /* its scales */
    int32_t *xsum; /* [max_tokens, groups] each group's sum of codes (q8_packed.h) */
    float *xfake;  /* [max_tokens, max(dim, hidden_dim)] quantized-then-dequantized input */
    /* multi-head latent attention's (mla.h), NULL without it */
    float *mla_q_a;  /* [max_tokens, q_lora_rank] the query's low-rank path */
    float *mla_kv_a; /* [max_tokens, kv_lora_rank + qk_rope_head_dim] latents, rotary keys */
    /* a mixture of experts' (moe.h), NULL for a dense model */
    float *moe_logits, *moe_probs; /* [max_tokens, n_experts] */
    int *moe_experts;              /* [max_tokens, n_experts_used] */
    float *moe_weights;            /* [max_tokens, n_experts_used] */
    int *moe_rows;                 /* [max_tokens] the tokens one expert runs */
    float *moe_gate;               /* [max_tokens] and their weights */
    float *moe_x, *moe_y;          /* [max_tokens, dim] */
    float *moe_h1, *moe_h3;        /* [max_tokens, expert_hidden_dim] */
    /* one row's attention at a time */
    float *scores;            /* [n_heads, capacity] attention scores, a row per query head */
    float *layer_k, *layer_v; /* [capacity, kv_dim] one layer's int8 or 16-bit cache, widened; MLA's
                                 keys and values rebuilt, [capacity, n_heads x head_dim] and
                                 [capacity, n_heads x v_head_dim] (else NULL) */
    /* [n_kv_heads, head_dim, capacity] one layer's keys transposed, for the
     * fast path's passes of many queries (NULL when the pass takes fewer
     * than ATTENTION_TRANSPOSE_MIN_QUERIES tokens, or with MLA) */
    float *key_t;
    /* multi-head latent attention's (mla.h), NULL without it */
    float *mla_kv_b;   /* [capacity, n_heads x (nope + v_head_dim)] kv_b of every latent
                          (the absorbed form: one head's kv_b rows, [nope + v, kv_lora_rank]) */
    float *mla_latent; /* [2 x kv_lora_rank] a head's absorbed query, then its latent output */
    uint64_t attention_bytes; /* of the six above: pass_attention_bytes */
} PassScratch;

/* Bytes of the room attention works in, for passes of up to max_tokens
 * tokens over caches of type kv holding at most `capacity` positions: what
 * pass_scratch_init allocates for it, once a pass, not once a sequence. */
uint64_t pass_attention_bytes(const Config *c, int max_tokens, int capacity, KvType kv);

/* Allocate scratch for passes of up to max_tokens tokens over sequences
 * whose caches, of type kv, hold at most `capacity` positions, quantizing
 * activations as q says (NULL: float32; q->kv is the sequences'). */
bool pass_scratch_init(PassScratch *p, const Config *c, int max_tokens, int capacity, KvType kv,
                       const QuantRuntime *q, StepError *err);
void pass_scratch_free(PassScratch *p);

/* One request run alone: its sequence and its own scratch. */
typedef struct {
    SeqState seq;
    PassScratch pass;
} RunState;

/* Allocate a state whose cache holds `capacity` positions (at most seq_len)
 * and whose forward calls take up to max_tokens tokens; float32 throughout. */
bool run_state_init(RunState *s, const Config *c, int capacity, int max_tokens, StepError *err);

/* The same, quantizing activations and/or the KV cache as q says (NULL:
 * float32). */
bool run_state_init_quant(RunState *s, const Config *c, int capacity, int max_tokens,
                          const QuantRuntime *q, StepError *err);

/* The same with the cache the run asked for (RunOptions' kv: KV_F32, KV_F16
 * or KV_BF16) unless q asks for int8: kv_type_for. */
bool run_state_init_kv(RunState *s, const Config *c, int capacity, int max_tokens,
                       const QuantRuntime *q, KvType kv, StepError *err);
void run_state_free(RunState *s);

/* One row of a forward pass: a sequence's state (its KV cache and work
 * count), its observer, and the n_tokens tokens it feeds, the sequence's
 * tokens pos0, pos0 + 1, ... Prefill is one row of the whole prompt,
 * decode one row of one token, a batched decode step B rows of one token,
 * and a recompute without a cache one row of the whole window from 0.
 *
 * A cache slot and a position are two things. Token t's K and V rows go to
 * cache slot pos0 + t, its index in the sequence. Its position is data:
 * positions[t], what RoPE turns it by, the row of a learned position
 * embedding it gets, and the q of the visibility rule and the work count
 * (attention_visible, attention_seen). The rule places a cached key at
 * its slot's index (a query at q reads slots 0 .. q), so a position must
 * be its token's slot for attention to read the keys it should, and
 * every caller today passes NULL: each token at its sequence index. A
 * caller whose positions differ from the slots (M-RoPE's ids, Qwen2-VL,
 * one a section of RoPE's dimensions; a context shift that re-numbers)
 * would keep a key position per slot for the rule beside them: not done. */
typedef struct {
    SeqState *state;
    const StepObserver *obs; /* its hooks, or NULL */
    const int *tokens;       /* [n_tokens] */
    int n_tokens;
    int pos0;             /* the first token's cache slot (its index in the sequence) */
    const int *positions; /* [n_tokens] each token's position, or NULL: pos0 + t, its slot */
    bool all_logits;      /* the logits of every token, not only the last one's */
    bool no_logits;       /* none at all: a prefill chunk before the last (its cache rows only) */
} ForwardRow;

/* Emit x [N, heads × head_dim] at `point` of `layer`, each row of a pass
 * (its tokens t0 .. t0 + n_tokens - 1 of the N, in the rows' order) to its
 * own observer. */
void rows_emit(const ForwardRow *rows, int n_rows, int layer, HookPoint point, const float *x,
               int heads, int head_dim);

/* positions [n_tokens] = row's tokens' positions: row->positions, or each
 * token's slot pos0 + t (the one place that default is written). */
void row_positions(const ForwardRow *row, int *positions);

/* The greatest of positions [n] (n >= 1): how far RoPE's tables must reach. */
int positions_last(const int *positions, int n);

#endif
