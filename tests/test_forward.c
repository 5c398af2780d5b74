/* test_forward.c: prefill (many tokens in one pass) and decode (one token
 * against the cache) are the same computation, to the bit. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ref/forward.h"
#include "tests/helpers.h"

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
    cr_assert_eq(memcmp(all.seq.cache.key, step.seq.cache.key, kv), 0, "K cache rows differ");
    cr_assert_eq(memcmp(all.seq.cache.value, step.seq.cache.value, kv), 0, "V cache rows differ");
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

/* A generated model of 8 query heads of 4 over 2 layers, with n_kv KV heads. */
static void make_attention_model(Model *m, int n_kv) {
    Config c = {.dim = 32,
                .hidden_dim = 48,
                .n_layers = 2,
                .n_heads = 8,
                .n_kv_heads = n_kv,
                .vocab_size = 64,
                .seq_len = 16,
                .shared_classifier = true};
    StepError err;
    cr_assert(model_init_random(m, &c, 7, &err), "%s", err.message);
}

/* The sharing rule, derived independently: a model with n_kv KV heads must
 * compute what an MHA model computes when each of its query heads h is given
 * a copy of KV head h / (n_heads / n_kv), the K and V rows of that head
 * repeated. Build that MHA model from the shared one's weights and compare
 * every logit of a 12-token prefill, bitwise. */
static void expect_sharing_equals_expanded_mha(int n_kv) {
    Model shared, mha;
    make_attention_model(&shared, n_kv);
    make_attention_model(&mha, 8);
    const Config *c = &shared.config;
    int hd = config_head_dim(c), group = c->n_heads / n_kv, dim = c->dim;
    size_t D = (size_t)dim;
    /* every weight but K's and V's the same: the vectors, the embedding, and
     * each layer's q, o and MLP */
    for (int k = 0; k < VECTOR_KINDS; k++) {
        int count, width;
        weight_vector_shape(c, (VectorKind)k, &count, &width);
        if (count > 0)
            memcpy(model_vector_slot(&mha, (VectorKind)k, 0),
                   model_vector(&shared, (VectorKind)k, 0), (size_t)count * width * sizeof(float));
    }
    memcpy(model_matrix_slot(&mha, &mha.embedding), model_matrix_floats(&shared, &shared.embedding),
           (size_t)c->vocab_size * D * sizeof(float));
    static const MatrixKind same[] = {MAT_WQ, MAT_WO, MAT_GATE, MAT_DOWN, MAT_UP};
    for (int l = 0; l < c->n_layers; l++) {
        for (size_t i = 0; i < sizeof same / sizeof same[0]; i++) {
            const Matrix *from = &shared.layers[l].m[same[i]];
            memcpy(model_matrix_slot(&mha, &mha.layers[l].m[same[i]]),
                   model_matrix_floats(&shared, from),
                   (size_t)from->rows * from->cols * sizeof(float));
        }
        /* query head h's K and V rows: its group's KV head's */
        for (int h = 0; h < c->n_heads; h++) {
            size_t rows = (size_t)hd * D, from = (size_t)(h / group) * rows, to = (size_t)h * rows;
            static const MatrixKind kv[2] = {MAT_WK, MAT_WV};
            for (int k = 0; k < 2; k++)
                memcpy(model_matrix_slot(&mha, &mha.layers[l].m[kv[k]]) + to,
                       model_matrix_floats(&shared, &shared.layers[l].m[kv[k]]) + from,
                       rows * sizeof(float));
        }
    }
    int tokens[12] = {1, 5, 9, 33, 2, 60, 17, 17, 40, 8, 3, 21};
    StepError err;
    RunState a, b;
    cr_assert(run_state_init(&a, c, 12, 12, &err), "%s", err.message);
    cr_assert(run_state_init(&b, &mha.config, 12, 12, &err), "%s", err.message);
    const float *la = forward_tokens(&shared, &a, tokens, 12, 0, true, NULL);
    const float *lb = forward_tokens(&mha, &b, tokens, 12, 0, true, NULL);
    cr_assert_eq(memcmp(la, lb, 12 * (size_t)c->vocab_size * sizeof(float)), 0,
                 "%d KV heads: logits differ from the expanded MHA model", n_kv);
    run_state_free(&a);
    run_state_free(&b);
    model_free(&shared);
    model_free(&mha);
}

Test(forward, gqa_and_mqa_equal_mha_with_each_kv_head_repeated_for_its_group) {
    expect_sharing_equals_expanded_mha(2); /* GQA: 4 query heads per KV head */
    expect_sharing_equals_expanded_mha(4); /* GQA: 2 per KV head */
    expect_sharing_equals_expanded_mha(1); /* MQA: all 8 share one */
}

Test(forward, prefill_and_decode_are_bitwise_identical_for_mha_gqa_and_mqa) {
    int tokens[] = {1, 5, 9, 33, 2, 60, 17, 17, 40, 8, 3, 21, 11, 12, 13, 14};
    int kv_heads[] = {8, 2, 1};
    for (int i = 0; i < 3; i++) {
        Model m;
        make_attention_model(&m, kv_heads[i]);
        expect_prefill_equals_decode(&m, tokens, 16, 1);
        expect_prefill_equals_decode(&m, tokens, 16, 5);
        model_free(&m);
    }
}

/* The RoPE tables are the model's, built once at load for every position
 * below seq_len: row p holds cos and sin of p · θ_i, θ_0 = 1 (pair 0 of a
 * 2-dim head: theta^0). A seq_len no model could have (2^25 positions,
 * 256 MiB of tables, for 536 weights) is refused by name, not built. */
Test(forward, rope_tables_are_built_once_and_refuse_an_unbelievable_seq_len) {
    Config c = {.dim = 8,
                .hidden_dim = 8,
                .n_layers = 1,
                .n_heads = 4,
                .n_kv_heads = 4,
                .vocab_size = 8,
                .seq_len = 1 << 20,
                .shared_classifier = true};
    Model m;
    StepError err;
    cr_assert(model_init_random(&m, &c, 7, &err), "%s", err.message);
    cr_expect_eq(m.rope.capacity, 1 << 20);
    cr_expect_eq(m.rope.pairs, 1);
    cr_expect_eq(m.rope.cos[5], cosf(5.0f));
    cr_expect_eq(m.rope.sin[(1 << 20) - 1], sinf((float)((1 << 20) - 1)));
    model_free(&m);
    c.seq_len = 1 << 25;
    cr_expect_not(model_init_random(&m, &c, 7, &err));
    cr_expect(strstr(err.message, "RoPE tables for seq_len 33554432 would take 256 MiB, more than "
                                  "the model's 536 weights") != NULL,
              "%s", err.message);
    cr_expect_null(m.rope.cos);
}
