/* test_tiny.c: the built-in tiny model against the hand computation written
 * out in docs/hand-computed-forward.md (a pocket calculator reproduces every
 * number below). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>

#include "ref/forward.h"
#include "ref/generate.h"
#include "tests/helpers.h"

#define HAND_TOLERANCE 2e-5 /* the hand values carry 6 decimals */

/* Position 0, input BOS, embedding x = [1, 0].
 *   attention RMSNorm: mean(x²) = 0.5, r = 1/sqrt(0.5 + 1e-5) = 1.414199
 *   x̂ = [1.414199, 0]; q = k = x̂ (identity wq, wk); v = wv·x̂ = [0, 1.414199]
 *   RoPE at pos 0 rotates by angle 0: q and k unchanged.
 *   One position to attend to: softmax([score]) = [1], attention output = v.
 *   wo = 0.5·I: [0, 0.707100]; residual x = [1, 0.707100]
 *   FFN RMSNorm: mean(x²) = 0.749995, r = 1.154697, h = [1.154697, 0.816486]
 *   σ(h) = 1/(1+e^-h) = [0.760368, 0.693490]; silu = h·σ = [0.877994, 0.566225]
 *   gate·up (w1 = w3 = I): [1.013817, 0.462314]; w2 = 0.5·I: [0.506908, 0.231157]
 *   residual x = [1.506908, 0.938257]
 *   final RMSNorm: mean(x²) = 1.575549, r = 0.796678, x̂ = [1.200520, 0.747488]
 *   logits = classifier · x̂:
 *     " cat" [1.5, 1]     → 1.5·1.200520 + 0.747488     =  2.548268
 *     " sat" [-0.5, 1.5]  → -0.600260 + 1.121232        =  0.520972
 *     "</s>" [-1.5, -0.5] → -1.800780 - 0.373744        = -2.174524
 *     every other row is [0, 0] → 0 */
Test(tiny, first_logits_match_the_hand_computation) {
    Model m;
    Tokenizer tok;
    load_tiny(&m, &tok);
    RunState s;
    StepError err;
    cr_assert(run_state_init(&s, &m.config, 1, 1, &err), "%s", err.message);
    int bos = TOKEN_BOS;
    const float *logits = forward_tokens(&m, &s, &bos, 1, 0, false, NULL);
    double want[13] = {0};
    want[11] = 2.548268, want[12] = 0.520972, want[2] = -2.174524;
    for (int i = 0; i < 13; i++)
        cr_expect(fabs(logits[i] - want[i]) < HAND_TOLERANCE, "logit %d: %.6f, by hand %.6f", i,
                  (double)logits[i], want[i]);
    /* the cache row: k = x̂ (RoPE angle 0), v = [0, 1.414199] */
    cr_expect(fabs(s.seq.cache.key[0] - 1.414199) < HAND_TOLERANCE);
    cr_expect(fabs(s.seq.cache.key[1] - 0.0) < HAND_TOLERANCE);
    cr_expect(fabs(s.seq.cache.value[0] - 0.0) < HAND_TOLERANCE);
    cr_expect(fabs(s.seq.cache.value[1] - 1.414199) < HAND_TOLERANCE);
    run_state_free(&s);
    model_free(&m);
    tokenizer_free(&tok);
}

/* The weights were chosen so that the final direction after BOS points at
 * " cat", after " cat" at " sat", after " sat" at EOS (see the doc). */
Test(tiny, greedy_says_cat_sat_then_stops_on_eos) {
    Model m;
    Tokenizer tok;
    load_tiny(&m, &tok);
    GenerateResult r = greedy_from_bos(&m, 10);
    cr_assert_eq(r.n_tokens, 4);
    cr_expect_eq(r.tokens[1], 11);
    cr_expect_eq(r.tokens[2], 12);
    cr_expect_eq(r.tokens[3], TOKEN_EOS);
    cr_expect_eq(r.stop_reason, STOP_EOS);
    char *text = tokenizer_decode_tokens(&tok, r.tokens, r.n_tokens, -1);
    cr_expect_str_eq(text, "cat sat");
    free(text);
    generate_result_free(&r);
    model_free(&m);
    tokenizer_free(&tok);
}

/* With the window cut to 2 positions: BOS at 0 gives " cat", " cat" at 1
 * gives " sat", and " sat" would need position 2. */
Test(tiny, stops_when_the_context_is_full) {
    Model m;
    Tokenizer tok;
    load_tiny(&m, &tok);
    m.config.seq_len = 2;
    GenerateResult r = greedy_from_bos(&m, 10);
    cr_expect_eq(r.stop_reason, STOP_CONTEXT_FULL);
    cr_assert_eq(r.n_tokens, 3);
    cr_expect_eq(r.tokens[2], 12);
    generate_result_free(&r);
    model_free(&m);
    tokenizer_free(&tok);
}

Test(tiny, stops_after_steps_tokens) {
    Model m;
    Tokenizer tok;
    load_tiny(&m, &tok);
    GenerateResult r = greedy_from_bos(&m, 1);
    cr_expect_eq(r.stop_reason, STOP_STEPS);
    cr_expect_eq(r.n_tokens, 2);
    cr_expect_eq(r.n_decoded, 0);
    generate_result_free(&r);
    model_free(&m);
    tokenizer_free(&tok);
}

/* Swap the classifier rows of BOS and EOS: the model now "ends the story"
 * with BOS where it used to emit EOS. */
Test(tiny, stops_on_bos) {
    Model m;
    Tokenizer tok;
    load_tiny(&m, &tok);
    float *cls = model_matrix_slot(&m, &m.classifier);
    cls[1 * 2] = -1.5f, cls[1 * 2 + 1] = -0.5f; /* row 1 (BOS) takes EOS's row */
    cls[2 * 2] = 0.0f, cls[2 * 2 + 1] = 0.0f;   /* row 2 (EOS) becomes [0, 0] */
    GenerateResult r = greedy_from_bos(&m, 10);
    cr_expect_eq(r.stop_reason, STOP_BOS);
    cr_expect_eq(r.tokens[r.n_tokens - 1], TOKEN_BOS);
    generate_result_free(&r);
    model_free(&m);
    tokenizer_free(&tok);
}
