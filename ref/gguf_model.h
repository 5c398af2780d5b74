/* gguf_model.h: a model, and its embedded tokenizer, from a GGUF file.
 *
 * general.architecture llama (which covers Mistral), qwen2 or qwen3; the
 * hyperparameters from the <arch>.* keys; F32, F16 and BF16 tensors
 * (quantized types are not read yet). llama.cpp's converter stores llama's
 * q/k rows in interleaved pairs, as llama2.c does, and keeps Qwen's in
 * halves: the RoPE layout says which, and no row is moved. The embedded
 * tokenizer of tokenizer.ggml.model "llama" (SentencePiece-style scores)
 * becomes stepwise's tokenizer. */
#ifndef STEPWISE_GGUF_MODEL_H
#define STEPWISE_GGUF_MODEL_H

#include "model.h"
#include "tokenizer.h"

/* Whether path ends in .gguf. */
bool gguf_is_model_path(const char *path);

/* Load the model at path into m and, when tok is not NULL, its embedded
 * tokenizer into tok. */
bool gguf_model_load(Model *m, Tokenizer *tok, const char *path, StepError *err);

#endif
