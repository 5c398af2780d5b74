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
#include "ref/family.h"
#include "ref/util/error.h"

/* The Config of a config.json's text (its family's traits applied,
 * family_apply), for the loader and the fuzz target; arch gets the
 * architecture's class name (a row of family.h). */
bool hf_config_parse(const char *text, const char *what, Config *c, char *arch, size_t arch_size,
                     StepError *err);

/* The table's keys of family a from root into c, over the family's config
 * class's defaults (Gemma 2's soft-caps 50 and 30, say): a key left out
 * keeps the default, null is 0 (none; for a number whose 0 stands for a
 * value, the default stays), and any other value must be of the field's
 * type in its range, or err names the key. */
bool hf_config_fields_read(const cJSON *root, const Family *a, Config *c, const char *what,
                           StepError *err);

/* The table's keys of family a into o, but those o holds already: a number
 * as held (one whose 0 stands for a value, as that value), 0 as null, a
 * flag as true or false. */
void hf_config_fields_write(cJSON *o, const Config *c, const Family *a);

#endif
