/* test_matrix.c: matrix.h's widening and reading, against float16.h's
 * bit-by-bit converter and hand-made rows. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ref/util/float16.h"
#include "ref/layers.h"
#include "ref/matrix.h"
#include "ref/kernels/pack.h"
#include "ref/kernels/pack_kernels.h"

static uint32_t bits_of(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* The vectorisable widening equals the branchy reference on all 65,536
 * halves: normals, subnormals, zeros, infinities and NaNs (payload too). */
Test(matrix, f16_widen_is_half_to_float_for_every_half) {
    for (uint32_t h = 0; h < 65536; h++)
        cr_assert_eq(bits_of(f16_widen((uint16_t)h)), bits_of(half_to_float((uint16_t)h)),
                     "half 0x%04x", h);
}

/* IEEE 754's binary16 by its definition, in double, independent of both
 * widenings above: sign s, exponent e (5 bits), mantissa m (10 bits);
 * e = 0: (-1)^s · m · 2^-24 (subnormals and zeros), e = 31: inf (m = 0)
 * or NaN, else (-1)^s · (1024 + m) · 2^(e - 25). Every half is exact in
 * float32, so the widening must give that value's bits (a NaN: a NaN with
 * the same sign). A widening that flushed subnormals to zero fails here on
 * 0x0001 (2^-24). */
Test(matrix, f16_widen_is_the_binary16_definition_for_every_half) {
    for (uint32_t h = 0; h < 65536; h++) {
        int sign = (int)(h >> 15), e = (int)((h >> 10) & 31), m = (int)(h & 1023);
        float got = f16_widen((uint16_t)h);
        if (e == 31 && m != 0) {
            cr_assert(isnan(got) && (signbit(got) != 0) == (sign != 0), "half 0x%04x: NaN", h);
            continue;
        }
        double v = e == 31 ? INFINITY : e == 0 ? ldexp(m, -24) : ldexp(1024 + m, e - 25);
        float want = (float)(sign ? -v : v);
        cr_assert_eq(bits_of(got), bits_of(want), "half 0x%04x: %.9g, by definition %.9g", h,
                     (double)got, (double)want);
    }
}

/* bfloat16 is the top half of a float32: 0x3f80 is 1.0, 0xc000 is -2.0. */
Test(matrix, bf16_widen_is_the_top_half) {
    cr_assert_eq(bf16_widen(0x3f80), 1.0f);
    cr_assert_eq(bf16_widen(0xc000), -2.0f);
    cr_assert(isinf(bf16_widen(0x7f80)));
    cr_assert_eq(bits_of(bf16_widen(0x0001)), 0x00010000u); /* a subnormal, exact */
}

/* The way back: float_to_half, half_round and float_to_bf16 round to
 * nearest, ties to even (issue 67: they were tested only through widening,
 * so ties away from zero or toward it passed). Worked by hand first: */
Test(matrix, float_to_16_bits_ties_by_hand) {
    const struct {
        float x;
        uint16_t half;
    } h[] = {
        {1.0f + 0x1p-11f, 0x3c00},        /* between 1 (0x3c00) and 1 + 2^-10: the even one, down */
        {1.0f + 3 * 0x1p-11f, 0x3c02},    /* between 0x3c01 and 0x3c02: up */
        {-(1.0f + 0x1p-11f), 0xbc00},     /* the same ties, negative: toward zero here, */
        {-(1.0f + 3 * 0x1p-11f), 0xbc02}, /* away from it here */
        {1.0f + 0x1p-11f + 0x1p-23f, 0x3c01}, /* past the tie: up */
        {0x1p-25f, 0x0000},                   /* half the smallest subnormal: to +0 */
        {3 * 0x1p-25f, 0x0002},               /* between subnormals 1 and 2 (2^-24 units): 2 */
        {-3 * 0x1p-25f, 0x8002},
        {0x1p-26f, 0x0000}, /* below half the smallest: zero, its sign kept */
        {-0x1p-26f, 0x8000},
        {65504.0f, 0x7bff},        /* the largest half */
        {65519.99609375f, 0x7bff}, /* 65520 less one float32 step: still 65504 */
        {65520.0f, 0x7c00},        /* the tie between 65504 (odd) and 2^16: infinity */
        {-65520.0f, 0xfc00},
        {1e30f, 0x7c00},
        {-INFINITY, 0xfc00},
    };
    for (size_t i = 0; i < sizeof h / sizeof h[0]; i++)
        cr_expect_eq(float_to_half(h[i].x), h[i].half, "float_to_half(%a) = 0x%04x, by hand 0x%04x",
                     (double)h[i].x, float_to_half(h[i].x), h[i].half);
    const struct {
        uint32_t x;
        uint16_t bf;
    } b[] = {
        {0x3f808000, 0x3f80}, /* 1 + 2^-8: the tie between 0x3f80 and 0x3f81, to the even one */
        {0x3f818000, 0x3f82}, /* between 0x3f81 and 0x3f82: up */
        {0xbf808000, 0xbf80}, /* negative ties */
        {0xbf818000, 0xbf82},
        {0x3f808001, 0x3f81}, /* past the tie */
        {0x3f817fff, 0x3f81}, /* short of it */
        {0x00008000, 0x0000}, /* a subnormal tie, to even: zero */
        {0x00018000, 0x0002},
        {0x7f7f8000, 0x7f80}, /* the largest bfloat16 (odd) and the next power of two: infinity */
        {0x7f7f7fff, 0x7f7f},
        {0xff7f8000, 0xff80},
    };
    for (size_t i = 0; i < sizeof b / sizeof b[0]; i++) {
        float x;
        memcpy(&x, &b[i].x, sizeof x);
        cr_expect_eq(float_to_bf16(x), b[i].bf, "float_to_bf16(0x%08x) = 0x%04x, by hand 0x%04x",
                     b[i].x, float_to_bf16(x), b[i].bf);
    }
}

/* A 16-bit code's value by its definition, in double (as the widening test
 * above): code 0x7c00 (float16) or 0x7f80 (bfloat16), infinity, stands for
 * the power of two the finite codes continue to, 2^16 or 2^128, so that the
 * midpoint below the infinity is the overflow boundary (65520 for float16). */
static double half_value(uint32_t h) {
    int e = (int)((h >> 10) & 31), m = (int)(h & 1023);
    return e == 0 ? ldexp(m, -24) : ldexp(1024 + m, e - 25);
}
static double bf16_value(uint32_t b) {
    int e = (int)((b >> 7) & 255), m = (int)(b & 127);
    return e == 0 ? ldexp(m, -133) : ldexp(128 + m, e - 134);
}

/* Every pair of neighbouring non-negative codes lo, lo + 1 (subnormals,
 * normals, and the largest finite code with infinity), both signs: the
 * midpoint (exact in float32: one bit past the 16-bit significand) goes to
 * the even code; one float32 step below it to lo, one above to lo + 1. */
static void check_ties(uint16_t (*to16)(float), double (*value)(uint32_t), uint32_t last_finite,
                       uint32_t sign_bit, const char *name) {
    for (uint32_t lo = 0; lo <= last_finite; lo++) {
        for (int neg = 0; neg < 2; neg++) {
            float mid = (float)((value(lo) + value(lo + 1)) / 2), s = neg ? -1.0f : 1.0f;
            uint32_t sign = neg ? sign_bit : 0, even = (lo & 1) ? lo + 1 : lo;
            cr_assert_eq(to16(s * mid), sign | even, "%s(%a), the tie of 0x%04x and 0x%04x: 0x%04x",
                         name, (double)(s * mid), lo, lo + 1, to16(s * mid));
            float below = nextafterf(mid, 0.0f), above = nextafterf(mid, INFINITY);
            cr_assert_eq(to16(s * below), sign | lo, "%s(%a): 0x%04x", name, (double)(s * below),
                         to16(s * below));
            cr_assert_eq(to16(s * above), sign | (lo + 1), "%s(%a): 0x%04x", name,
                         (double)(s * above), to16(s * above));
            cr_assert_eq(to16(s * (float)value(lo)), sign | lo, "%s of code 0x%04x's own value",
                         name, lo);
        }
    }
}

Test(matrix, float_to_half_rounds_every_tie_to_even) {
    check_ties(float_to_half, half_value, 0x7bff, 0x8000, "float_to_half");
    /* half_round is the same rounding, read back as a float */
    for (uint32_t lo = 0; lo < 0x7bff; lo++) {
        float mid = (float)((half_value(lo) + half_value(lo + 1)) / 2);
        double even = half_value((lo & 1) ? lo + 1 : lo);
        cr_assert_eq((double)half_round(mid), even, "half_round(%a)", (double)mid);
        cr_assert_eq((double)half_round(-mid), -even, "half_round(%a)", (double)-mid);
    }
    cr_assert(isinf(half_round(65520.0f)) && half_round(65519.99609375f) == 65504.0f);
}

Test(matrix, float_to_bf16_rounds_every_tie_to_even) {
    check_ties(float_to_bf16, bf16_value, 0x7f7f, 0x8000, "float_to_bf16");
}

/* A NaN stays a NaN, its sign kept, whatever its payload: a payload only in
 * the bits the conversion drops must not turn it into an infinity. */
Test(matrix, float_to_16_bits_keeps_nan) {
    const uint32_t nans[] = {0x7fc00000, 0x7f800001, 0x7f801000,
                             0x7fffffff, 0xffc00000, 0xff800001};
    for (size_t i = 0; i < sizeof nans / sizeof nans[0]; i++) {
        float x;
        memcpy(&x, &nans[i], sizeof x);
        uint16_t h = float_to_half(x), b = float_to_bf16(x);
        uint16_t sign = (uint16_t)((nans[i] >> 16) & 0x8000);
        cr_expect((h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0 && (h & 0x8000) == sign,
                  "float_to_half(0x%08x) = 0x%04x: not the NaN", nans[i], h);
        cr_expect((b & 0x7f80) == 0x7f80 && (b & 0x7f) != 0 && (b & 0x8000) == sign,
                  "float_to_bf16(0x%08x) = 0x%04x: not the NaN", nans[i], b);
        cr_expect(isnan(half_round(x)), "half_round(0x%08x): not a NaN", nans[i]);
    }
    cr_expect_eq(float_to_half(INFINITY), 0x7c00);
    cr_expect_eq(float_to_bf16(-INFINITY), 0xff80);
}

/* A 3 x 2 bfloat16 matrix by hand: rows (1, 2), (-0.5, 4), (0.25, 1) and
 * x = (2, 0.5): out = (1·2 + 2·0.5, -0.5·2 + 4·0.5, 0.25·2 + 1·0.5)
 * = (3, 1, 1), from the plain loop and from the packed one. */
Test(matrix, bf16_rows_and_packed_give_the_hand_sums) {
    const uint16_t w[6] = {0x3f80, 0x4000, 0xbf00, 0x4080, 0x3e80, 0x3f80};
    const float x[2] = {2.0f, 0.5f}, want[3] = {3.0f, 1.0f, 1.0f};
    Matrix m = matrix_view(ELEM_BF16, w, 3, 2);
    float out[3], row[2];
    matmul_rows(out, x, &m, 1);
    for (int i = 0; i < 3; i++) cr_expect_eq(out[i], want[i], "plain row %d: %g", i, out[i]);
    matrix_row(&m, 1, row);
    cr_expect(row[0] == -0.5f && row[1] == 4.0f);
    Matrix p;
    cr_assert(matrix_pack(&p, &m));
    cr_assert_eq(p.layout, MATRIX_PACKED);
    cr_assert_eq(p.elem, ELEM_BF16);
    memset(out, 0, sizeof out);
    matmul_packed(out, x, &p, 1);
    for (int i = 0; i < 3; i++) cr_expect_eq(out[i], want[i], "packed row %d: %g", i, out[i]);
    matrix_row(&p, 2, row);
    cr_expect(row[0] == 0.25f && row[1] == 1.0f);
    matrix_free(&p);
}

/* Rows of a Hugging Face q projection read in interleaved order: with
 * head_dim 4, output row r is stored row (r even: r / 2, odd: 2 + r / 2),
 * i.e. 0, 2, 1, 3. */
Test(matrix, interleaved_rows_are_read_in_rope_order) {
    const float w[4] = {10, 11, 12, 13}; /* 4 rows of one column */
    Matrix m = matrix_view(ELEM_F32, w, 4, 1);
    m.interleave_head_dim = 4;
    const float x[1] = {1.0f}, want[4] = {10, 12, 11, 13};
    float out[4];
    matmul_rows(out, x, &m, 1);
    for (int i = 0; i < 4; i++) cr_expect_eq(out[i], want[i], "row %d", i);
}

/* Whether a and b [n] are the same bits, but that a NaN may stand for any
 * NaN: IEEE 754 leaves which payload a NaN result carries to the machine
 * when more than one operand is NaN, and a compiler may swap a commutative
 * multiply's operands (clang does, in the sanitizer build). */
static bool same_bits_or_nans(const float *a, const float *b, int n) {
    for (int i = 0; i < n; i++)
        if (!(isnan(a[i]) && isnan(b[i])) && memcmp(&a[i], &b[i], sizeof a[i]) != 0) return false;
    return true;
}

/* Every half (and every bfloat16) bit pattern as a 256 x 256 matrix: the
 * packed kernel, which widens 16 at a time in vector registers, gives the
 * bits of widening the whole matrix first with float16.h's converter and
 * running the textbook float32 loop, for one token and for prefill tiles
 * (7 tokens: a block widened once into float32 for both tiles; infinities
 * and NaNs included: the same operations in the same order). */
static void expect_packed_is_widened(ElementType e) {
    enum { N = 256, T = 7 };
    uint16_t *h = malloc(N * N * sizeof *h);
    float *wide = malloc(N * N * sizeof *wide), x[T * N], a[T * N], b[T * N];
    cr_assert(h != NULL && wide != NULL);
    for (int i = 0; i < N * N; i++) {
        h[i] = (uint16_t)i;
        uint32_t bits = (uint32_t)i << 16;
        if (e == ELEM_BF16)
            memcpy(&wide[i], &bits, sizeof bits);
        else
            wide[i] = half_to_float((uint16_t)i);
    }
    for (int i = 0; i < T * N; i++) x[i] = (float)((i * 2654435761u) % 2001) / 1000.0f - 1.0f;
    Matrix m = matrix_view(e, h, N, N), p;
    cr_assert(matrix_pack(&p, &m));
    for (int t = 1; t <= T; t += T - 1) {
        matmul_forward(a, x, wide, t, N, N);
        matmul_packed(b, x, &p, t);
        cr_expect(same_bits_or_nans(a, b, t * N), "%s, %d tokens", element_name(e), t);
    }
    matrix_free(&p);
    free(h), free(wide);
}

Test(matrix, packed_half_kernels_widen_every_bit_pattern) {
    expect_packed_is_widened(ELEM_F16);
    expect_packed_is_widened(ELEM_BF16);
}

/* The decode's pair and four (where there is one) on blocks `gap` apart,
 * for every gap and first block that fit in the N / PACK_ROWS blocks: each
 * block's rows the textbook sums, and no other row written. */
static void expect_blocks_apart(const HalfKernels *k, const uint16_t *blocks, const float *x,
                                const float *want, HalfIsa isa, ElementType e) {
    enum { N = 256, NB = N / PACK_ROWS, UNWRITTEN = 0x7fc00123 /* a NaN no sum makes */ };
    float got[N];
    for (int n = 2; n <= 4; n += 2) {
        WholeBlocks kernel = n == 2 ? k->pair : k->four;
        for (int gap = 1; kernel != NULL && gap * (n - 1) < NB; gap++)
            for (int b = 0; b + gap * (n - 1) < NB; b++) {
                uint32_t mark = UNWRITTEN;
                for (int i = 0; i < N; i++) memcpy(&got[i], &mark, sizeof mark);
                kernel(got, x, blocks + (size_t)b * N * PACK_ROWS, N, b * PACK_ROWS, gap);
                for (int c = 0; c < NB; c++) {
                    bool ours = c >= b && (c - b) % gap == 0 && (c - b) / gap < n;
                    for (int l = 0; l < PACK_ROWS; l++) {
                        uint32_t bits;
                        memcpy(&bits, &got[c * PACK_ROWS + l], sizeof bits);
                        if (ours)
                            cr_expect(same_bits_or_nans(&want[c * PACK_ROWS + l],
                                                        &got[c * PACK_ROWS + l], 1),
                                      "isa %d, %s: %d blocks %d apart from %d, row %d", (int)isa,
                                      element_name(e), n, gap, b, c * PACK_ROWS + l);
                        else
                            cr_expect(bits == UNWRITTEN,
                                      "isa %d, %s: %d blocks %d apart from %d wrote row %d",
                                      (int)isa, element_name(e), n, gap, b, c * PACK_ROWS + l);
                    }
                }
            }
    }
}

/* Each x86 instruction set's half kernels (pack_x86.c), called directly,
 * whichever the processor would pick: on every bit pattern, one token a
 * block, two blocks side by side and four (where the set has them), tiles
 * of 3 and 6 tokens, and a block widened whole, each the bits of the
 * textbook loop on the widened matrix. An instruction set the processor
 * lacks is skipped (said on stderr). */
static void expect_isa_kernels(HalfIsa isa, ElementType e) {
    enum { N = 256, T = PREFILL_TOKENS };
    if (!half_isa_available(isa)) {
        fprintf(stderr, "half kernels of instruction set %d: not on this processor\n", (int)isa);
        return;
    }
    const HalfKernels *k = half_kernels(isa, e);
    cr_assert(k != NULL, "instruction set %d has kernels for %s", (int)isa, element_name(e));
    cr_assert(isa != HALF_AVX512 || k->four != NULL, "AVX-512 takes four blocks a decode step");
    uint16_t *h = malloc(N * N * sizeof *h);
    float *wide = malloc(N * N * sizeof *wide), *block = malloc(N * PACK_ROWS * sizeof *block);
    float x[T * N], want[T * N], got[T * N];
    cr_assert(h != NULL && wide != NULL && block != NULL);
    for (int i = 0; i < N * N; i++) {
        h[i] = (uint16_t)(i * 40503u); /* every pattern once, rows mixing kinds */
        wide[i] = e == ELEM_BF16 ? bf16_widen(h[i]) : half_to_float(h[i]);
    }
    for (int i = 0; i < T * N; i++) x[i] = (float)((i * 2654435761u) % 2001) / 1000.0f - 1.0f;
    Matrix m = matrix_view(e, h, N, N), p;
    cr_assert(matrix_pack(&p, &m));
    const uint16_t *blocks = p.data;
    matmul_forward(want, x, wide, T, N, N);
    for (int b = 0; b < N / PACK_ROWS; b++) {
        const uint16_t *at = blocks + (size_t)b * N * PACK_ROWS;
        memset(got, 0, sizeof got);
        k->one(got, x, at, N, b * PACK_ROWS, PACK_ROWS);
        int rows = PACK_ROWS; /* and from some blocks, the pair or four from there */
        if (b % 4 == 0 && k->four != NULL)
            k->four(got, x, at, N, b * PACK_ROWS, 1), rows = 4 * PACK_ROWS;
        else if (b % 2 == 0)
            k->pair(got, x, at, N, b * PACK_ROWS, 1), rows = 2 * PACK_ROWS;
        cr_expect(same_bits_or_nans(want + b * PACK_ROWS, got + b * PACK_ROWS, rows),
                  "isa %d, %s, block %d, one token", (int)isa, element_name(e), b);
        float *outs[PREFILL_TOKENS];
        const float *xs[PREFILL_TOKENS];
        int nt = b % 2 == 0 ? 3 : T; /* a short tile, then a full one: every sum */
        for (int k = 0; k < PREFILL_TOKENS; k++) {
            int t = k < nt ? k : nt - 1;
            outs[k] = got + (size_t)t * N, xs[k] = x + (size_t)t * N;
        }
        k->many(outs, xs, nt, at, N, b * PACK_ROWS, PACK_ROWS);
        for (int t = 0; t < nt; t++)
            cr_expect(same_bits_or_nans(want + t * N + b * PACK_ROWS, got + t * N + b * PACK_ROWS,
                                        PACK_ROWS),
                      "isa %d, %s, block %d, token %d of a tile", (int)isa, element_name(e), b, t);
        k->widen(block, at, N);
        for (int i = 0; i < N; i++)
            for (int l = 0; l < PACK_ROWS; l++) {
                float w = wide[(size_t)(b * PACK_ROWS + l) * N + i];
                cr_expect(same_bits_or_nans(&w, &block[i * PACK_ROWS + l], 1),
                          "isa %d, %s, block %d widened at %d, %d", (int)isa, element_name(e), b, i,
                          l);
            }
    }
    expect_blocks_apart(k, blocks, x, want, isa, e);
    matrix_free(&p);
    free(h), free(wide), free(block);
}

Test(matrix, each_instruction_sets_half_kernels_are_the_textbook_sums) {
    for (HalfIsa isa = HALF_AVX512; isa <= HALF_F16C; isa++) {
        expect_isa_kernels(isa, ELEM_F16);
        expect_isa_kernels(isa, ELEM_BF16);
    }
}

/* matmul_packed_blocks over every share a thread could be given: on 211
 * rows (13 whole blocks and one of 3 rows) of each element type, for 1 to
 * 13 tokens (one, a tile, tiles and a short one), with the tile on one
 * block a step and on two, with each instruction set's half kernels this
 * processor has, split after each block: each half's rows are the textbook
 * sums of the widened matrix, bit for bit, and the rows outside a share
 * are not written (a decode's two or four blocks, side by side or up to
 * three apart, are taken only inside a share). */
static void expect_shares_are_textbook(ElementType e) {
    enum { OC = 211, C = 40, T = 13 };
    uint16_t half[OC * C];
    float wide[OC * C], x[T * C], want[T * OC], got[T * OC];
    uint32_t r = 12345;
    for (int i = 0; i < OC * C; i++) {
        r = r * 1664525u + 1013904223u;
        half[i] = (uint16_t)((r >> 16) & 0xbbffu); /* finite, |v| < 2, both signs */
        wide[i] = e == ELEM_BF16 ? bf16_widen(half[i]) : half_to_float(half[i]);
    }
    for (int i = 0; i < T * C; i++) x[i] = (float)((i * 2654435761u) % 2001) / 1000.0f - 1.0f;
    Matrix m = e == ELEM_F32 ? matrix_view(e, wide, OC, C) : matrix_view(e, half, OC, C), p;
    cr_assert(matrix_pack(&p, &m));
    int blocks = packed_blocks(&p);
    cr_assert_eq(blocks, 14);
    for (int variant = 0; variant < 2 * 3; variant++) {
        int pairs = variant % 2; /* the tile on one block a step, and on two */
        HalfIsa isa = (HalfIsa)(variant / 2);
        if (e == ELEM_F32 ? isa != HALF_PORTABLE : !half_isa_available(isa)) continue;
        p.tile_pairs = pairs, p.half_isa = (int)isa;
        for (int t = 1; t <= T; t++) {
            matmul_forward(want, x, wide, t, C, OC);
            for (int mid = 0; mid <= blocks; mid++) {
                memset(got, 0xff, sizeof got);
                matmul_packed_blocks(got, x, &p, t, 0, mid);
                for (int k = 0; k < t; k++)
                    for (int o = mid * PACK_ROWS; o < OC; o++)
                        cr_expect_eq(
                            bits_of(got[k * OC + o]), 0xffffffffu,
                            "%s, isa %d, pairs %d, %d tokens: row %d written by blocks 0..%d",
                            element_name(e), (int)isa, pairs, t, o, mid - 1);
                matmul_packed_blocks(got, x, &p, t, mid, blocks);
                cr_expect(memcmp(got, want, (size_t)t * OC * sizeof(float)) == 0,
                          "%s, isa %d, pairs %d, %d tokens, split after block %d: not the "
                          "textbook sums",
                          element_name(e), (int)isa, pairs, t, mid);
            }
        }
    }
    matrix_free(&p);
}

Test(matrix, packed_matmul_on_any_share_is_the_textbook_sums) {
    expect_shares_are_textbook(ELEM_F32);
    expect_shares_are_textbook(ELEM_F16);
    expect_shares_are_textbook(ELEM_BF16);
}
