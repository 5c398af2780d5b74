/* model_prepare.c: see model_prepare.h. */
#include "ref/model/model_prepare.h"

#include "ref/model/model_pack.h"
#include "ref/model/model_quant.h"

bool model_prepare(Model *m, const ModelPrepare *p, StepError *err) {
    m->mla_form = p->mla_form;
    if (p->gelu_f16_table && m->config.mlp == MLP_SWIGLU)
        return step_fail(err, "--gelu ggml: this model's MLP has no GELU (SwiGLU)");
    if (p->kv != KV_F32 && p->kv != KV_F16 && p->kv != KV_BF16)
        return step_fail(err, "kv_dtype %d: 0 (float32), 1 (float16) or 2 (bfloat16)", (int)p->kv);
    if (p->kv != KV_F32 && config_mla(&m->config))
        return step_fail(err, "--kv-dtype: MLA's cache of latents is float32 here");
    if (p->kv_rounding_ggml && p->kv != KV_F16)
        return step_fail(err, "--kv-rounding llama.cpp goes with --kv-dtype f16");
    /* the run's choices, apart from what the model's files say (run/run_options.h);
     * the kernels are chosen below, by packing or not */
    m->run.gelu_f16_table = p->gelu_f16_table;
    m->run.kv = p->kv, m->run.kv_rounding_ggml = p->kv_rounding_ggml;
    bool q8_0 = p->int8_activations && p->quant_group == 0 && m->weight_group == 0 && m->q8_0_file;
    /* the fast kernels pack a Q8_0 file's blocks straight from the file */
    if (q8_0 && p->kernels == KERNELS_FAST && model_adopt_q8_blocks(m)) q8_0 = false;
    if ((p->quant_group > 0 || q8_0) && m->weight_group == 0 &&
        !model_quantize(m, q8_0 ? 32 : p->quant_group, err))
        return false;
    if (p->kernels == KERNELS_PLAIN) return true; /* the row-major weights, as loaded */
    /* the fast layout, chosen once here; the numbers do not change, nor
     * do they with the number of threads */
    if (!(m->weight_group > 0 ? model_pack_q8(m, p->int8_activations, err) : model_pack(m, err)))
        return false;
    return model_use_threads(m, p->threads, err);
}
