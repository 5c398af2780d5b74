/* gguf_model.h: a model, and its embedded tokenizer, from a GGUF file.
 *
 * general.architecture llama (which covers Mistral), qwen2 or qwen3; the
 * hyperparameters from the <arch>.* keys; F32, F16 and BF16 tensors, and
 * the quantized types of gguf_dequant.h dequantized to float32.
 * llama.cpp's converter stores llama's q/k rows in interleaved pairs, as
 * llama2.c does, and keeps Qwen's in Hugging Face's halves, which are
 * interleaved as read (as the Hugging Face loader does): one model gives
 * the same bits from a GGUF file as from its Hugging Face folder. The
 * embedded tokenizer ("llama" or "gpt2") becomes stepwise's tokenizer
 * (gguf_tokenizer.h). */
#ifndef STEPWISE_GGUF_MODEL_H
#define STEPWISE_GGUF_MODEL_H

#include "ref/model/model.h"
#include "ref/text/tokenizer.h"

/* Whether path ends in .gguf. */
bool gguf_is_model_path(const char *path);

/* What a load found that did not stop it, for the caller to say (as
 * hf_model.h's HfLoadReport): the tensors no part of the architecture read
 * (DeepSeek-V3's exp_probs_b, say), which the model runs without. */
typedef struct {
    int unused; /* tensors left unread */
    char first_unused[128];
} GgufLoadReport;

/* Load the model at path into m and, when tok is not NULL, its embedded
 * tokenizer into tok. WEIGHTS_STORED: the file stays mapped (owned by m)
 * and the matrices point into it, float or quantized blocks as stored;
 * WEIGHTS_F32: every tensor dequantized into float32 storage. The logits
 * are the same bits. report (may be NULL) is filled on success. */
bool gguf_model_load(Model *m, Tokenizer *tok, const char *path, WeightsMode mode,
                     const ProgressSink *progress, GgufLoadReport *report, StepError *err);

#endif
