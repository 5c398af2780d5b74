/* model_open.h: a model of any format stepwise reads, opened by its path,
 * with its tokenizer: what the command line and the library (api/stepwise.h)
 * share. The format is told from the path: NULL is stepwise's embedded tiny
 * model; a path ending in .json a JSON model with its own tokenizer; a
 * directory a Hugging Face model with its tokenizer.json; a .gguf file its
 * own tokenizer; a .q8 file stepwise's int8 model; anything else a llama2.c
 * checkpoint, which needs a tokenizer path. Nothing here prints. */
#ifndef STEPWISE_MODEL_OPEN_H
#define STEPWISE_MODEL_OPEN_H

#include "ref/util/error.h"
#include "ref/model/model.h"
#include "ref/util/progress.h"
#include "ref/text/tokenizer.h"

/* What an open found that does not stop it, for the caller to say: a
 * Hugging Face folder's or a GGUF file's tensors that no part of the
 * architecture reads. */
typedef struct {
    int unused_tensors;
    char first_unused[128];
} ModelOpenNotes;

/* Open the model at model_path and its tokenizer: tokenizer_path (a
 * tokenizer.bin, a JSON model, a tokenizer.json, a directory holding one,
 * or a GGUF file) always wins over the model's own. tok NULL (with
 * tokenizer_path NULL): no tokenizer is wanted, and none is required or
 * read. The matrices are kept as mode says. notes may be NULL. */
bool model_open(const char *model_path, const char *tokenizer_path, Model *m, Tokenizer *tok,
                WeightsMode mode, const ProgressSink *progress, ModelOpenNotes *notes,
                StepError *err);

/* Only the model, no tokenizer, whatever its format. */
bool model_open_weights(const char *model_path, WeightsMode mode, Model *m,
                        const ProgressSink *progress, ModelOpenNotes *notes, StepError *err);

/* The tokenizer a path names (as tokenizer_path above); with vocab_size > 0
 * it must fit a model of that vocabulary (0: any size). */
bool tokenizer_open(const char *path, int vocab_size, Tokenizer *tok, StepError *err);

/* Whether the model at path brings its own tokenizer (the built-in and JSON
 * models, GGUF files, folders with a tokenizer.json; not a checkpoint). */
bool model_path_has_tokenizer(const char *path);

/* Whether a tokenizer path names a tokenizer.json (or a directory holding
 * one). */
bool path_is_tokenizer_json(const char *path);

#endif
