/* diff_tensors.h: a run's numbers read from a safetensors file into a
 * DiffRun (diff_input.h): the tensors a JSON Lines file names in its
 * "tensors" event (`score --tensors`), or a safetensors file that is a
 * whole candidate (another engine's): "logits" [positions, vocab], hooks by
 * name [positions, width], "kv.L.k" and "kv.L.v" [positions, kv_dim], in
 * F32, F16 or BF16, with the ids it ran on in its __metadata__ (token_ids,
 * a JSON list as a string; first_pos; values "logits" or "logprobs").
 * Every shape is checked against the file before anything is read. The
 * rows stay in the file, mapped (diff_run.h). */
#ifndef STEPWISE_DIFF_TENSORS_H
#define STEPWISE_DIFF_TENSORS_H

#include <cjson/cJSON.h>

#include "ref/util/error.h"
#include "trace/diff_run.h"
#include "trace/hook_names.h"

/* The tensors of a "tensors" event of the JSON Lines file at jsonl_path
 * (its "file" resolved from that file's folder), added to r. */
bool diff_tensors_add(DiffRun *r, const cJSON *event, const char *jsonl_path, StepError *err);

/* A safetensors file as a run; with names, hook tensors carry another
 * engine's names (hook_names.h). */
bool diff_tensors_read_file(DiffRun *r, const char *path, const HookNames *names, StepError *err);

/* Each logits row of the file a "tensors" event names, in position order,
 * as the logits event it stands for ({"event": "logits", "pos", "token",
 * "logits"}), and (patterns) each position's and head's row of every
 * attn.pattern tensor as the activation event the trace writes without
 * --tensors and each position's KV row (kv.L.k with kv.L.v) as its kv
 * event, in the order of the file's tensors, which is the run's;
 * handed to each, which owns it. For the readers that take events one by
 * one (trace show, sample --from-trace, view and its heatmaps). The values
 * are numbers to read, or (as_text) the trace's own text of them, for a
 * page that embeds the events as the trace writes them. A false from each
 * stops the walk (its err set). Memory: one row and one event; the rows
 * are read from the file (pread) as they are handed on. */
bool tensors_events(const cJSON *event, const char *jsonl_path, bool as_text, bool patterns,
                    bool (*each)(void *ctx, cJSON *event), void *ctx, StepError *err);

#endif
