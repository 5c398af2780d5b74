/* linear.h: one linear layer, out = x · Wᵀ, over any weight Matrix
 * (matrix.h), with the model's kernels and threads; the one call through
 * which the block and the experts (moe.h) reach every matmul kernel. */
#ifndef STEPWISE_LINEAR_H
#define STEPWISE_LINEAR_H

#include "ref/model.h"
#include "ref/run_state.h"
#include "ref/kernels/threads.h"

/* Whether m runs on the fast kernels (its weights packed), and the threads
 * they may split work over: its pool; the plain kernels stay one obvious
 * loop on one thread. */
bool model_fast(const Model *m);
ThreadPool *model_threads(const Model *m);

/* Whether a linear's input is the one the call before it read (q, k and v
 * read one input, as do the gate and the up projection): quantized
 * activations are then quantized once, not again. */
typedef enum { INPUT_NEW, INPUT_AS_BEFORE } InputUse;

/* out [T, OC] = x [T, C] · Wᵀ. With int8 weights and quantized activations,
 * each input row is quantized with the weights' grouping and every dot
 * product is int8 × int8 in int32 per group; with float weights and
 * quantized activations, the input is quantized and read back first. The
 * fast kernels (packed forms, over m's threads, split by blocks of output
 * rows) and the plain ones (row-major, one thread) sum each dot product in
 * the same order: the same bits. */
void linear_forward(RunState *s, const Model *m, float *out, const float *x, int T, const Matrix *w,
                    InputUse use);

#endif
