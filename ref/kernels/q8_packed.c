/* q8_packed.c: see q8_packed.h. */
#include "ref/kernels/q8_packed.h"

#include <stdlib.h>
#include <string.h>

#include "ref/kernels/clones.h"
#include "ref/kernels/quant.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define Q8_VNNI 1 /* the quads' kernel is built (and run where the processor has VNNI) */
#endif

bool q8_vnni_available(void) {
#ifdef Q8_VNNI
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vnni");
#else
    return false;
#endif
}

bool q8_quads_fit(int cols, int group) {
    return cols % 4 == 0 && group % 4 == 0;
}

FAST_CLONES void q8_group_sums(const int8_t *codes, int n, int group, int32_t *sums) {
    for (int g = 0, start = 0; start < n; g++, start += group) {
        int end = start + group < n ? start + group : n;
        int32_t sum = 0; /* exact in any order */
        for (int i = start; i < end; i++) sum += codes[i];
        sums[g] = sum;
    }
}

#define Q8_RELEASE_ROWS 256 /* rows of a source given back at a time */

bool matrix_pack_q8_releasing(Matrix *p, const Matrix *src, bool quads, PackReleaseRows release,
                              void *ctx) {
    bool blocks = src->layout == MATRIX_BLOCKS; /* GGUF Q8_0 or Q4_0: int8 in groups of 32 */
    int group = blocks ? 32 : src->group;
    size_t C = (size_t)src->cols, groups = (size_t)quant_groups(src->cols, group);
    int8_t *row_codes = blocks ? malloc(C) : NULL;
    float *row_scales = blocks ? malloc(groups * sizeof(float)) : NULL;
    bool ok = !blocks || (row_codes != NULL && row_scales != NULL);
    ok = ok && matrix_q8_alloc(p, MATRIX_Q8_PACKED, src->rows, src->cols, group);
    if (ok) {
        p->q8_quads = quads && q8_quads_fit(src->cols, group) && q8_vnni_available();
        bool quads_layout = p->q8_quads; /* (read once: a byte store may alias p) */
        uint8_t *codes = (uint8_t *)matrix_q8_codes(p);
        float *scales = matrix_q8_scales(p);
        for (int r0 = 0; ok && r0 < src->rows; r0 += Q8_RELEASE_ROWS) {
            int r1 = r0 + Q8_RELEASE_ROWS < src->rows ? r0 + Q8_RELEASE_ROWS : src->rows;
            for (int r = r0; ok && r < r1; r++) {
                size_t b = (size_t)(r / Q8_ROWS), l = (size_t)(r % Q8_ROWS);
                const int8_t *q = (const int8_t *)src->data + (size_t)r * C;
                const float *sc = src->scales + (size_t)r * groups;
                if (blocks) { /* the block's codes and scales as stored */
                    ok = matrix_blocks_codes(src, r, row_codes, row_scales);
                    q = row_codes, sc = row_scales;
                }
                uint8_t *block = codes + b * C * Q8_ROWS;
                if (quads_layout) /* the code plus 128, as an unsigned byte */
                    for (size_t i = 0; i < C; i++)
                        block[(i & ~(size_t)3) * Q8_ROWS + l * 4 + (i & 3)] = (uint8_t)q[i] ^ 0x80u;
                else
                    for (size_t i = 0; i < C; i++) block[i * Q8_ROWS + l] = (uint8_t)q[i];
                for (size_t g = 0; g < groups; g++) scales[(b * groups + g) * Q8_ROWS + l] = sc[g];
            }
            if (ok && release != NULL) release(ctx, src, r0, r1);
        }
        if (!ok) matrix_free(p);
    }
    free(row_codes), free(row_scales);
    return ok;
}

bool matrix_pack_q8(Matrix *p, const Matrix *src, bool quads) {
    return matrix_pack_q8_releasing(p, src, quads, NULL, NULL);
}

/* One block of Q8_ROWS rows against one token: float activations. */
FAST_CLONES static void q8_block_f32(float *out, const float *x, const int8_t *q, const float *sc,
                                     int C, int group, int rows) {
    float sum[Q8_ROWS] = {0};
    for (int g = 0, start = 0; start < C; g++, start += group) {
        int end = start + group < C ? start + group : C;
        float acc[Q8_ROWS] = {0};
        for (int i = start; i < end; i++) {
            float xi = x[i];
            for (int l = 0; l < Q8_ROWS; l++) acc[l] += xi * (float)q[(size_t)i * Q8_ROWS + l];
        }
        for (int l = 0; l < Q8_ROWS; l++) sum[l] += acc[l] * sc[(size_t)g * Q8_ROWS + l];
    }
    for (int l = 0; l < rows; l++) out[l] = sum[l];
}

/* acc[l] += x · w[l] for one input's Q8_ROWS weights (a group's odd end). */
static inline void q8_add_input(int32_t acc[Q8_ROWS], int32_t x, const int8_t *w) {
    for (int l = 0; l < Q8_ROWS; l++) acc[l] += x * (int32_t)w[l];
}

/* A group's integer sums into the float sums: sum[l] += acc[l] · (sx · sc[l]). */
static inline void q8_add_group(float sum[Q8_ROWS], const int32_t acc[Q8_ROWS], float sx,
                                const float *sc) {
    for (int l = 0; l < Q8_ROWS; l++) sum[l] += (float)acc[l] * (sx * sc[l]);
}

/* One block of Q8_ROWS rows against one token: int8 activations. Integer
 * sums do not depend on their order, so two inputs' products are added
 * first, in 16 bits (activation codes lie in [-127, 127] and weight codes in
 * [-128, 127], so |a·w + b·v| <= 2 · 127 · 128 = 32,512 < 32,767: exact),
 * and two such pairs are widened and added before they join the 32-bit
 * sum: four inputs per step, the same integers, the same bits. */
FAST_CLONES static void q8_block_q8(float *out, const int8_t *qx, const float *sx, const int8_t *q,
                                    const float *sc, int C, int group, int rows) {
    float sum[Q8_ROWS] = {0};
    for (int g = 0, start = 0; start < C; g++, start += group) {
        int end = start + group < C ? start + group : C;
        int32_t acc[Q8_ROWS] = {0};
        int i = start;
        for (; i + 3 < end; i += 4) {
            int16_t a = qx[i], b = qx[i + 1], c = qx[i + 2], d = qx[i + 3];
            const int8_t *w = q + (size_t)i * Q8_ROWS;
            for (int l = 0; l < Q8_ROWS; l++)
                acc[l] += (int32_t)(int16_t)(a * w[l] + b * w[Q8_ROWS + l]) +
                          (int32_t)(int16_t)(c * w[2 * Q8_ROWS + l] + d * w[3 * Q8_ROWS + l]);
        }
        for (; i < end; i++) q8_add_input(acc, qx[i], q + (size_t)i * Q8_ROWS);
        q8_add_group(sum, acc, sx[g], sc + (size_t)g * Q8_ROWS);
    }
    for (int l = 0; l < rows; l++) out[l] = sum[l];
}

/* Prefill: the same sums for two tokens against one block. Each step's
 * weights, loaded and widened to 16 bits once, serve both tokens; their
 * sums and the widened weights stay in AVX-512's 32 registers. Per token
 * the same integers: the same bits. */
FAST_CLONES static void q8_block_q8_pair(float *out0, float *out1, const int8_t *qx0,
                                         const int8_t *qx1, const float *sx0, const float *sx1,
                                         const int8_t *q, const float *sc, int C, int group,
                                         int rows) {
    float sum0[Q8_ROWS] = {0}, sum1[Q8_ROWS] = {0};
    for (int g = 0, start = 0; start < C; g++, start += group) {
        int end = start + group < C ? start + group : C;
        int32_t acc0[Q8_ROWS] = {0}, acc1[Q8_ROWS] = {0};
        int i = start;
        for (; i + 3 < end; i += 4) {
            int16_t a0 = qx0[i], a1 = qx0[i + 1], a2 = qx0[i + 2], a3 = qx0[i + 3];
            int16_t b0 = qx1[i], b1 = qx1[i + 1], b2 = qx1[i + 2], b3 = qx1[i + 3];
            const int8_t *w = q + (size_t)i * Q8_ROWS;
            for (int l = 0; l < Q8_ROWS; l++) {
                int16_t w0 = w[l], w1 = w[Q8_ROWS + l], w2 = w[2 * Q8_ROWS + l],
                        w3 = w[3 * Q8_ROWS + l];
                acc0[l] +=
                    (int32_t)(int16_t)(a0 * w0 + a1 * w1) + (int32_t)(int16_t)(a2 * w2 + a3 * w3);
                acc1[l] +=
                    (int32_t)(int16_t)(b0 * w0 + b1 * w1) + (int32_t)(int16_t)(b2 * w2 + b3 * w3);
            }
        }
        for (; i < end; i++) {
            q8_add_input(acc0, qx0[i], q + (size_t)i * Q8_ROWS);
            q8_add_input(acc1, qx1[i], q + (size_t)i * Q8_ROWS);
        }
        q8_add_group(sum0, acc0, sx0[g], sc + (size_t)g * Q8_ROWS);
        q8_add_group(sum1, acc1, sx1[g], sc + (size_t)g * Q8_ROWS);
    }
    for (int l = 0; l < rows; l++) out0[l] = sum0[l], out1[l] = sum1[l];
}

/* One block in quads against one token: float activations (a run without
 * int8 activations on a model packed for them). Per row the products are
 * added in input order, as q8_block_f32 adds them. */
static void q8_quads_block_f32(float *out, const float *x, const Matrix *w, size_t b,
                               const float *sc, int C, int group, int rows) {
    for (int l = 0; l < rows; l++) {
        float sum = 0.0f;
        for (int g = 0, start = 0; start < C; g++, start += group) {
            int end = start + group < C ? start + group : C;
            float acc = 0.0f;
            for (int i = start; i < end; i++)
                acc += x[i] * (float)matrix_q8_packed_code(w, b, (size_t)i, (size_t)l);
            sum += acc * sc[(size_t)g * Q8_ROWS + l];
        }
        out[l] = sum;
    }
}

#ifdef Q8_VNNI
#define VNNI_TARGET  __attribute__((target("avx512f,avx512bw,avx512vnni")))
#define VNNI_TOKENS  4              /* tokens that share each loaded quad of weights */
#define VNNI_VECTORS (Q8_ROWS / 16) /* a block's rows: 16 int32 lanes a vector */
/* Unrolled whole, the float steps' small loops keep their sums in registers. */
#define UNROLL _Pragma("GCC unroll 16")

/* Four (one) tokens' integer sums over inputs start..end-1 of one block in
 * quads, added into acc [tokens, VNNI_VECTORS]. A step takes four inputs:
 * for each vector of 16 rows, one instruction multiplies each row's four
 * stored bytes (code + 128) by the token's four codes and adds the four
 * products into the row's int32 sum. Each sum a named variable and the
 * function kept apart (noinline): gcc then keeps every sum in a register
 * (as arrays, or inlined into the float steps, it shuffles them). */
#define VNNI_TOKEN(x, s0, s1, s2, s3, codes)                                                       \
    do {                                                                                           \
        int32_t four;                                                                              \
        memcpy(&four, (codes), sizeof four);                                                       \
        x = _mm512_set1_epi32(four);                                                               \
        s0 = _mm512_dpbusd_epi32(s0, w0, x), s1 = _mm512_dpbusd_epi32(s1, w1, x);                  \
        s2 = _mm512_dpbusd_epi32(s2, w2, x), s3 = _mm512_dpbusd_epi32(s3, w3, x);                  \
    } while (0)
#define VNNI_WEIGHTS(q, i)                                                                         \
    const uint8_t *quad = (q) + (size_t)(i)*Q8_ROWS; /* [Q8_ROWS, 4] */                            \
    __m512i w0 = _mm512_loadu_si512(quad), w1 = _mm512_loadu_si512(quad + 64),                     \
            w2 = _mm512_loadu_si512(quad + 128), w3 = _mm512_loadu_si512(quad + 192), x

__attribute__((noinline)) VNNI_TARGET static void
q8_quads_dot4(__m512i *acc, const uint8_t *q, const int8_t *qx, size_t C, int start, int end) {
    __m512i a00 = acc[0], a01 = acc[1], a02 = acc[2], a03 = acc[3];
    __m512i a10 = acc[4], a11 = acc[5], a12 = acc[6], a13 = acc[7];
    __m512i a20 = acc[8], a21 = acc[9], a22 = acc[10], a23 = acc[11];
    __m512i a30 = acc[12], a31 = acc[13], a32 = acc[14], a33 = acc[15];
    for (int i = start; i < end; i += 4) {
        VNNI_WEIGHTS(q, i);
        VNNI_TOKEN(x, a00, a01, a02, a03, qx + i);
        VNNI_TOKEN(x, a10, a11, a12, a13, qx + C + i);
        VNNI_TOKEN(x, a20, a21, a22, a23, qx + 2 * C + i);
        VNNI_TOKEN(x, a30, a31, a32, a33, qx + 3 * C + i);
    }
    acc[0] = a00, acc[1] = a01, acc[2] = a02, acc[3] = a03;
    acc[4] = a10, acc[5] = a11, acc[6] = a12, acc[7] = a13;
    acc[8] = a20, acc[9] = a21, acc[10] = a22, acc[11] = a23;
    acc[12] = a30, acc[13] = a31, acc[14] = a32, acc[15] = a33;
}

__attribute__((noinline)) VNNI_TARGET static void
q8_quads_dot1(__m512i *acc, const uint8_t *q, const int8_t *qx, int start, int end) {
    __m512i a0 = acc[0], a1 = acc[1], a2 = acc[2], a3 = acc[3];
    for (int i = start; i < end; i += 4) {
        VNNI_WEIGHTS(q, i);
        VNNI_TOKEN(x, a0, a1, a2, a3, qx + i);
    }
    acc[0] = a0, acc[1] = a1, acc[2] = a2, acc[3] = a3;
}

/* One token's integer sums against two blocks (q0 and q1), added into acc
 * [2, VNNI_VECTORS], as q8_quads_dot1. */
__attribute__((noinline)) VNNI_TARGET static void
q8_quads_dot1_pair(__m512i *acc, const uint8_t *q0, const uint8_t *q1, const int8_t *qx, int start,
                   int end) {
    __m512i a0 = acc[0], a1 = acc[1], a2 = acc[2], a3 = acc[3];
    __m512i b0 = acc[4], b1 = acc[5], b2 = acc[6], b3 = acc[7];
    for (int i = start; i < end; i += 4) {
        {
            VNNI_WEIGHTS(q0, i);
            VNNI_TOKEN(x, a0, a1, a2, a3, qx + i);
        }
        {
            VNNI_WEIGHTS(q1, i);
            VNNI_TOKEN(x, b0, b1, b2, b3, qx + i);
        }
    }
    acc[0] = a0, acc[1] = a1, acc[2] = a2, acc[3] = a3;
    acc[4] = b0, acc[5] = b1, acc[6] = b2, acc[7] = b3;
}

/* nt tokens against nb blocks in quads (4 x 1, 1 x 1, or 1 x 2: a
 * decode's token against two blocks `gap` blocks apart, eight chains of
 * sums in flight where one block has four, which reads the weights nearer
 * the memory's pace: docs/runs/2026-12-05-q8-decode-ab.txt), group by group.
 * Summed over a group, the products are Σ (q + 128)·a = Σ q·a + 128 · Σ a,
 * so each sum starts from -128 · xsum: Σ q·a exactly (every partial sum
 * within 255 · 128 · group of 0). Then, per row, as q8_add_group: sum +=
 * (float)Σ · (sx · sc), in group order. Block k lies k · gap blocks on (q,
 * sc and out); the last has `rows` rows. */
static inline __attribute__((always_inline)) VNNI_TARGET void
q8_quads_tokens(float *out, int OC, const int8_t *qx, const float *sx, const int32_t *xsum, int nt,
                int nb, int gap, const uint8_t *q, const float *sc, int C, int group, int rows) {
    int gpr = quant_groups(C, group);
    __m512 sum[VNNI_TOKENS][VNNI_VECTORS]; /* [lane: token t, block k at t · nb + k] */
    __m512i acc[VNNI_TOKENS * VNNI_VECTORS];
    UNROLL
    for (int lane = 0; lane < nt * nb; lane++) UNROLL
    for (int v = 0; v < VNNI_VECTORS; v++) sum[lane][v] = _mm512_setzero_ps();
    for (int g = 0, start = 0; start < C; g++, start += group) {
        int end = start + group < C ? start + group : C;
        UNROLL
        for (int lane = 0; lane < nt * nb; lane++) {
            __m512i bias = _mm512_set1_epi32(-128 * xsum[(size_t)(lane / nb) * gpr + g]);
            UNROLL
            for (int v = 0; v < VNNI_VECTORS; v++) acc[lane * VNNI_VECTORS + v] = bias;
        }
        if (nt == VNNI_TOKENS)
            q8_quads_dot4(acc, q, qx, (size_t)C, start, end);
        else if (nb == 2)
            q8_quads_dot1_pair(acc, q, q + (size_t)gap * C * Q8_ROWS, qx, start, end);
        else
            q8_quads_dot1(acc, q, qx, start, end);
        UNROLL
        for (int lane = 0; lane < nt * nb; lane++) {
            __m512 s = _mm512_set1_ps(sx[(size_t)(lane / nb) * gpr + g]);
            const float *scales = sc + ((size_t)(lane % nb) * gap * gpr + g) * Q8_ROWS;
            UNROLL
            for (int v = 0; v < VNNI_VECTORS; v++) {
                __m512 scale = _mm512_mul_ps(s, _mm512_loadu_ps(scales + 16 * v));
                __m512 dot = _mm512_cvtepi32_ps(acc[lane * VNNI_VECTORS + v]);
                sum[lane][v] = _mm512_add_ps(sum[lane][v], _mm512_mul_ps(dot, scale));
            }
        }
    }
    UNROLL
    for (int lane = 0; lane < nt * nb; lane++) {
        float row[Q8_ROWS];
        int t = lane / nb, k = lane % nb;
        UNROLL
        for (int v = 0; v < VNNI_VECTORS; v++) _mm512_storeu_ps(row + 16 * v, sum[lane][v]);
        memcpy(out + (size_t)t * OC + (size_t)k * gap * Q8_ROWS, row,
               (size_t)(k == nb - 1 ? rows : Q8_ROWS) * sizeof(float));
    }
}

/* One block against T tokens: VNNI_TOKENS at a time, then one at a time;
 * or (nb = 2, T = 1) one token against this block and the one `gap` blocks
 * on, the last of them `rows` rows. */
VNNI_TARGET static void q8_quads_block(float *out, int OC, const int8_t *qx, const float *sx,
                                       const int32_t *xsum, int T, int nb, int gap,
                                       const uint8_t *q, const float *sc, int C, int group,
                                       int rows) {
    size_t gpr = (size_t)quant_groups(C, group);
    int t = 0; /* each call with constant counts: its loops unrolled */
    if (nb == 2) {
        q8_quads_tokens(out, OC, qx, sx, xsum, 1, 2, gap, q, sc, C, group, rows);
        return;
    }
    for (; t + VNNI_TOKENS <= T; t += VNNI_TOKENS)
        q8_quads_tokens(out + (size_t)t * OC, OC, qx + (size_t)t * C, sx + t * gpr, xsum + t * gpr,
                        VNNI_TOKENS, 1, 1, q, sc, C, group, rows);
    for (; t < T; t++)
        q8_quads_tokens(out + (size_t)t * OC, OC, qx + (size_t)t * C, sx + t * gpr, xsum + t * gpr,
                        1, 1, 1, q, sc, C, group, rows);
}

/* One token with int8 activations against blocks [b0, b1) in quads: two
 * at a time, half of them apart (block b0 + i with b0 + i + n/2: one core
 * reads streams far apart faster than blocks side by side, pack.c's
 * token_blocks), an odd last block alone. Which blocks go together leaves
 * each block's sums, and so every bit, as they were. */
static void q8_quads_token_blocks(float *out, const int8_t *qx, const float *sx,
                                  const int32_t *xsum, const Matrix *w, int b0, int b1) {
    int C = w->cols, OC = w->rows, gpr = quant_groups(C, w->group), n = b1 - b0, gap = n / 2;
    for (int i = 0; i < n - gap; i++) {
        int nb = i < gap ? 2 : 1, b = i < gap ? b0 + i : b1 - 1; /* the pairs, an odd last */
        int last = b + (nb - 1) * gap, rows_last = OC - last * Q8_ROWS;
        q8_quads_block(out + (size_t)b * Q8_ROWS, OC, qx, sx, xsum, 1, nb, gap,
                       (const uint8_t *)w->data + (size_t)b * C * Q8_ROWS,
                       w->scales + (size_t)b * gpr * Q8_ROWS, C, w->group,
                       rows_last < Q8_ROWS ? rows_last : Q8_ROWS);
    }
}
#endif

void matmul_q8_packed_blocks(float *out, const float *x, const int8_t *qx, const float *sx,
                             const int32_t *xsum, const Matrix *w, int T, int b0, int b1) {
    int C = w->cols, OC = w->rows, gpr = quant_groups(C, w->group);
    for (int b = b0; b < b1; b++) {
        const int8_t *q = (const int8_t *)w->data + (size_t)b * C * Q8_ROWS;
        const float *sc = w->scales + (size_t)b * gpr * Q8_ROWS;
        int row0 = b * Q8_ROWS, rows = OC - row0 < Q8_ROWS ? OC - row0 : Q8_ROWS;
        if (w->q8_quads) {
#ifdef Q8_VNNI
            if (qx != NULL && T == 1) {
                q8_quads_token_blocks(out, qx, sx, xsum, w, b, b1);
                return;
            }
            if (qx != NULL) {
                q8_quads_block(out + row0, OC, qx, sx, xsum, T, 1, 1, (const uint8_t *)q, sc, C,
                               w->group, rows);
                continue;
            }
#endif
            for (int t = 0; t < T; t++)
                q8_quads_block_f32(out + (size_t)t * OC + row0, x + (size_t)t * C, w, (size_t)b, sc,
                                   C, w->group, rows);
            continue;
        }
        int t = 0;
        for (; qx != NULL && t + 1 < T; t += 2) /* int8 activations: tokens in pairs */
            q8_block_q8_pair(out + (size_t)t * OC + row0, out + (size_t)(t + 1) * OC + row0,
                             qx + (size_t)t * C, qx + (size_t)(t + 1) * C, sx + (size_t)t * gpr,
                             sx + (size_t)(t + 1) * gpr, q, sc, C, w->group, rows);
        for (; t < T; t++) {
            float *o = out + (size_t)t * OC + row0;
            if (qx != NULL)
                q8_block_q8(o, qx + (size_t)t * C, sx + (size_t)t * gpr, q, sc, C, w->group, rows);
            else
                q8_block_f32(o, x + (size_t)t * C, q, sc, C, w->group, rows);
        }
    }
}
