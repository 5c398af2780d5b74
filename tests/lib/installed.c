/* installed.c: a program built against an installed stepwise with nothing
 * but pkg-config (tests/install_check.sh builds it as C and as C++, and
 * links it with the static libstepwise.a). It has names of its own that the
 * library uses inside (llama2.c's forward and generate, ggml's
 * gguf_type_name and matmul, a quantize_row): the static link works only
 * when the archive shows the API's names and no other, and its own
 * functions must be the ones called. It opens the built-in tiny model and
 * generates greedily from BOS: the hand-worked weights
 * (docs/hand-computed-forward.md) say " cat" (11), " sat" (12), then EOS
 * (2). argv[1]: the version string the library must report. Exit 0 when
 * all holds; else 1, saying what did not. */
#include <stdio.h>
#include <string.h>

#include <stepwise.h>

int forward(int x) {
    return x + 1;
}
int generate(int x) {
    return x + 2;
}
const char *gguf_type_name(int type) {
    return type == 0 ? "engine's F32" : "?";
}
int quantize_row(int x) {
    return x + 3;
}
int matmul(int x) {
    return x + 4;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: installed EXPECTED_VERSION\n");
        return 2;
    }
    if (strcmp(stepwise_version(), argv[1]) != 0) {
        fprintf(stderr, "version %s, expected %s\n", stepwise_version(), argv[1]);
        return 1;
    }
    if (forward(0) + generate(0) + quantize_row(0) + matmul(0) != 10 ||
        strcmp(gguf_type_name(0), "engine's F32") != 0) {
        fprintf(stderr, "the program's own functions were not the ones called\n");
        return 1;
    }
    sw_model *m = NULL;
    sw_error e;
    if (sw_model_open(NULL, NULL, NULL, &m, &e) != SW_OK) {
        fprintf(stderr, "open: %s\n", e.message);
        return 1;
    }
    int bos = 1, out[8], n = 0;
    int ok = sw_generate(m, &bos, 1, NULL, 5, out, 8, &n, &e) == SW_OK;
    sw_model_free(m);
    if (!ok || n != 4 || out[1] != 11 || out[2] != 12 || out[3] != 2) {
        fprintf(stderr, "greedy from BOS gave %d tokens (%d %d %d), not 11 12 2: %s\n", n,
                n > 1 ? out[1] : -1, n > 2 ? out[2] : -1, n > 3 ? out[3] : -1, ok ? "" : e.message);
        return 1;
    }
    printf(
        "%s: 1 11 12 2, beside its own forward, generate, gguf_type_name, quantize_row, matmul\n",
        stepwise_version());
    return 0;
}
