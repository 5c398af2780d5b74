/* linear.h: one linear layer, out = x · Wᵀ, over any weight Matrix
 * (matrix.h), with the model's kernels and threads; the one call through
 * which the block and the experts (moe.h) reach every matmul kernel. */
#ifndef STEPWISE_LINEAR_H
#define STEPWISE_LINEAR_H

#include "ref/model/model.h"
#include "ref/run_state.h"
#include "ref/kernels/threads.h"

/* The threads m's kernels may split work over: its pool when the run chose
 * the fast kernels (m->run, chosen once, when its weights were packed); the
 * plain kernels stay one obvious loop on one thread. */
ThreadPool *model_threads(const Model *m);

/* A linear's input x [T, C], prepared once for every linear that reads it
 * (q, k and v read one; so do the gate and the up projection): with int8
 * activations, quantized here, once, as the weights it meets want it. */
typedef struct {
    const float *x;      /* [T, C] the input, or its quantized-then-dequantized copy
                            (int8 activations, float weights) */
    const int8_t *qx;    /* int8 weights and activations: its codes [T, C], else NULL */
    const float *sx;     /* their scales [T, groups] */
    const int32_t *xsum; /* each group's code sum [T, groups] (q8_packed.h), or NULL */
    int T, C;
} LinearInput;

/* x [T, C] prepared for the linears whose weights are held as w is (their
 * int8 grouping, or floats). The codes live in s's scratch: the next
 * linear_input overwrites them, so each input is used before the next is
 * prepared. */
LinearInput linear_input(PassScratch *s, const float *x, int T, const Matrix *w);

/* out [T, OC] = in · Wᵀ. With int8 weights and quantized activations, every
 * dot product is int8 × int8 in int32 per group, then × the scales; with
 * float weights and quantized activations, the input read back from its
 * codes multiplies the floats. The fast kernels (packed forms, over m's
 * threads, split by blocks of output rows) and the plain ones (row-major,
 * one thread) sum each dot product in the same order: the same bits. */
void linear_forward(const Model *m, float *out, const LinearInput *in, const Matrix *w);

/* The same for the N tokens of a pass's rows (run_state.h's ForwardRow):
 * out [N, OC] = in [N, C] · Wᵀ for every row's tokens at once, each weight
 * row read once for all of them, and each row's work counted as if it ran
 * alone (its own tokens' multiply-adds, the whole weight read once). */
void linear_rows(const Model *m, const ForwardRow *rows, int n_rows, float *out,
                 const LinearInput *in, const Matrix *w);
/* linear_rows of x [N, C], an input no other linear reads: prepared here. */
void linear_rows_of(const Model *m, PassScratch *s, const ForwardRow *rows, int n_rows, float *out,
                    const float *x, int N, const Matrix *w);

#endif
