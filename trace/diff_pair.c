/* diff_pair.c: see diff_pair.h. */
#include "trace/diff_pair.h"

#include "trace/diff_input.h"

bool diff_pair_read(DiffRun *ref, DiffRun *cand, const char *ref_path, const char *cand_path,
                    const char *engine, bool rope_halves, HookNames *names, StepError *err) {
    *names = (HookNames){0};
    if (rope_halves && engine == NULL)
        return step_fail(err, "--rope-halves goes with --names (see --help)");
    if (engine != NULL && !hook_names_load(names, engine, rope_halves, err)) return false;
    return diff_run_read(ref, ref_path, NULL, err) &&
           diff_run_read(cand, cand_path, engine != NULL ? names : NULL, err) &&
           diff_run_unhalve(cand, ref->head_dim, err);
}
