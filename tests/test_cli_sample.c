/* test_cli_sample.c: `stepwise sample`, the classroom table and its errors. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tests/helpers.h"

static char out[1 << 16], err[1 << 16];

/* By hand: T = 1: e^2 = 7.389, e^1 = 2.718, e^0 = 1, total 11.107:
 *   66.52%, 24.47%, 9.00%.
 * T = 0.5: logits 4, 2, 0: e^4 = 54.598, e^2 = 7.389, 1, total 62.987:
 *   86.68%, 11.73%, 1.59%.
 * T = 2: logits 1, 0.5, 0: e = 2.718, e^0.5 = 1.6487, 1, total 5.3670:
 *   50.65%, 30.72%, 18.63%. */
static const double HAND[3][3] = {
    {86.68, 11.73, 1.59}, {66.52, 24.47, 9.00}, {50.65, 30.72, 18.63}};

Test(cli_sample, table_matches_the_hand_computation) {
    cr_assert_eq(run_stepwise("sample --logits 2,1,0 --temperature 0.5,1,2 --json", out, sizeof out,
                              err, sizeof err),
                 0, "%s", err);
    cJSON *root = cJSON_Parse(out);
    cr_assert_not_null(root, "not JSON: %s", out);
    const cJSON *rows = cJSON_GetObjectItem(root, "temperatures");
    cr_assert_eq(cJSON_GetArraySize(rows), 3);
    double temps[] = {0.5, 1, 2};
    for (int r = 0; r < 3; r++) {
        const cJSON *row = cJSON_GetArrayItem(rows, r);
        cr_expect_eq(cJSON_GetObjectItem(row, "temperature")->valuedouble, temps[r]);
        const cJSON *probs = cJSON_GetObjectItem(row, "probs");
        for (int i = 0; i < 3; i++) {
            double pct = 100.0 * cJSON_GetArrayItem(probs, i)->valuedouble;
            cr_expect(fabs(pct - HAND[r][i]) < 0.05, "T=%g token %d: %.3f%%, by hand %.2f%%",
                      temps[r], i, pct, HAND[r][i]);
        }
    }
    /* each draw names its stages, kept ids, renormalised probs, u, token */
    const cJSON *draw = cJSON_GetArrayItem(cJSON_GetObjectItem(root, "draws"), 1);
    cr_assert_not_null(draw);
    const cJSON *stage = cJSON_GetArrayItem(cJSON_GetObjectItem(draw, "stages"), 1);
    cr_expect_str_eq(cJSON_GetObjectItem(stage, "stage")->valuestring, "top_k");
    cr_expect_eq(cJSON_GetArraySize(cJSON_GetObjectItem(stage, "kept")), 3);
    cr_expect_eq(cJSON_GetArraySize(cJSON_GetObjectItem(draw, "probs")), 3);
    double u = cJSON_GetObjectItem(draw, "u")->valuedouble;
    cr_expect(u >= 0 && u < 1);
    cr_expect(cJSON_IsNumber(cJSON_GetObjectItem(draw, "token")));
    cJSON_Delete(root);
}

Test(cli_sample, text_table_rows) {
    cr_assert_eq(run_stepwise("sample --logits 2,1,0 --temperature 0.5,1,2", out, sizeof out, err,
                              sizeof err),
                 0, "%s", err);
    cr_expect(strstr(out, "| T   | A     | B     | C     |\n") != NULL, "%s", out);
    cr_expect(strstr(out, "| 0.5 | 86.7% | 11.7% | 1.6%  |\n") != NULL, "%s", out);
    cr_expect(strstr(out, "| 1   | 66.5% | 24.5% | 9.0%  |\n") != NULL, "%s", out);
    cr_expect(strstr(out, "| 2   | 50.6% | 30.7% | 18.6% |\n") != NULL, "%s", out);
}

/* top-p 0.9 at T = 1 on (2, 1, 0): masses 0.665, 0.910 → {A, B};
 * renormalised 0.665 / 0.910 = 73.1%, 26.9%. */
Test(cli_sample, top_p_stage_is_printed) {
    cr_assert_eq(
        run_stepwise("sample --logits 2,1,0 --top-p 0.9", out, sizeof out, err, sizeof err), 0,
        "%s", err);
    cr_expect(strstr(out, "top_p 0.9    kept A B  (mass 91.0%)") != NULL, "%s", out);
    cr_expect(strstr(out, "renormalised A 73.1% B 26.9%") != NULL, "%s", out);
}

static void expect_bad(const char *args, const char *fragment) {
    int status = run_stepwise(args, out, sizeof out, err, sizeof err);
    cr_expect_eq(status, 2, "'%s' exited %d", args, status);
    cr_expect(strstr(err, fragment) != NULL, "'%s': '%s' lacks '%s'", args, err, fragment);
    const char *nl = strchr(err, '\n');
    cr_expect(nl != NULL && nl[1] == '\0', "'%s': not one line: %s", args, err);
}

Test(cli_sample, bad_input) {
    expect_bad("sample --logits 2,1,0 --temperature -1", "temperature must be");
    expect_bad("sample --logits 2,1,0 --top-p 0", "top-p must be in (0, 1]");
    expect_bad("sample --logits 2,1,0 --top-p 1.5", "top-p must be in (0, 1]");
    expect_bad("sample --logits 2,1,0 --top-k -1", "top-k must be >= 0");
    expect_bad("sample --logits 2,1,0 --min-p 2", "min-p must be in [0, 1]");
    expect_bad("sample --logits 2,1,0 --min-p -0.5", "min-p must be in [0, 1]");
    expect_bad("sample --logits ''", "--logits is empty");
    expect_bad("sample --logits 2,x,0", "--logits expects a number, got 'x'");
    expect_bad("sample --logits 2,,0", "--logits expects a number, got ''");
    expect_bad("sample --logits 2,nan,0", "NaN");
    expect_bad("sample --logits 2,1,0 --sampler-order random", "unknown sampler order 'random'");
    expect_bad("sample", "give --logits or --from-trace");
    expect_bad("sample --logits -inf,-inf", "every logit is -inf");
    expect_bad("sample --logits inf,0", "logit 0 is +inf");
    expect_bad("sample --logits inf,0 --min-p 0.5", "logit 0 is +inf");
    expect_bad("sample --logits 3e38,0 --temperature 0.001", "overflows a float");
    expect_bad("generate --temperature -1", "temperature must be");
    expect_bad("generate --sampler-order nope", "unknown sampler order 'nope'");
    expect_bad("generate --top-p 7", "top-p must be in (0, 1]");
}

/* The smallest float32 as a temperature takes 2 / 1.4e-45 past the largest
 * float (3.4e38): refused before anything is printed (the table printed a
 * row of NaN first). A temperature of 1e-38 takes 2 to 2e38, below it: the
 * top logit gets every probability. */
Test(cli_sample, a_temperature_that_overflows_prints_nothing) {
    expect_bad("sample --logits 2,1,0 --temperature 1,1e-45", "overflows a float");
    cr_expect_eq(out[0], '\0', "printed before the error: %s", out);
    expect_bad("sample --logits 0,inf", "logit 1 is +inf");
    cr_expect_eq(out[0], '\0', "printed before the error: %s", out);
    cr_assert_eq(
        run_stepwise("sample --logits 2,1,0 --temperature 1e-38", out, sizeof out, err, sizeof err),
        0, "%s", err);
    cr_expect(strstr(out, "| 1e-38 | 100.0%") != NULL, "%s", out);
}

static bool contains(const cJSON *ids, int id) {
    const cJSON *v;
    cJSON_ArrayForEach(v, ids) {
        if (v->valueint == id) return true;
    }
    return false;
}

/* Every sample event of a sampled stories260K run: the chosen token
 * survived each filter, the survivors' probabilities sum to 1, top-p's kept
 * set lies inside top-k's, and --trace-temperatures adds one full
 * distribution per listed temperature. */
Test(cli_sample, sample_events_in_a_real_trace) {
    const char *model = model_file("stories260K.bin");
    if (model == NULL || model_file("tok512.bin") == NULL) cr_skip_test("models not found");
    const char *trace = temp_path("sampled.jsonl");
    char args[4096];
    snprintf(args, sizeof args,
             "generate --model %s --tokenizer %s --prompt 'Once upon a time' --steps 20 "
             "--temperature 0.8 --top-k 20 --top-p 0.9 --seed 7 --trace %s "
             "--trace-temperatures 0.5,1,2",
             model, model_file("tok512.bin"), trace);
    cr_assert_eq(run_stepwise(args, out, sizeof out, err, sizeof err), 0, "%s", err);
    FILE *f = fopen(trace, "r");
    cr_assert_not_null(f);
    static char line[1 << 20];
    int samples = 0;
    while (fgets(line, sizeof line, f) != NULL) {
        cJSON *e = cJSON_Parse(line);
        cr_assert_not_null(e);
        if (strcmp(cJSON_GetObjectItem(e, "event")->valuestring, "sample") == 0) {
            samples++;
            int token = cJSON_GetObjectItem(e, "token")->valueint;
            const cJSON *k_kept = cJSON_GetObjectItem(cJSON_GetObjectItem(e, "top_k"), "kept");
            const cJSON *p_kept = cJSON_GetObjectItem(cJSON_GetObjectItem(e, "top_p"), "kept");
            cr_assert_eq(cJSON_GetArraySize(k_kept), 20);
            cr_expect(contains(k_kept, token) && contains(p_kept, token));
            const cJSON *v;
            cJSON_ArrayForEach(v, p_kept) cr_expect(contains(k_kept, v->valueint));
            double sum = 0;
            cJSON_ArrayForEach(v, cJSON_GetObjectItem(e, "probs")) sum += v->valuedouble;
            cr_expect(fabs(sum - 1.0) < 1e-6, "probs sum to %.9f", sum);
            cr_expect(contains(cJSON_GetObjectItem(e, "survivors"), token));
            const cJSON *softmax = cJSON_GetObjectItem(e, "softmax");
            cr_assert_eq(cJSON_GetArraySize(softmax), 3);
            cJSON_ArrayForEach(v, softmax) {
                const cJSON *probs = cJSON_GetObjectItem(v, "probs"), *q;
                cr_expect_eq(cJSON_GetArraySize(probs), 512);
                double total = 0;
                cJSON_ArrayForEach(q, probs) total += q->valuedouble;
                cr_expect(fabs(total - 1.0) < 1e-5, "softmax sums to %.9f", total);
            }
        }
        cJSON_Delete(e);
    }
    fclose(f);
    cr_expect_eq(samples, 20);
}
