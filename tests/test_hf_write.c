/* test_hf_write.c: make-model's folders written tensor by tensor (each drawn
 * from the random stream as it is written, hf_model_save_random) are byte
 * for byte the folders of the whole model made in memory first
 * (model_init_random, then hf_model_save). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ref/util/file_util.h"
#include "ref/formats/hf_write.h"
#include "tests/helpers.h"

static bool same_bytes(const char *a, const char *b) {
    char *x = NULL, *y = NULL;
    size_t nx = 0, ny = 0;
    StepError err;
    bool same = file_read_bytes(a, "a", &x, &nx, &err) && file_read_bytes(b, "b", &y, &ny, &err) &&
                nx == ny && memcmp(x, y, nx) == 0;
    free(x), free(y);
    return same;
}

static void expect_same_folder(const char *name, SafetensorsDtype dtype, bool untied,
                               const char *tag) {
    Config c = {.dim = 48,
                .hidden_dim = 80,
                .n_layers = 3,
                .n_heads = 6,
                .n_kv_heads = 2,
                .vocab_size = 97,
                .seq_len = 32,
                .shared_classifier = !untied};
    const Family *arch = family_find(name);
    family_apply(arch, &c);
    char whole[512], drawn[600];
    snprintf(whole, sizeof whole, "%s", temp_path(tag));
    snprintf(drawn, sizeof drawn, "%s-drawn", whole);
    Model m, layout;
    StepError err;
    cr_assert(model_init_random(&m, &c, 7, &err), "%s", err.message);
    cr_assert(hf_model_save(&m, arch, whole, dtype, 2, NULL, &err), "%s", err.message);
    cr_assert(model_reserve_layout(&layout, &c, &err), "%s", err.message);
    cr_assert(hf_model_save_random(&layout, 7, arch, drawn, dtype, 2, NULL, &err), "%s",
              err.message);
    const char *files[] = {"config.json", "model.safetensors.index.json",
                           "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"};
    for (int i = 0; i < 4; i++) {
        char a[700], b[700];
        snprintf(a, sizeof a, "%s/%s", whole, files[i]);
        snprintf(b, sizeof b, "%s/%s", drawn, files[i]);
        cr_expect(same_bytes(a, b), "%s: %s differs", tag, files[i]);
    }
    model_free(&m), model_free(&layout);
}

Test(hf_write, drawn_tensor_by_tensor_equals_made_whole) {
    expect_same_folder("llama", ST_F32, false, "hfw-llama-f32");
    expect_same_folder("qwen2", ST_BF16, true, "hfw-qwen2-bf16-untied"); /* biases, lm_head */
    expect_same_folder("qwen3", ST_F16, false, "hfw-qwen3-f16");         /* q/k norms */
}
