/* clashing.c: an engine's test program with names of its own that the
 * library uses inside (llama2.c's forward and generate, ggml's
 * gguf_type_name and matmul, a quantize_row), linked with the installed
 * static libstepwise.a (tests/install_check.sh): it links only when the
 * archive shows the API's names and no other. It runs the built-in model's
 * hand-worked greedy tokens (11 12 2) to show the library still works, and
 * its own functions to show they are the ones called. */
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

int main(void) {
    if (forward(0) + generate(0) + quantize_row(0) + matmul(0) != 10 ||
        strcmp(gguf_type_name(0), "engine's F32") != 0) {
        fprintf(stderr, "the engine's own functions were not the ones called\n");
        return 1;
    }
    sw_model *m = NULL;
    sw_error e;
    if (sw_model_open(NULL, NULL, NULL, &m, &e) != SW_OK) {
        fprintf(stderr, "open: %s\n", e.message);
        return 1;
    }
    int bos = 1, out[8], n = 0;
    int ok = sw_generate(m, &bos, 1, NULL, 5, out, 8, &n, &e) == SW_OK && n == 4 && out[1] == 11 &&
             out[2] == 12 && out[3] == 2;
    sw_model_free(m);
    if (!ok) {
        fprintf(stderr, "greedy from BOS did not give 11 12 2\n");
        return 1;
    }
    printf("%s, linked statically beside forward, generate, gguf_type_name, quantize_row, matmul\n",
           stepwise_version());
    return 0;
}
