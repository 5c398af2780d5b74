/* kernels/pack_kernels.h: the shapes of the packed layout's block kernels
 * (pack.c), so that a kernel built for one processor's instructions
 * (pack_f16c.c) can stand in for the portable one. Inside kernels/ only. */
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

/* The block kernels for half-precision elements e (ELEM_F16, ELEM_BF16)
 * that widen with the processor's own instructions (pack_x86.c: AVX-512F's
 * or F16C's vcvtph2ps, one instruction for 16 or 8 float16 values where the
 * portable widening takes a dozen; a bfloat16 by one zero-extending load
 * and a shift), when this processor has them: false, and *one etc.
 * untouched, otherwise. Each is bitwise the portable kernel: widening is
 * exact, and the sums are the same sums in the same order (a multiply, then
 * an add: no fused multiply-add). */
bool half_hardware_kernels(ElementType e, BlockToken *one, BlockTokens *many, WidenBlock *widen);

/* The instruction sets pack_x86.c builds half kernels for, best first. */
typedef enum { HALF_AVX512, HALF_F16C, HALF_ISAS } HalfIsa;

/* The kernels of one instruction set, when the processor has it (false
 * otherwise, and on other processors): half_hardware_kernels takes the
 * first that answers; the tests try each. one of them, given rows ==
 * 2 · PACK_ROWS, runs two whole blocks side by side (the decode's pairs). */
bool half_kernels_for(HalfIsa isa, ElementType e, BlockToken *one, BlockTokens *many,
                      WidenBlock *widen);

#endif
