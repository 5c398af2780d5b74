/* test_gguf_write.c: the GGUF writer's parts worked out by hand (one Q8_0
 * block, the q/k row orders) and a model written and read back. */
#include <criterion/criterion.h>
#include <string.h>

#include "ref/formats/gguf_convert.h"
#include "ref/kernels/gguf_dequant.h"
#include "ref/formats/gguf_model.h"
#include "ref/formats/gguf_write.h"
#include "tests/helpers.h"

/* max |x| = 127 gives d = 1 (F16 0x3C00) and 1/d = 1, so q = roundf(x):
 * halves go away from zero, as C's roundf does (not to even). */
Test(gguf_write, q8_0_block_by_hand) {
    float x[32] = {127.0f, -3.5f, 2.5f, 0.49f, -0.5f, 0.5f, -126.6f, 1.5f};
    unsigned char b[34];
    gguf_quantize_q8_0(x, b);
    cr_assert_eq(b[0] | b[1] << 8, 0x3C00);
    const signed char want[8] = {127, -4, 3, 0, -1, 1, -127, 2};
    for (int j = 0; j < 8; j++) cr_assert_eq((signed char)b[2 + j], want[j], "q[%d]", j);
    for (int j = 8; j < 32; j++) cr_assert_eq(b[2 + j], 0);
}

/* max |x| = 254: d = 2 (F16 0x4000), 1/d = 0.5: 5 -> 2.5 -> 3, -1 -> -0.5 -> -1. */
Test(gguf_write, q8_0_block_scaled_and_zero) {
    float x[32] = {254.0f, 5.0f, -1.0f, 0.9f}, zeros[32] = {0};
    unsigned char b[34];
    gguf_quantize_q8_0(x, b);
    cr_assert_eq(b[0] | b[1] << 8, 0x4000);
    cr_assert_eq((signed char)b[2], 127);
    cr_assert_eq((signed char)b[3], 3);
    cr_assert_eq((signed char)b[4], -1);
    cr_assert_eq((signed char)b[5], 0);
    gguf_quantize_q8_0(zeros, b);
    for (int j = 0; j < 34; j++) cr_assert_eq(b[j], 0, "an all-zero block is all zero bytes");
}

/* head_dim 6, half 3. Interleaved pairs (0,1) (2,3) (4,5) are halves'
 * (0,3) (1,4) (2,5): halves row j·3 + i comes from interleaved row 2i + j. */
Test(gguf_write, rope_row_orders_by_hand) {
    const uint64_t to_halves[6] = {0, 2, 4, 1, 3, 5}, to_interleaved[6] = {0, 3, 1, 4, 2, 5};
    for (uint64_t r = 0; r < 6; r++) {
        cr_assert_eq(rope_source_row(r, 6, ROWS_TO_HALVES), to_halves[r]);
        cr_assert_eq(rope_source_row(r, 6, ROWS_TO_INTERLEAVED), to_interleaved[r]);
        cr_assert_eq(rope_source_row(6 + r, 6, ROWS_TO_HALVES), 6 + to_halves[r], "second head");
        cr_assert_eq(rope_source_row(r, 6, ROWS_AS_HELD), r);
    }
}

/* A random model of each architecture, written F32 and read back: every
 * weight the same bits (qwen's q/k go to halves and come back). */
static void round_trip(bool qkv_bias, bool qk_norm, bool tied) {
    Config c = {.dim = 32,
                .hidden_dim = 48,
                .n_layers = 2,
                .n_heads = 4,
                .n_kv_heads = 2,
                .vocab_size = 40,
                .seq_len = 16,
                .shared_classifier = tied,
                .head_dim = 6,
                .rope_theta = 500.0f,
                .qkv_bias = qkv_bias,
                .qk_norm = qk_norm,
                .norm_eps = 1e-6f};
    Model m, back;
    StepError err;
    cr_assert(model_init_random(&m, &c, 7, &err), "%s", err.message);
    for (uint64_t i = 0; i < model_storage_floats(&c); i++)
        m.storage[i] += 0.001f * (float)(i % 97); /* norms and biases not all alike */
    const char *path = temp_path("round-trip.gguf");
    GgufSaveReport r;
    cr_assert(gguf_model_save(&m, NULL, GGUF_OUT_F32, "t", path, &r, &err), "%s", err.message);
    cr_assert_str_eq(r.arch, qk_norm ? "qwen3" : qkv_bias ? "qwen2" : "llama");
    cr_assert(gguf_model_load(&back, NULL, path, WEIGHTS_F32, NULL, NULL, &err), "%s", err.message);
    cr_assert_eq(back.config.n_layers, 2);
    cr_assert_eq(back.config.head_dim, 6);
    cr_assert_eq(back.config.shared_classifier, tied);
    cr_assert_eq(back.config.rope_theta, 500.0f);
    cr_assert_eq(back.config.norm_eps, 1e-6f);
    cr_assert_eq(model_storage_floats(&back.config), model_storage_floats(&c));
    cr_assert(memcmp(back.storage, m.storage, model_storage_floats(&c) * sizeof(float)) == 0,
              "every weight comes back bit for bit");
    model_free(&m);
    model_free(&back);
}

Test(gguf_write, llama_round_trip) {
    round_trip(false, false, false);
}
Test(gguf_write, qwen2_round_trip) {
    round_trip(true, false, true);
}
Test(gguf_write, qwen3_round_trip) {
    round_trip(false, true, true);
}
