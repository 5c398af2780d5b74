/* moe.h: a mixture of experts in place of a layer's MLP (Mixtral,
 * Qwen3-MoE). For each token:
 *
 *   logits = router · x̂                  [E], x̂ the MLP's input (ln2)
 *   p = softmax(logits)                   in float32, summed in index order
 *   chosen = the k largest p, most probable first; a tie goes to the lower
 *            expert index. Routed within groups (expert_groups G, DeepSeek-V2's
 *            group_limited_greedy): the E experts are G groups of E / G in
 *            index order, each group ranked by its largest p, and the k come
 *            from the expert_groups_used best groups only (ties: lower index)
 *   w_j = p[chosen_j], divided by Σ_j w_j (summed in the chosen order) when
 *         the model renormalises (Mixtral; Qwen3-MoE's and DeepSeek-V2's
 *         norm_topk_prob), else times routed_scaling_factor (DeepSeek-V2)
 *   out = Σ w_e · expert_e(x̂), expert_e a SwiGLU MLP, the products added
 *         into out from 0.0f in ascending expert index
 *   out += shared(x̂): DeepSeek-V2's shared experts, one SwiGLU MLP of
 *         n_shared_experts x expert_hidden_dim that every token runs
 *
 * Every sum has one fixed order, so the result is the same bits however the
 * tokens are grouped by expert, whichever kernel runs it and on however
 * many threads. The router is float32 (VEC_ROUTER, as llama.cpp keeps
 * ffn_gate_inp); each expert's matrices are held as any other matrix is
 * (model_expert: as stored, widened, packed or int8) and run through
 * linear_forward, which shares one expert's output rows over threads. */
#ifndef STEPWISE_MOE_H
#define STEPWISE_MOE_H

#include <stdbool.h>

#include "ref/model/model.h"
#include "ref/run_state.h"

/* How a token's experts are chosen, from the model's config. */
typedef struct {
    int n_experts, k;
    int groups, groups_used; /* routed within groups (0: among all the experts) */
    bool renormalise;        /* the k weights divided by their sum */
    float scale;             /* else multiplied by this */
} MoeRouting;

MoeRouting moe_routing(const Config *c);

/* One token's routing: probs [E] = softmax(logits [E]); experts [k] and
 * weights [k] as above. */
void moe_route(const MoeRouting *r, const float *logits, float *probs, int *experts,
               float *weights);

/* s->xb [N, dim] = the mixture of layer l's experts applied to s->xb (the
 * rows' tokens, N in all): every token routed (hook blocks.L.moe.router,
 * the observers' route), then each expert run on the tokens that chose it,
 * in ascending index (hook blocks.L.moe.expert, head = the expert), its
 * weighted output added into each token's row. Counts each row's work as
 * if it ran alone: the router and the experts its tokens chose. */
void moe_forward(const Model *m, PassScratch *s, const ForwardRow *rows, int n_rows, int N, int l);

/* Multiply-adds of one token through an MoE layer: the router's E · dim
 * and k experts' 3 · expert_hidden_dim · dim (and the shared experts'
 * 3 · n_shared_experts · expert_hidden_dim · dim). */
unsigned long long moe_token_macs(const Config *c);

#endif
