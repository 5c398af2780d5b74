/* diff_pair.c: see diff_pair.h. */
#include "trace/diff_pair.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ref/hooks.h"
#include "trace/diff_input.h"

/* A per-head hook (attention's scores and pattern): the reference holds
 * one activation a position and head, of the pos + 1 keys that query sees. */
static bool per_head(HookPoint point) {
    return point == HOOK_ATTN_SCORES || point == HOOK_ATTN_PATTERN;
}

/* A tensor of the arrays, as stepwise's hook, and where it came from. */
typedef struct {
    int point, layer, index;
    bool halves;
} ArrayHook;

static int compare_array_hooks(const void *a, const void *b) {
    const ArrayHook *x = a, *y = b;
    if (x->point != y->point) return (x->point > y->point) - (x->point < y->point);
    if (x->layer != y->layer) return (x->layer > y->layer) - (x->layer < y->layer);
    return (x->index > y->index) - (x->index < y->index);
}

/* Each tensor of a as stepwise's hook into h [n_tensors] (names: the map
 * their hooks are named by, or NULL), and the activations they make into
 * *count: a hook given twice (under one name twice, or under two names
 * that map to it) is refused by name, for only one copy could be compared. */
static bool array_hooks(const DiffArrays *a, const HookNames *names, ArrayHook *h, size_t *count,
                        StepError *err) {
    size_t P = (size_t)a->positions;
    *count = 0;
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
        bool known = hook != NULL && hook_parse(hook, &point, &layer) && point != HOOK_LOGITS &&
                     point < HOOK_KV_ROW;
        char fitting[160] = "";
        if (hook != NULL && !known) hook_names_fitting(hook, NULL, fitting, sizeof fitting);
        if (fitting[0] != '\0') /* another engine's name, most likely */
            return step_fail(
                err,
                "the candidate's tensor %d: \"%.64s\" names none of stepwise's hooks%s; "
                "the name maps that name it: --names %s",
                i, t->hook, names != NULL ? " nor of the name map's" : "", fitting);
        if (!known || t->data == NULL || t->width < 1 || t->width > DIFF_MAX_VOCAB)
            return step_fail(err,
                             "the candidate's tensor %d (%.64s): a hook of stepwise's (or the "
                             "name map's) other than logits, with data and a width from 1",
                             i, t->hook != NULL ? t->hook : "(no name)");
        /* [positions, heads, positions]: each head's row padded to the last
         * position, as sw_score and the package's score() give them */
        if (per_head(point) && t->width % a->positions != 0)
            return step_fail(err,
                             "the candidate's tensor %d (%.64s) is per head: [positions, heads, "
                             "positions] (width heads x %d), not width %d",
                             i, t->hook, a->positions, t->width);
        size_t rows = per_head(point) ? P * (size_t)(t->width / a->positions) : P;
        if (rows > (size_t)DIFF_MAX_POS - *count)
            return step_fail(err, "the candidate's arrays: too many tensors");
        *count += rows;
        h[i] = (ArrayHook){.point = point, .layer = layer, .index = i, .halves = halves};
    }
    ArrayHook *sorted = malloc(((size_t)a->n_tensors + 1) * sizeof *sorted);
    if (sorted == NULL) return step_fail(err, "out of memory");
    memcpy(sorted, h, (size_t)a->n_tensors * sizeof *h);
    qsort(sorted, (size_t)a->n_tensors, sizeof *sorted, compare_array_hooks);
    for (int i = 1; i < a->n_tensors; i++) {
        const ArrayHook *x = &sorted[i - 1], *y = &sorted[i];
        if (x->point != y->point || x->layer != y->layer) continue;
        char name[64];
        hook_name((HookPoint)x->point, x->layer, name, sizeof name);
        step_fail(err,
                  "the candidate's tensors %d (%.64s) and %d (%.64s) are both %s: a hook is "
                  "given once",
                  x->index, a->tensors[x->index].hook, y->index, a->tensors[y->index].hook, name);
        free(sorted);
        return false;
    }
    free(sorted);
    return true;
}

/* The activations of tensor t (as hook h) into cand, a position (and, for
 * a per-head hook, a head) each, copied; false when out of memory. */
static bool copy_tensor(DiffRun *cand, const DiffArrayTensor *t, const ArrayHook *h,
                        int positions) {
    size_t P = (size_t)positions;
    /* a per-head hook: the query at p sees keys 0..p of each head's row */
    bool each = per_head((HookPoint)h->point);
    int heads = each ? t->width / positions : 1;
    for (size_t p = 0; p < P; p++)
        for (int head = 0; head < heads; head++) {
            int n = each ? (int)p + 1 : t->width;
            const float *from = t->data + p * (size_t)t->width + (each ? (size_t)head * P : 0);
            DiffActivation *d = &cand->acts[cand->n_acts];
            *d = (DiffActivation){.point = h->point,
                                  .layer = h->layer,
                                  .pos = (int)p,
                                  .head = each ? head : -1,
                                  .n = n,
                                  .halves = h->halves};
            d->data = malloc((size_t)n * sizeof(float));
            if (d->data == NULL) return false;
            memcpy(d->data, from, (size_t)n * sizeof(float));
            cand->n_acts++;
        }
    return true;
}

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
    size_t P = (size_t)a->positions, count = 0;
    for (int i = 0; a->token_ids != NULL && i < a->positions; i++)
        if (a->token_ids[i] < 0)
            return step_fail(err, "the candidate's token_ids[%d] is negative", i);
    ArrayHook *hooks = malloc(((size_t)a->n_tensors + 1) * sizeof *hooks);
    if (hooks == NULL) return step_fail(err, "out of memory");
    bool checked = array_hooks(a, names, hooks, &count, err), ok = checked;
    if (ok && a->logits != NULL) {
        cand->vocab_size = a->vocab_size, cand->n = a->positions;
        cand->pos = malloc(P * sizeof *cand->pos);
        cand->logits = malloc(P * (size_t)a->vocab_size * sizeof(float));
        ok = cand->pos != NULL && cand->logits != NULL;
        for (size_t p = 0; ok && p < P; p++) cand->pos[p] = (int)p;
        if (ok) memcpy(cand->logits, a->logits, P * (size_t)a->vocab_size * sizeof(float));
    }
    if (ok && a->token_ids != NULL) {
        cand->input_pos = malloc(P * sizeof(int)), cand->input_token = malloc(P * sizeof(int));
        ok = cand->input_pos != NULL && cand->input_token != NULL;
        for (size_t p = 0; ok && p < P; p++) cand->input_pos[p] = (int)p;
        if (ok) memcpy(cand->input_token, a->token_ids, P * sizeof(int));
        if (ok) cand->n_inputs = a->positions, cand->inputs_stated = true;
    }
    if (ok) ok = (cand->acts = calloc(count + 1, sizeof *cand->acts)) != NULL;
    for (int i = 0; ok && i < a->n_tensors; i++)
        ok = copy_tensor(cand, &a->tensors[i], &hooks[i], a->positions);
    free(hooks);
    return ok || (checked && step_fail(err, "out of memory")); /* else err says why */
}

/* ---- each value once ---- */

/* An activation's or a KV row's place in a run. */
typedef struct {
    int point, layer, pos, head;
} Place;

static int compare_places(const void *a, const void *b) {
    const Place *x = a, *y = b;
    if (x->point != y->point) return (x->point > y->point) - (x->point < y->point);
    if (x->layer != y->layer) return (x->layer > y->layer) - (x->layer < y->layer);
    if (x->pos != y->pos) return (x->pos > y->pos) - (x->pos < y->pos);
    return (x->head > y->head) - (x->head < y->head);
}

/* False (err naming it) when the candidate states a hook at a position
 * (and head), or a KV row, twice: the comparison finds one of the copies
 * and would never look at the other, so which it compared (and the
 * verdict) would depend on the order of the file or the arrays. (Logits
 * given twice are refused as they are read: their positions increase.) */
static bool each_once(const DiffRun *r, StepError *err) {
    size_t n = (size_t)r->n_acts + (size_t)r->n_kv;
    Place *p = malloc((n + 1) * sizeof *p);
    if (p == NULL) return step_fail(err, "out of memory");
    for (int i = 0; i < r->n_acts; i++)
        p[i] = (Place){r->acts[i].point, r->acts[i].layer, r->acts[i].pos, r->acts[i].head};
    for (int i = 0; i < r->n_kv; i++)
        p[r->n_acts + i] = (Place){HOOK_KV_ROW, r->kv_layer[i], r->kv_pos[i], -1};
    qsort(p, n, sizeof *p, compare_places);
    size_t i = 1;
    while (i < n && compare_places(&p[i - 1], &p[i]) != 0) i++;
    Place twice = i < n ? p[i] : (Place){0};
    free(p);
    if (i >= n) return true;
    char name[64], head[32] = "";
    if (twice.point == HOOK_KV_ROW)
        snprintf(name, sizeof name, "the KV row of layer %d", twice.layer);
    else
        hook_name((HookPoint)twice.point, twice.layer, name, sizeof name);
    if (twice.head >= 0) snprintf(head, sizeof head, ", head %d", twice.head);
    return step_fail(err, "the candidate gives %s at pos %d%s twice: each value is given once",
                     name, twice.pos, head);
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
           each_once(cand, err) && diff_run_unhalve(cand, ref->head_dim, err);
}
