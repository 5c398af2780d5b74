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
 * a file leaves out (Gemma 2's soft-caps 50 and 30): each must be a number
 * (a whole one for a whole field) in the field's range, or err names it. */
bool gguf_fields_read(const GgufFile *f, const char *arch, Config *c, StepError *err);

/* The table's keys of arch into meta: each field that is set (or whose 0
 * stands for a value: that value), a whole number as u32, a number as
 * f32, a flag as bool. */
void gguf_fields_write(GgufMetadata *meta, const Config *c, const char *arch);

#endif
