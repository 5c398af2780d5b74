/* hf_write.h: writing a model as a Hugging Face model directory
 * (config.json and safetensors, optionally sharded), the form hf_model.h
 * reads: for tests and benchmarks of shapes no downloaded model has. */
#ifndef STEPWISE_HF_WRITE_H
#define STEPWISE_HF_WRITE_H

#include "ref/model.h"
#include "ref/formats/safetensors.h"

/* The architectures a folder can be written as. */
typedef enum {
    HF_LLAMA,
    HF_MISTRAL,
    HF_QWEN2,
    HF_QWEN3,
    HF_GPT2,
    HF_PHI3,
    HF_GEMMA2,
    HF_GEMMA3,
    HF_MIXTRAL,
    HF_QWEN3MOE
} HfArchitecture;

/* "llama", "mistral", "qwen2", "qwen3", "gpt2", "phi3", "gemma2", "gemma3",
 * "mixtral", "qwen3moe" -> *a; false for anything else. */
bool hf_architecture_parse(const char *name, HfArchitecture *a);
/* The name hf_architecture_parse takes for a ("gemma2"): the families
 * column of config_table.h speaks it. */
const char *hf_architecture_name(HfArchitecture a);

/* The flags the architecture implies (qkv_bias for Qwen2, qk_norm for
 * Qwen3; GPT-2's norms, MLP, positions and biases; Gemma's GeGLU,
 * post-norms, 1 + w norms and, when unset, its √dim embedding scale), set
 * in c before the model is made. Gemma's numbers (soft-caps, window,
 * attention scale) are the caller's. An MoE's experts are hidden_dim wide
 * (Mixtral's always, Qwen3-MoE's unless given). */
void hf_architecture_apply(HfArchitecture a, Config *c);

/* Write m (float32 weights, row-major, q and k interleaved as stepwise
 * holds them) into the new folder dir: config.json, and model.safetensors or
 * `shards` files with model.safetensors.index.json, every tensor in dtype
 * (rounded to nearest even) and q and k in Hugging Face's halves layout;
 * with tokenizer_dir (may be NULL), its tokenizer.json and
 * tokenizer_config.json copied in. dir must not exist; on failure nothing
 * is left. */
bool hf_model_save(const Model *m, HfArchitecture a, const char *dir, SafetensorsDtype dtype,
                   int shards, const char *tokenizer_dir, StepError *err);

/* The same folder for model_init_random's model of seed, from its layout
 * alone (model_reserve_layout): each tensor's values are drawn as it is
 * written, so the weights are never in memory, and the bytes are those of
 * model_init_random then hf_model_save. */
bool hf_model_save_random(const Model *layout, uint64_t seed, HfArchitecture a, const char *dir,
                          SafetensorsDtype dtype, int shards, const char *tokenizer_dir,
                          StepError *err);

#endif
