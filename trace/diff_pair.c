/* diff_pair.c: see diff_pair.h. */
#include "trace/diff_pair.h"

#include <stdlib.h>
#include <string.h>

#include "ref/hooks.h"
#include "trace/diff_input.h"

/* cand from arrays a (names: the map their hooks are named by, or NULL),
 * every count checked before anything is allocated. */
static bool run_from_arrays(DiffRun *cand, const DiffArrays *a, const HookNames *names,
                            StepError *err) {
    if (a->positions < 1 || a->positions > DIFF_MAX_POS || a->n_tensors < 0 ||
        (a->logits == NULL && a->n_tensors == 0) ||
        (a->logits != NULL && (a->vocab_size < 1 || a->vocab_size > DIFF_MAX_VOCAB)) ||
        (a->n_tensors > 0 && a->tensors == NULL))
        return step_fail(err,
                         "the candidate's arrays: positions (%d) from 1, logits with a vocabulary "
                         "of 1 to %d, or tensors, needed",
                         a->positions, DIFF_MAX_VOCAB);
    size_t P = (size_t)a->positions;
    for (int i = 0; a->token_ids != NULL && i < a->positions; i++)
        if (a->token_ids[i] < 0)
            return step_fail(err, "the candidate's token_ids[%d] is negative", i);
    if (a->logits != NULL) {
        cand->vocab_size = a->vocab_size, cand->n = a->positions;
        cand->pos = malloc(P * sizeof *cand->pos);
        cand->logits = malloc(P * (size_t)a->vocab_size * sizeof(float));
        if (cand->pos == NULL || cand->logits == NULL) return step_fail(err, "out of memory");
        for (size_t p = 0; p < P; p++) cand->pos[p] = (int)p;
        memcpy(cand->logits, a->logits, P * (size_t)a->vocab_size * sizeof(float));
    }
    if (a->token_ids != NULL) {
        cand->input_pos = malloc(P * sizeof(int)), cand->input_token = malloc(P * sizeof(int));
        if (cand->input_pos == NULL || cand->input_token == NULL)
            return step_fail(err, "out of memory");
        for (size_t p = 0; p < P; p++) cand->input_pos[p] = (int)p;
        memcpy(cand->input_token, a->token_ids, P * sizeof(int));
        cand->n_inputs = a->positions, cand->inputs_stated = true;
    }
    if (a->n_tensors > 0 && (size_t)a->n_tensors > (size_t)DIFF_MAX_POS / P)
        return step_fail(err, "the candidate's arrays: too many tensors");
    cand->acts = calloc((size_t)a->n_tensors * P, sizeof *cand->acts);
    if (a->n_tensors > 0 && cand->acts == NULL) return step_fail(err, "out of memory");
    for (int i = 0; i < a->n_tensors; i++) {
        const DiffArrayTensor *t = &a->tensors[i];
        char ours[64];
        bool halves = false;
        const char *hook = t->hook;
        if (hook != NULL && names != NULL &&
            hook_names_map(names, hook, ours, sizeof ours, &halves))
            hook = ours;
        HookPoint point;
        int layer;
        if (hook == NULL || t->data == NULL || t->width < 1 || t->width > DIFF_MAX_VOCAB ||
            !hook_parse(hook, &point, &layer) || point == HOOK_LOGITS || point >= HOOK_KV_ROW)
            return step_fail(err,
                             "the candidate's tensor %d (%.64s): a hook of stepwise's (or the "
                             "name map's) other than logits, with data and a width from 1",
                             i, t->hook != NULL ? t->hook : "(no name)");
        for (size_t p = 0; p < P; p++) {
            DiffActivation *d = &cand->acts[cand->n_acts];
            *d = (DiffActivation){.point = point,
                                  .layer = layer,
                                  .pos = (int)p,
                                  .head = -1,
                                  .n = t->width,
                                  .halves = halves};
            d->data = malloc((size_t)t->width * sizeof(float));
            if (d->data == NULL) return step_fail(err, "out of memory");
            memcpy(d->data, t->data + p * (size_t)t->width, (size_t)t->width * sizeof(float));
            cand->n_acts++;
        }
    }
    return true;
}

bool diff_pair_read(DiffRun *ref, DiffRun *cand, const char *ref_path, const char *cand_path,
                    const DiffArrays *arrays, const char *engine, bool rope_halves,
                    HookNames *names, StepError *err) {
    *names = (HookNames){0};
    if (rope_halves && engine == NULL)
        return step_fail(err, "--rope-halves goes with --names (see --help)");
    if (engine != NULL && !hook_names_load(names, engine, rope_halves, err)) return false;
    const HookNames *map = engine != NULL ? names : NULL;
    return diff_run_read(ref, ref_path, NULL, err) &&
           (arrays != NULL ? run_from_arrays(cand, arrays, map, err)
                           : diff_run_read(cand, cand_path, map, err)) &&
           diff_run_unhalve(cand, ref->head_dim, err);
}
