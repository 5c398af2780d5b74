/* mla.h: multi-head latent attention (DeepSeek-V2), the attention of a
 * layer whose config has kv_lora_rank (config_mla). With H heads, each
 * query and key head_dim = nope + rope wide (nope: the dimensions RoPE does
 * not turn, then rope = qk_rope_head_dim that it does), values v_head_dim:
 *
 *   q    = wq · x̂, or q_b · rmsnorm(q_a · x̂)            [H, nope + rope]
 *   kv_a = kv_a · x̂                                     [kv_lora_rank + rope]
 *   c    = rmsnorm(kv_a[:kv_lora_rank])   the latent     [kv_lora_rank]
 *   k_r  = rope(kv_a[kv_lora_rank:])      shared by every head   [rope]
 *   q[h] = (q_nope[h], rope(q_rope[h]))
 *
 * The cache holds c and k_r a position and layer (KVCache: value and key),
 * kv_lora_rank + rope floats, where MHA holds 2 H head_dim. Each head's key
 * and value come from the latent through kv_b [H (nope + v), kv_lora_rank]:
 *
 *   rebuilt:  (k_nope[h], v[h]) = kv_b[h] · c_p for every cached p,
 *             k[h] = (k_nope[h], k_r); attention as MHA's
 *   absorbed: score_p = (W_uk[h]ᵀ q_nope[h]) · c_p + q_rope[h] · k_r_p,
 *             z[h] = W_uv[h] · Σ_p a_p c_p   (W_uk, W_uv: kv_b[h]'s rows)
 *
 * Both divide the scores by sqrt(config_query_scale) (YaRN's mscale
 * included). The forms are the same maths with the sums in another order:
 * within rounding of each other, not the same bits. */
#ifndef STEPWISE_MLA_H
#define STEPWISE_MLA_H

#include "ref/model/model.h"
#include "ref/run_state.h"

/* s->xb [N, n_heads x v_head_dim] = attention's output (before wo) of
 * layer l for the pass's N tokens, from s->xb [N, dim] (the normed
 * residual), in m->mla_form; each row's new latents and rotary keys go
 * into its cache, and its hooks and work are told. */
void mla_attention(const Model *m, PassScratch *s, const ForwardRow *rows, int n_rows, int N,
                   int l);

/* The multiply-adds of one layer's MLA for T tokens beyond its
 * projections (counted as linears), that see `pairs` (query, key) pairs
 * between them (attention_pairs) over a cache of `slots` rows: the rebuilt
 * form's kv_b over every slot, then each head's scores and sums.
 * forward_body_macs adds them, and mla_attention counts the same. */
uint64_t mla_attention_macs(const Config *c, MlaForm form, int T, uint64_t pairs, int slots);

#endif
