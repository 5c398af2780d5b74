/* score_ids.c: libstepwise from C, as an engine's test suite uses it: open
 * a model, tokenize, score every position, read the logits and a hook, and
 * compare a candidate's logits file with a reference's (docs/library.md).
 *
 * usage: score_ids MODEL [REFERENCE CANDIDATE]  (a model with its own tokenizer) */
#include <stdio.h>
#include <stepwise.h>

int main(int argc, char **argv) {
    sw_error err;
    sw_model *m;
    if (sw_model_open(argc > 1 ? argv[1] : NULL, NULL, NULL, &m, &err) != SW_OK) {
        fprintf(stderr, "%s\n", err.message);
        return 2;
    }
    int ids[64], n;
    sw_scores *s = NULL;
    if (sw_tokenize(m, "Once upon a time", 1, ids, 64, &n, &err) != SW_OK ||
        sw_score(m, ids, n, "blocks.0.mlp_out", &s, &err) != SW_OK) {
        fprintf(stderr, "%s\n", err.message);
        sw_model_free(m);
        return 2;
    }
    int vocab = sw_scores_vocab_size(s), best = 0, width;
    const float *last = sw_scores_logits(s) + (size_t)(n - 1) * vocab; /* [n, vocab] */
    for (int i = 1; i < vocab; i++) best = last[i] > last[best] ? i : best;
    sw_scores_hook_values(s, 0, &width);
    printf("%s\n%d ids; after the last the largest logit is token %d's\n", stepwise_version(), n,
           best);
    printf("%s: %d positions x %d values\n", sw_scores_hook_name(s, 0), n, width);
    sw_scores_free(s);
    sw_model_free(m);
    if (argc > 3) {
        sw_diff_report r;
        if (sw_diff(argv[2], argv[3], "fp32", &r, &err) != SW_OK) {
            fprintf(stderr, "%s\n", err.message);
            return 2;
        }
        printf("diff: %s over %d positions, max |dlogit| %.2g\n", r.passed ? "passed" : "failed",
               r.positions, r.max_abs_logit);
        return r.passed ? 0 : 1;
    }
    return 0;
}
