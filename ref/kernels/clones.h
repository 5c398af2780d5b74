/* clones.h: the fast kernels, compiled once per instruction set.
 *
 * FAST_CLONES makes gcc build a function three times, for x86-64-v4
 * (AVX-512), AVX2 and plain x86-64, and pick the processor's best when the
 * program starts. The vector width changes how many independent sums (rows,
 * tokens, positions) advance together, never the order of one sum, and no
 * clone contracts a multiply and an add (-ffp-contract=off): every clone
 * gives the same bits (docs/performance.md). Elsewhere (clang, other
 * processors) the functions are built once for the default target. */
#ifndef STEPWISE_CLONES_H
#define STEPWISE_CLONES_H

#if defined(__GNUC__) && defined(__x86_64__) && !defined(__clang__)
#define FAST_CLONES __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
/* The same for a function that calls fma() (kernels/exp.c, which follows
 * the C library's FMA build of expf): x86-64-v3 has FMA, where avx2 alone
 * would call the library's fma() for each value. */
#define FMA_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define FAST_CLONES
#define FMA_CLONES
#endif

/* A step a clone calls, compiled into each clone (not called once per
 * value through the default build). */
#if defined(__GNUC__)
#define ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define ALWAYS_INLINE inline
#endif

#endif
