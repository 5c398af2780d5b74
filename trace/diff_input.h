/* diff_input.h: the numbers of one run that `stepwise diff` compares, read
 * from a trace or score file (JSON Lines: its logits, kv and activation
 * events, and the input token of every position), from raw float32 logits
 * (FILE.f32 with the sidecar FILE.f32.json), or from a numpy FILE.npy
 * (a 2-D little-endian float32 array, with an optional FILE.npy.json), or
 * from named tensors (FILE.safetensors, or the one a trace's "tensors"
 * event names: diff_tensors.h).
 * docs/oracle.md spells every format out for the engines that write them. */
#ifndef STEPWISE_DIFF_INPUT_H
#define STEPWISE_DIFF_INPUT_H

#include <stdbool.h>

#include "ref/util/error.h"
#include "trace/diff_run.h"
#include "trace/hook_names.h"

/* Read the run at path. A trace needs logits or activation events; .f32
 * and .npy hold logits (log-probabilities with "values": "logprobs" in the
 * sidecar). With names (may be NULL), activation hooks are another
 * engine's names, mapped to stepwise's ("lm_head" rows become logits). */
bool diff_run_read(DiffRun *r, const char *path, const HookNames *names, StepError *err);

/* Read every activation held in halves back as interleaved pairs, head by
 * head of head_dim values (the reference's); false when one is not whole
 * heads. */
bool diff_run_unhalve(DiffRun *r, int head_dim, StepError *err);

#endif
