/* checkpoint.h: llama2.c's checkpoint file (run.c's float32 layout), read
 * and written. */
#ifndef STEPWISE_CHECKPOINT_H
#define STEPWISE_CHECKPOINT_H

#include <stdbool.h>

#include "ref/model/model.h"
#include "ref/util/error.h"

/* Load a llama2.c checkpoint in the legacy float32 layout: a header of seven
 * int32 (dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len;
 * a negative vocab_size marks an untied classifier stored last), then the
 * weights in weight_layout.h's order, with two unused RoPE tables of
 * seq_len × head_dim / 2 floats each before the classifier. The header is
 * checked against the file size before any weight is read. */
bool model_load_checkpoint(Model *m, const char *path, StepError *err);

/* Write m as a llama2.c checkpoint (the layout model_load_checkpoint reads),
 * atomically: the file appears whole or not at all. The two legacy RoPE
 * tables are written with llama2.c's values, cos and sin of pos · θ_i. */
bool model_save_checkpoint(const Model *m, const char *path, StepError *err);

#endif
