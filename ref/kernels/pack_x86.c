/* pack_x86.c: see pack_kernels.h's half_kernels.
 *
 * x86 widens 16 halves at once: a float16 with one instruction (vcvtph2ps:
 * AVX-512F for 16 values, F16C for 8), a bfloat16 with a zero-extending
 * load and a shift. gcc's vector extensions reach neither (a _Float16
 * vector is widened one value at a time through a library call, and the
 * 16-bit load is split in two), so these kernels name the instructions
 * through their intrinsics, each function built for the instructions it
 * needs (the target attribute) and chosen when the processor has them.
 * The sums are pack.c's: lane l of a vector is output row l's sum, input by
 * input in index order from 0.0f, the product rounded before the add
 * (separate multiply and add intrinsics; -ffp-contract=off keeps the
 * compiler from fusing them). */
#include "ref/kernels/pack_kernels.h"

#include <stdint.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <immintrin.h>

#define AVX512 __attribute__((target("avx512f"), always_inline)) static inline
#define F16C   __attribute__((target("avx2,f16c"), always_inline)) static inline

/* Input i's 16 weights of a block, as 16 floats (exactly f16_widen's or
 * bf16_widen's). */
AVX512 __m512 load16_avx512(ElementType e, const uint16_t *at) {
    __m256i h = _mm256_loadu_si256((const __m256i *)at);
    if (e == ELEM_F16) return _mm512_cvtph_ps(h);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

AVX512 void token_avx512(ElementType e, float *out, const float *x, const uint16_t *block, int C,
                         int row0, int rows) {
    __m512 s = _mm512_setzero_ps();
    for (int i = 0; i < C; i++) {
        if ((i & 1) == 0) prefetch_ahead(block + (size_t)i * PACK_ROWS); /* a line each other i */
        s = _mm512_add_ps(s, _mm512_mul_ps(load16_avx512(e, block + (size_t)i * PACK_ROWS),
                                           _mm512_set1_ps(x[i])));
    }
    float v[PACK_ROWS];
    _mm512_storeu_ps(v, s);
    for (int l = 0; l < rows; l++) out[row0 + l] = v[l];
}

/* Two whole blocks `gap` apart (pack_kernels.h's WholeBlocks): two
 * independent chains of adds, so one add's latency never waits on the
 * other's. */
AVX512 void token2_avx512(ElementType e, float *out, const float *x, const uint16_t *block, int C,
                          int row0, int gap) {
    const uint16_t *next = block + (size_t)gap * C * PACK_ROWS;
    __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps();
    for (int i = 0; i < C; i++) {
        __m512 xi = _mm512_set1_ps(x[i]);
        if ((i & 1) == 0) {
            prefetch_ahead(block + (size_t)i * PACK_ROWS);
            prefetch_ahead(next + (size_t)i * PACK_ROWS);
        }
        s0 = _mm512_add_ps(s0, _mm512_mul_ps(load16_avx512(e, block + (size_t)i * PACK_ROWS), xi));
        s1 = _mm512_add_ps(s1, _mm512_mul_ps(load16_avx512(e, next + (size_t)i * PACK_ROWS), xi));
    }
    _mm512_storeu_ps(out + row0, s0);
    _mm512_storeu_ps(out + row0 + gap * PACK_ROWS, s1);
}

/* Four whole blocks `gap` apart: a decode reads a matrix as four streams
 * at once, where one core's memory reads are faster than as two
 * (docs/runs/2026-12-06-four-blocks.txt). */
AVX512 void token4_avx512(ElementType e, float *out, const float *x, const uint16_t *block, int C,
                          int row0, int gap) {
    size_t stride = (size_t)gap * C * PACK_ROWS;
    const uint16_t *b0 = block, *b1 = b0 + stride, *b2 = b1 + stride, *b3 = b2 + stride;
    __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    for (int i = 0; i < C; i++) {
        size_t at = (size_t)i * PACK_ROWS;
        __m512 xi = _mm512_set1_ps(x[i]);
        if ((i & 1) == 0) {
            prefetch_ahead_of_four(b0 + at), prefetch_ahead_of_four(b1 + at);
            prefetch_ahead_of_four(b2 + at), prefetch_ahead_of_four(b3 + at);
        }
        s0 = _mm512_add_ps(s0, _mm512_mul_ps(load16_avx512(e, b0 + at), xi));
        s1 = _mm512_add_ps(s1, _mm512_mul_ps(load16_avx512(e, b1 + at), xi));
        s2 = _mm512_add_ps(s2, _mm512_mul_ps(load16_avx512(e, b2 + at), xi));
        s3 = _mm512_add_ps(s3, _mm512_mul_ps(load16_avx512(e, b3 + at), xi));
    }
    _mm512_storeu_ps(out + row0, s0);
    _mm512_storeu_ps(out + row0 + gap * PACK_ROWS, s1);
    _mm512_storeu_ps(out + row0 + 2 * gap * PACK_ROWS, s2);
    _mm512_storeu_ps(out + row0 + 3 * gap * PACK_ROWS, s3);
}

/* Up to six tokens against one block: each sum a named variable, so that
 * all six stay in registers (as an array indexed in a loop, gcc kept them
 * in memory, a store and a load every add: a batch of 4 then decoded no
 * faster than one token). */
#define AVX512_TOKEN_STEP(s, xk) s = _mm512_add_ps(s, _mm512_mul_ps(w, _mm512_set1_ps((xk)[i])))
AVX512 void tokens_avx512(ElementType e, float *const out[PREFILL_TOKENS],
                          const float *const xt[PREFILL_TOKENS], int n, const uint16_t *block,
                          int C, int row0, int rows) {
    __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0, s4 = s0, s5 = s0;
    const float *x0 = xt[0], *x1 = xt[1], *x2 = xt[2], *x3 = xt[3], *x4 = xt[4], *x5 = xt[5];
    for (int i = 0; i < C; i++) { /* (a block read once: more tokens go widened, pack.c) */
        if ((i & 1) == 0) prefetch_ahead(block + (size_t)i * PACK_ROWS);
        __m512 w = load16_avx512(e, block + (size_t)i * PACK_ROWS);
        AVX512_TOKEN_STEP(s0, x0), AVX512_TOKEN_STEP(s1, x1), AVX512_TOKEN_STEP(s2, x2);
        AVX512_TOKEN_STEP(s3, x3), AVX512_TOKEN_STEP(s4, x4), AVX512_TOKEN_STEP(s5, x5);
    }
    const __m512 sums[PREFILL_TOKENS] = {s0, s1, s2, s3, s4, s5};
    for (int k = 0; k < n; k++) {
        float v[PACK_ROWS];
        _mm512_storeu_ps(v, sums[k]);
        for (int l = 0; l < rows; l++) out[k][row0 + l] = v[l];
    }
}

AVX512 void widen_avx512(ElementType e, float *out, const uint16_t *block, int C) {
    for (int i = 0; i < C; i++)
        _mm512_storeu_ps(out + (size_t)i * PACK_ROWS,
                         load16_avx512(e, block + (size_t)i * PACK_ROWS));
}

/* AVX2 and F16C: a block's 16 rows as two vectors of 8. */
F16C __m256 load8_f16c(ElementType e, const uint16_t *at) {
    __m128i h = _mm_loadu_si128((const __m128i *)at);
    if (e == ELEM_F16) return _mm256_cvtph_ps(h);
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

F16C void token_f16c(ElementType e, float *out, const float *x, const uint16_t *block, int C,
                     int row0, int rows) {
    __m256 lo = _mm256_setzero_ps(), hi = _mm256_setzero_ps();
    for (int i = 0; i < C; i++) {
        const uint16_t *wi = block + (size_t)i * PACK_ROWS;
        if ((i & 1) == 0) prefetch_ahead(wi);
        __m256 xi = _mm256_set1_ps(x[i]);
        lo = _mm256_add_ps(lo, _mm256_mul_ps(load8_f16c(e, wi), xi));
        hi = _mm256_add_ps(hi, _mm256_mul_ps(load8_f16c(e, wi + 8), xi));
    }
    float v[PACK_ROWS];
    _mm256_storeu_ps(v, lo);
    _mm256_storeu_ps(v + 8, hi);
    for (int l = 0; l < rows; l++) out[row0 + l] = v[l];
}

/* Two whole blocks `gap` apart, as token2_avx512. */
F16C void token2_f16c(ElementType e, float *out, const float *x, const uint16_t *block, int C,
                      int row0, int gap) {
    const uint16_t *next = block + (size_t)gap * C * PACK_ROWS;
    __m256 s[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),
                   _mm256_setzero_ps()};
    for (int i = 0; i < C; i++) {
        const uint16_t *wa = block + (size_t)i * PACK_ROWS, *wb = next + (size_t)i * PACK_ROWS;
        if ((i & 1) == 0) prefetch_ahead(wa), prefetch_ahead(wb);
        __m256 xi = _mm256_set1_ps(x[i]);
        s[0] = _mm256_add_ps(s[0], _mm256_mul_ps(load8_f16c(e, wa), xi));
        s[1] = _mm256_add_ps(s[1], _mm256_mul_ps(load8_f16c(e, wa + 8), xi));
        s[2] = _mm256_add_ps(s[2], _mm256_mul_ps(load8_f16c(e, wb), xi));
        s[3] = _mm256_add_ps(s[3], _mm256_mul_ps(load8_f16c(e, wb + 8), xi));
    }
    _mm256_storeu_ps(out + row0, s[0]);
    _mm256_storeu_ps(out + row0 + 8, s[1]);
    _mm256_storeu_ps(out + row0 + gap * PACK_ROWS, s[2]);
    _mm256_storeu_ps(out + row0 + gap * PACK_ROWS + 8, s[3]);
}

/* As tokens_avx512: twelve named sums (six tokens' low and high eight
 * rows), which with the two weight vectors and a token's value fill AVX2's
 * 16 registers. */
#define F16C_TOKEN_STEP(lo, hi, xk)                                                                \
    do {                                                                                           \
        __m256 xi = _mm256_set1_ps((xk)[i]);                                                       \
        lo = _mm256_add_ps(lo, _mm256_mul_ps(w0, xi));                                             \
        hi = _mm256_add_ps(hi, _mm256_mul_ps(w1, xi));                                             \
    } while (0)
F16C void tokens_f16c(ElementType e, float *const out[PREFILL_TOKENS],
                      const float *const xt[PREFILL_TOKENS], int n, const uint16_t *block, int C,
                      int row0, int rows) {
    __m256 l0 = _mm256_setzero_ps(), l1 = l0, l2 = l0, l3 = l0, l4 = l0, l5 = l0;
    __m256 h0 = l0, h1 = l0, h2 = l0, h3 = l0, h4 = l0, h5 = l0;
    const float *x0 = xt[0], *x1 = xt[1], *x2 = xt[2], *x3 = xt[3], *x4 = xt[4], *x5 = xt[5];
    for (int i = 0; i < C; i++) {
        const uint16_t *wi = block + (size_t)i * PACK_ROWS;
        if ((i & 1) == 0) prefetch_ahead(wi);
        __m256 w0 = load8_f16c(e, wi), w1 = load8_f16c(e, wi + 8);
        F16C_TOKEN_STEP(l0, h0, x0);
        F16C_TOKEN_STEP(l1, h1, x1);
        F16C_TOKEN_STEP(l2, h2, x2);
        F16C_TOKEN_STEP(l3, h3, x3);
        F16C_TOKEN_STEP(l4, h4, x4);
        F16C_TOKEN_STEP(l5, h5, x5);
    }
    const __m256 lo[PREFILL_TOKENS] = {l0, l1, l2, l3, l4, l5};
    const __m256 hi[PREFILL_TOKENS] = {h0, h1, h2, h3, h4, h5};
    for (int k = 0; k < n; k++) {
        float v[PACK_ROWS];
        _mm256_storeu_ps(v, lo[k]);
        _mm256_storeu_ps(v + 8, hi[k]);
        for (int l = 0; l < rows; l++) out[k][row0 + l] = v[l];
    }
}

F16C void widen_f16c(ElementType e, float *out, const uint16_t *block, int C) {
    for (int i = 0; i < C; i++) {
        const uint16_t *wi = block + (size_t)i * PACK_ROWS;
        _mm256_storeu_ps(out + (size_t)i * PACK_ROWS, load8_f16c(e, wi));
        _mm256_storeu_ps(out + (size_t)i * PACK_ROWS + 8, load8_f16c(e, wi + 8));
    }
}

/* Four blocks side by side where measured (AVX-512); F16C's would need
 * 16 registers for its eight sums alone, and takes pairs (its four: NULL). */
#define FOUR_AVX512(type, name)                                                                    \
    __attribute__((target("avx512f"))) static void four_avx512_##name(                             \
        float *out, const float *x, const void *block, int C, int row0, int gap) {                 \
        token4_avx512(type, out, x, block, C, row0, gap);                                          \
    }
FOUR_AVX512(ELEM_F16, f16)
FOUR_AVX512(ELEM_BF16, bf16)

/* Each kernel with its element type fixed, so the type's test is folded. */
#define HALF_KERNELS(isa, attr, type, name, four_blocks)                                           \
    __attribute__((target(attr))) static void one_##isa##_##name(                                  \
        float *out, const float *x, const void *block, int C, int row0, int rows) {                \
        token_##isa(type, out, x, block, C, row0, rows);                                           \
    }                                                                                              \
    __attribute__((target(attr))) static void pair_##isa##_##name(                                 \
        float *out, const float *x, const void *block, int C, int row0, int gap) {                 \
        token2_##isa(type, out, x, block, C, row0, gap);                                           \
    }                                                                                              \
    __attribute__((target(attr))) static void many_##isa##_##name(                                 \
        float *const out[PREFILL_TOKENS], const float *const xt[PREFILL_TOKENS], int n,            \
        const void *block, int C, int row0, int rows) {                                            \
        tokens_##isa(type, out, xt, n, block, C, row0, rows);                                      \
    }                                                                                              \
    __attribute__((target(attr))) static void widen_##isa##_##name(float *out, const void *block,  \
                                                                   int C) {                        \
        widen_##isa(type, out, block, C);                                                          \
    }                                                                                              \
    static const HalfKernels isa##_##name = {.one = one_##isa##_##name,                            \
                                             .pair = pair_##isa##_##name,                          \
                                             .four = four_blocks,                                  \
                                             .many = many_##isa##_##name,                          \
                                             .widen = widen_##isa##_##name};
HALF_KERNELS(avx512, "avx512f", ELEM_F16, f16, four_avx512_f16)
HALF_KERNELS(avx512, "avx512f", ELEM_BF16, bf16, four_avx512_bf16)
HALF_KERNELS(f16c, "avx2,f16c", ELEM_F16, f16, NULL)
HALF_KERNELS(f16c, "avx2,f16c", ELEM_BF16, bf16, NULL)

/* F16C, which not every compiler's __builtin_cpu_supports names: CPUID
 * leaf 1, ECX bit 29 (with AVX2, whose check includes the system's saving
 * of the vector registers). */
static bool has_f16c(void) {
    unsigned a, b, c, d;
    return __builtin_cpu_supports("avx2") && __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C) != 0;
}

bool half_isa_available(HalfIsa isa) {
    return (isa == HALF_AVX512 && __builtin_cpu_supports("avx512f")) ||
           (isa == HALF_F16C && has_f16c());
}

const HalfKernels *half_kernels(HalfIsa isa, ElementType e) {
    bool f16 = e == ELEM_F16;
    if (e != ELEM_F16 && e != ELEM_BF16) return NULL;
    if (isa == HALF_AVX512) return f16 ? &avx512_f16 : &avx512_bf16;
    if (isa == HALF_F16C) return f16 ? &f16c_f16 : &f16c_bf16;
    return NULL;
}

#else /* another processor: pack.c's portable widening */

bool half_isa_available(HalfIsa isa) {
    return isa == HALF_PORTABLE;
}

const HalfKernels *half_kernels(HalfIsa isa, ElementType e) {
    (void)isa, (void)e;
    return NULL;
}

#endif

HalfIsa half_isa_best(void) {
    if (half_isa_available(HALF_AVX512)) return HALF_AVX512;
    return half_isa_available(HALF_F16C) ? HALF_F16C : HALF_PORTABLE;
}
