/* hf_config.h: a Hugging Face folder's config.json: the architectures it
 * may name, its keys into a Config and a Config's keys into one.
 *
 * The keys that are a field's value are the field table's (config_table.h:
 * its hf column, for the families its families column names), read and
 * written by hf_config_fields_read and hf_config_fields_write. What a key
 * means beyond that stays in the family's code: the shape's keys here,
 * GPT-2's own names (hf_gpt2.h), Gemma's layer_types (hf_gemma.h), the
 * experts' counts (hf_moe.h), Phi-3's partial_rotary_factor and longrope,
 * and Qwen2's window, which caps the context. */
#ifndef STEPWISE_HF_CONFIG_H
#define STEPWISE_HF_CONFIG_H

#include <cjson/cJSON.h>
#include <stddef.h>

#include "ref/config.h"
#include "ref/util/error.h"

/* The architectures a folder can hold (and be written as). */
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
    HF_QWEN3MOE,
    HF_DEEPSEEK2
} HfArchitecture;

/* "llama", "mistral", "qwen2", "qwen3", "gpt2", "phi3", "gemma2", "gemma3",
 * "mixtral", "qwen3moe" -> *a; false for anything else. */
bool hf_architecture_parse(const char *name, HfArchitecture *a);
/* The name hf_architecture_parse takes for a ("gemma2"): the field table's
 * families column speaks it. */
const char *hf_architecture_name(HfArchitecture a);
/* config.json's "architectures" entry ("Gemma2ForCausalLM") and its
 * model_type ("gemma2"; Gemma 3's text model's "gemma3_text"). */
const char *hf_architecture_class(HfArchitecture a);
const char *hf_architecture_model_type(HfArchitecture a);

/* The flags the architecture implies (qkv_bias for Qwen2, qk_norm for
 * Qwen3; GPT-2's norms, MLP, positions and biases; Gemma's GeGLU,
 * post-norms, 1 + w norms and, when unset, its √dim embedding scale), set
 * in c before the model is made. Gemma's numbers (soft-caps, window,
 * attention scale) are the caller's. An MoE's experts are hidden_dim wide
 * (Mixtral's always, Qwen3-MoE's unless given). */
void hf_architecture_apply(HfArchitecture a, Config *c);

/* The Config of a config.json's text (the architecture's fields set), for
 * the loader and the fuzz target; arch gets the architecture's class name. */
bool hf_config_parse(const char *text, const char *what, Config *c, char *arch, size_t arch_size,
                     StepError *err);

/* The table's keys of family a from root into c, over the family's config
 * class's defaults (Gemma 2's soft-caps 50 and 30, say): a key left out
 * keeps the default, null is 0 (none; for a number whose 0 stands for a
 * value, the default stays), and any other value must be of the field's
 * type in its range, or err names the key. */
bool hf_config_fields_read(const cJSON *root, HfArchitecture a, Config *c, const char *what,
                           StepError *err);

/* The table's keys of family a into o, but those o holds already: a number
 * as held (one whose 0 stands for a value, as that value), 0 as null, a
 * flag as true or false. */
void hf_config_fields_write(cJSON *o, const Config *c, HfArchitecture a);

#endif
