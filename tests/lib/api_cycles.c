/* api_cycles.c: libstepwise.so opened, used and freed N times in one
 * process, for valgrind (make lib-check): every cycle opens the built-in
 * tiny model, tokenizes, scores with hooks, generates, reads nothing back
 * but what it checks, and frees it all. A leak grows with N; a cycle whose
 * numbers differ from the first's is a failure too.
 *
 * usage: build/api_cycles N */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ref/api/stepwise.h"

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
