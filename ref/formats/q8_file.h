/* q8_file.h: stepwise's quantized model file (.q8), written and read:
 * "SWQ8", uint32 version 1, the seven int32 of a llama2.c header
 * (vocab_size negative when the classifier is untied), int32 group size;
 * then the tensors in checkpoint order, each matrix as its int8 codes
 * [rows × cols] followed by its float32 scales [rows × groups per row],
 * each norm as float32. docs/quantization.md shows it byte by byte. */
#ifndef STEPWISE_Q8_FILE_H
#define STEPWISE_Q8_FILE_H

#include <stdbool.h>

#include "ref/model/model_quant.h"
#include "ref/model/model.h"
#include "ref/util/error.h"

/* Write m (its matrices int8, model_quantize) as a .q8 file, atomically. */
bool model_save_q8(const Model *m, const char *path, StepError *err);

/* Load a .q8 file: m's matrices are int8 (owned, row-major) and m->storage
 * holds the norms only (m->weights' matrix views are NULL). The header is
 * checked as strictly as a checkpoint's, and against the file size. */
bool model_load_q8(Model *m, const char *path, StepError *err);

/* Whether path starts with the .q8 magic. */
bool model_file_is_q8(const char *path);

#endif
