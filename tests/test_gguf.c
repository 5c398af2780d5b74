/* test_gguf.c: stories260K.gguf, written by llama.cpp's own converter (an
 * independent producer; ../shared/models/README.md), read by stepwise's
 * GGUF loader: its logits are run.c's golden logits, and its embedded
 * tokenizer encodes as tok512.bin does. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ref/forward.h"
#include "ref/formats/gguf_model.h"
#include "tests/helpers.h"

Test(gguf, stories260k_gguf_gives_run_c_logits) {
    const char *path = model_file("stories260K.gguf");
    cJSON *golden = read_json_file(golden_file("stories260K/once_upon_a_time.json"));
    if (path == NULL || golden == NULL) cr_skip_test("stories260K.gguf or the golden not found");
    Model m;
    Tokenizer tok;
    StepError err;
    GgufLoadReport report;
    cr_assert(gguf_model_load(&m, &tok, path, WEIGHTS_STORED, NULL, &report, &err), "%s",
              err.message);
    /* llama.cpp's file holds exactly what a llama reads: nothing to warn about */
    cr_assert_eq(report.unused, 0, "%d unused, the first %s", report.unused, report.first_unused);
    cr_assert_eq(m.config.vocab_size, 512);
    cr_assert_eq(m.config.rope_layout, ROPE_INTERLEAVED);
    const cJSON *steps = cJSON_GetObjectItem(golden, "steps");
    int n = cJSON_GetArraySize(steps), tokens[64];
    cr_assert(n == 48);
    for (int p = 0; p < n; p++)
        tokens[p] = cJSON_GetObjectItem(cJSON_GetArrayItem(steps, p), "token")->valueint;
    RunState s;
    cr_assert(run_state_init(&s, &m.config, n, n, &err), "%s", err.message);
    const float *logits = forward_tokens(&m, &s, tokens, n, 0, true, NULL);
    float worst = 0.0f;
    for (int p = 0; p < n; p++) {
        const cJSON *want = cJSON_GetObjectItem(cJSON_GetArrayItem(steps, p), "logits");
        for (int i = 0; i < 512; i++) {
            float d = fabsf(logits[(size_t)p * 512 + i] -
                            (float)cJSON_GetArrayItem(want, i)->valuedouble);
            if (!(d <= worst)) worst = d;
        }
    }
    cr_expect_leq(worst, 1e-5f, "max |dlogit| against run.c = %g", (double)worst);
    run_state_free(&s);
    model_free(&m), tokenizer_free(&tok);
    cJSON_Delete(golden);
}

Test(gguf, embedded_tokenizer_encodes_as_tok512_does) {
    const char *gguf = model_file("stories260K.gguf");
    if (gguf == NULL || model_file("tok512.bin") == NULL) cr_skip_test("models not found");
    char path[1024];
    snprintf(path, sizeof path, "%s", gguf);
    Model m;
    Tokenizer embedded, bin;
    StepError err;
    cr_assert(gguf_model_load(&m, &embedded, path, WEIGHTS_STORED, NULL, NULL, &err), "%s",
              err.message);
    cr_assert(tokenizer_load_bin(&bin, model_file("tok512.bin"), 512, &err), "%s", err.message);
    const char *texts[] = {"Once upon a time", "  Lily and Ben went to the park.\nThey saw a dog!",
                           "caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac 12345 \xf0\x9f\x98\x80",
                           "a\tb  c   d", ""};
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        int *a, *b, na, nb;
        cr_assert(tokenizer_encode(&embedded, texts[i], true, &a, &na, &err));
        cr_assert(tokenizer_encode(&bin, texts[i], true, &b, &nb, &err));
        cr_expect(na == nb && memcmp(a, b, (size_t)na * sizeof(int)) == 0,
                  "the embedded tokenizer differs on text %zu", i);
        free(a), free(b);
    }
    model_free(&m), tokenizer_free(&embedded), tokenizer_free(&bin);
}
