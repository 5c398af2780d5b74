/* cli/presets.h: real models' shapes for make-model and inspect. */
#ifndef STEPWISE_CLI_PRESETS_H
#define STEPWISE_CLI_PRESETS_H

#include "ref/config.h"
#include "ref/util/error.h"
#include "ref/formats/hf_write.h"

/* Real models' shapes, from each one's published config.json on Hugging
 * Face (the repository in `source`): the same sizes, heads, vocabulary,
 * window, RoPE and norm epsilon, with seeded random weights. For timing
 * and memory (make bench-scale), not for text. */
typedef struct {
    const char *name, *source;
    HfArchitecture arch;
    int dim, hidden, layers, heads, kv_heads, head_dim, vocab, seq_len;
    float rope_theta, norm_eps;
    bool untied;
    RopeScaling scaling;
    /* Gemma's (0: none; make-model's options given beside the preset win) */
    float query_scale, attn_softcap, final_softcap, rope_local_theta;
    int sliding_window, sliding_pattern;
    /* a mixture of experts (0: dense), every layer sparse, renormalised */
    int experts, experts_used, expert_hidden;
} ModelPreset;

/* The preset called name, or NULL (err names the known ones). */
const ModelPreset *model_preset_find(const char *name, StepError *err);

/* Fill what is still unset (0) in c from p: sizes, heads, head size,
 * vocabulary, window, RoPE base, and Gemma's numbers not given (still
 * negative); always its norm epsilon and RoPE scaling; *untied when p
 * stores a classifier of its own. */
void model_preset_apply(const ModelPreset *p, Config *c, bool *untied);

#endif
