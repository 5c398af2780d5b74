/* gguf_fields.h: the GGUF keys that are a field's value (config_table.h's
 * gguf column, after "<arch>.", for the families its families column
 * names: llama.cpp's architecture names are make-model's for every family
 * whose keys are there). What a key means beyond that stays in the
 * family's code (gguf_model.c, gguf_convert.c): the shape, the head size
 * (key_length and value_length), a window (llama.cpp's llama caps the
 * context at it), the experts' counts (Mixtral's file says "llama"). */
#ifndef STEPWISE_GGUF_FIELDS_H
#define STEPWISE_GGUF_FIELDS_H

#include "ref/config.h"
#include "ref/formats/gguf.h"
#include "ref/formats/gguf_write.h"
#include "ref/util/error.h"

/* The table's keys of arch from f into c, over what llama.cpp gives a key
 * a file leaves out (family.h's defaults: Gemma 2's soft-caps 50 and 30): each must be a number
 * (a whole one for a whole field) in the field's range, or err names it. */
bool gguf_fields_read(const GgufFile *f, const char *arch, Config *c, StepError *err);

/* The keys of arch that choose how llama.cpp runs a model, where stepwise
 * implements one choice (a value it does not implement is refused, not
 * run as another): expert_gating_func 0 or 1 (softmax; llama.cpp reads 0,
 * a file from before the key, as softmax), expert_group_count at most 1
 * (llama.cpp scores a group by its two best experts, DeepSeek-V3's rule,
 * not V2's one best that moe.c implements), pooling_type 0 (none: an
 * embedding model's pooling has no logits to run) and attention.causal
 * true. err names the key and its value. */
bool gguf_fields_check_modes(const GgufFile *f, const char *arch, StepError *err);

/* The table's keys of arch into meta: each field that is set (or whose 0
 * stands for a value: that value), a whole number as u32, a number as
 * f32, a flag as bool. */
void gguf_fields_write(GgufMetadata *meta, const Config *c, const char *arch);

#endif
