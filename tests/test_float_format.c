/* test_float_format.c: format_float9 writes exactly what printf's "%.9g"
 * writes (glibc's, the independent reference), on special values and on
 * millions of seeded random float32 bit patterns. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "ref/util/rng.h"
#include "trace/float_format.h"

static void expect_same(float v) {
    char want[64], got[64];
    snprintf(want, sizeof want, "%.9g", (double)v);
    int n = format_float9(v, got);
    cr_assert_str_eq(got, want, "%.9g", (double)v);
    cr_assert_eq(n, (int)strlen(want));
}

Test(float_format, special_values) {
    float values[] = {0.0f,         -0.0f,       1.0f,         -1.0f,          0.5f,
                      0.1f,         1e-5f,       1e-4f,        9.99999e-5f,    123456789.0f,
                      999999999.0f, 1e9f,        1e10f,        3.4028235e38f,  1.17549435e-38f,
                      1.4e-45f,     2.54826832f, -2.17452431f, 0.00693554478f, 8.4043417f,
                      100.0f,       1e8f};
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) expect_same(values[i]);
}

Test(float_format, random_bit_patterns, .timeout = 60) {
    XorshiftRng r = {20261129};
    long checked = 0;
    for (int i = 0; i < 3000000; i++) {
        uint32_t bits = xorshift_u32(&r);
        float v;
        memcpy(&v, &bits, sizeof v);
        if (!isfinite(v)) continue;
        expect_same(v);
        checked++;
    }
    /* and the magnitudes logits and probabilities have, densely */
    for (int i = 0; i < 2000000; i++) {
        float v = (xorshift_f32(&r) - 0.5f) * powf(10.0f, (float)(i % 12) - 6.0f);
        expect_same(v);
    }
    cr_expect_gt(checked, 2900000);
}

/* Around every power of ten a float can hold, where the digit count turns
 * over and the first estimate of the exponent is most often one too small:
 * the 64 floats on either side of the nearest float to 10^k. */
Test(float_format, neighbours_of_powers_of_ten) {
    for (int k = -45; k <= 38; k++) {
        float p = (float)pow(10.0, k);
        float lo = p, hi = p;
        for (int i = 0; i < 64; i++) {
            expect_same(lo), expect_same(-lo), expect_same(hi), expect_same(-hi);
            lo = nextafterf(lo, 0.0f), hi = nextafterf(hi, INFINITY);
        }
    }
}
