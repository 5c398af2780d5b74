/* test_moe.c: the router of docs/moe.md, worked by hand: 4 experts, top 2,
 * a tie the lower index wins, and routing within groups. */
#include <criterion/criterion.h>
#include <math.h>

#include "ref/moe.h"

/* logits [3, 1, 1, 0]: softmax over e³ + e + e + 1 = 20.085537 + 2 ·
 * 2.718282 + 1 = 26.522101. The most probable is expert 0 (20.085537 /
 * 26.522101 = 0.757313); experts 1 and 2 tie at 2.718282 / 26.522101 =
 * 0.102491 and the lower index, 1, is the second. Divided by their sum
 * 0.859804: 0.880797 and 0.119203, that is e² / (e² + 1) and 1 / (e² + 1). */
Test(moe, hand_worked_router_with_a_tie) {
    const float logits[4] = {3, 1, 1, 0};
    float probs[4], weights[2];
    int experts[2];
    MoeRouting routing = {.n_experts = 4, .k = 2, .renormalise = true, .scale = 1.0f};
    moe_route(&routing, logits, probs, experts, weights);
    cr_assert_eq(experts[0], 0);
    cr_assert_eq(experts[1], 1, "the tie goes to the lower index: got %d", experts[1]);
    cr_assert_float_eq(probs[0], 0.757313f, 2e-6);
    cr_assert_float_eq(probs[1], 0.102491f, 2e-6);
    cr_assert_float_eq(probs[1], probs[2], 0);
    cr_assert_float_eq(weights[0], 0.880797f, 2e-6);
    cr_assert_float_eq(weights[1], 0.119203f, 2e-6);
    routing.renormalise = false; /* Qwen3-MoE without norm_topk_prob */
    moe_route(&routing, logits, probs, experts, weights);
    cr_assert_float_eq(weights[0], 0.757313f, 2e-6);
    cr_assert_float_eq(weights[1], 0.102491f, 2e-6);
}

/* A tie at the top: the lower index first, the other second. */
Test(moe, a_tie_at_the_top) {
    const float logits[5] = {0, 2, 1, 2, 2};
    float probs[5], weights[3];
    int experts[3];
    MoeRouting routing = {.n_experts = 5, .k = 3, .renormalise = true, .scale = 1.0f};
    moe_route(&routing, logits, probs, experts, weights);
    cr_assert(experts[0] == 1 && experts[1] == 3 && experts[2] == 4, "got %d %d %d", experts[0],
              experts[1], experts[2]);
    cr_assert_float_eq(weights[0], 1.0f / 3.0f, 1e-6);
}

/* DeepSeek-V2's group_limited_greedy, by hand: 6 experts in 3 groups of 2,
 * logits [2, 0 | 1, 1.5 | 1.8, 1.9]. The softmax keeps the logits' order,
 * so the groups rank by their largest logit: group 0 (2), group 2 (1.9),
 * group 1 (1.5). Greedy over all six takes experts 0 and 5; with one group
 * open (group 0) k = 2 must take its two, 0 and 1 (logit 0); with two
 * open (groups 0 and 2) k = 3 takes 0, 5 and 4, and a fourth is 1, not 3
 * (logit 1.5, in the closed group 1). Not renormalised, each weight is its
 * probability times the scale 2: the softmax's sum is e^2 + 1 + e + e^1.5 +
 * e^1.8 + e^1.9 = 7.389056 + 1 + 2.718282 + 4.481689 + 6.049647 + 6.685894
 * = 28.324569, so expert 0's is 7.389056 / 28.324569 = 0.260871 and
 * expert 1's 1 / 28.324569 = 0.035305. */
Test(moe, group_limited_greedy_by_hand) {
    const float logits[6] = {2, 0, 1, 1.5f, 1.8f, 1.9f};
    float probs[6], weights[3];
    int experts[3];
    MoeRouting greedy = {.n_experts = 6, .k = 2, .scale = 2.0f};
    moe_route(&greedy, logits, probs, experts, weights);
    cr_assert(experts[0] == 0 && experts[1] == 5, "greedy: got %d %d", experts[0], experts[1]);
    MoeRouting grouped = {.n_experts = 6, .k = 2, .groups = 3, .groups_used = 1, .scale = 2.0f};
    moe_route(&grouped, logits, probs, experts, weights);
    cr_assert(experts[0] == 0 && experts[1] == 1, "one group: got %d %d", experts[0], experts[1]);
    cr_assert_float_eq(weights[0], 2 * 0.260871f, 2e-6);
    cr_assert_float_eq(weights[1], 2 * 0.035305f, 2e-6);
    grouped.k = 3, grouped.groups_used = 2; /* groups 0 and 2: experts 0, 5, 4 */
    moe_route(&grouped, logits, probs, experts, weights);
    cr_assert(experts[0] == 0 && experts[1] == 5 && experts[2] == 4, "two groups: got %d %d %d",
              experts[0], experts[1], experts[2]);
    grouped.k = 4;
    int four[4];
    float w4[4];
    moe_route(&grouped, logits, probs, four, w4);
    cr_assert_eq(four[3], 1, "the fourth comes from an open group: got %d", four[3]);
}
