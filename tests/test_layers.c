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
