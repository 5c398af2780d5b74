/* kernels/exp.c: see exp.h.
 *
 * The algorithm, as glibc's expf has it (sysdeps/ieee754/flt-32/e_expf.c,
 * from Arm's optimized-routines), for |x| < 88:
 *
 *   z = x · 32/ln 2;  k = z rounded to an integer;  r = z - k  (|r| <= 1/2)
 *   2^(k/32) = 2^(k div 32) · 2^((k mod 32)/32), the second from a table
 *   exp(x) = 2^(z/32) ≈ 2^(k/32) · (C0 r³ + C1 r² + C2 r + 1)
 *
 * all in double, and rounded to float once at the end. k is rounded by
 * adding and taking away 1.5 · 2^52 (whose last bits are then k). With
 * FMA, glibc's build fuses four of the steps (below); each variant here
 * follows its instructions one for one. */
#include "ref/kernels/exp.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "ref/kernels/clones.h"

#define TABLE_BITS 5
#define TABLE_SIZE (1 << TABLE_BITS)

/* TABLE[i] = the bits of 2^(i/32) as a double, less i << 47: adding k << 47
 * then puts k div 32 into the exponent. */
static const uint64_t TABLE[TABLE_SIZE] = {
    0x3ff0000000000000, 0x3fefd9b0d3158574, 0x3fefb5586cf9890f, 0x3fef9301d0125b51,
    0x3fef72b83c7d517b, 0x3fef54873168b9aa, 0x3fef387a6e756238, 0x3fef1e9df51fdee1,
    0x3fef06fe0a31b715, 0x3feef1a7373aa9cb, 0x3feedea64c123422, 0x3feece086061892d,
    0x3feebfdad5362a27, 0x3feeb42b569d4f82, 0x3feeab07dd485429, 0x3feea47eb03a5585,
    0x3feea09e667f3bcd, 0x3fee9f75e8ec5f74, 0x3feea11473eb0187, 0x3feea589994cce13,
    0x3feeace5422aa0db, 0x3feeb737b0cdc5e5, 0x3feec49182a3f090, 0x3feed503b23e255d,
    0x3feee89f995ad3ad, 0x3feeff76f2fb5e47, 0x3fef199bdd85529c, 0x3fef3720dcef9069,
    0x3fef5818dcfba487, 0x3fef7c97337b9b5f, 0x3fefa4afa2a490da, 0x3fefd0765b6e4540};

#define INV_LN2_N (0x1.71547652b82fep+0 * TABLE_SIZE) /* 32 / ln 2 */
#define SHIFT     0x1.8p+52                           /* 1.5 · 2^52: rounds to an integer */
#define C0        (0x1.c6af84b912394p-5 / TABLE_SIZE / TABLE_SIZE / TABLE_SIZE)
#define C1        (0x1.ebfce50fac4f3p-3 / TABLE_SIZE / TABLE_SIZE)
#define C2        (0x1.62e42ff0c52d6p-1 / TABLE_SIZE)

/* Values per chunk: the inputs are kept while their results are made, for
 * the special ones. */
#define CHUNK 64

static ALWAYS_INLINE uint64_t bits_of(double d) {
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u;
}

static ALWAYS_INLINE double double_of(uint64_t u) {
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

/* |x| >= 88 (or near it), an infinity or NaN: the library's own cases. */
static ALWAYS_INLINE bool special(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return ((u >> 20) & 0x7ff) > 0x42a;
}

/* glibc's sequence with separate multiplies and adds. */
static ALWAYS_INLINE float exp_plain(float x) {
    double xd = x, z = INV_LN2_N * xd;
    double kd = z + SHIFT;
    uint64_t ki = bits_of(kd);
    kd -= SHIFT;
    double r = z - kd;
    double s = double_of(TABLE[ki % TABLE_SIZE] + (ki << (52 - TABLE_BITS)));
    double p = C0 * r + C1, r2 = r * r, y = C2 * r + 1.0;
    y = p * r2 + y;
    return (float)(y * s);
}

/* glibc's sequence as its FMA build has it: x · 32/ln 2 fused into both
 * the rounding and the remainder, and two of the cubic's steps fused. */
static ALWAYS_INLINE float exp_fused(float x) {
    double xd = x;
    double kd = fma(xd, INV_LN2_N, SHIFT);
    uint64_t ki = bits_of(kd);
    kd -= SHIFT;
    double r = fma(INV_LN2_N, xd, -kd);
    double s = double_of(TABLE[ki % TABLE_SIZE] + (ki << (52 - TABLE_BITS)));
    double p = fma(C0, r, C1), r2 = r * r, y = fma(r, C2, 1.0);
    y = fma(p, r2, y);
    return (float)(y * s);
}

/* One chunk: every value by the algorithm (the vector loop; the special
 * ones' results are meaningless and replaced), then the special ones by
 * expf. The FMA build fuses with the processor's instructions; a clone
 * without FMA would call fma() from the library (right, and slow), which
 * only a processor glibc itself runs without FMA would reach. */
FMA_CLONES static void exp_chunk(float *x, int n, bool fused) {
    float in[CHUNK], out[CHUNK]; /* a whole chunk always: loops of known length */
    memcpy(in, x, (size_t)n * sizeof(float));
    memset(in + n, 0, (size_t)(CHUNK - n) * sizeof(float));
    if (fused)
        for (int i = 0; i < CHUNK; i++) out[i] = exp_fused(in[i]);
    else
        for (int i = 0; i < CHUNK; i++) out[i] = exp_plain(in[i]);
    int n_special = 0;
    for (int i = 0; i < CHUNK; i++) n_special += special(in[i]);
    memcpy(x, out, (size_t)n * sizeof(float));
    for (int i = 0; n_special > 0 && i < n; i++)
        if (special(in[i])) x[i] = expf(in[i]);
}

void exp_many(float *x, int n, ExpKind kind) {
    if (kind == EXP_LIBM) {
        for (int i = 0; i < n; i++) x[i] = expf(x[i]);
        return;
    }
    for (int i = 0; i < n; i += CHUNK)
        exp_chunk(x + i, n - i < CHUNK ? n - i : CHUNK, kind == EXP_GLIBC_FMA);
}

float exp_one(float x, ExpKind kind) {
    float chunk[CHUNK] = {x};
    exp_many(chunk, 1, kind);
    return chunk[0];
}

/* Inputs that tell the two builds apart (the two floats where they
 * differ), and inputs where glibc's result is not the correctly rounded
 * one (a correctly rounded library, or another algorithm, gives other
 * bits): each with what the plain and the fused build return. */
static const struct {
    float x, plain, fused;
} PROBES[] = {
    {-0x1.f8cbb2p+5f, 0x1.f45324p-92f, 0x1.f45326p-92f},
    {0x1.04845ep+5f, 0x1.f93e36p+46f, 0x1.f93e38p+46f},
    {-0x1.69dbf6p-11f, 0x1.ffa592p-1f, 0x1.ffa592p-1f}, /* correctly rounded: 0x1.ffa59p-1 */
    {0x1.c0b00cp-2f, 0x1.8cc456p+0f, 0x1.8cc456p+0f},   /* correctly rounded: 0x1.8cc454p+0 */
};

ExpKind exp_kind_of_libm(void) {
    bool plain = true, fused = true;
    for (size_t i = 0; i < sizeof PROBES / sizeof PROBES[0]; i++) {
        volatile float x = PROBES[i].x; /* the library's expf, not the compiler's folding */
        float got = expf(x);
        plain = plain && got == PROBES[i].plain;
        fused = fused && got == PROBES[i].fused;
    }
    return fused ? EXP_GLIBC_FMA : plain ? EXP_GLIBC_PLAIN : EXP_LIBM;
}
