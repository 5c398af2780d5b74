/* kernels/pack_kernels.h: the shapes of the packed layout's block kernels
 * (pack.c), so that a kernel built for one processor's instructions
 * (pack_x86.c) can stand in for the portable one. Inside kernels/ only. */
#ifndef STEPWISE_KERNELS_PACK_KERNELS_H
#define STEPWISE_KERNELS_PACK_KERNELS_H

#include "ref/kernels/matrix.h"

#define PREFILL_TOKENS 6 /* tokens sharing each loaded weight vector */

/* A decode streams each block once, front to back, at the memory's pace:
 * a hint this far ahead keeps enough reads in flight for one core, where
 * the processor's own prefetcher leaves it at about two thirds of a plain
 * read of the same bytes (docs/performance.md). A prefetch never faults,
 * past the end of a matrix too. */
#define PREFETCH_AHEAD 4096
static inline void prefetch_ahead(const void *at) {
    __builtin_prefetch((const char *)at + PREFETCH_AHEAD);
}

/* A kernel reading four streams at once asks half as far ahead in each,
 * the same bytes in flight as two streams at PREFETCH_AHEAD: a full
 * PREFETCH_AHEAD in each was slower (docs/runs/2026-12-06-four-blocks.txt). */
static inline void prefetch_ahead_of_four(const void *at) {
    __builtin_prefetch((const char *)at + PREFETCH_AHEAD / 2);
}

/* One token against one block (decode): out[row0 + l] = Σ_i block[i][l] ·
 * x[i] for l < rows, each sum in index order from 0.0f. */
typedef void (*BlockToken)(float *out, const float *x, const void *block, int C, int row0,
                           int rows);

/* Up to PREFILL_TOKENS tokens against one block: the first n of xt's rows
 * into out[k] [OC] at column row0 (the unused places repeat the last). */
typedef void (*BlockTokens)(float *const out[PREFILL_TOKENS], const float *const xt[PREFILL_TOKENS],
                            int n, const void *block, int C, int row0, int rows);

/* A half-precision block widened whole into out [C, PACK_ROWS] floats. */
typedef void (*WidenBlock)(float *out, const void *block, int C);

/* n whole blocks `gap` blocks apart (block k · gap after `block`, its
 * PACK_ROWS rows from row0 + k · gap · PACK_ROWS; n fixed by the kernel),
 * one token: n independent chains of adds, so that no add waits on
 * another's latency, and n streams of the matrix read at once (the
 * decode's pairs and fours). Streams far apart read faster than streams
 * side by side (gap 1): pack.c's token_blocks. */
typedef void (*WholeBlocks)(float *out, const float *x, const void *block, int C, int row0,
                            int gap);

/* The block kernels of half-precision elements (ELEM_F16, ELEM_BF16) that
 * widen with the processor's own instructions (pack_x86.c: AVX-512F's or
 * F16C's vcvtph2ps, one instruction for 16 or 8 float16 values where the
 * portable widening takes a dozen; a bfloat16 by one zero-extending load
 * and a shift). Each is bitwise pack.c's portable kernel: widening is exact,
 * and the sums are the same sums in the same order (a multiply, then an
 * add: no fused multiply-add). */
typedef struct {
    BlockToken one;
    WholeBlocks pair; /* two blocks */
    WholeBlocks four; /* four blocks, or NULL */
    BlockTokens many;
    WidenBlock widen;
} HalfKernels;

/* The instruction sets half matrices are read with: pack.c's portable
 * widening, or pack_x86.c's. A packed half matrix holds its own (Matrix's
 * half_isa), chosen once when it is packed (half_isa_best), so that no
 * matmul asks the processor again. */
typedef enum { HALF_PORTABLE, HALF_AVX512, HALF_F16C } HalfIsa;

/* Whether this processor runs isa's kernels (HALF_PORTABLE: always). */
bool half_isa_available(HalfIsa isa);

/* The best instruction set this processor has. */
HalfIsa half_isa_best(void);

/* isa's kernels for elements e; NULL for HALF_PORTABLE (pack.c's own),
 * for another element type, and on other processors. */
const HalfKernels *half_kernels(HalfIsa isa, ElementType e);

#endif
