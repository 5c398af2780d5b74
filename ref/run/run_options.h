/* run_options.h: the run apart from the model. What the model's files say
 * is its Config (config_table.h); how this run computes it is chosen once,
 * by model_prepare (model/model_prepare.h), and held here: the kernels of
 * the matmuls, of attention and of the MLP, the cache's type, and the
 * rounding choices that compute as llama.cpp does. The block reads these
 * choices and never asks again; the trace's run header records them (its
 * run_options block, docs/trace-format.md). None of them is in the model's
 * files, and only the rounding choices and the cache's type change a
 * number. */
#ifndef STEPWISE_RUN_OPTIONS_H
#define STEPWISE_RUN_OPTIONS_H

#include <stdbool.h>

#include "ref/run/kv_cache.h"

/* Which of two kernels computes a step: the same sums in the same order
 * either way, so the same bits (docs/performance.md). */
typedef enum {
    KERNEL_PLAIN, /* one obvious loop on one thread */
    KERNEL_FAST,  /* packed weights, many sums at once, over the model's threads */
} KernelKind;

typedef struct {
    KernelKind matmul;     /* the linears' (linear.h): fast once the weights are packed */
    KernelKind attention;  /* fast: the heads shared out over threads (kernels/fast_layers.h) */
    KernelKind mlp;        /* fast: SwiGLU's exponentials many at once */
    KvType kv;             /* the cache's type as asked: KV_F32, KV_F16 or KV_BF16 (int8 is each
                              request's QuantRuntime.kv; MLA's latents are float32): kv_type_for */
    bool kv_rounding_ggml; /* with a float16 cache, llama.cpp's other rounding points: the
                              query to float16 for K.Q, the probabilities to float16 before
                              they weight V (--kv-rounding llama.cpp) */
    bool gelu_f16_table;   /* GELU as ggml computes it, through a float16 table:
                              f16(gelu(f16(x))) inside (-10, 10) (--gelu ggml) */
} RunOptions;

#endif
