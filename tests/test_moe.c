/* test_moe.c: the router of docs/moe.md, worked by hand: 4 experts, top 2,
 * and a tie the lower index wins. */
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
    moe_route(logits, 4, 2, true, 1.0f, probs, experts, weights);
    cr_assert_eq(experts[0], 0);
    cr_assert_eq(experts[1], 1, "the tie goes to the lower index: got %d", experts[1]);
    cr_assert_float_eq(probs[0], 0.757313f, 2e-6);
    cr_assert_float_eq(probs[1], 0.102491f, 2e-6);
    cr_assert_float_eq(probs[1], probs[2], 0);
    cr_assert_float_eq(weights[0], 0.880797f, 2e-6);
    cr_assert_float_eq(weights[1], 0.119203f, 2e-6);
    moe_route(logits, 4, 2, false, 1.0f, probs, experts,
              weights); /* Qwen3-MoE without norm_topk_prob */
    cr_assert_float_eq(weights[0], 0.757313f, 2e-6);
    cr_assert_float_eq(weights[1], 0.102491f, 2e-6);
}

/* A tie at the top: the lower index first, the other second. */
Test(moe, a_tie_at_the_top) {
    const float logits[5] = {0, 2, 1, 2, 2};
    float probs[5], weights[3];
    int experts[3];
    moe_route(logits, 5, 3, true, 1.0f, probs, experts, weights);
    cr_assert(experts[0] == 1 && experts[1] == 3 && experts[2] == 4, "got %d %d %d", experts[0],
              experts[1], experts[2]);
    cr_assert_float_eq(weights[0], 1.0f / 3.0f, 1e-6);
}
