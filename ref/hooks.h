/* hooks.h: the one narrow interface between the engine and whatever watches
 * it (the trace writer, a test). The engine names a point and hands over the
 * numbers there; it never formats anything. A NULL observer costs nothing,
 * and an observer is asked (`wants`) before any copy or extra work.
 *
 * Activation points are named like TransformerLens's hooks, so that
 * "blocks.3.attn.pattern" means what people who know that library expect;
 * docs/trace-format.md lists every name with its shape. */
#ifndef STEPWISE_HOOKS_H
#define STEPWISE_HOOKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ref/work.h"

struct Sampler;      /* sampler.h: only pointed to here */
struct ContextShift; /* context_shift.h: only pointed to here */

/* The kind of a forward pass. */
typedef enum {
    PASS_PREFILL,   /* the prompt, in one pass */
    PASS_DECODE,    /* one new token against the cache */
    PASS_RECOMPUTE, /* the whole sequence again, without a cache */
    PASS_REBUILD,   /* the tokens a context policy kept, prefilled again */
} PassPhase;

/* "prefill", "decode", "recompute", "rebuild": the trace's names. */
const char *pass_phase_name(PassPhase phase);

typedef enum {
    HOOK_EMBED,       /* "embed"                [dim] token embedding (× Gemma's √dim) */
    HOOK_EMBED_POS,   /* "embed.pos"            [dim] learned position embedding (GPT-2), added */
    HOOK_RESID_PRE,   /* "blocks.L.resid_pre"   [dim] residual entering the block */
    HOOK_LN1,         /* "blocks.L.ln1"         [dim] the norm before attention */
    HOOK_ATTN_Q_PRE,  /* "blocks.L.attn.q_pre"  [n_heads, head_dim] before RoPE (after a
                         bias and q norm, where the architecture has them) */
    HOOK_ATTN_K_PRE,  /* "blocks.L.attn.k_pre"  [n_kv_heads, head_dim] before RoPE */
    HOOK_ATTN_Q,      /* "blocks.L.attn.q"      [n_heads, head_dim] after RoPE */
    HOOK_ATTN_K,      /* "blocks.L.attn.k"      [n_kv_heads, head_dim] after RoPE */
    HOOK_ATTN_V,      /* "blocks.L.attn.v"      [n_kv_heads, head_dim] */
    HOOK_ATTN_LATENT, /* "blocks.L.attn.latent" [kv_lora_rank] MLA's latent, normed: cached */
    HOOK_ATTN_K_ROPE, /* "blocks.L.attn.k_rope" [qk_rope_head_dim] MLA's rotary key, after RoPE:
                         cached, shared by the heads */
    HOOK_ATTN_SCORES, /* "blocks.L.attn.scores" [pos + 1] q·k/sqrt(head_dim), per head (soft-capped
                         where the architecture caps them; a sliding layer's too for the
                         positions its window drops) */
    HOOK_ATTN_PATTERN,   /* "blocks.L.attn.pattern" [pos + 1] softmax of the scores, per head (0
                            outside a sliding window) */
    HOOK_ATTN_Z,         /* "blocks.L.attn.z"      [n_heads, head_dim] pattern-weighted values */
    HOOK_ATTN_OUT,       /* "blocks.L.attn_out"    [dim] after the output projection */
    HOOK_ATTN_POST_NORM, /* "blocks.L.attn.post_norm" [dim] attn_out normalised (Gemma), added */
    HOOK_RESID_MID,      /* "blocks.L.resid_mid"   [dim] residual after attention */
    HOOK_LN2,            /* "blocks.L.ln2"         [dim] the norm before the MLP */
    HOOK_MLP_GATE,       /* "blocks.L.mlp.gate"    [hidden_dim] gate · x (SwiGLU, GeGLU) */
    HOOK_MLP_UP, /* "blocks.L.mlp.up"      [hidden_dim] up · x (SwiGLU), c_fc · x + b (GELU) */
    HOOK_MLP_HIDDEN, /* "blocks.L.mlp.hidden"  [hidden_dim] silu(gate) · up, gelu(gate) · up, or
                        gelu(up) */
    HOOK_MOE_ROUTER, /* "blocks.L.moe.router"  [n_experts] the router's logits (an MoE layer) */
    HOOK_MOE_EXPERT, /* "blocks.L.moe.expert"  [dim] one chosen expert's output before its
                        weight; `head` is the expert's index */
    HOOK_MLP_OUT,    /* "blocks.L.mlp_out"     [dim] after the down projection (MoE: the
                        experts' outputs, weighted and summed) */
    HOOK_MLP_POST_NORM, /* "blocks.L.mlp.post_norm" [dim] mlp_out normalised (Gemma), added */
    HOOK_RESID_POST,    /* "blocks.L.resid_post"  [dim] residual leaving the block */
    HOOK_FINAL_NORM,    /* "final_norm"           [dim] before the classifier */
    HOOK_LOGITS,        /* "logits"  [vocab_size] (soft-capped where the architecture caps them) */
    HOOK_KV_ROW,        /* "kv"      a: K row, b: V row, each [kv_dim], written at (layer, pos) */
    HOOK_KV_SNAPSHOT, /* "kv_snapshot" a: K, b: V, each [pos + 1, kv_dim]: a layer's whole cache */
    N_HOOKS
} HookPoint;

/* "blocks.3.attn.q", "final_norm", ... into buf; layer is ignored by the
 * points outside a block. Returns buf. */
const char *hook_name(HookPoint point, int layer, char *buf, size_t size);

/* The point and layer a hook name names ("blocks.3.attn.q" -> HOOK_ATTN_Q,
 * 3; "final_norm" -> HOOK_FINAL_NORM, -1): the inverse of hook_name, for
 * readers of traces. False for any other text. */
bool hook_parse(const char *name, HookPoint *point, int *layer);

/* True for the points inside a transformer block (named blocks.L.*). */
bool hook_in_block(HookPoint point);

typedef struct {
    HookPoint point;
    int layer; /* -1 where no layer applies */
    int pos;
    int head;  /* -1 where no head applies */
    int token; /* input token at pos */
    const float *a;
    int rows, cols; /* a is [rows, cols]; rows = 1 for a vector */
    const float *b; /* second tensor (V of kv events), same shape, or NULL */
} HookTensor;

/* Quantized rows, for watching values collapse onto int8 codes: one KV
 * row, or a whole weight tensor. */
typedef struct {
    const char *tensor;  /* "blocks.0.attn.wq", "kv.k", ... */
    int layer, pos;      /* -1 where they do not apply */
    int rows, n, group;  /* rows of n values, grouped by `group` */
    const float *values; /* [rows, n] the originals, or NULL when unknown (a .q8 file) */
    const int8_t *codes; /* [rows, n] */
    const float *scales; /* [rows, ceil(n / group)] */
} QuantRecord;

/* One token's routing in an MoE layer (moe.h): the router's logits, their
 * softmax, and the k experts chosen (most probable first; a tie goes to the
 * lower index) with the weights their outputs are mixed by. */
typedef struct {
    int layer, pos, token;
    int n_experts, k;
    const float *logits;  /* [n_experts] */
    const float *probs;   /* [n_experts] */
    const int *experts;   /* [k] */
    const float *weights; /* [k] */
} RouteRecord;

typedef struct {
    void *ctx;
    /* Whether the observer wants this point at (layer, pos); NULL means no.
     * It may be asked from the pool's threads at once (attention's heads
     * ask it as they are shared out): it must not write unguarded state. */
    bool (*wants)(void *ctx, HookPoint point, int layer, int pos);
    /* Receives the tensor; the pointers are valid only during the call. */
    void (*emit)(void *ctx, const HookTensor *tensor);
    /* Before each forward pass: its phase ("prefill", "decode", "recompute"
     * without a cache, "rebuild" after a context shift), the first position
     * and the tokens. NULL: not wanted. */
    void (*forward)(void *ctx, PassPhase phase, int pos0, const int *tokens, int n_tokens);
    /* After each draw: the logits at pos (raw, as the forward pass gave them)
     * and the sampler holding the record of every stage. NULL: not wanted. */
    void (*sample)(void *ctx, int pos, const float *logits, const struct Sampler *sampler);
    /* After each forward pass: what it did. NULL: not wanted. */
    void (*work)(void *ctx, PassPhase phase, int pos0, int n_tokens, const WorkCount *work);
    /* When a context policy drops tokens (context_shift.h). NULL: not wanted. */
    void (*context)(void *ctx, const struct ContextShift *shift);
    /* When a row is quantized (KV rows as they are stored). NULL: not wanted. */
    void (*quant)(void *ctx, const QuantRecord *record);
    /* Each token's routing in each MoE layer. NULL: not wanted. */
    void (*route)(void *ctx, const RouteRecord *route);
} StepObserver;

static inline bool hook_wanted(const StepObserver *o, HookPoint point, int layer, int pos) {
    return o != NULL && o->wants != NULL && o->emit != NULL && o->wants(o->ctx, point, layer, pos);
}

/* Where in a forward pass hooks fire: the observer, the layer, and the
 * tokens of the pass with their first position. */
typedef struct {
    const StepObserver *obs;
    int layer;
    int pos0;
    const int *tokens;
} HookSite;

/* One head's row [n] at the pass's token t (attention's scores or
 * pattern), to site's observer when it wants it (site may be NULL). */
void hook_emit_head(const HookSite *site, HookPoint point, int t, int head, const float *row,
                    int n);

/* Emit x [T, rows × cols] one token row at a time, for the wanted positions. */
#ifdef STEPWISE_INJECT_BUG
/* A deliberately broken build (make inject: build/inject/stepwise), for
 * docs/first-wrong-number.md and the tests of diff: with the environment
 * variable STEPWISE_INJECT_BUG="HOOK@POS*SCALE" (for example
 * "blocks.2.mlp_out@5*1.0001"), the values of that hook at that position
 * are multiplied by SCALE where the engine hands them to the hooks, before
 * anything downstream reads them, so the error flows on as a real bug's
 * would. x is the engine's own buffer of n values. */
void hook_inject(HookPoint point, int layer, int pos, float *x, int n);
#endif

void hook_emit_rows(const HookSite *site, HookPoint point, const float *x, int T, int rows,
                    int cols);

#endif
