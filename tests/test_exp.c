/* test_exp.c: the fast path's exponentials (ref/kernels/exp.c) are the C
 * library's expf, bit for bit: over a sweep of every float (every one with
 * STEPWISE_EXP_STRIDE=1: docs/runs/expf-2026-12-03.txt), in the runs of
 * lengths that leave a short last chunk, and through the special inputs;
 * the two builds of glibc's algorithm differ where the probes say; and on
 * glibc (this machine's, CI's) the library is found to be one of them, so
 * that the fast path is taken at all. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ref/kernels/exp.h"

static float float_of(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static uint32_t bits_of(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

Test(exp, the_library_is_glibc_here) {
#ifdef __GLIBC__
    ExpKind kind = exp_kind_of_libm();
    cr_assert(kind == EXP_GLIBC_FMA || kind == EXP_GLIBC_PLAIN,
              "glibc %d.%d's expf was not recognised: the fast path would call expf one value "
              "at a time",
              __GLIBC__, __GLIBC_MINOR__);
#endif
}

/* The two builds differ on the two floats the probes name, and agree with
 * each other where glibc is not correctly rounded (the later probes). */
Test(exp, the_builds_differ_where_the_probes_say) {
    float x = -0x1.f8cbb2p+5f;
    cr_assert_eq(bits_of(exp_one(x, EXP_GLIBC_PLAIN)), bits_of(0x1.f45324p-92f));
    cr_assert_eq(bits_of(exp_one(x, EXP_GLIBC_FMA)), bits_of(0x1.f45326p-92f));
    x = 0x1.04845ep+5f;
    cr_assert_eq(bits_of(exp_one(x, EXP_GLIBC_PLAIN)), bits_of(0x1.f93e36p+46f));
    cr_assert_eq(bits_of(exp_one(x, EXP_GLIBC_FMA)), bits_of(0x1.f93e38p+46f));
    /* and exp(-0x1.69dbf6p-11) correctly rounded is 0x1.ffa59p-1 (long
     * double's expl, then float): glibc's is one unit above, both builds */
    x = -0x1.69dbf6p-11f;
    cr_assert_eq(bits_of((float)expl((long double)x)), bits_of(0x1.ffa59p-1f));
    cr_assert_eq(bits_of(exp_one(x, EXP_GLIBC_PLAIN)), bits_of(0x1.ffa592p-1f));
    cr_assert_eq(bits_of(exp_one(x, EXP_GLIBC_FMA)), bits_of(0x1.ffa592p-1f));
}

/* Every stride-th float through exp_many, a chunk at a time, against
 * expf: the bits equal, NaN for NaN. */
Test(exp, exp_many_is_expf_over_the_floats, .timeout = 600) {
    ExpKind kind = exp_kind_of_libm();
    const char *env = getenv("STEPWISE_EXP_STRIDE");
    uint64_t stride = env != NULL ? strtoull(env, NULL, 10) : 61, checked = 0, wrong = 0;
    if (stride == 0) stride = 1;
    enum { BATCH = 1000 };
    float x[BATCH], y[BATCH];
    int n = 0;
    for (uint64_t b = 0; b <= UINT32_MAX; b += stride) {
        x[n] = y[n] = float_of((uint32_t)b);
        if (++n < BATCH && b + stride <= UINT32_MAX) continue;
        exp_many(y, n, kind);
        for (int i = 0; i < n; i++) {
            float want = expf(x[i]);
            bool same = isnan(want) ? isnan(y[i]) : bits_of(want) == bits_of(y[i]);
            if (!same && wrong++ < 5)
                cr_log_error("exp_many(%a) = %a, expf = %a", (double)x[i], (double)y[i],
                             (double)want);
        }
        checked += (uint64_t)n;
        n = 0;
    }
    cr_log_info("exp: %llu floats (every %llu-th), %llu differ from expf",
                (unsigned long long)checked, (unsigned long long)stride, (unsigned long long)wrong);
    cr_assert_eq(wrong, 0, "%llu of %llu floats differ from expf", (unsigned long long)wrong,
                 (unsigned long long)checked);
    cr_assert_gt(checked, UINT32_MAX / stride - 1);
}

/* Lengths 1..200 (short last chunks of every size), the values a softmax
 * gives (x - max <= 0, some below -88 where expf underflows) and the
 * special ones mixed in at every place: each the library's. */
Test(exp, every_length_and_the_special_inputs) {
    ExpKind kind = exp_kind_of_libm();
    static const float SPECIAL[] = {-INFINITY, INFINITY, NAN,  -103.5f, -104.0f, -88.5f, 88.5f,
                                    89.0f,     -0.0f,    0.0f, 1e-30f,  -200.0f, 88.72f};
    float x[200], y[200];
    uint32_t state = 12345;
    for (int n = 1; n <= 200; n++) {
        for (int i = 0; i < n; i++) {
            state = state * 1664525u + 1013904223u;
            x[i] = -(float)(state >> 8) / (float)(1 << 24) * 120.0f; /* [-120, 0] */
            if ((state & 7) == 0) x[i] = SPECIAL[(state >> 3) % (sizeof SPECIAL / sizeof *SPECIAL)];
        }
        memcpy(y, x, (size_t)n * sizeof(float));
        exp_many(y, n, kind);
        for (int i = 0; i < n; i++) {
            float want = expf(x[i]);
            bool same = isnan(want) ? isnan(y[i]) : bits_of(want) == bits_of(y[i]);
            cr_assert(same, "n %d, i %d: exp_many(%a) = %a, expf = %a", n, i, (double)x[i],
                      (double)y[i], (double)want);
        }
    }
}
