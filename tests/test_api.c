/* test_api.c: libstepwise's calls (ref/api/stepwise.h) on the built-in tiny
 * model: their results against the engine's own functions, and every
 * error a status with a message, nothing printed, nothing held. The
 * sanitizer build runs these too. */
#include <criterion/criterion.h>
#include <string.h>

#include "ref/api/stepwise.h"
#include "ref/formats/model_open.h"
#include "ref/score.h"

static sw_model *open_tiny(void) {
    sw_model *m = NULL;
    sw_error err;
    cr_assert_eq(sw_model_open(NULL, NULL, NULL, &m, &err), SW_OK, "%s", err.message);
    return m;
}

/* sw_score's logits are score_tokens' on the same model, to the bit. */
Test(api, score_is_score_tokens) {
    sw_model *m = open_tiny();
    sw_error err;
    int ids[32], n;
    cr_assert_eq(sw_tokenize(m, "the cat", 1, ids, 32, &n, &err), SW_OK); /* seq_len is 8 */
    sw_scores *s;
    cr_assert_eq(sw_score(m, ids, n, "blocks.0.*,final_norm", &s, &err), SW_OK, "%s", err.message);
    Model ref;
    Tokenizer tok;
    StepError e;
    cr_assert(model_open(NULL, NULL, &ref, &tok, WEIGHTS_F32, NULL, NULL, &e), "%s", e.message);
    ScoreResult r = {.keep_logits = true};
    cr_assert(score_tokens(&ref, ids, n, 0, NULL, NULL, &r, &e), "%s", e.message);
    int V = sw_scores_vocab_size(s);
    cr_expect_eq(sw_scores_positions(s), n);
    cr_expect_eq(memcmp(sw_scores_logits(s), r.logits, (size_t)n * V * sizeof(float)), 0);
    cr_expect_eq(sw_scores_cross_entropy(s), r.cross_entropy);
    cr_expect_gt(sw_scores_hook_count(s), 2, "layer 0's hooks and final_norm");
    int width = 0;
    const float *x = sw_scores_hook_values(s, sw_scores_hook_count(s) - 1, &width);
    cr_expect_str_eq(sw_scores_hook_name(s, sw_scores_hook_count(s) - 1), "final_norm");
    cr_expect(x != NULL && width == sw_model_get_shape(m).dim);
    cr_expect_null(sw_scores_hook_values(s, 99, &width));
    score_result_free(&r), model_free(&ref), tokenizer_free(&tok);
    sw_scores_free(s);
    sw_model_free(m);
}

/* Every misuse is a status and a message naming it. */
Test(api, errors_are_statuses_with_messages) {
    sw_error err;
    sw_model *m = NULL;
    cr_expect_eq(sw_model_open("/nonexistent/model.gguf", NULL, NULL, &m, &err), SW_ERR_INPUT);
    cr_expect(strstr(err.message, "/nonexistent/model.gguf") != NULL, "%s", err.message);
    cr_expect_null(m);
    sw_open_options bad = {.threads = -1};
    cr_expect_eq(sw_model_open(NULL, NULL, &bad, &m, &err), SW_ERR_INPUT);
    m = open_tiny();
    int ids[2], n = 0;
    cr_expect_eq(sw_tokenize(m, "the cat sat on the mat", 1, ids, 2, &n, &err), SW_ERR_SMALL);
    cr_expect_gt(n, 2, "the count needed");
    int outside[] = {1, 9999};
    sw_scores *s = NULL;
    cr_expect_eq(sw_score(m, outside, 2, NULL, &s, &err), SW_ERR_INPUT);
    cr_expect(strstr(err.message, "outside the vocabulary") != NULL, "%s", err.message);
    cr_expect_eq(sw_score(m, outside, 1, NULL, &s, &err), SW_ERR_INPUT);
    cr_expect_null(s);
    sw_diff_report r;
    cr_expect_eq(sw_diff("/nonexistent/a.jsonl", "/nonexistent/b.jsonl", NULL, &r, &err),
                 SW_ERR_INPUT);
    cr_expect_eq(sw_diff("/nonexistent/a.jsonl", "/nonexistent/b.jsonl", "fp64", &r, &err),
                 SW_ERR_INPUT);
    int out[2], n_out;
    sw_sampler greedy = {.top_p = 1.0f, .seed = 42};
    cr_expect_eq(sw_generate(m, outside, 1, &greedy, 4, out, 2, &n_out, &err), SW_ERR_SMALL);
    cr_expect_gt(n_out, 2, "the count it needed: %d", n_out);
    cr_expect_eq(sw_generate(m, outside, 1, &greedy, 0, out, 2, &n_out, &err), SW_ERR_INPUT);
    sw_model_free(m);
    sw_model_free(NULL), sw_scores_free(NULL), sw_run_free(NULL);
}

/* Issue 45: the getters of a NULL handle give zeros, as the frees take NULL. */
Test(api, getters_of_null_give_zeros) {
    sw_model_shape shape = sw_model_get_shape(NULL);
    cr_expect(shape.vocab_size == 0 && shape.dim == 0 && shape.seq_len == 0);
    cr_expect_eq(sw_scores_positions(NULL), 0);
    cr_expect_eq(sw_scores_vocab_size(NULL), 0);
    cr_expect_null(sw_scores_logits(NULL));
    cr_expect_eq(sw_scores_cross_entropy(NULL), 0.0);
    cr_expect_eq(sw_scores_hook_count(NULL), 0);
    cr_expect_null(sw_scores_hook_name(NULL, 0));
    int width = 7;
    cr_expect_null(sw_scores_hook_values(NULL, 0, &width));
    cr_expect_null(sw_scores_hook_values(NULL, 0, NULL));
    cr_expect_eq(sw_run_positions(NULL), 0);
    cr_expect_eq(sw_run_vocab_size(NULL), 0);
    cr_expect_null(sw_run_logits(NULL));
    cr_expect_eq(sw_run_logprobs(NULL), 0);
    cr_expect_null(sw_run_position_ids(NULL));
    cr_expect_eq(sw_run_token(NULL, 0), -1);
}

/* Issue 45: seed 0 refused (greedy too), a glob that matches nothing
 * refused naming what fires, and a max_new of INT_MAX stopping when the
 * context is full (the tokens of max_new = seq_len, in seq_len + 1 ints)
 * without allocating for INT_MAX. */
Test(api, inputs_checked_before_the_work) {
    sw_model *m = open_tiny();
    sw_error err;
    int prompt[] = {1, 5}, out[16], n_out = -1;
    sw_sampler zero = {.top_p = 1.0f};
    cr_expect_eq(sw_generate(m, prompt, 2, &zero, 2, out, 16, &n_out, &err), SW_ERR_INPUT);
    cr_expect(strstr(err.message, "seed") != NULL, "%s", err.message);
    sw_sampler seeded = {.temperature = 1.0f, .top_p = 1.0f, .seed = 0};
    cr_expect_eq(sw_generate(m, prompt, 2, &seeded, 2, out, 16, &n_out, &err), SW_ERR_INPUT);
    int seq_len = sw_model_get_shape(m).seq_len, want[16], n_want = -1;
    cr_assert_lt(seq_len, 16);
    int first = 8; /* a prompt the tiny model does not end at once: 8 ... 8 */
    int long_prompt[16];
    for (int i = 0; i < 16; i++) long_prompt[i] = first;
    cr_expect_eq(sw_generate(m, long_prompt, seq_len + 1, NULL, 1, out, 16, &n_out, &err),
                 SW_ERR_INPUT);
    cr_expect(strstr(err.message, "prompt ids, the model takes 1 to") != NULL, "%s", err.message);
    cr_expect_eq(sw_generate(m, prompt, 2, NULL, seq_len, want, 16, &n_want, &err), SW_OK, "%s",
                 err.message);
    cr_expect_eq(sw_generate(m, prompt, 2, NULL, 2147483647, out, seq_len + 1, &n_out, &err), SW_OK,
                 "%s", err.message);
    cr_expect(n_out == n_want && n_out <= seq_len + 1 &&
                  memcmp(out, want, (size_t)n_out * sizeof(int)) == 0,
              "max_new INT_MAX: %d tokens, max_new seq_len: %d", n_out, n_want);
    sw_scores *s = NULL;
    cr_expect_eq(sw_score(m, prompt, 2, "blocks.*.mlp_outt", &s, &err), SW_ERR_INPUT);
    cr_expect_null(s);
    cr_expect(strstr(err.message, "blocks.*.mlp_outt") != NULL &&
                  strstr(err.message, "blocks.N.mlp_out") != NULL,
              "%s", err.message);
    cr_expect_eq(sw_score(m, prompt, 2, "final_norm,nothing*", &s, &err), SW_ERR_INPUT);
    cr_expect(strstr(err.message, "\"nothing*\"") != NULL, "%s", err.message);
    cr_expect_eq(sw_score(m, prompt, 2, "final_norm,", &s, &err), SW_ERR_INPUT);
    cr_expect_eq(sw_score(m, prompt, 2, "", &s, &err), SW_ERR_INPUT);
    cr_expect_eq(sw_score(m, prompt, 2, "final_norm", &s, &err), SW_OK, "%s", err.message);
    cr_expect_eq(sw_scores_hook_count(s), 1);
    sw_scores_free(s);
    int n = -1;
    cr_expect_eq(sw_tokenize(m, "the cat", 1, NULL, 0, &n, &err), SW_ERR_SMALL);
    cr_expect_gt(n, 1, "the count, asked with no array: %d", n);
    sw_model_free(m);
}
