/* diff_pair.h: the two runs `stepwise diff`, sw_diff_with and sw_diff_arrays
 * compare, read as one step: the reference as it is; the candidate from a
 * file or from arrays in memory, with another engine's hook names mapped to
 * stepwise's (data/hook-names.json) and its rows held in RoPE's halves read
 * back as pairs, by the reference's head size. */
#ifndef STEPWISE_DIFF_PAIR_H
#define STEPWISE_DIFF_PAIR_H

#include <stdbool.h>

#include "ref/util/error.h"
#include "trace/diff_run.h"
#include "trace/hook_names.h"

/* One hook's values for every position, row-major [positions, width]
 * (borrowed), under stepwise's name or the name map's. A per-head hook
 * (attn.scores, attn.pattern) is [positions, heads, positions], each head's
 * row padded past its position (as sw_score gives it): the query at p is
 * compared on its keys 0..p, head by head, as a trace's events are. */
typedef struct {
    const char *hook;
    const float *data;
    int width;
} DiffArrayTensor;

/* A candidate in memory: logits [positions, vocab_size] (may be NULL), the
 * input token at each position (may be NULL: not stated), and tensors. */
typedef struct {
    const float *logits;
    int positions, vocab_size;
    const int *token_ids;
    const DiffArrayTensor *tensors;
    int n_tensors;
} DiffArrays;

/* Read ref_path into ref, and into cand the run at cand_path, or (arrays
 * not NULL) the arrays, copied. A candidate gives each value once: a hook
 * at a position (and head), or a KV row, given twice (in a file, or two
 * tensors whose names map to one hook) is an error naming it. engine (NULL: stepwise's names) loads
 * the name map into *names (the caller frees it with hook_names_free, whatever the result; zeroed
 * when engine is NULL); rope_halves adds the hooks the engine keeps in halves for some models, and
 * needs an engine. False (err says why) on any failure, a shape or name it cannot take among them.
 */
bool diff_pair_read(DiffRun *ref, DiffRun *cand, const char *ref_path, const char *cand_path,
                    const DiffArrays *arrays, const char *engine, bool rope_halves,
                    HookNames *names, StepError *err);

#endif
