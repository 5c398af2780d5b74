/* api_cycles.c: libstepwise.so opened, used and freed N times in one
 * process, for valgrind (make lib-check): every cycle opens the built-in
 * tiny model, tokenizes, scores with hooks, compares the logits with
 * themselves (sw_diff_with, sw_diff_text whole and cut short, and
 * sw_diff_arrays from memory, nudged too), generates,
 * reads nothing back but what it checks, and frees it all. A leak grows with N; a cycle whose
 * numbers differ from the first's is a failure too.
 *
 * usage: build/api_cycles N */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ref/api/stepwise.h"

/* logits [n, vocab] as a raw .f32 candidate at path, with its sidecar. */
static int write_f32(const char *path, const float *logits, int n, int vocab) {
    char side[512];
    snprintf(side, sizeof side, "%s.json", path);
    FILE *f = fopen(path, "wb"), *j = fopen(side, "w");
    int bad =
        f == NULL || j == NULL ||
        fwrite(logits, sizeof(float), (size_t)n * vocab, f) != (size_t)n * vocab ||
        fprintf(j, "{\"format\": \"stepwise-logits-f32\", \"vocab_size\": %d, \"positions\": %d}\n",
                vocab, n) < 0;
    if (f != NULL) fclose(f);
    if (j != NULL) fclose(j);
    return bad;
}

/* The run at path against its own logits held in memory: a pass; one
 * logit nudged by 1e-2 at position 2: a fail there; no positions: an
 * input error. */
static int diff_arrays_cycle(const char *path, const float *logits, int n, int vocab) {
    sw_error err;
    sw_diff_report r;
    float *nudged = malloc((size_t)n * vocab * sizeof(float));
    if (nudged == NULL) return 1;
    memcpy(nudged, logits, (size_t)n * vocab * sizeof(float));
    nudged[2 * vocab + 1] += 1e-2f;
    int bad = sw_diff_arrays(path, logits, n, vocab, NULL, NULL, 0, NULL, &r, &err) != SW_OK ||
              !r.passed ||
              sw_diff_arrays(path, nudged, n, vocab, NULL, NULL, 0, NULL, &r, &err) != SW_OK ||
              r.passed || r.first_pos != 2 || strcmp(r.first_hook, "logits") != 0 ||
              sw_diff_arrays(path, logits, 0, vocab, NULL, NULL, 0, NULL, &r, &err) != SW_ERR_INPUT;
    free(nudged);
    if (bad) fprintf(stderr, "diff arrays cycle failed: %s\n", err.message);
    return bad;
}

/* The diff of a run with itself: a pass, and its report's text, cut short
 * to 16 bytes and then whole (sw_diff_text's needed size). */
static int diff_cycle(const char *path) {
    sw_error err;
    sw_diff_report r;
    sw_diff_options o = {.atol = -1, .rtol = -1, .teacher_forced = 1};
    char small[16], *whole = NULL;
    size_t needed = 0;
    int bad = sw_diff_with(path, path, &o, &r, &err) != SW_OK || !r.passed ||
              sw_diff_text(path, path, &o, &r, small, sizeof small, &needed, &err) != SW_OK ||
              !r.passed || strlen(small) != sizeof small - 1 || needed <= sizeof small;
    if (!bad) whole = malloc(needed);
    bad = bad || whole == NULL ||
          sw_diff_text(path, path, NULL, NULL, whole, needed, NULL, &err) != SW_OK ||
          strlen(whole) != needed - 1 || strncmp(whole, small, sizeof small - 1) != 0 ||
          strstr(whole, "verdict: PASS") == NULL;
    free(whole);
    if (bad) fprintf(stderr, "diff cycle failed: %s\n", err.message);
    return bad;
}

/* One cycle; its first logit and its generated tokens' sum into *sig. */
static int cycle(double *sig) {
    sw_error err;
    sw_model *m;
    sw_scores *s;
    int ids[32], n, out[64], n_out;
    sw_sampler greedy = {.temperature = 0.0f, .top_p = 1.0f, .seed = 42};
    if (sw_model_open(NULL, NULL, NULL, &m, &err) != SW_OK)
        return fprintf(stderr, "%s\n", err.message), 1;
    int bad = sw_tokenize(m, "the cat sat", 1, ids, 32, &n, &err) != SW_OK ||
              sw_score(m, ids, n, "blocks.*.mlp_out,final_norm", &s, &err) != SW_OK;
    if (!bad) {
        int width = 0;
        bad = sw_scores_hook_count(s) < 2 || sw_scores_hook_values(s, 0, &width) == NULL;
        *sig = sw_scores_logits(s)[0] + width;
        char dir[] = "/tmp/stepwise-api-cycles-XXXXXX", path[64], side[80];
        bool made = mkdtemp(dir) != NULL;
        snprintf(path, sizeof path, "%s/run.f32", dir);
        snprintf(side, sizeof side, "%s.json", path);
        bad = !made || write_f32(path, sw_scores_logits(s), n, sw_model_get_shape(m).vocab_size) ||
              diff_cycle(path) ||
              diff_arrays_cycle(path, sw_scores_logits(s), n, sw_model_get_shape(m).vocab_size);
        if (made) remove(path), remove(side), rmdir(dir);
        sw_scores_free(s);
    }
    bad = bad || sw_generate(m, ids, n, &greedy, 8, out, 64, &n_out, &err) != SW_OK;
    for (int i = 0; !bad && i < n_out; i++) *sig += out[i];
    /* an error path too: its message, and nothing held */
    bad = bad || sw_tokenize(m, "the cat sat", 1, ids, 1, &n, &err) != SW_ERR_SMALL;
    sw_model_free(m);
    if (bad) fprintf(stderr, "cycle failed: %s\n", err.message);
    return bad;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 1000;
    double first = 0, sig = 0;
    for (int i = 0; i < n; i++) {
        if (cycle(&sig) != 0) return 1;
        if (i == 0) first = sig;
        if (sig != first) return fprintf(stderr, "cycle %d differs from the first\n", i), 1;
    }
    printf("%s: %d open/tokenize/score/generate/free cycles, the same numbers each time\n",
           stepwise_version(), n);
    return 0;
}
