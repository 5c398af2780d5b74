/* pack.c: see pack.h. */
#include "ref/kernels/pack.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ref/kernels/clones.h"
#include "ref/kernels/pack_kernels.h"

#define PACK_RELEASE_ROWS 256 /* rows of the source released at a time */

int packed_blocks(const Matrix *w) {
    return (w->rows + PACK_ROWS - 1) / PACK_ROWS;
}

/* Row src [cols] into its place in a packed block: element i at dst +
 * i * PACK_ROWS, in the element's own type so that each move is one load
 * and one store (a memcpy of a size known only at run time is a library
 * call per element: docs/runs/2026-12-05-load-time.txt). */
static void pack_row(void *dst, const void *src, int cols, size_t size) {
    if (size == sizeof(uint16_t)) {
        uint16_t *d = dst;
        const uint16_t *s = src;
        for (int i = 0; i < cols; i++) d[(size_t)i * PACK_ROWS] = s[i];
    } else {
        uint32_t *d = dst;
        const uint32_t *s = src;
        for (int i = 0; i < cols; i++) d[(size_t)i * PACK_ROWS] = s[i];
    }
}

bool matrix_pack_releasing(Matrix *p, const Matrix *w, PackReleaseRows release, void *ctx) {
    int rows = w->rows, cols = w->cols;
    bool blocks = w->layout == MATRIX_BLOCKS;
    ElementType elem = blocks ? ELEM_F32 : w->elem;
    size_t size = element_bytes(elem); /* 4 or 2: pack_row's two types */
    float *row = blocks ? malloc((size_t)cols * sizeof(float)) : NULL;
    if (blocks && row == NULL) return false;
    *p = (Matrix){.layout = MATRIX_PACKED, .elem = elem, .rows = rows, .cols = cols};
    if (elem != ELEM_F32) p->half_isa = (int)half_isa_best(); /* once, not at every matmul */
    p->tile_pairs = pack_tile_pairs_fit();
    size_t block_bytes = (size_t)cols * PACK_ROWS * size;
    size_t bytes = (size_t)packed_blocks(p) * block_bytes; /* a multiple of 32 */
    p->owned = matrix_alloc_data(bytes);
    if (p->owned == NULL) {
        free(row);
        return false;
    }
    p->data = p->owned;
    if (rows % PACK_ROWS != 0) /* the last block's missing rows are zeros; the rest is written */
        memset((char *)p->owned + bytes - block_bytes, 0, block_bytes);
    for (int r0 = 0; r0 < rows; r0 += PACK_RELEASE_ROWS) {
        int r1 = r0 + PACK_RELEASE_ROWS < rows ? r0 + PACK_RELEASE_ROWS : rows;
        for (int r = r0; r < r1; r++) {
            const char *src = (const char *)row;
            if (blocks)
                matrix_row(w, r, row);
            else
                src = (const char *)w->data + matrix_source_row(w, r) * cols * size;
            char *dst = (char *)p->owned + (size_t)(r / PACK_ROWS) * block_bytes +
                        (size_t)(r % PACK_ROWS) * size;
            pack_row(dst, src, cols, size);
        }
        if (release != NULL) release(ctx, w, r0, r1);
    }
    free(row);
    return true;
}

bool matrix_pack(Matrix *p, const Matrix *w) {
    return matrix_pack_releasing(p, w, NULL, NULL);
}

/* One token against one block (decode): PACK_ROWS independent sums, one
 * per output row, each over i in order; the loop over l is what the
 * compiler turns into one vector operation. Reads the block as one stream. */
FAST_CLONES static void block_token_f32(float *out, const float *x, const void *weights, int C,
                                        int row0, int rows) {
    const float *block = weights;
    float s[PACK_ROWS] = {0};
    for (int i = 0; i < C; i++) {
        const float *wi = block + (size_t)i * PACK_ROWS;
        prefetch_ahead(wi); /* 16 floats: one line an input */
        float xi = x[i];
        for (int l = 0; l < PACK_ROWS; l++) s[l] += wi[l] * xi;
    }
    for (int l = 0; l < rows; l++) out[row0 + l] = s[l];
}

/* Prefill: up to PREFILL_TOKENS tokens against one block: each weight
 * vector loaded once serves six tokens' sums. xt[k] is token k's input
 * row [C]; the first n sums are stored, out[k] [OC] at column row0. A
 * shorter tile (the last of a pass) repeats its last token's row in the
 * unused places: the same work as a full tile, twice as fast as tokens one
 * by one. */
FAST_CLONES static void block_tokens_f32(float *const out[PREFILL_TOKENS],
                                         const float *const xt[PREFILL_TOKENS], int n,
                                         const void *weights, int C, int row0, int rows) {
    const float *block = weights;
    float s[PREFILL_TOKENS][PACK_ROWS] = {{0}};
    const float *x0 = xt[0], *x1 = xt[1], *x2 = xt[2], *x3 = xt[3], *x4 = xt[4], *x5 = xt[5];
    for (int i = 0; i < C; i++) {
        const float *wi = block + (size_t)i * PACK_ROWS;
        float a0 = x0[i], a1 = x1[i], a2 = x2[i], a3 = x3[i], a4 = x4[i], a5 = x5[i];
        for (int l = 0; l < PACK_ROWS; l++) {
            s[0][l] += wi[l] * a0;
            s[1][l] += wi[l] * a1;
            s[2][l] += wi[l] * a2;
            s[3][l] += wi[l] * a3;
            s[4][l] += wi[l] * a4;
            s[5][l] += wi[l] * a5;
        }
    }
    for (int t = 0; t < n; t++) {
        for (int l = 0; l < rows; l++) out[t][row0 + l] = s[t][l];
    }
}

/* Half-precision blocks: the same sums, written with GCC's vector types
 * (clang has them too) so that the 16 weights of input i are widened in
 * registers, one load and a shift (bfloat16) or a few integer operations
 * and a multiply by a power of two (float16), exactly as bf16_widen and
 * f16_widen do one at a time. Each lane is one row's sum, each product and
 * add rounded as in the scalar loop (no contraction: -ffp-contract=off). */
typedef float Floats16 __attribute__((vector_size(64)));
typedef uint32_t Words16 __attribute__((vector_size(64)));
typedef int32_t Ints16 __attribute__((vector_size(64)));
typedef uint16_t Halves16 __attribute__((vector_size(32)));

/* Prefill on two whole float32 blocks side by side (rows row0 ..
 * row0 + 2 · PACK_ROWS - 1; b0 then b1): each input's six token values,
 * loaded once, serve both blocks, twelve sums in flight, so that the
 * multiplies, not the loads, set the pace (docs/performance.md). The same
 * sums as block_tokens_f32 on each block. */
FAST_CLONES static void block_tokens2_f32(float *const out[PREFILL_TOKENS],
                                          const float *const xt[PREFILL_TOKENS], int n,
                                          const float *b0, const float *b1, int C, int row0) {
    Floats16 s0 = {0}, s1 = {0}, s2 = {0}, s3 = {0}, s4 = {0}, s5 = {0};
    Floats16 r0 = {0}, r1 = {0}, r2 = {0}, r3 = {0}, r4 = {0}, r5 = {0};
    const float *x0 = xt[0], *x1 = xt[1], *x2 = xt[2], *x3 = xt[3], *x4 = xt[4], *x5 = xt[5];
    for (int i = 0; i < C; i++) {
        Floats16 w, v;
        memcpy(&w, b0 + (size_t)i * PACK_ROWS, sizeof w);
        memcpy(&v, b1 + (size_t)i * PACK_ROWS, sizeof v);
        float a0 = x0[i], a1 = x1[i], a2 = x2[i], a3 = x3[i], a4 = x4[i], a5 = x5[i];
        s0 += w * a0, r0 += v * a0;
        s1 += w * a1, r1 += v * a1;
        s2 += w * a2, r2 += v * a2;
        s3 += w * a3, r3 += v * a3;
        s4 += w * a4, r4 += v * a4;
        s5 += w * a5, r5 += v * a5;
    }
    const Floats16 sums[PREFILL_TOKENS][2] = {{s0, r0}, {s1, r1}, {s2, r2},
                                              {s3, r3}, {s4, r4}, {s5, r5}};
    for (int t = 0; t < n; t++) {
        memcpy(out[t] + row0, &sums[t][0], sizeof sums[t][0]);
        memcpy(out[t] + row0 + PACK_ROWS, &sums[t][1], sizeof sums[t][1]);
    }
}

/* Whether the pair tile's twelve sums, two weight vectors and a token's
 * value stay in registers: in the x86-64-v4 clone (32 vectors of 16
 * floats). Elsewhere a vector of 16 floats takes two or four registers,
 * and the sums would spill. */
bool pack_tile_pairs_fit(void) {
#if defined(__GNUC__) && defined(__x86_64__) && !defined(__clang__)
    __builtin_cpu_init();
    return __builtin_cpu_supports("x86-64-v4");
#else
    return false;
#endif
}

/* (Vectors pass by pointer: by value they would change the calling
 * convention between the clones.) */
static ALWAYS_INLINE void widen16(ElementType e, const uint16_t *at, Floats16 *f) {
    Halves16 h;
    memcpy(&h, at, sizeof h);
    Words16 u = __builtin_convertvector(h, Words16), bits;
    if (e == ELEM_BF16) {
        bits = u << 16;
        memcpy(f, &bits, sizeof *f);
        return;
    }
    bits = (u & 0x7fffu) << 13; /* f16_widen, lane by lane */
    memcpy(f, &bits, sizeof *f);
    *f *= 0x1p112f;
    memcpy(&bits, f, sizeof bits);
    Words16 top = (Words16)((Ints16)((u & 0x7c00u) == 0x7c00u)) & 0x7f800000u;
    bits |= top | ((u & 0x8000u) << 16);
    memcpy(f, &bits, sizeof *f);
}

static ALWAYS_INLINE void store16(float *out, const Floats16 *s, int rows) {
    float v[PACK_ROWS];
    memcpy(v, s, sizeof v);
    for (int l = 0; l < rows; l++) out[l] = v[l];
}

static ALWAYS_INLINE void block_token_half(ElementType e, float *out, const float *x,
                                           const uint16_t *block, int C, int row0, int rows) {
    Floats16 s = {0}, w;
    for (int i = 0; i < C; i++) {
        if ((i & 1) == 0) prefetch_ahead(block + (size_t)i * PACK_ROWS); /* a line each other i */
        widen16(e, block + (size_t)i * PACK_ROWS, &w);
        s += w * x[i];
    }
    store16(out + row0, &s, rows);
}

static ALWAYS_INLINE void block_tokens_half(ElementType e, float *const out[PREFILL_TOKENS],
                                            const float *const xt[PREFILL_TOKENS], int n,
                                            const uint16_t *block, int C, int row0, int rows) {
    Floats16 s0 = {0}, s1 = {0}, s2 = {0}, s3 = {0}, s4 = {0}, s5 = {0};
    const float *x0 = xt[0], *x1 = xt[1], *x2 = xt[2], *x3 = xt[3], *x4 = xt[4], *x5 = xt[5];
    Floats16 w;
    for (int i = 0; i < C; i++) {
        widen16(e, block + (size_t)i * PACK_ROWS, &w);
        s0 += w * x0[i];
        s1 += w * x1[i];
        s2 += w * x2[i];
        s3 += w * x3[i];
        s4 += w * x4[i];
        s5 += w * x5[i];
    }
    const Floats16 sums[PREFILL_TOKENS] = {s0, s1, s2, s3, s4, s5};
    for (int t = 0; t < n; t++) store16(out[t] + row0, &sums[t], rows);
}

/* The kernels for each half type, each built per instruction set
 * (clones.h) with its widening known. */
FAST_CLONES static void block_token_f16(float *out, const float *x, const void *block, int C,
                                        int row0, int rows) {
    block_token_half(ELEM_F16, out, x, block, C, row0, rows);
}
FAST_CLONES static void block_token_bf16(float *out, const float *x, const void *block, int C,
                                         int row0, int rows) {
    block_token_half(ELEM_BF16, out, x, block, C, row0, rows);
}
FAST_CLONES static void block_tokens_f16(float *const out[PREFILL_TOKENS],
                                         const float *const xt[PREFILL_TOKENS], int n,
                                         const void *block, int C, int row0, int rows) {
    block_tokens_half(ELEM_F16, out, xt, n, block, C, row0, rows);
}
FAST_CLONES static void block_tokens_bf16(float *const out[PREFILL_TOKENS],
                                          const float *const xt[PREFILL_TOKENS], int n,
                                          const void *block, int C, int row0, int rows) {
    block_tokens_half(ELEM_BF16, out, xt, n, block, C, row0, rows);
}

/* A half block widened whole, for prefill: out [C, PACK_ROWS] floats, in
 * the block's own order, each value exactly bf16_widen's or f16_widen's. */
static ALWAYS_INLINE void widen_block(ElementType e, float *out, const uint16_t *block, int C) {
    for (int i = 0; i < C; i++) {
        Floats16 w;
        widen16(e, block + (size_t)i * PACK_ROWS, &w);
        memcpy(out + (size_t)i * PACK_ROWS, &w, sizeof w);
    }
}
FAST_CLONES static void widen_block_f16(float *out, const void *block, int C) {
    widen_block(ELEM_F16, out, block, C);
}
FAST_CLONES static void widen_block_bf16(float *out, const void *block, int C) {
    widen_block(ELEM_BF16, out, block, C);
}

/* Tile `tile`'s part of the blocks the next step reads: the nb blocks
 * after this step's b..b+nb-1 (fewer at the share's end b1), each tile
 * asking for `part` bytes of a block, so that the tiles together bring
 * them all into the outer caches (a hint: never a fault, nothing
 * computed). */
static void prefetch_next_step(const Matrix *w, size_t stride, int b, int nb, int b1, int tile,
                               size_t part) {
    int next = b + nb, count = b1 - next < nb ? b1 - next : nb;
    if (count <= 0) return;
    const char *start = (const char *)w->data + (size_t)next * stride;
    size_t bytes = (size_t)count * stride, from = (size_t)tile * part * nb;
    for (size_t at = from; at < from + part * nb && at < bytes; at += 64)
        __builtin_prefetch(start + at, 0, 1);
}

/* A decode's kernels: one block, two, four (NULL where there are none). */
typedef struct {
    BlockToken one;
    WholeBlocks pair, four;
} TokenKernels;

/* One token against blocks [b0, b1) (a thread's share). The whole blocks
 * go four at a time, a quarter of them apart (or, without a four-block
 * kernel, two at a time, half of them apart): block k with k + n/4, k +
 * n/2 and k + 3n/4. Each block's sums are its own, so which blocks go
 * together leaves every bit as it was; but one core reads four streams far
 * apart faster than four blocks side by side, 64 KiB apart (a 2048-wide
 * float16 matrix: docs/runs/2026-12-06-spread-streams.txt). What is left
 * (fewer than four whole blocks, and a last block of fewer rows) goes one
 * block at a time. */
static void token_blocks(float *out, const float *x, const Matrix *w, TokenKernels k, int b0,
                         int b1) {
    int C = w->cols, OC = w->rows;
    size_t stride = (size_t)C * PACK_ROWS * element_bytes(w->elem); /* bytes per block */
    int full_end = OC / PACK_ROWS < b1 ? OC / PACK_ROWS : b1;       /* blocks of PACK_ROWS rows */
    int whole = full_end - b0;
    int b = b0;
    if (k.four != NULL) {
        int gap = whole / 4;
        for (int i = 0; i < gap; i++)
            k.four(out, x, (const char *)w->data + (size_t)(b0 + i) * stride, C,
                   (b0 + i) * PACK_ROWS, gap);
        b = b0 + 4 * gap;
    } else if (k.pair != NULL) {
        int gap = whole / 2;
        for (int i = 0; i < gap; i++)
            k.pair(out, x, (const char *)w->data + (size_t)(b0 + i) * stride, C,
                   (b0 + i) * PACK_ROWS, gap);
        b = b0 + 2 * gap;
    }
    for (; b < b1; b++) {
        int row0 = b * PACK_ROWS, rows = OC - row0 < PACK_ROWS ? OC - row0 : PACK_ROWS;
        k.one(out, x, (const char *)w->data + (size_t)b * stride, C, row0, rows);
    }
}

/* With more tokens than one tile, a half block is widened once into a
 * float32 scratch block that every tile then reads (the float32 kernel, on
 * the same values: the same sums), not once a tile. Whatever reads a
 * block first (the widening, or a float32 block's first tile) waits on
 * memory: each tile of the block before asks for its share of it ahead
 * (prefetch_next_step), so that the stream overlaps the arithmetic
 * (docs/runs/2026-12-05-profile-prefill-1b.txt: the widening was 14.7% of
 * a 64-token prefill's samples). */
void matmul_packed_blocks(float *out, const float *x, const Matrix *w, int T, int b0, int b1) {
    static const BlockToken ones[] = {
        [ELEM_F32] = block_token_f32, [ELEM_F16] = block_token_f16, [ELEM_BF16] = block_token_bf16};
    static const BlockTokens manys[] = {[ELEM_F32] = block_tokens_f32,
                                        [ELEM_F16] = block_tokens_f16,
                                        [ELEM_BF16] = block_tokens_bf16};
    BlockToken one = ones[w->elem];
    BlockTokens many = manys[w->elem];
    WholeBlocks pair = NULL, four = NULL; /* the portable kernels take one block at a time */
    WidenBlock widen = w->elem == ELEM_F16 ? widen_block_f16 : widen_block_bf16;
    const HalfKernels *fast = half_kernels((HalfIsa)w->half_isa, w->elem);
    if (fast != NULL) /* the same bits, widened by the processor's own instructions */
        one = fast->one, pair = fast->pair, four = fast->four, many = fast->many,
        widen = fast->widen;
    if (T == 1) { /* a decode */
        token_blocks(out, x, w, (TokenKernels){.one = one, .pair = pair, .four = four}, b0, b1);
        return;
    }
    int C = w->cols, OC = w->rows;
    size_t stride = (size_t)C * PACK_ROWS * element_bytes(w->elem); /* bytes per block */
    size_t wide_bytes = ((size_t)C * PACK_ROWS * sizeof(float) + 63) / 64 * 64;
    int n_tiles = (T + PREFILL_TOKENS - 1) / PREFILL_TOKENS;
    size_t share = (stride / (size_t)n_tiles + 63) / 64 * 64; /* bytes of the next block a tile */
    bool pairs = n_tiles > 1 && w->tile_pairs;
    float *wide =
        w->elem != ELEM_F32 && n_tiles > 1 ? aligned_alloc(64, (pairs ? 2 : 1) * wide_bytes) : NULL;
    for (int b = b0; b < b1; b++) {
        const void *block = (const char *)w->data + b * stride;
        int row0 = b * PACK_ROWS, rows = OC - row0 < PACK_ROWS ? OC - row0 : PACK_ROWS;
        /* two whole blocks a step where the float32 values are at hand (a
         * float32 matrix, or both widened into the scratch) */
        bool two = pairs && b + 1 < b1 && OC - row0 >= 2 * PACK_ROWS &&
                   (w->elem == ELEM_F32 || wide != NULL);
        int nb = two ? 2 : 1;
        BlockTokens tiles = many;
        const float *second = (const float *)((const char *)block + stride);
        if (wide != NULL) { /* (without it, when out of memory: tile by tile, the same bits) */
            widen(wide, block, C);
            if (nb == 2) widen(wide + (size_t)C * PACK_ROWS, second, C);
            block = wide, second = wide + (size_t)C * PACK_ROWS, tiles = block_tokens_f32;
        }
        for (int t0 = 0; t0 < T; t0 += PREFILL_TOKENS) {
            int n = T - t0 < PREFILL_TOKENS ? T - t0 : PREFILL_TOKENS;
            /* the next step's blocks, fetched a share a tile while this
             * one's tiles run, so that their first reader finds them in
             * cache (one tile asking for a whole block at once made a batch
             * of 4 slower: docs/runs/2026-12-05-prefetch-ab.txt) */
            if (n_tiles > 1) prefetch_next_step(w, stride, b, nb, b1, t0 / PREFILL_TOKENS, share);
            float *outs[PREFILL_TOKENS];
            const float *xs[PREFILL_TOKENS];
            for (int k = 0; k < PREFILL_TOKENS; k++) {
                int t = t0 + (k < n ? k : n - 1);
                outs[k] = out + (size_t)t * OC, xs[k] = x + (size_t)t * C;
            }
            if (nb == 2)
                block_tokens2_f32(outs, xs, n, block, second, C, row0);
            else
                tiles(outs, xs, n, block, C, row0, rows);
        }
        b += nb - 1;
    }
    free(wide);
}

void matmul_packed(float *out, const float *x, const Matrix *w, int T) {
    matmul_packed_blocks(out, x, w, T, 0, packed_blocks(w));
}
