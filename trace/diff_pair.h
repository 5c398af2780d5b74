/* diff_pair.h: the two runs `stepwise diff` and sw_diff_with compare, read
 * as one step: the reference as it is, the candidate with another engine's
 * hook names mapped to stepwise's (data/hook-names.json) and its rows held
 * in RoPE's halves read back as pairs, by the reference's head size. */
#ifndef STEPWISE_DIFF_PAIR_H
#define STEPWISE_DIFF_PAIR_H

#include <stdbool.h>

#include "ref/util/error.h"
#include "trace/diff_run.h"
#include "trace/hook_names.h"

/* Read ref_path into ref and cand_path into cand. engine (NULL: stepwise's
 * names) loads the name map into *names (the caller frees it with
 * hook_names_free, whatever the result; zeroed when engine is NULL);
 * rope_halves adds the hooks the engine keeps in halves for some models,
 * and needs an engine. False (err says why) on any failure. */
bool diff_pair_read(DiffRun *ref, DiffRun *cand, const char *ref_path, const char *cand_path,
                    const char *engine, bool rope_halves, HookNames *names, StepError *err);

#endif
