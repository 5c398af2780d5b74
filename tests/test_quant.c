/* test_quant.c: int8 quantization, from one hand-computed group to what it
 * costs a real model. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ref/forward.h"
#include "ref/kernels/q8_packed.h"
#include "ref/model/model_quant.h"
#include "ref/formats/q8_file.h"
#include "ref/util/rng.h"
#include "tests/helpers.h"

static char out[1 << 16], err[1 << 14];

/* The group [0.734829, 0.7351, -1.27, 0.0004, 0.7301]:
 *   scale = max|x| / 127 = 1.27 / 127 = 0.01
 *   x / scale = 73.4829, 73.51, -127, 0.04, 73.01 → codes 73, 74, -127, 0, 73
 *   read back: 0.73, 0.74, -1.27, 0, 0.73
 *   0.734829 and 0.7301 both become 73 → 0.73: two values, one number (1 collapsed)
 *   errors: 0.004829, 0.0049, 0, 0.0004, 0.0001 → max 0.0049 ≤ scale / 2 = 0.005 */
Test(quant, a_hand_computed_group) {
    float x[5] = {0.734829f, 0.7351f, -1.27f, 0.0004f, 0.7301f};
    int8_t q[5];
    float scale, back[5];
    quantize_row(x, 5, 32, q, &scale);
    cr_expect(fabsf(scale - 0.01f) < 1e-8f, "scale %.9g", (double)scale);
    int8_t want[5] = {73, 74, -127, 0, 73};
    for (int i = 0; i < 5; i++) cr_expect_eq(q[i], want[i], "code %d: %d", i, q[i]);
    dequantize_row(q, &scale, 5, 32, back);
    float expect[5] = {0.73f, 0.74f, -1.27f, 0.0f, 0.73f};
    for (int i = 0; i < 5; i++) cr_expect(fabsf(back[i] - expect[i]) < 1e-6f, "value %d", i);
    QuantStats st = quant_row_stats(x, q, &scale, 5, 32);
    cr_expect_eq(st.collapsed, 1);
    cr_expect(fabsf(st.max_error - 0.0049f) < 1e-6f, "max error %.9g", (double)st.max_error);
}

/* Round trip: within scale / 2 of every value, and exact on the grid. */
/* Codes round halves away from zero, as roundf does, on values that sit on
 * and just beside the halves: x / scale with scale 1 (amax 127). */
Test(quant, codes_round_halves_away_from_zero) {
    float x[16] = {127.0f,     0.5f,        -0.5f,        1.5f,        -1.5f,  2.5f,
                   -2.5f,      0.49999997f, -0.49999997f, 0.50000006f, 126.5f, -126.5f,
                   3.4999998f, -3.5f,       1e-30f,       -0.0f};
    int want[16] = {127, 1, -1, 2, -2, 3, -3, 0, 0, 1, 127, -127, 3, -4, 0, 0};
    int8_t q[16];
    float scale;
    quantize_row(x, 16, 16, q, &scale);
    cr_assert_eq(scale, 1.0f);
    for (int i = 0; i < 16; i++) {
        cr_assert_eq(q[i], want[i], "x %a: code %d, want %d", x[i], q[i], want[i]);
        cr_assert_eq(q[i], (int)roundf(x[i]), "x %a: roundf disagrees", x[i]);
    }
}

/* quant_code against roundf and a clamp, on every 61st float (some 70
 * million, every exponent and sign; the whole range was checked once). */
Test(quant, codes_are_roundf_clamped_on_a_sweep_of_floats) {
    long bad = 0;
    for (uint64_t u = 0; u < (1ull << 32); u += 61) {
        uint32_t bits = (uint32_t)u;
        float v;
        memcpy(&v, &bits, sizeof v);
        int want = 0;
        if (!isnan(v)) {
            float r = roundf(v);
            want = (int)(r > 127.0f ? 127.0f : r < -127.0f ? -127.0f : r);
        }
        if (quant_code(v) != want && bad++ < 5)
            cr_log_error("%a: code %d, want %d", v, quant_code(v), want);
    }
    cr_assert_eq(bad, 0);
}

/* quantize_row takes maxima and codes sixteen values at a time and the rest
 * one by one: every scale is the largest |x| but NaN over 127 and every
 * code is quant_code(x / scale), whatever the values (random bit
 * patterns: NaNs, infinities, subnormals, huge ones) and wherever a value
 * falls, in a chunk or in the tail. */
Test(quant, row_codes_are_quant_code_of_x_over_scale) {
    XorshiftRng rng = {11};
    enum { N = 200 };
    float x[N], scales[N];
    int8_t q[N];
    long bad = 0;
    for (int trial = 0; trial < 4000; trial++) {
        int n = 1 + (int)(xorshift_u32(&rng) % N), group = 1 + (int)(xorshift_u32(&rng) % 70);
        for (int i = 0; i < n; i++) {
            uint32_t bits = xorshift_u32(&rng);
            if (trial % 2)
                memcpy(&x[i], &bits, sizeof x[i]);
            else
                x[i] = (2 * xorshift_f32(&rng) - 1) * (float)(trial + 1);
        }
        quantize_row(x, n, group, q, scales);
        for (int g = 0; g * group < n; g++) { /* scale: the largest |x| but NaN, / 127 */
            float amax = 0.0f;
            for (int i = g * group; i < n && i < (g + 1) * group; i++)
                if (!isnan(x[i]) && fabsf(x[i]) > amax) amax = fabsf(x[i]);
            if (memcmp(&scales[g], &(float){amax / 127.0f}, sizeof(float)) != 0 && bad++ < 5)
                cr_log_error("group %d: scale %a, want %a", g, scales[g], amax / 127.0f);
        }
        for (int i = 0; i < n; i++) {
            float scale = scales[i / group];
            int8_t want = scale > 0.0f ? quant_code(x[i] / scale) : 0;
            if (q[i] != want && bad++ < 5)
                cr_log_error("x %a, scale %a: code %d, want %d", x[i], scale, q[i], want);
        }
    }
    cr_assert_eq(bad, 0);
}

Test(quant, round_trip_is_within_half_a_step) {
    XorshiftRng rng = {7};
    enum { N = 172, G = 32 }; /* stories260K's hidden width: the last group has 12 values */
    float x[N], back[N], scales[(N + G - 1) / G];
    int8_t q[N];
    cr_assert_eq(quant_groups(N, G), 6);
    for (int trial = 0; trial < 50; trial++) {
        for (int i = 0; i < N; i++) x[i] = (2 * xorshift_f32(&rng) - 1) * (float)(trial + 1);
        quantize_row(x, N, G, q, scales);
        dequantize_row(q, scales, N, G, back);
        for (int i = 0; i < N; i++)
            cr_assert(fabsf(x[i] - back[i]) <= scales[i / G] * 0.5f * (1 + 1e-6f),
                      "value %d: |%g - %g| > %g", i, (double)x[i], (double)back[i],
                      (double)scales[i / G] / 2);
    }
    /* k · 0.5 for k = -127..127: the largest is 63.5, so scale = 0.5 and every
     * value is a code times the scale: read back exactly */
    float grid[255];
    int8_t gq[255];
    float gs[255], gb[255];
    for (int k = -127; k <= 127; k++) grid[k + 127] = 0.5f * (float)k;
    quantize_row(grid, 255, 255, gq, gs);
    cr_expect_eq(gs[0], 0.5f);
    dequantize_row(gq, gs, 255, 255, gb);
    cr_expect_eq(memcmp(grid, gb, sizeof grid), 0, "grid values did not read back exactly");
    /* a group of zeros has scale 0 and codes 0 */
    float zeros[4] = {0}, zs;
    int8_t zq[4] = {1, 1, 1, 1};
    quantize_row(zeros, 4, 4, zq, &zs);
    cr_expect(zs == 0.0f && zq[0] == 0 && zq[3] == 0);
}

/* An int8 dot product against the float one: per element, each side is off
 * by at most half its group's scale, so
 *   |Σ x·w - Σ x̂·ŵ| ≤ Σ (|x|·ew + |w|·ex + ex·ew),  ex = sx/2, ew = sw/2
 * (plus float rounding, far smaller). */
Test(quant, int8_dot_product_within_the_analytic_bound) {
    XorshiftRng rng = {11};
    enum { N = 100, G = 32 };
    float x[N], w[N], sx[4], sw[4];
    int8_t qx[N], qw[N];
    for (int trial = 0; trial < 100; trial++) {
        double exact = 0, bound = 0;
        for (int i = 0; i < N; i++) {
            x[i] = 2 * xorshift_f32(&rng) - 1;
            w[i] = (2 * xorshift_f32(&rng) - 1) * 0.1f;
            exact += (double)x[i] * w[i];
        }
        quantize_row(x, N, G, qx, sx);
        quantize_row(w, N, G, qw, sw);
        for (int i = 0; i < N; i++) {
            double ex = sx[i / G] / 2, ew = sw[i / G] / 2;
            bound += fabs(x[i]) * ew + fabs(w[i]) * ex + ex * ew;
        }
        float got = dot_q8(qx, sx, qw, sw, N, G);
        cr_assert(fabs(got - exact) <= bound + 1e-5, "trial %d: |%g - %g| > %g", trial, (double)got,
                  exact, bound);
        float half = dot_f32_q8(x, qw, sw, N, G); /* only w quantized */
        double bound_w = 0;
        for (int i = 0; i < N; i++) bound_w += fabs(x[i]) * sw[i / G] / 2;
        cr_assert(fabs(half - exact) <= bound_w + 1e-5);
    }
}

/* KV in int8: per token, per layer and K or V, kv_dim codes and a float per
 * KV head. stories260K: 5 × 2 × (32 + 4 × 4) = 480 bytes, against 1280. */
Test(quant, int8_kv_cache_size_is_what_is_allocated) {
    Model m;
    Tokenizer tok;
    load_stories260k(&m, &tok);
    cr_expect_eq(kv_cache_bytes_q8(&m.config, 1), 480u);
    RunState s;
    StepError e;
    QuantRuntime q = {.kv = true, .group = 32};
    cr_assert(run_state_init_quant(&s, &m.config, 100, 10, &q, &e), "%s", e.message);
    cr_expect_eq(s.seq.cache.bytes, 48000u);
    cr_expect_null(s.seq.cache.key, "no float cache when int8");
    run_state_free(&s);
    model_free(&m), tokenizer_free(&tok);
}

/* A .q8 file holds exactly what was quantized: the same logits to the bit
 * as the in-memory quantized model, and the size inspect promises. */
Test(quant, q8_file_round_trips) {
    Model m, loaded;
    Tokenizer tok;
    load_stories260k(&m, &tok);
    StepError e;
    cr_assert(model_quantize(&m, 32, &e), "%s", e.message);
    const char *path = temp_path("s.q8");
    cr_assert(model_save_q8(&m, path, &e), "%s", e.message);
    cr_assert(model_load_q8(&loaded, path, &e), "%s", e.message);
    FILE *f = fopen(path, "rb");
    fseek(f, 0, SEEK_END);
    /* 40 header bytes + int8 weights and scales + float norms */
    cr_expect_eq((uint64_t)ftell(f), 40 + quant_weight_bytes(&m.config, 32));
    fclose(f);
    int tokens[] = {1, 403, 407, 261, 378};
    RunState a, b;
    cr_assert(run_state_init(&a, &m.config, 5, 5, &e));
    cr_assert(run_state_init(&b, &loaded.config, 5, 5, &e));
    const float *la = forward_tokens(&m, &a, tokens, 5, 0, true, NULL);
    const float *lb = forward_tokens(&loaded, &b, tokens, 5, 0, true, NULL);
    cr_expect_eq(memcmp(la, lb, 5 * 512 * sizeof(float)), 0);
    run_state_free(&a), run_state_free(&b);
    model_free(&m), model_free(&loaded), tokenizer_free(&tok);
}

static void expect_bad(const char *args, const char *fragment) {
    int status = run_stepwise(args, out, sizeof out, err, sizeof err);
    cr_expect_eq(status, 2, "'%s' exited %d", args, status);
    cr_expect(strstr(err, fragment) != NULL, "'%s': '%s' lacks '%s'", args, err, fragment);
}

/* Patch bytes of a copy of a good .q8 file. */
static const char *patched(const char *good, long offset, const void *bytes, size_t n, long size) {
    static char path[512];
    snprintf(path, sizeof path, "%s", temp_path("bad.q8"));
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "cp %s %s", good, path);
    cr_assert_eq(system(cmd), 0);
    FILE *f = fopen(path, "r+b");
    if (bytes != NULL) fseek(f, offset, SEEK_SET), fwrite(bytes, 1, n, f);
    fclose(f);
    if (size >= 0) cr_assert_eq(truncate(path, size), 0);
    return path;
}

Test(quant, bad_q8_files_are_errors) {
    const char *model = model_file("stories260K.bin");
    if (model == NULL) cr_skip_test("stories260K not found");
    char good[512], args[2048];
    snprintf(good, sizeof good, "%s", temp_path("good.q8"));
    snprintf(args, sizeof args, "quantize --model %s --out %s", model, good);
    cr_assert_eq(run_stepwise(args, out, sizeof out, err, sizeof err), 0, "%s", err);
    uint32_t version = 9;
    int32_t zero = 0, huge_group = 1 << 30;
    const char *tok = model_file("tok512.bin");
    struct {
        long offset;
        const void *bytes;
        size_t n;
        long size;
        const char *fragment;
    } cases[] = {{4, &version, 4, -1, "not a stepwise .q8 file of version 1"},
                 {8, &zero, 4, -1, "dim must be positive"},
                 {36, &huge_group, 4, -1, "group size"},
                 {0, NULL, 0, 1000, "truncated"},
                 {0, NULL, 0, 30, "bad header"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *bad = patched(good, cases[i].offset, cases[i].bytes, cases[i].n, cases[i].size);
        snprintf(args, sizeof args, "generate --model %s --tokenizer %s", bad, tok);
        expect_bad(args, cases[i].fragment);
    }
    char longer[512];
    snprintf(longer, sizeof longer, "%s", temp_path("long.q8"));
    snprintf(args, sizeof args, "cat %s %s > %s", good, tok, longer);
    cr_assert_eq(system(args), 0);
    snprintf(args, sizeof args, "inspect --model %s", longer);
    expect_bad(args, "oversized");
    expect_bad("generate --quant-weights int4", "--quant-weights takes float32 or int8");
    expect_bad("generate --quant-group 0", "--quant-group must be in");
    snprintf(args, sizeof args, "quantize --model %s --out %s", good, temp_path("again.q8"));
    expect_bad(args, "already int8");
}

/* The bounds on stories260K and data/text/the-lost-kite.txt:
 * weights-only int8 keeps top-1 agreement >= 90% and mean KL <= 0.05. */
Test(quant, weights_only_int8_costs_little_on_our_text) {
    const char *model = model_file("stories260K.bin");
    if (model == NULL) cr_skip_test("stories260K not found");
    char args[2048];
    snprintf(args, sizeof args,
             "compare-quant --model %s --tokenizer %s --text data/text/the-lost-kite.txt --json",
             model, model_file("tok512.bin"));
    cr_assert_eq(run_stepwise(args, out, sizeof out, err, sizeof err), 0, "%s", err);
    cJSON *doc = cJSON_Parse(out);
    cr_assert_not_null(doc, "%s", out);
    const cJSON *configs = cJSON_GetObjectItem(doc, "configs"), *row;
    cr_assert_eq(cJSON_GetArraySize(configs), 5);
    const char *names[] = {"W", "A", "KV", "W+A", "W+A+KV"};
    int i = 0;
    cJSON_ArrayForEach(row, configs) {
        cr_expect_str_eq(cJSON_GetObjectItem(row, "config")->valuestring, names[i++]);
        double kl = cJSON_GetObjectItem(row, "kl_mean")->valuedouble;
        double top1 = cJSON_GetObjectItem(row, "top1_agreement")->valuedouble;
        cr_expect(kl > 0, "%s: quantization changed nothing?", names[i - 1]);
        if (i == 1) {
            cr_expect_geq(top1, 0.90, "weights-only top-1 agreement %.4f", top1);
            cr_expect_leq(kl, 0.05, "weights-only mean KL %.6f", kl);
        }
    }
    cJSON_Delete(doc);
}

/* Every configuration generates (and traces, and validates). */
Test(quant, every_configuration_generates) {
    if (model_file("stories260K.bin") == NULL) cr_skip_test("stories260K not found");
    char model[1024], tok[1024];
    snprintf(model, sizeof model, "%s", model_file("stories260K.bin"));
    snprintf(tok, sizeof tok, "%s", model_file("tok512.bin"));
    const char *configs[] = {"--quant-weights int8", "--quant-activations int8", "--quant-kv int8",
                             "--quant-weights int8 --quant-activations int8",
                             ("--quant-weights int8 --quant-activations int8 --quant-kv int8 "
                              "--quant-group 16")};
    for (size_t i = 0; i < sizeof configs / sizeof configs[0]; i++) {
        const char *trace = temp_path("q.jsonl");
        char args[4096];
        snprintf(args, sizeof args,
                 "generate --model %s --tokenizer %s --prompt 'Once upon a time' --steps 20 %s "
                 "--trace %s --trace-level layers",
                 model, tok, configs[i], trace);
        cr_assert_eq(run_stepwise(args, out, sizeof out, err, sizeof err), 0, "%s: %s", configs[i],
                     err);
        cr_expect(strncmp(out, "Once upon a time", 16) == 0, "%s", out);
        snprintf(args, sizeof args, "trace validate %s", trace);
        cr_expect_eq(run_stepwise(args, out, sizeof out, err, sizeof err), 0, "%s: %s", configs[i],
                     out);
    }
}

/* Row r of every int8 matrix of m, against quantize_row of the float32 row
 * it came from (src [rows, cols], still in the model's storage): codes and
 * scales equal, and matrix_row reads back what dequantize_row gives. */
static void expect_rows_quantized(const Matrix *q, const float *src, int group, const char *what) {
    int C = q->cols, groups = quant_groups(C, group);
    int8_t *want_q = malloc((size_t)C), *got_q = malloc((size_t)C);
    float *want_s = malloc((size_t)groups * sizeof(float)), *got_s = malloc((size_t)groups * 4);
    float *want_x = malloc((size_t)C * sizeof(float)), *got_x = malloc((size_t)C * sizeof(float));
    for (int r = 0; r < q->rows; r++) {
        quantize_row(src + (size_t)r * C, C, group, want_q, want_s);
        dequantize_row(want_q, want_s, C, group, want_x);
        matrix_q8_row(q, r, got_q, got_s);
        matrix_row(q, r, got_x);
        cr_assert_eq(memcmp(want_q, got_q, (size_t)C), 0, "%s row %d: codes", what, r);
        cr_assert_eq(memcmp(want_s, got_s, (size_t)groups * sizeof(float)), 0, "%s row %d", what,
                     r);
        cr_assert_eq(memcmp(want_x, got_x, (size_t)C * sizeof(float)), 0, "%s row %d", what, r);
    }
    free(want_q), free(got_q), free(want_s), free(got_s), free(want_x), free(got_x);
}

static void expect_model_quantized(const Model *m, int group) {
    /* each beside its float32 original, which storage keeps */
    for (int k = 0; k < LAYER_MATRICES; k++) {
        int rows, cols;
        layer_matrix_shape(&m->config, (MatrixKind)k, &rows, &cols);
        if (rows == 0) continue; /* a kind this model has none of (MLA's, shared experts') */
        for (int l = 0; l < m->config.n_layers; l++)
            expect_rows_quantized(&m->layers[l].m[k],
                                  model_matrix_original(m, l * LAYER_MATRICES + k), group,
                                  layer_matrix_name((MatrixKind)k));
    }
    int n = model_matrix_count(m);
    expect_rows_quantized(&m->embedding, model_matrix_original(m, n), group, "embedding");
    expect_rows_quantized(&m->classifier, model_matrix_original(m, n + 1), group, "classifier");
}

/* Each layer's int8 matrix is its own float32 rows quantized, row-major and
 * packed alike, on a shape whose row counts are not multiples of the packed
 * blocks' 64 and whose rows end on a short group; tied and untied. */
Test(quant, every_int8_matrix_is_its_float_rows_quantized) {
    for (int form = 0; form < 4; form++) { /* tied or not; packed plainly or in quads */
        int tied = form % 2;
        bool quads = form >= 2;
        Config c = {.dim = 48,
                    .hidden_dim = 100,
                    .n_layers = 2,
                    .n_heads = 4,
                    .n_kv_heads = 2,
                    .vocab_size = 70,
                    .seq_len = 16,
                    .shared_classifier = tied};
        Model m;
        StepError e;
        cr_assert(model_init_random(&m, &c, 11, &e), "%s", e.message);
        cr_assert(model_quantize(&m, 32, &e), "%s", e.message);
        cr_expect_eq(m.weight_group, 32);
        cr_expect_eq(m.layers[0].m[MAT_DOWN].layout, MATRIX_Q8_ROWS);
        expect_model_quantized(&m, 32);
        cr_assert(model_pack_q8(&m, quads, &e), "%s", e.message);
        cr_expect_eq(m.layers[1].m[MAT_DOWN].layout, MATRIX_Q8_PACKED);
        cr_expect_eq(m.layers[1].m[MAT_DOWN].q8_quads, quads && q8_vnni_available());
        cr_expect_eq(m.classifier.layout, MATRIX_Q8_PACKED);
        cr_expect_eq(m.embedding.data == m.classifier.data, (bool)tied,
                     "a tied embedding is read from the packed classifier");
        expect_model_quantized(&m, 32);
        model_free(&m);
    }
}

/* A random int8 matrix [OC, C] (row-major, groups of `group`) with the
 * extreme codes -128 and 127 planted, and T tokens of activations, float
 * and quantized (with the group sums a matrix in quads needs). */
typedef struct {
    Matrix rows;
    float *x, *sx;
    int8_t *qx;
    int32_t *xsum;
} KernelCase;

static KernelCase kernel_case(int OC, int C, int group, int T, XorshiftRng *rng) {
    KernelCase k = {0};
    int groups = quant_groups(C, group);
    cr_assert(matrix_q8_alloc(&k.rows, MATRIX_Q8_ROWS, OC, C, group));
    int8_t *codes = matrix_q8_codes(&k.rows);
    float *scales = matrix_q8_scales(&k.rows);
    for (size_t i = 0; i < (size_t)OC * C; i++) codes[i] = (int8_t)(xorshift_u32(rng) & 0xff);
    codes[0] = -128, codes[(size_t)OC * C - 1] = 127;
    for (size_t i = 0; i < (size_t)OC * groups; i++) scales[i] = xorshift_f32(rng) * 0.01f + 1e-4f;
    k.x = malloc((size_t)T * C * sizeof(float));
    k.qx = malloc((size_t)T * C);
    k.sx = malloc((size_t)T * groups * sizeof(float));
    k.xsum = malloc((size_t)T * groups * sizeof(int32_t));
    cr_assert(k.x && k.qx && k.sx && k.xsum);
    for (size_t i = 0; i < (size_t)T * C; i++) k.x[i] = xorshift_f32(rng) * 2.0f - 1.0f;
    k.x[0] = 1.0f; /* a group whose largest value codes to 127 */
    for (int t = 0; t < T; t++) {
        quantize_row(k.x + (size_t)t * C, C, group, k.qx + (size_t)t * C,
                     k.sx + (size_t)t * groups);
        q8_group_sums(k.qx + (size_t)t * C, C, group, k.xsum + (size_t)t * groups);
    }
    return k;
}

static void kernel_case_free(KernelCase *k) {
    matrix_free(&k->rows);
    free(k->x), free(k->qx), free(k->sx), free(k->xsum);
}

/* A float still holding the 0xff bytes it was filled with. */
static bool untouched(float f) {
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    return bits == 0xffffffffu;
}

/* The packed int8 kernels, plainly and in quads (VNNI, where the processor
 * has it), give the rows kernel's bits, float and int8 activations alike:
 * on rows that are not whole blocks of 64, rows that end on a short group,
 * every token count up to 9 (four at a time and the rest; one token two
 * blocks at a time, up to three blocks apart, an odd one alone), the
 * blocks split as threads share them, and the codes' extremes. */
Test(quant, packed_int8_kernels_are_the_rows_kernel_bit_for_bit) {
    static const int shapes[][3] = {{64, 32, 32}, {70, 48, 32},  {130, 72, 32},
                                    {5, 8, 4},    {65, 36, 8},   {128, 20, 12},
                                    {3, 40, 40},  {327, 36, 12}, {448, 24, 8}};
    XorshiftRng rng = {.state = 99};
    bool vnni = q8_vnni_available();
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int OC = shapes[s][0], C = shapes[s][1], group = shapes[s][2];
        for (int T = 1; T <= 9; T++) {
            KernelCase k = kernel_case(OC, C, group, T, &rng);
            float *want = malloc((size_t)T * OC * sizeof(float));
            float *got = malloc((size_t)T * OC * sizeof(float));
            cr_assert(want && got);
            for (int int8 = 0; int8 < 2; int8++) {
                const int8_t *qx = int8 ? k.qx : NULL;
                matmul_q8_rows(want, k.x, qx, k.sx, k.rows.data, k.rows.scales, T, C, OC, group);
                for (int quads = 0; quads < 2; quads++) {
                    Matrix p;
                    cr_assert(matrix_pack_q8(&p, &k.rows, quads));
                    cr_expect_eq(p.q8_quads, quads && vnni && C % 4 == 0 && group % 4 == 0);
                    /* whole, and split after each block (as threads share them): a
                     * decode's blocks taken two at a time, half the share apart, never
                     * across a split */
                    for (int mid = 1; mid <= q8_blocks(&p); mid++) {
                        memset(got, 0xff, (size_t)T * OC * sizeof(float));
                        matmul_q8_packed_blocks(got, k.x, qx, k.sx, k.xsum, &p, T, 0, mid);
                        for (int t = 0; t < T; t++) /* rows past the share untouched */
                            for (int r = mid * Q8_ROWS; r < OC; r++)
                                cr_expect(untouched(got[(size_t)t * OC + r]),
                                          "[%d, %d] T %d: row %d written by blocks 0..%d", OC, C, T,
                                          r, mid - 1);
                        matmul_q8_packed_blocks(got, k.x, qx, k.sx, k.xsum, &p, T, mid,
                                                q8_blocks(&p));
                        cr_expect(memcmp(got, want, (size_t)T * OC * sizeof(float)) == 0,
                                  "[%d, %d] group %d, %d tokens, %s activations, %s, split %d: not "
                                  "the rows kernel's bits",
                                  OC, C, group, T, int8 ? "int8" : "float",
                                  quads ? "quads" : "plain", mid);
                    }
                    matrix_free(&p);
                }
            }
            free(want), free(got);
            kernel_case_free(&k);
        }
    }
    if (!vnni) cr_log_warn("no AVX-512 VNNI here: the quads' kernel was not run");
}
