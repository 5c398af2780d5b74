/* test_api.c: libstepwise's calls (ref/api/stepwise.h) on the built-in tiny
 * model: their results against the engine's own functions, and every
 * error a status with a message, nothing printed, nothing held. The
 * sanitizer build runs these too. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* ---- issue 67: the diff of a candidate in memory, and sw_diff_text's size ---- */

/* text into a fresh file named name under build/tmp; its path into path[256]. */
static void api_file(char path[256], const char *name, const char *text) {
    mkdir("build/tmp", 0755);
    snprintf(path, 256, "build/tmp/%d-api-%s", (int)getpid(), name);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "%s", path);
    fputs(text, f);
    fclose(f);
}

/* A reference as a stepwise trace holds attention's pattern: an event a
 * position and head, of the keys 0..pos that query sees. Two positions,
 * two heads, worked by hand. */
static const char PATTERN_REF[] =
    "{\"event\":\"activation\",\"hook\":\"blocks.0.attn.pattern\",\"pos\":0,\"head\":0,"
    "\"token\":1,\"data\":[1]}\n"
    "{\"event\":\"activation\",\"hook\":\"blocks.0.attn.pattern\",\"pos\":0,\"head\":1,"
    "\"token\":1,\"data\":[1]}\n"
    "{\"event\":\"logits\",\"pos\":0,\"token\":1,\"logits\":[1,2,3]}\n"
    "{\"event\":\"activation\",\"hook\":\"blocks.0.attn.pattern\",\"pos\":1,\"head\":0,"
    "\"token\":4,\"data\":[0.25,0.75]}\n"
    "{\"event\":\"activation\",\"hook\":\"blocks.0.attn.pattern\",\"pos\":1,\"head\":1,"
    "\"token\":4,\"data\":[0.5,0.5]}\n"
    "{\"event\":\"logits\",\"pos\":1,\"token\":4,\"logits\":[3,2,1]}\n";

/* The same pattern as sw_score gives it, [positions, heads, positions],
 * each head's row padded with 0 past its position; and those logits. */
static const float PATTERN[2 * 2 * 2] = {1, 0, 1, 0, 0.25f, 0.75f, 0.5f, 0.5f};
static const float LOGITS[2 * 3] = {1, 2, 3, 3, 2, 1};
static const int FED[2] = {1, 4};

/* Per-head hooks from memory are compared as the reference holds them,
 * head by head on the keys each position sees: the same numbers pass
 * (4 activations: 2 positions x 2 heads), one nudged fails there; another
 * width is an error naming the hook. Before issue 67 the padded row was
 * one activation, and the same numbers failed as "lacks activations". */
Test(api, diff_arrays_compares_per_head_hooks_head_by_head) {
    char ref[256];
    api_file(ref, "pattern.jsonl", PATTERN_REF);
    sw_diff_tensor t = {"blocks.0.attn.pattern", PATTERN, 4};
    sw_diff_report r;
    sw_error err;
    cr_assert_eq(sw_diff_arrays(ref, LOGITS, 2, 3, FED, &t, 1, NULL, &r, &err), SW_OK, "%s",
                 err.message);
    cr_expect(r.passed, "%s", r.fail_reason);
    cr_expect_eq(r.activations, 4);
    cr_expect_eq(r.positions, 2);
    float nudged[8];
    memcpy(nudged, PATTERN, sizeof nudged);
    nudged[7] += 0.01f; /* pos 1, head 1, key 1 */
    t.data = nudged;
    cr_assert_eq(sw_diff_arrays(ref, LOGITS, 2, 3, FED, &t, 1, NULL, &r, &err), SW_OK, "%s",
                 err.message);
    cr_expect(!r.passed && r.diverged && r.first_pos == 1);
    cr_expect_str_eq(r.first_hook, "blocks.0.attn.pattern");
    t.width = 3;
    cr_expect_eq(sw_diff_arrays(ref, LOGITS, 2, 3, FED, &t, 1, NULL, &r, &err), SW_ERR_INPUT);
    cr_expect(strstr(err.message, "blocks.0.attn.pattern") != NULL &&
                  strstr(err.message, "[positions, heads, positions]") != NULL,
              "%s", err.message);
}

/* A hook given twice (one name twice, or stepwise's beside llama.cpp's for
 * it) is an error naming both tensors, whatever their order. */
Test(api, diff_arrays_refuses_a_hook_given_twice) {
    char ref[256];
    api_file(ref, "twice.jsonl",
             "{\"event\":\"activation\",\"hook\":\"blocks.0.mlp_out\",\"pos\":0,\"data\":[1]}\n"
             "{\"event\":\"activation\",\"hook\":\"blocks.0.mlp_out\",\"pos\":1,\"data\":[2]}\n");
    const float same[2] = {1, 2}, other[2] = {7, 7};
    sw_diff_tensor two[2] = {{"blocks.0.mlp_out", same, 1}, {"blocks.0.mlp_out", other, 1}};
    sw_diff_tensor mixed[2] = {{"ffn_out-0", other, 1}, {"blocks.0.mlp_out", same, 1}};
    sw_diff_options names = {.atol = -1, .rtol = -1, .names = "llama.cpp"};
    sw_diff_report r;
    sw_error err;
    cr_expect_eq(sw_diff_arrays(ref, NULL, 2, 0, NULL, two, 2, NULL, &r, &err), SW_ERR_INPUT);
    cr_expect(strstr(err.message, "tensors 0 (blocks.0.mlp_out) and 1 (blocks.0.mlp_out) are "
                                  "both blocks.0.mlp_out") != NULL,
              "%s", err.message);
    for (int order = 0; order < 2; order++) {
        sw_diff_tensor t[2] = {mixed[order], mixed[1 - order]};
        cr_expect_eq(sw_diff_arrays(ref, NULL, 2, 0, NULL, t, 2, &names, &r, &err), SW_ERR_INPUT);
        cr_expect(strstr(err.message, "ffn_out-0") != NULL &&
                      strstr(err.message, "both blocks.0.mlp_out") != NULL,
                  "%s", err.message);
    }
    cr_expect_eq(sw_diff_arrays(ref, NULL, 2, 0, NULL, mixed + 1, 1, &names, &r, &err), SW_OK);
    cr_expect(r.passed && r.activations == 2, "%s", r.fail_reason);
}

/* A NaN candidate logit: max_abs_logit NaN at its place, though a finite
 * difference of 5 follows it; an inf: inf at its place. */
Test(api, diff_arrays_reports_nonfinite_logits_as_such) {
    char ref[256];
    api_file(ref, "nonfinite.jsonl", PATTERN_REF);
    float a[6] = {1, 2, NAN, 8, 2, 1}, b[6] = {6, 2, 3, 3, INFINITY, 1};
    sw_diff_report r;
    sw_error err;
    cr_assert_eq(sw_diff_arrays(ref, a, 2, 3, FED, NULL, 0, NULL, &r, &err), SW_OK, "%s",
                 err.message);
    cr_expect(!r.passed && isnan(r.max_abs_logit) && r.max_abs_pos == 0 && r.max_abs_token == 2,
              "max %g at %d, %d", r.max_abs_logit, r.max_abs_pos, r.max_abs_token);
    cr_assert_eq(sw_diff_arrays(ref, b, 2, 3, FED, NULL, 0, NULL, &r, &err), SW_OK, "%s",
                 err.message);
    cr_expect(!r.passed && isinf(r.max_abs_logit) && r.max_abs_pos == 1 && r.max_abs_token == 1,
              "max %g at %d, %d", r.max_abs_logit, r.max_abs_pos, r.max_abs_token);
}

/* Fed another token at position 0: a fail naming it, with the text saying
 * so, and nothing compared (not an error). */
Test(api, diff_arrays_fed_other_tokens_from_position_0) {
    char ref[256];
    api_file(ref, "fed0.jsonl", PATTERN_REF);
    const int other[2] = {2, 5};
    char text[4096];
    size_t needed = 0;
    sw_diff_report r;
    sw_error err;
    cr_assert_eq(sw_diff_arrays_text(ref, LOGITS, 2, 3, other, NULL, 0, NULL, &r, text, sizeof text,
                                     &needed, &err),
                 SW_OK, "%s", err.message);
    cr_expect(!r.passed && r.inputs_differ_pos == 0 && r.ref_token == 1 && r.cand_token == 2);
    cr_expect_eq(r.positions, 0);
    cr_expect(strstr(text, "candidate  (arrays)\n") != NULL, "%s", text);
    cr_expect(strstr(text, "inputs     differ from position 0: ref 1, cand 2") != NULL, "%s", text);
    cr_expect(strstr(text, "verdict: FAIL (the candidate was fed other tokens") != NULL, "%s",
              text);
}

/* sw_diff_text's size answer is the text's length + 1 (its NUL): a buffer
 * one short holds all but the last character, NUL-terminated; one of
 * exactly that size holds it whole. */
Test(api, diff_text_needed_counts_the_nul) {
    char ref[256], cand[256];
    api_file(ref, "text-ref.jsonl", PATTERN_REF);
    api_file(cand, "text-cand.jsonl", PATTERN_REF);
    static char whole[1 << 16];
    size_t needed = 0, again = 0;
    sw_diff_report r;
    sw_error err;
    cr_assert_eq(sw_diff_text(ref, cand, NULL, &r, NULL, 0, &needed, &err), SW_OK, "%s",
                 err.message);
    cr_assert_eq(sw_diff_text(ref, cand, NULL, &r, whole, sizeof whole, &again, &err), SW_OK);
    size_t len = strlen(whole);
    cr_expect(r.passed && len > 100 && strstr(whole, "verdict: PASS") != NULL, "%s", whole);
    cr_expect_eq(needed, len + 1, "needed %zu for %zu characters", needed, len);
    cr_expect_eq(again, needed);
    char *exact = malloc(needed), *short_one = malloc(needed - 1);
    memset(exact, 'x', needed), memset(short_one, 'x', needed - 1);
    cr_assert_eq(sw_diff_text(ref, cand, NULL, &r, exact, needed, NULL, &err), SW_OK);
    cr_expect_str_eq(exact, whole);
    cr_assert_eq(sw_diff_text(ref, cand, NULL, &r, short_one, needed - 1, NULL, &err), SW_OK);
    cr_expect_eq(short_one[needed - 2], '\0');
    cr_expect_eq(strlen(short_one), len - 1);
    cr_expect_eq(memcmp(short_one, whole, len - 1), 0);
    free(exact), free(short_one);
}
