/* model_prepare.h: a loaded model made ready to run, once, the same way
 * for the command line and the library (api/api_model.c): its weights
 * quantized to int8 when asked, then packed for the fast kernels and given
 * their threads, or left row-major for the plain ones. Neither choice
 * changes a number (docs/performance.md, docs/quantization.md). */
#ifndef STEPWISE_MODEL_PREPARE_H
#define STEPWISE_MODEL_PREPARE_H

#include <stdbool.h>

#include "ref/model/model.h"
#include "ref/util/error.h"

/* Which matmul kernels run the model: the same sums in the same order
 * either way, so the same bits. */
typedef enum {
    KERNELS_FAST,  /* the weights packed at load, many sums at once (default) */
    KERNELS_PLAIN, /* the row-major weights, one dot product at a time */
} KernelChoice;

typedef struct {
    KernelChoice kernels;
    int quant_group;       /* > 0: quantize the weights to int8 in groups of this many */
    bool int8_activations; /* the activations run in int8 too (QuantRuntime.activations) */
    int threads;           /* the fast kernels' threads; 0: one per online processor */
    MlaForm mla_form;      /* how MLA reads its cache (model.h); MLA_REBUILT: the default */
    bool gelu_f16_table;   /* GELU through ggml's float16 table (RunOptions'
                              gelu_f16_table); refused for a model with no GELU */
    KvType kv;             /* K and V rounded to float16 or bfloat16 as cached (KV_F16,
                              KV_BF16; KV_F32: float32); not for MLA's latents */
    bool kv_rounding_ggml; /* with KV_F16, llama.cpp's other rounding points */
} ModelPrepare;

/* Prepare m as p says, reporting to m->progress, and record the run's
 * choices in m->run (run/run_options.h): the kernels, the cache's type,
 * the rounding choices. A Q8_0 file under int8
 * activations and no quant_group runs as the int8 weights its blocks are
 * (their codes and scales as stored, groups of 32), not widened to floats
 * that int8 activations then multiply. */
bool model_prepare(Model *m, const ModelPrepare *p, StepError *err);

#endif
