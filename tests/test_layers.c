/* test_layers.c: layers.h's functions against their definitions computed in
 * double here (libm's tanh and exp), with tolerances set so that the
 * planted bugs of issue 46 fail by a wide margin: GELU with a wrong
 * coefficient, a softmax (attention's, both paths) that does not subtract
 * the maximum before it exponentiates. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "ref/kernels/exp.h"
#include "ref/kernels/fast_layers.h"
#include "ref/layers.h"

/* GELU's tanh form in double: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). */
static double gelu_definition(double x) {
    return 0.5 * x * (1.0 + tanh(sqrt(2.0 / 3.14159265358979323846) * (x + 0.044715 * x * x * x)));
}

/* Over [-6, 6] in steps of 1/64 the float GELU stays within 2e-7 · max(1,
 * |x|) of the double definition (measured: 7.8e-8 at most). The
 * coefficient 0.0447 for 0.044715 moves the result by up to 8.7e-6 (near
 * x = ±2, where the bound is 4e-7): 20 times the tolerance. */
Test(layers, gelu_is_its_definition) {
    double worst = 0;
    for (int i = -384; i <= 384; i++) {
        float x = (float)i / 64.0f, y = x;
        gelu_forward(&y, 1);
        double err = fabs((double)y - gelu_definition(x)) / fmax(1.0, fabs((double)x));
        worst = fmax(worst, err);
        cr_expect(err <= 2e-7, "gelu(%g) = %.9g, by definition %.9g", (double)x, (double)y,
                  gelu_definition(x));
    }
    cr_log_info("gelu: worst error %.3g (relative to max(1, |x|))", worst);
}

/* Scores far past expf's overflow (about 88.7): q·k of 100 and 90, one
 * head of width 1 (divided by sqrt(1)). softmax = (1, e^-10) / (1 + e^-10),
 * so out = p0 · 1 + p1 · 0 = 1 / (1 + e^-10). A softmax that exponentiates
 * before subtracting the max gives inf / inf: NaN. */
Test(layers, attention_softmax_survives_scores_past_exp_overflow) {
    const float q[1] = {10.0f}, keys[2] = {10.0f, 9.0f}, values[2] = {1.0f, 0.0f};
    const AttentionSpec a = {.n_heads = 1, .n_kv_heads = 1, .head_dim = 1, .query_scale = 1.0f};
    double want = 1.0 / (1.0 + exp(-10.0));
    float out = -1, scores[2];
    attention_forward(&out, q, keys, values, scores, 1, 1, &a, NULL);
    cr_expect(fabs(out - want) < 1e-6, "plain: %.9g, by definition %.9g", (double)out, want);
    float fast = -1, rows[16];
    attention_heads_fast(&fast, q, keys, NULL, values, rows, 16, 1, 1, &a, 0, 1,
                         exp_kind_of_libm());
    cr_expect(fabs(fast - want) < 1e-6, "fast: %.9g, by definition %.9g", (double)fast, want);
    float x[3] = {1000.0f, 999.0f, -1000.0f};
    softmax_forward(x, 3);
    double e1 = exp(-1.0), sum = 1.0 + e1;
    cr_expect(fabs(x[0] - 1.0 / sum) < 1e-6 && fabs(x[1] - e1 / sum) < 1e-6 && x[2] == 0.0f,
              "softmax(1000, 999, -1000) = %g %g %g", (double)x[0], (double)x[1], (double)x[2]);
}

/* The fast attention gives the plain loops' bits (layers.c: one position
 * and one dimension at a time, each sum in index order from 0.0f): its
 * blocks of four positions' scores, of 64 and 16 dimensions of the values,
 * four query heads of one KV head together (32 dimensions at a time) and
 * every tail. Head widths that use each block and tail; GQA groups of 2
 * (never four together), 4 and 6 (four together, then two alone); the
 * heads split between two threads' shares at every point; queries at every
 * position from 0 to 19, as decode steps and as passes of three; with no
 * window, and with a window of 5, Gemma 2's soft-cap and llama.cpp's
 * float16 probabilities (the steps between the scores and the values). */
Test(layers, fast_attention_is_the_plain_sums_at_every_width_and_position) {
    enum { POSITIONS = 22, MAX_HEADS = 8, MAX_DIM = 88 };
    const int widths[] = {8, 24, 40, 64, 72, 88};
    const int shapes[][2] = {{4, 2}, {8, 2}, {6, 1}}; /* query heads, KV heads */
    static float q[3 * MAX_HEADS * MAX_DIM], keys[POSITIONS * MAX_HEADS * MAX_DIM],
        values[POSITIONS * MAX_HEADS * MAX_DIM];
    static float plain[3 * MAX_HEADS * MAX_DIM], fast[3 * MAX_HEADS * MAX_DIM];
    static float scores[POSITIONS], rows[MAX_HEADS * POSITIONS];
    unsigned seed = 12345u;
    for (size_t w = 0; w < sizeof widths / sizeof widths[0]; w++)
        for (size_t g = 0; g < 2 * sizeof shapes / sizeof shapes[0]; g++) {
            int hd = widths[w], heads = shapes[g / 2][0], kv_heads = shapes[g / 2][1];
            bool windowed = g % 2 == 1;
            const AttentionSpec a = {.n_heads = heads,
                                     .n_kv_heads = kv_heads,
                                     .head_dim = hd,
                                     .query_scale = (float)hd,
                                     .window = windowed ? 5 : 0,
                                     .softcap = windowed ? 0.5f : 0.0f,
                                     .f16_probs = windowed};
            float *all[] = {q, keys, values};
            size_t counts[] = {3 * (size_t)heads * hd, POSITIONS * (size_t)kv_heads * hd,
                               POSITIONS * (size_t)kv_heads * hd};
            for (int b = 0; b < 3; b++)
                for (size_t i = 0; i < counts[b]; i++) {
                    seed = seed * 1664525u + 1013904223u;
                    all[b][i] = (float)(int)(seed >> 9) / (float)(1 << 22) - 1.0f; /* [-1, 1) */
                }
            for (int T = 1; T <= 3; T += 2)
                for (int pos0 = 0; pos0 + T <= 20; pos0++)
                    for (int split = 0; split < heads; split++) {
                        size_t n = (size_t)T * heads * hd;
                        attention_forward(plain, q, keys, values, scores, T, pos0, &a, NULL);
                        memset(fast, 0, n * sizeof(float));
                        attention_heads_fast(fast, q, keys, NULL, values, rows, POSITIONS, T, pos0,
                                             &a, 0, split, exp_kind_of_libm());
                        attention_heads_fast(fast, q, keys, NULL, values, rows, POSITIONS, T, pos0,
                                             &a, split, heads, exp_kind_of_libm());
                        cr_expect(memcmp(plain, fast, n * sizeof(float)) == 0,
                                  "head width %d, %d heads on %d KV heads split at %d, %d "
                                  "queries from position %d, window %d: fast %.9g, plain %.9g",
                                  hd, heads, kv_heads, split, T, pos0, a.window,
                                  (double)fast[n - 1], (double)plain[n - 1]);
                    }
        }
}

/* ggml's GELU (--gelu ggml), against numpy: y = float16(gelu(float16(x)))
 * in float32 arithmetic, with numpy's float16 rounding (round to nearest
 * even), 0 at x <= -10 and x at x >= 10 (ggml_vec_gelu_f32's ends):
 *   np.float32(np.float16(g(np.float32(np.float16(x))))). */
Test(layers, gelu_ggml_is_ggmls_table) {
    const float x[] = {-10.0f, -9.99f, -1.0f, -0.5f, 0.0f,  0.3f,
                       1.0f,   2.5f,   9.99f, 10.0f, 12.0f, 0.1234f};
    const float want[] = {
        0.0f,           -0.0f,     -0.1588134765625f, -0.154296875f, 0.0f,  0.1854248046875f,
        0.84130859375f, 2.484375f, 9.9921875f,        10.0f,         12.0f, 0.0677490234375f};
    float y[12], gate[12], up[12];
    for (int i = 0; i < 12; i++) y[i] = x[i], gate[i] = x[i], up[i] = 2.0f;
    gelu_ggml_forward(y, 12);
    geglu_ggml_forward(gate, up, 12);
    for (int i = 0; i < 12; i++) {
        cr_expect_eq(y[i], want[i], "ggml gelu(%g) = %.9g, numpy says %.9g", (double)x[i],
                     (double)y[i], (double)want[i]);
        cr_expect_eq(gate[i], 2.0f * want[i], "ggml geglu(%g, 2)", (double)x[i]);
    }
}
