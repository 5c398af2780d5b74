/* test_forward.c: prefill (many tokens in one pass) and decode (one token
 * against the cache) are the same computation, to the bit. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "../ref/forward.h"
#include "helpers.h"

/* Run tokens[0..n) two ways: one pass with all logits, and `first` tokens
 * prefilled followed by one decode per token. Logits and cache rows must be
 * bitwise equal at every position. */
static void expect_prefill_equals_decode(const Model *m, const int *tokens, int n, int first) {
    const Config *c = &m->config;
    StepError err;
    RunState all, step;
    cr_assert(run_state_init(&all, c, n, n, &err), "%s", err.message);
    cr_assert(run_state_init(&step, c, n, first, &err), "%s", err.message);
    const float *batch = forward_tokens(m, &all, tokens, n, 0, true, NULL);
    const float *head = forward_tokens(m, &step, tokens, first, 0, true, NULL);
    size_t V = (size_t)c->vocab_size;
    cr_assert_eq(memcmp(batch, head, (size_t)first * V * sizeof(float)), 0,
                 "prefill of %d vs %d tokens differ", first, n);
    for (int p = first; p < n; p++) {
        const float *one = forward_tokens(m, &step, &tokens[p], 1, p, false, NULL);
        cr_assert_eq(memcmp(batch + (size_t)p * V, one, V * sizeof(float)), 0,
                     "logits differ at pos %d", p);
    }
    size_t kv = (size_t)c->n_layers * (size_t)n * (size_t)config_kv_dim(c) * sizeof(float);
    cr_assert_eq(memcmp(all.cache.key, step.cache.key, kv), 0, "K cache rows differ");
    cr_assert_eq(memcmp(all.cache.value, step.cache.value, kv), 0, "V cache rows differ");
    run_state_free(&all);
    run_state_free(&step);
}

Test(forward, prefill_and_decode_are_bitwise_identical_on_stories260k) {
    Model m;
    Tokenizer tok;
    load_stories260k(&m, &tok);
    int *ids, n;
    StepError err;
    cr_assert(tokenizer_encode(&tok,
                               "Once upon a time, there was a little girl named Lily. She "
                               "loved to play outside in the park with her friends.",
                               true, &ids, &n, &err));
    cr_assert_gt(n, 20);
    expect_prefill_equals_decode(&m, ids, n, 1);
    expect_prefill_equals_decode(&m, ids, n, 7);
    free(ids);
    model_free(&m);
    tokenizer_free(&tok);
}

Test(forward, prefill_and_decode_are_bitwise_identical_on_tiny_model) {
    Model m;
    Tokenizer tok;
    load_tiny(&m, &tok);
    int tokens[] = {1, 11, 12, 3, 8, 9, 10, 4}; /* 8 = seq_len: the whole window */
    expect_prefill_equals_decode(&m, tokens, 8, 1);
    expect_prefill_equals_decode(&m, tokens, 8, 3);
    model_free(&m);
    tokenizer_free(&tok);
}
