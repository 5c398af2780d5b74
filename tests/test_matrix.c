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
