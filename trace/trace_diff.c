/* trace_diff.c: see trace_diff.h. */
#include "trace/trace_diff.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ref/score.h"

bool diff_tolerance_custom(DiffTolerance *t, double atol, double rtol, StepError *err) {
    if (atol != atol || rtol != rtol) return step_fail(err, "atol and rtol must be numbers");
    if (atol < 0 && rtol < 0) return true; /* the preset's own */
    if (t->rule == RULE_KL) t->rule = RULE_ELEMENT;
    if (atol >= 0) t->atol = atol;
    if (rtol >= 0) t->rtol = rtol;
    snprintf(t->preset, sizeof t->preset, "custom");
    return true;
}

bool diff_tolerance_preset(DiffTolerance *t, const char *name, StepError *err) {
    static const struct {
        const char *name;
        DiffRule rule;
        double atol, rtol;
    } PRESETS[] = {
        {"fp32", RULE_ROW, 1e-6, 3e-5},       {"fp32-elementwise", RULE_ELEMENT, 1e-5, 1.3e-6},
        {"f16-kv", RULE_ROW, 1e-5, 3e-2},     {"fp16", RULE_ELEMENT, 1e-5, 1e-3},
        {"bf16", RULE_ELEMENT, 1e-5, 1.6e-2}, {"int8", RULE_KL, 1e-6, 0},
    };
    for (size_t i = 0; i < sizeof PRESETS / sizeof PRESETS[0]; i++) {
        if (strcmp(name, PRESETS[i].name) != 0) continue;
        *t = (DiffTolerance){.rule = PRESETS[i].rule,
                             .atol = PRESETS[i].atol,
                             .rtol = PRESETS[i].rtol,
                             .kl_mean_max = 0.05,
                             .top1_min = 0.90,
                             .walk_rtol = 0.1};
        snprintf(t->preset, sizeof t->preset, "%s", name);
        return true;
    }
    return step_fail(
        err, "unknown --preset '%.40s' (fp32, fp32-elementwise, f16-kv, fp16, bf16, int8)", name);
}

double diff_allowed(const DiffTolerance *t, int point, double r_i, double scale) {
    (void)point; /* one rule for every hook; the presets could tell them apart */
    switch (t->rule) {
        case RULE_ROW:
            return t->atol + t->rtol * scale;
        case RULE_ELEMENT:
            return t->atol + t->rtol * fabs(r_i);
        case RULE_KL:
            return t->atol + t->walk_rtol * scale;
    }
    return 0;
}

/* Whether the difference d is worse than worst, the worst so far (-1: none
 * yet): a NaN is worse than any number, and the first NaN stays, so that
 * a figure never reports a NaN as a number (d > NaN is false: a plain
 * comparison would keep the first finite d after it, or lose the NaN). */
static bool worse(double d, double worst) {
    if (isnan(worst)) return false;
    return isnan(d) || d > worst;
}

/* Compare one tensor: its worst element into *p (a NaN difference is the
 * worst, reported as NaN); returns how many elements are outside the
 * tolerance (a NaN difference always is). */
static long compare_tensor(const float *r, const float *c, int n, const DiffTolerance *tol,
                           DiffPoint *p) {
    double scale = 0;
    for (int i = 0; i < n; i++)
        if (fabs((double)r[i]) > scale) scale = fabs((double)r[i]);
    long outside = 0;
    p->max_abs = -1, p->index = 0;
    for (int i = 0; i < n; i++) {
        double d = fabs((double)c[i] - (double)r[i]);
        outside += !(d <= diff_allowed(tol, p->point, r[i], scale));
        if (worse(d, p->max_abs)) p->max_abs = d, p->index = i;
    }
    p->scale = scale;
    p->rel = scale > 0 || isnan(p->max_abs) ? p->max_abs / scale : p->max_abs > 0 ? INFINITY : 0;
    p->ref = r[p->index], p->cand = c[p->index];
    p->allowed = diff_allowed(tol, p->point, r[p->index], scale);
    return outside;
}

/* ---- the inputs ---- */

/* The first position both sides state a token for and whose tokens differ
 * (-1: none), and how many positions were compared. */
static void check_inputs(const DiffRun *ref, const DiffRun *cand, DiffReport *rep) {
    rep->inputs_differ_pos = -1;
    rep->inputs_checked = ref->inputs_stated && cand->inputs_stated;
    if (!rep->inputs_checked) return;
    for (int i = 0, j = 0; i < ref->n_inputs && j < cand->n_inputs;) {
        int a = ref->input_pos[i], b = cand->input_pos[j];
        if (a < b) {
            i++;
        } else if (b < a) {
            j++;
        } else {
            rep->inputs_compared++;
            if (ref->input_token[i] != cand->input_token[j]) {
                rep->inputs_differ_pos = a;
                rep->ref_token = ref->input_token[i], rep->cand_token = cand->input_token[j];
                return;
            }
            i++, j++;
        }
    }
}

/* ---- the walk through the hooks ---- */

/* One tensor of a run in execution order: position, then embed, the
 * layers in order (each layer's hooks in the order HookPoint lists them),
 * final_norm and logits; heads last. Its values are read when compared
 * (side_values). */
typedef struct {
    int pos, layer_key, point, head;
    int n;
    const DiffActivation *act; /* an activation, or NULL: */
    int row;                   /* then this row of the run's logits */
} Entry;

/* One run as the comparison reads it: its entries in order, and room to
 * read a tensor (and, for the reference, a second: another hook's,
 * find_other_hook). */
typedef struct {
    const DiffRun *run;
    bool to_logprobs; /* its logits rows read as log-probabilities */
    Entry *e;         /* [n] */
    int n;
    int widest;            /* values in its widest tensor, row or KV row */
    float *values, *other; /* [2 widest] each; other: the reference's only */
    double *lp;            /* [vocab_size]: log_softmax's room */
} Side;

static int compare_entries(const void *a, const void *b) {
    const Entry *x = a, *y = b;
    if (x->pos != y->pos) return (x->pos > y->pos) - (x->pos < y->pos);
    if (x->layer_key != y->layer_key)
        return (x->layer_key > y->layer_key) - (x->layer_key < y->layer_key);
    if (x->point != y->point) return (x->point > y->point) - (x->point < y->point);
    return (x->head > y->head) - (x->head < y->head);
}

static int layer_key(int point, int layer) {
    if (point == HOOK_EMBED) return -1;
    return hook_in_block((HookPoint)point) ? layer : INT_MAX;
}

/* The run's activations and logits rows before position limit, sorted, and
 * room to read them (with other: room for a second). Close s with
 * side_close, whatever the result. */
static bool side_open(Side *s, const DiffRun *r, bool to_logprobs, bool other, int limit) {
    *s = (Side){.run = r, .to_logprobs = to_logprobs, .widest = r->kv_dim};
    s->e = malloc(((size_t)r->n_acts + (size_t)r->n + 1) * sizeof *s->e);
    if (s->e == NULL) return false;
    for (int i = 0; i < r->n_acts; i++) {
        const DiffActivation *a = &r->acts[i];
        if (a->pos >= limit) continue;
        s->e[s->n++] = (Entry){.pos = a->pos,
                               .layer_key = layer_key(a->point, a->layer),
                               .point = a->point,
                               .head = a->head,
                               .n = a->n,
                               .act = a};
        if (a->n > s->widest) s->widest = a->n;
    }
    for (int i = 0; i < r->n; i++)
        if (r->pos[i] < limit)
            s->e[s->n++] = (Entry){.pos = r->pos[i],
                                   .layer_key = INT_MAX,
                                   .point = HOOK_LOGITS,
                                   .head = -1,
                                   .n = r->vocab_size,
                                   .row = i};
    if (r->n > 0 && r->vocab_size > s->widest) s->widest = r->vocab_size;
    qsort(s->e, (size_t)s->n, sizeof *s->e, compare_entries);
    size_t room = 2 * (size_t)(s->widest > 0 ? s->widest : 1);
    s->values = malloc(room * sizeof(float));
    s->other = other ? malloc(room * sizeof(float)) : NULL;
    s->lp = malloc((size_t)(r->vocab_size > 0 ? r->vocab_size : 1) * sizeof(double));
    return s->values != NULL && (s->other != NULL || !other) && s->lp != NULL;
}

static void side_close(Side *s) {
    free(s->e), free(s->values), free(s->other), free(s->lp);
}

/* Entry e's values, read into room [2 widest] (or in the run's memory);
 * logits rows as log-probabilities when the side compares them so. */
static const float *side_values(const Side *s, const Entry *e, float *room) {
    if (e->act != NULL) return diff_run_activation(s->run, e->act, room);
    const float *x = diff_run_logits_row(s->run, e->row, room);
    if (!s->to_logprobs) return x;
    log_softmax(x, e->n, s->lp);
    for (int i = 0; i < e->n; i++) room[i] = (float)s->lp[i];
    return room;
}

static const Entry *find_entry(const Entry *e, int n, const Entry *want) {
    int lo = 0, hi = n;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (compare_entries(&e[mid], want) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && compare_entries(&e[lo], want) == 0 ? &e[lo] : NULL;
}

/* Fold one compared tensor into the per-layer table. */
static void table_add(DiffReport *rep, const DiffPoint *p) {
    if (hook_in_block((HookPoint)p->point)) {
        if (p->layer >= DIFF_TABLE_LAYERS) return;
        if (p->layer + 1 > rep->table_layers) rep->table_layers = p->layer + 1;
        double *a = &rep->table_abs[p->layer][p->point], *r = &rep->table_rel[p->layer][p->point];
        if (!rep->table_has[p->layer][p->point] || worse(p->max_abs, *a)) *a = p->max_abs;
        if (!rep->table_has[p->layer][p->point] || worse(p->rel, *r)) *r = p->rel;
        rep->table_has[p->layer][p->point] = true;
    } else {
        if (!rep->outside_has[p->point] || worse(p->max_abs, rep->outside_abs[p->point]))
            rep->outside_abs[p->point] = p->max_abs;
        rep->outside_has[p->point] = true;
    }
}

/* Whether the candidate's values c [n], outside tolerance at reference
 * entry r, are within tolerance of the reference's tensor of another hook
 * at r's layer, position and head: that hook into rep->first_other. */
static void find_other_hook(const Side *ref, const Entry *r, const float *c, int n,
                            const DiffTolerance *tol, DiffReport *rep) {
    if (r->point == HOOK_LOGITS) return;
    for (int i = 0; i < ref->n; i++) {
        const Entry *o = &ref->e[i];
        if (o->pos != r->pos || o->layer_key != r->layer_key || o->head != r->head ||
            o->point == r->point || o->point == HOOK_LOGITS || o->n != n)
            continue;
        DiffPoint q = {.point = o->point,
                       .layer = r->layer_key < 0 || r->layer_key == INT_MAX ? -1 : r->layer_key,
                       .pos = o->pos,
                       .head = o->head};
        if (compare_tensor(side_values(ref, o, ref->other), c, n, tol, &q) == 0) {
            rep->first_is_other_hook = true, rep->first_other = q;
            return;
        }
    }
}

/* ---- the logits' statistics ---- */

static int argmax_of(const float *x, int n) {
    int best = 0;
    for (int i = 1; i < n; i++) best = x[i] > x[best] ? i : best;
    return best;
}

/* Whether id is among the 5 largest of x (lower id first on ties). */
static bool in_top5(const float *x, int n, int id) {
    int better = 0;
    for (int i = 0; i < n; i++) better += x[i] > x[id] || (x[i] == x[id] && i < id);
    return better < 5;
}

/* Ascending, NaN last (above every number): a consistent order for qsort,
 * so that a NaN KL reaches the 99th percentile as the worst. */
static int compare_doubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    if (isnan(x) || isnan(y)) return (isnan(x) != 0) - (isnan(y) != 0);
    return (x > y) - (x < y);
}

/* One position's statistics, folded into the report. */
static void logits_position(const float *r, const float *c, int V, int pos, double *lr, double *lc,
                            double *kl_out, DiffReport *rep) {
    /* the logits outside the tolerance are counted by the hook walk (walk_hooks) */
    double se = 0, ss = 0;
    for (int i = 0; i < V; i++) {
        double d = fabs((double)c[i] - (double)r[i]);
        if (rep->max_abs_pos < 0 || worse(d, rep->max_abs)) { /* a NaN counts as larger */
            rep->max_abs = d, rep->max_abs_pos = pos, rep->max_abs_id = i;
            rep->max_abs_ref = r[i], rep->max_abs_cand = c[i];
        }
        rep->mean_abs += d;
        se += d * d, ss += (double)r[i] * r[i];
    }
    double nmse = ss > 0 ? se / ss : se;
    rep->nmse_mean += nmse;
    if (worse(nmse, rep->nmse_max) || rep->nmse_max_pos < 0)
        rep->nmse_max = nmse, rep->nmse_max_pos = pos;
    log_softmax(r, V, lr);
    log_softmax(c, V, lc);
    double kl = 0;
    for (int i = 0; i < V; i++) kl += exp(lr[i]) * (lr[i] - lc[i]);
    *kl_out = kl;
    if (worse(kl, rep->kl_max) || rep->kl_max_pos < 0) rep->kl_max = kl, rep->kl_max_pos = pos;
    int ar = argmax_of(r, V), ac = argmax_of(c, V);
    rep->top1_agree += ar == ac;
    double dp = exp(lc[ar]) - exp(lr[ar]);
    rep->dp_top_rms += dp * dp;
    if (ar != ac && rep->first_argmax_pos < 0) {
        rep->first_argmax_pos = pos, rep->ref_argmax = ar, rep->cand_argmax = ac;
        rep->ref_in_cand_top5 = in_top5(c, V, ar);
        rep->cand_in_ref_top5 = in_top5(r, V, ac);
    }
}

/* Room for the logits' statistics as the hook walk meets each pair of
 * rows (walk_hooks): two log-softmaxes [vocab] and each position's KL
 * [positions]. kl NULL: a side has no logits. */
typedef struct {
    double *lr, *lc, *kl;
} LogitsRoom;

static bool logits_room(LogitsRoom *room, int V, int positions) {
    room->lr = malloc((size_t)V * sizeof(double));
    room->lc = malloc((size_t)V * sizeof(double));
    room->kl = malloc(((size_t)positions + 1) * sizeof(double));
    return room->lr != NULL && room->lc != NULL && room->kl != NULL;
}

static void logits_room_free(LogitsRoom *room) {
    free(room->lr), free(room->lc), free(room->kl);
}

/* The statistics over the rep->n positions the walk compared: means, the
 * RMS, and the 99th percentile of the KLs (sorted in place). */
static void logits_finish(DiffReport *rep, double *kl, int V) {
    if (rep->n == 0) return;
    rep->nmse_mean /= rep->n;
    rep->mean_abs /= (double)rep->n * V;
    rep->kl_mean /= rep->n;
    rep->dp_top_rms = sqrt(rep->dp_top_rms / rep->n);
    qsort(kl, (size_t)rep->n, sizeof(double), compare_doubles);
    int i99 = (int)ceil(0.99 * rep->n) - 1;
    rep->kl_p99 = kl[i99 < 0 ? 0 : i99];
}

/* A hook the candidate has none of, anywhere, is not compared (and said
 * so); one it has elsewhere but not here is missing. Each pair of logits
 * rows also goes into the logits' statistics (room), read once. */
static void walk_hooks(const Side *ref, const Side *cand, const DiffTolerance *tol,
                       LogitsRoom *room, DiffReport *rep) {
    bool has[N_HOOKS] = {false};
    for (int i = 0; i < cand->n; i++) has[cand->e[i].point] = true;
    for (int i = 0; i < ref->n; i++) {
        const Entry *r = &ref->e[i], *c = find_entry(cand->e, cand->n, r);
        char name[64];
        if (c == NULL && !has[r->point]) {
            rep->hook_absent[r->point] = r->point != HOOK_LOGITS;
            continue;
        }
        if (c == NULL) {
            if (r->point == HOOK_LOGITS) {
                rep->missing_logits++;
            } else if (rep->missing_acts++ == 0) {
                hook_name((HookPoint)r->point, r->layer_key, name, sizeof name);
                snprintf(rep->first_missing_hook, sizeof rep->first_missing_hook, "%s", name);
                rep->first_missing_pos = r->pos;
            }
            continue;
        }
        DiffPoint p = {.point = r->point,
                       .layer =
                           r->point == HOOK_LOGITS || r->layer_key < 0 || r->layer_key == INT_MAX
                               ? -1
                               : r->layer_key,
                       .pos = r->pos,
                       .head = r->head};
        long outside;
        const float *cv = NULL;
        if (c->n != r->n) { /* another shape: wrong as a whole */
            p.max_abs = p.rel = INFINITY, p.index = -1, outside = r->n;
        } else {
            cv = side_values(cand, c, cand->values);
            const float *rv = side_values(ref, r, ref->values);
            outside = compare_tensor(rv, cv, r->n, tol, &p);
            if (r->point == HOOK_LOGITS && room->kl != NULL) {
                logits_position(rv, cv, r->n, r->pos, room->lr, room->lc, &room->kl[rep->n], rep);
                rep->kl_mean += room->kl[rep->n++];
            }
        }
        if (r->point != HOOK_LOGITS) rep->acts_compared++;
        if (r->point == HOOK_LOGITS) rep->outside += outside; /* the logits the report counts */
        table_add(rep, &p);
        if (outside && r->point == HOOK_LOGITS && !rep->logits_outside)
            rep->logits_outside = true, rep->first_logits = p;
        if (outside && !rep->diverged) {
            rep->diverged = true, rep->first = p;
            if (cv != NULL) find_other_hook(ref, r, cv, c->n, tol, rep);
        }
    }
}

/* ---- KV rows ---- */

/* A candidate KV row's key, for finding the row that matches a reference
 * row in O(log n). */
typedef struct {
    int layer, pos, index;
} KvKey;

static int compare_kv_keys(const void *a, const void *b) {
    const KvKey *x = a, *y = b;
    if (x->layer != y->layer) return (x->layer > y->layer) - (x->layer < y->layer);
    if (x->pos != y->pos) return (x->pos > y->pos) - (x->pos < y->pos);
    return (x->index > y->index) - (x->index < y->index);
}

static int find_kv_row(const KvKey *keys, int n, int layer, int pos) {
    int lo = 0, hi = n;
    KvKey want = {layer, pos, -1};
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (compare_kv_keys(&keys[mid], &want) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && keys[lo].layer == layer && keys[lo].pos == pos ? keys[lo].index : -1;
}

/* KV rows of the reference before limit, matched by (layer, pos); a row
 * the candidate lacks is counted. */
static bool compare_kv(const DiffRun *ref, const DiffRun *cand, int limit, const DiffTolerance *tol,
                       float *ref_room, float *cand_room, DiffReport *rep) {
    rep->kv_first_layer = rep->kv_first_pos = -1;
    rep->cand_has_kv = cand->n_kv > 0;
    if (ref->n_kv == 0) return true;
    KvKey *keys = malloc(((size_t)cand->n_kv + 1) * sizeof *keys);
    if (keys == NULL) return false;
    for (int b = 0; b < cand->n_kv; b++) keys[b] = (KvKey){cand->kv_layer[b], cand->kv_pos[b], b};
    qsort(keys, (size_t)cand->n_kv, sizeof *keys, compare_kv_keys);
    int D = ref->kv_dim;
    for (int a = 0; a < ref->n_kv; a++) {
        int layer = ref->kv_layer[a], pos = ref->kv_pos[a];
        if (pos >= limit) continue;
        int b = cand->kv_dim == D ? find_kv_row(keys, cand->n_kv, layer, pos) : -1;
        if (b < 0) {
            rep->missing_kv++;
            continue;
        }
        bool over = false;
        for (int which = 0; which < 2; which++) {
            const float *r = diff_run_kv_row(ref, a, which, ref_room);
            const float *c = diff_run_kv_row(cand, b, which, cand_room);
            DiffPoint p = {.point = HOOK_KV_ROW, .layer = layer, .pos = pos, .head = which};
            over |= compare_tensor(r, c, D, tol, &p) > 0;
            if (layer < DIFF_TABLE_LAYERS) {
                double *m = which ? &rep->kv_max_v[layer] : &rep->kv_max_k[layer];
                if (worse(p.max_abs, *m)) *m = p.max_abs;
                if (layer + 1 > rep->n_layers_kv) rep->n_layers_kv = layer + 1;
            }
        }
        rep->kv_compared++;
        if (over && rep->kv_first_layer < 0) rep->kv_first_layer = layer, rep->kv_first_pos = pos;
    }
    free(keys);
    return true;
}

/* ---- putting it together ---- */

static void verdict(const DiffTolerance *tol, DiffReport *rep) {
    const char *why = NULL;
    if (rep->routing.diverged) /* before the numbers that follow from it */
        why = "the candidate routes a token to other experts";
    else if (rep->cand_has_logits && rep->missing_logits > 0)
        why = "the candidate lacks logits the reference has";
    else if (rep->cand_has_kv && rep->missing_kv > 0)
        why = "the candidate lacks KV rows the reference has";
    else if (rep->cand_has_acts && rep->missing_acts > 0)
        why = "the candidate lacks activations the reference has";
    else if (tol->rule == RULE_KL && rep->n > 0 &&
             !(rep->kl_mean <= tol->kl_mean_max && rep->top1_agree >= tol->top1_min * rep->n))
        why = "outside tolerance (mean KL or top-1 agreement)";
    else if (tol->rule != RULE_KL && (rep->diverged || rep->kv_first_layer >= 0))
        why = "outside tolerance";
    /* Last: a divergence before it explains it (another token sampled from
     * other numbers); without one, the runs were still not given the same
     * sequence, and what was never compared cannot pass. */
    else if (rep->inputs_differ_pos >= 0)
        why = "the candidate was fed other tokens: nothing from there on is compared";
    rep->pass = why == NULL;
    snprintf(rep->fail_reason, sizeof rep->fail_reason, "%s", why ? why : "");
}

bool trace_diff(const DiffRun *ref, const DiffRun *cand, const DiffTolerance *tol,
                bool teacher_forced, DiffReport *rep, StepError *err) {
    memset(rep, 0, sizeof *rep);
    rep->max_abs_pos = rep->nmse_max_pos = rep->kl_max_pos = rep->first_argmax_pos = -1;
    rep->first_missing_pos = -1;
    if (ref->n > 0 && cand->n > 0 && ref->vocab_size != cand->vocab_size)
        return step_fail(err, "vocabulary sizes differ: reference %d, candidate %d",
                         ref->vocab_size, cand->vocab_size);
    check_inputs(ref, cand, rep);
    int limit = rep->inputs_differ_pos >= 0 ? rep->inputs_differ_pos : INT_MAX;
    if (rep->inputs_differ_pos >= 0 && (teacher_forced || (ref->scored && cand->scored)))
        return step_fail(err,
                         "inputs differ from position %d (reference token %d, candidate %d): "
                         "a teacher-forced comparison needs the same tokens",
                         rep->inputs_differ_pos, rep->ref_token, rep->cand_token);
    rep->vocab_size = ref->vocab_size;
    rep->cand_has_acts = cand->n_acts > 0;
    rep->cand_has_logits = cand->n > 0;
    /* log-probabilities on either side: compare both as log-probabilities */
    rep->logprobs = ref->logprobs || cand->logprobs;
    Side rs, cs;
    bool ref_open = side_open(&rs, ref, rep->logprobs && !ref->logprobs, true, limit);
    bool cand_open = side_open(&cs, cand, rep->logprobs && !cand->logprobs, false, limit);
    LogitsRoom room = {0};
    bool ok = ref_open && cand_open && /* both opened either way: side_close frees both */
              (ref->n == 0 || cand->n == 0 || logits_room(&room, ref->vocab_size, ref->n));
    if (ok) {
        walk_hooks(&rs, &cs, tol, &room, rep);
        logits_finish(rep, room.kl, ref->vocab_size);
        ok = compare_kv(ref, cand, limit, tol, rs.values, cs.values, rep) &&
             diff_routing(ref, cand, limit, &rep->routing);
    }
    logits_room_free(&room);
    side_close(&rs), side_close(&cs);
    if (!ok) return step_fail(err, "diff: out of memory");
    if (diff_run_read_short(ref) || diff_run_read_short(cand))
        return step_fail(err, "diff: a file shrank while it was read (rows came short)");
    /* Inputs that differ from the first position on leave nothing to
     * compare, and that is the finding: a fail naming the position and the
     * tokens (an engine fed other tokens, a BOS forgotten), not an error
     * that hides them. Nothing in common otherwise is an error. */
    if (rep->n == 0 && rep->acts_compared == 0 && rep->kv_compared == 0 && limit == INT_MAX)
        return step_fail(err, "nothing to compare: no position has logits, activations or KV rows "
                              "on both sides");
    verdict(tol, rep);
    return true;
}
