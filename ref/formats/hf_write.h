/* hf_write.h: writing a model as a Hugging Face model directory
 * (config.json and safetensors, optionally sharded), the form hf_model.h
 * reads: for tests and benchmarks of shapes no downloaded model has. */
#ifndef STEPWISE_HF_WRITE_H
#define STEPWISE_HF_WRITE_H

#include "ref/formats/hf_config.h"
#include "ref/model/model.h"
#include "ref/formats/safetensors.h"

/* Write m (float32 weights, row-major, q and k interleaved as stepwise
 * holds them) into the new folder dir: config.json, and model.safetensors or
 * `shards` files with model.safetensors.index.json, every tensor in dtype
 * (rounded to nearest even) and q and k in Hugging Face's halves layout;
 * with tokenizer_dir (may be NULL), its tokenizer.json and
 * tokenizer_config.json copied in. dir must not exist; on failure nothing
 * is left. */
bool hf_model_save(const Model *m, const Family *a, const char *dir, SafetensorsDtype dtype,
                   int shards, const char *tokenizer_dir, StepError *err);

/* The same folder for model_init_random's model of seed, from its layout
 * alone (model_reserve_layout): each tensor's values are drawn as it is
 * written, so the weights are never in memory, and the bytes are those of
 * model_init_random then hf_model_save. */
bool hf_model_save_random(const Model *layout, uint64_t seed, const Family *a, const char *dir,
                          SafetensorsDtype dtype, int shards, const char *tokenizer_dir,
                          StepError *err);

#endif
