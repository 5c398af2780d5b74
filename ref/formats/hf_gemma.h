/* hf_gemma.h: Gemma 2 (Gemma2ForCausalLM) and Gemma 3 (text,
 * Gemma3ForCausalLM) in a Hugging Face folder, as fields of the
 * architecture struct (config.h):
 *
 *   - the token embedding times √hidden_size, rounded to the weights' type;
 *   - RMSNorm as x̂ · (1 + w): the files hold w, the model 1 + w;
 *   - four norms a layer: input, post-attention (on attention's output,
 *     before the residual add), pre-feedforward and post-feedforward;
 *   - scores divided by √query_pre_attn_scalar, not √head_dim;
 *   - Gemma 2: scores soft-capped, tanh(s / c) · c, and the logits too;
 *   - sliding-window attention on the layers the config's pattern names
 *     (layer_types, sliding_window_pattern; Gemma 2 alternates, the first
 *     layer sliding), Gemma 3's with their own RoPE base;
 *   - Gemma 3: per-head q and k RMSNorm (1 + w), as Qwen3's;
 *   - a GeGLU MLP (GELU's tanh form) and a tied classifier.
 *
 * The tensors keep Llama's names but for the norms
 * (post_attention_layernorm is Gemma's post-norm, not the MLP's pre-norm):
 * hf_layer_tensors lists them so. */
#ifndef STEPWISE_HF_GEMMA_H
#define STEPWISE_HF_GEMMA_H

#include <cjson/cJSON.h>

#include "ref/config.h"
#include "ref/util/error.h"
#include "ref/formats/safetensors.h"

/* What Gemma's config.json says beyond the field table's keys (read
 * already, hf_config.h, with the block's flags): its activation, and
 * which layers slide (layer_types, or sliding_window_pattern) into
 * sliding_pattern (the config class's `pattern` when it says neither),
 * the window set to 0 where none does. */
bool hf_gemma_config(const cJSON *root, int pattern, Config *c, const char *what, StepError *err);

/* √dim as Hugging Face's Gemma multiplies the embedding by it: a tensor of
 * the embedding's dtype, so rounded to bfloat16 or float16 where the
 * weights are. */
float hf_gemma_embed_scale(int dim, SafetensorsDtype dtype);

/* Whether a tensor's name is a norm's weight ("...norm.weight"), the test
 * llama.cpp's converter adds Gemma's 1 by. */
bool hf_is_norm_weight(const char *name);

#endif
