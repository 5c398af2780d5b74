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

/* group_limited_greedy with each group's best expert in its second place,
 * and DeepSeek-V2's routed_scaling_factor below 1. 8 experts in n_group 4
 * groups of 2, topk_group 2, k 3, scale 0.5, not renormalised:
 *
 *   logits  [-2, 3 | 2.5, 2.4 | 0, 2.8 | 1, 0.5]
 *   e^logit [0.135335, 20.085537 | 12.182494, 11.023176 | 1, 16.444647 |
 *            2.718282, 1.648721], their sum 65.238192
 *   probs   [0.002074, 0.307880 | 0.186739, 0.168968 | 0.015328,
 *            0.252071 | 0.041667, 0.025272]
 *
 * The group maxima (the softmax keeps the logits' order): group 0's is
 * expert 1's 0.307880, group 1's expert 2's 0.186739, group 2's expert 5's
 * 0.252071, group 3's expert 6's 0.041667. The two best groups, 0 and 2,
 * survive; their experts 0, 1, 4, 5 by probability: 1, 5, 4 (0.015328
 * beats expert 0's 0.002074). Greedy over all eight would take 1, 5 and 2
 * (0.186739), in the closed group 1; DeepSeek-V3's rule (a group scored by
 * its two best, llama.cpp's) would open groups 1 (0.355707) and 0
 * (0.309954). The weights, each probability times 0.5: 0.153940, 0.126035,
 * 0.007664. */
Test(moe, group_maxima_and_a_scale_below_one_by_hand) {
    const float logits[8] = {-2, 3, 2.5f, 2.4f, 0, 2.8f, 1, 0.5f};
    float probs[8], weights[3];
    int experts[3];
    MoeRouting r = {.n_experts = 8, .k = 3, .groups = 4, .groups_used = 2, .scale = 0.5f};
    moe_route(&r, logits, probs, experts, weights);
    cr_assert(experts[0] == 1 && experts[1] == 5 && experts[2] == 4, "groups 0 and 2: got %d %d %d",
              experts[0], experts[1], experts[2]);
    cr_assert_float_eq(probs[1], 0.307880f, 2e-6);
    cr_assert_float_eq(weights[0], 0.153940f, 2e-6);
    cr_assert_float_eq(weights[1], 0.126035f, 2e-6);
    cr_assert_float_eq(weights[2], 0.007664f, 2e-6);
    /* renormalised, the scale is not applied (DeepSeek-V2 does one or the
     * other): 0.307880, 0.252071, 0.015328 over their sum 0.575279 */
    r.renormalise = true;
    moe_route(&r, logits, probs, experts, weights);
    cr_assert_float_eq(weights[0], 0.535184f, 2e-6);
    cr_assert_float_eq(weights[1], 0.438171f, 2e-6);
    cr_assert_float_eq(weights[2], 0.026645f, 2e-6);
}

/* The values that switch group limiting off: topk_group == n_group opens
 * every group, and n_group 1 is one group of all; both route as greedy:
 * experts 1, 5, 2 of the case above, weights 0.5 x 0.307880, 0.252071,
 * 0.186739 = 0.153940, 0.126035, 0.093369. */
Test(moe, every_group_open_is_greedy) {
    const float logits[8] = {-2, 3, 2.5f, 2.4f, 0, 2.8f, 1, 0.5f};
    const MoeRouting cases[3] = {
        {.n_experts = 8, .k = 3, .scale = 0.5f},
        {.n_experts = 8, .k = 3, .groups = 4, .groups_used = 4, .scale = 0.5f},
        {.n_experts = 8, .k = 3, .groups = 1, .groups_used = 1, .scale = 0.5f},
    };
    for (int i = 0; i < 3; i++) {
        float probs[8], weights[3];
        int experts[3];
        moe_route(&cases[i], logits, probs, experts, weights);
        cr_assert(experts[0] == 1 && experts[1] == 5 && experts[2] == 2,
                  "case %d (groups %d of %d): got %d %d %d", i, cases[i].groups_used,
                  cases[i].groups, experts[0], experts[1], experts[2]);
        cr_assert_float_eq(weights[0], 0.153940f, 2e-6);
        cr_assert_float_eq(weights[1], 0.126035f, 2e-6);
        cr_assert_float_eq(weights[2], 0.093369f, 2e-6);
    }
}
