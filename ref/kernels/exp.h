/* kernels/exp.h: expf over many values at once, with the C library's bits.
 *
 * Softmax and SiLU call expf once per value: in an int8 prefill a quarter
 * of the time went to those calls. The fast path computes many values at
 * once instead, by the very algorithm glibc's expf uses (glibc 2.28 and
 * later: 2^(k/32) from a table of 32, times a cubic in the remainder, in
 * double, rounded to float once), so that the bits are the library's and
 * the fast path gives what the plain one (which calls expf) gives.
 *
 * glibc builds that algorithm twice, and picks one when the program starts:
 * with fused multiply-adds where the processor has FMA and AVX2, and with
 * separate multiplies and adds elsewhere. The two differ on two floats of
 * the 2^32 (docs/runs/expf-2026-12-03.txt). exp_kind_of_libm asks the
 * library which it is, on inputs that tell them apart, and on inputs where
 * glibc's result is not the correctly rounded one (so that a library with
 * another algorithm is not taken for it); anything else is EXP_LIBM, and
 * the values go through expf one at a time. */
#ifndef STEPWISE_EXP_H
#define STEPWISE_EXP_H

typedef enum {
    EXP_LIBM,        /* not glibc's algorithm: call expf */
    EXP_GLIBC_FMA,   /* glibc's, with fused multiply-adds */
    EXP_GLIBC_PLAIN, /* glibc's, with separate multiplies and adds */
} ExpKind;

/* Which expf the process's C library has: a handful of expf calls. */
ExpKind exp_kind_of_libm(void);

/* x[i] = expf(x[i]) for i < n, bit for bit the library's when kind is
 * exp_kind_of_libm(). */
void exp_many(float *x, int n, ExpKind kind);

/* The same as one value: glibc's algorithm, with or without fused
 * multiply-adds, special inputs (|x| >= 88, infinities, NaN) through expf
 * (for the tests, which compare it with expf over every float). */
float exp_one(float x, ExpKind kind);

#endif
