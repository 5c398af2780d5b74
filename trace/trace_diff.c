/* trace_diff.c: see trace_diff.h. */
#include "trace_diff.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../ref/file_util.h"
#include "../ref/json_util.h"
#include "../ref/score.h"
#include "trace_reader.h"

void logits_set_free(LogitsSet *s) {
    free(s->pos), free(s->logits), free(s->kv_layer), free(s->kv_pos), free(s->k), free(s->v);
    memset(s, 0, sizeof *s);
}

/* Bounds on what a file may claim: far beyond any model, small enough that
 * no product of two of them overflows. */
#define DIFF_MAX_VOCAB (1 << 24)
#define DIFF_MAX_POS   (1 << 30)
#define DIFF_MAX_LAYER (1 << 20)

/* Copy a JSON array of numbers (null: NaN) into dst[0..n); false if the
 * length differs. */
static bool read_floats(const cJSON *arr, float *dst, int n) {
    if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) != n) return false;
    int i = 0;
    const cJSON *v;
    cJSON_ArrayForEach(v, arr) dst[i++] = cJSON_IsNumber(v) ? json_float(v->valuedouble) : NAN;
    return true;
}

/* Grow *p (of elem bytes each) to hold `need` elements, doubling. */
static bool grow(void **p, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return true;
    size_t c = *cap ? *cap : 64;
    while (c < need) c *= 2;
    if (c > SIZE_MAX / elem) return false;
    void *q = realloc(*p, c * elem);
    if (q == NULL) return false;
    *p = q, *cap = c;
    return true;
}

/* Row capacities of a LogitsSet being read. */
typedef struct {
    size_t pos, logits, kv_layer, kv_pos, k, v;
} Caps;

static bool read_logits_event(LogitsSet *s, const cJSON *e, Caps *cap, long line, const char *path,
                              StepError *err) {
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(e, "logits");
    int pos;
    if (!cJSON_IsArray(arr) || !json_int_field(e, "pos", 0, DIFF_MAX_POS, &pos))
        return step_fail(err, "%s:%ld: a logits event needs a whole \"pos\" >= 0 and \"logits\"",
                         path, line);
    if (s->vocab_size == 0) s->vocab_size = cJSON_GetArraySize(arr);
    if (s->vocab_size < 1 || s->vocab_size > DIFF_MAX_VOCAB)
        return step_fail(err, "%s:%ld: logits has %d values (1 to %d expected)", path, line,
                         s->vocab_size, DIFF_MAX_VOCAB);
    void *p = s->pos, *l = s->logits;
    size_t need = (size_t)s->n + 1;
    bool grown = grow(&p, &cap->pos, need, sizeof(int));
    s->pos = p;
    grown = grown && grow(&l, &cap->logits, need, (size_t)s->vocab_size * sizeof(float));
    s->logits = l;
    if (!grown) return step_fail(err, "%s: out of memory", path);
    if (s->n > 0 && pos <= s->pos[s->n - 1])
        return step_fail(err, "%s:%ld: logits at pos %d after pos %d (positions must increase)",
                         path, line, pos, s->pos[s->n - 1]);
    s->pos[s->n] = pos;
    if (!read_floats(arr, s->logits + (size_t)s->n * s->vocab_size, s->vocab_size))
        return step_fail(err, "%s:%ld: logits has %d values, the first had %d", path, line,
                         cJSON_GetArraySize(arr), s->vocab_size);
    s->n++;
    return true;
}

static bool read_kv_event(LogitsSet *s, const cJSON *e, Caps *cap, long line, const char *path,
                          StepError *err) {
    const cJSON *k = cJSON_GetObjectItemCaseSensitive(e, "k");
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(e, "v");
    int layer, pos;
    if (!cJSON_IsArray(k) || !cJSON_IsArray(v) ||
        !json_int_field(e, "layer", 0, DIFF_MAX_LAYER, &layer) ||
        !json_int_field(e, "pos", 0, DIFF_MAX_POS, &pos))
        return step_fail(err,
                         "%s:%ld: a kv event needs whole \"layer\" and \"pos\" >= 0, "
                         "\"k\" and \"v\"",
                         path, line);
    if (s->kv_dim == 0) s->kv_dim = cJSON_GetArraySize(k);
    if (s->kv_dim < 1 || s->kv_dim > DIFF_MAX_VOCAB)
        return step_fail(err, "%s:%ld: a kv row has %d values (1 to %d expected)", path, line,
                         s->kv_dim, DIFF_MAX_VOCAB);
    void *pl = s->kv_layer, *pp = s->kv_pos, *pk = s->k, *pv = s->v;
    size_t row = (size_t)s->kv_dim * sizeof(float), need = (size_t)s->n_kv + 1;
    bool grown = grow(&pl, &cap->kv_layer, need, sizeof(int));
    s->kv_layer = pl;
    grown = grown && grow(&pp, &cap->kv_pos, need, sizeof(int));
    s->kv_pos = pp;
    grown = grown && grow(&pk, &cap->k, need, row);
    s->k = pk;
    grown = grown && grow(&pv, &cap->v, need, row);
    s->v = pv;
    if (!grown) return step_fail(err, "%s: out of memory", path);
    s->kv_layer[s->n_kv] = layer;
    s->kv_pos[s->n_kv] = pos;
    if (!read_floats(k, s->k + (size_t)s->n_kv * s->kv_dim, s->kv_dim) ||
        !read_floats(v, s->v + (size_t)s->n_kv * s->kv_dim, s->kv_dim))
        return step_fail(err, "%s:%ld: kv rows have another length than the first (%d)", path, line,
                         s->kv_dim);
    s->n_kv++;
    return true;
}

static bool read_jsonl(LogitsSet *s, const char *path, StepError *err) {
    TraceReader r;
    if (!trace_reader_open(&r, path, err)) return false;
    Caps cap = {0};
    bool ok = true, not_json;
    cJSON *e;
    while (ok && ((e = trace_reader_next(&r, &not_json)) != NULL || not_json)) {
        if (not_json) {
            ok = step_fail(err, "%s:%ld: not valid JSON (malformed or truncated)", path, r.line_no);
            break;
        }
        const char *name = trace_event_name(e);
        if (name != NULL && strcmp(name, "logits") == 0)
            ok = read_logits_event(s, e, &cap, r.line_no, path, err);
        if (name != NULL && strcmp(name, "kv") == 0)
            ok = read_kv_event(s, e, &cap, r.line_no, path, err);
        cJSON_Delete(e);
    }
    trace_reader_close(&r);
    if (ok && s->n == 0) ok = step_fail(err, "%s: no logits events", path);
    return ok;
}

/* The sidecar FILE.json of a raw float32 file: vocab_size, positions and
 * first_pos, each checked. */
static bool read_sidecar(LogitsSet *s, const char *sidecar, int *first_pos, StepError *err) {
    char *text;
    if (!file_read_text(sidecar, "sidecar", &text, err)) return false;
    cJSON *meta = cJSON_Parse(text);
    free(text);
    const char *fmt = json_string_field(meta, "format");
    *first_pos = 0;
    bool ok = fmt != NULL && strcmp(fmt, "stepwise-logits-f32") == 0 &&
              json_int_field(meta, "vocab_size", 1, DIFF_MAX_VOCAB, &s->vocab_size) &&
              json_int_field(meta, "positions", 1, DIFF_MAX_POS, &s->n) &&
              (cJSON_GetObjectItemCaseSensitive(meta, "first_pos") == NULL ||
               json_int_field(meta, "first_pos", 0, DIFF_MAX_POS, first_pos));
    cJSON_Delete(meta);
    if (!ok)
        return step_fail(err,
                         "%s: needs {\"format\": \"stepwise-logits-f32\", \"vocab_size\" "
                         "(1 to %d), \"positions\" (1 to %d)} and a whole first_pos >= 0",
                         sidecar, DIFF_MAX_VOCAB, DIFF_MAX_POS);
    return true;
}

/* Raw float32 [positions, vocab_size], described by FILE.json beside it. */
static bool read_raw(LogitsSet *s, const char *path, StepError *err) {
    char sidecar[4096];
    if (snprintf(sidecar, sizeof sidecar, "%s.json", path) >= (int)sizeof sidecar)
        return step_fail(err, "%s: name too long", path);
    int first_pos;
    if (!read_sidecar(s, sidecar, &first_pos, err)) return false;
    if ((int64_t)first_pos + s->n - 1 > INT32_MAX)
        return step_fail(err, "%s: first_pos %d + positions %d is beyond %d", sidecar, first_pos,
                         s->n, INT32_MAX);
    uint64_t want = (uint64_t)s->n * (uint64_t)s->vocab_size * sizeof(float);
    FILE *f = file_open_input(path, "logits", err);
    if (f == NULL) return false;
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || (uint64_t)st.st_size != want) {
        fclose(f);
        return step_fail(err, "%s: %lld bytes, the sidecar promises %llu (%d x %d float32)", path,
                         (long long)st.st_size, (unsigned long long)want, s->n, s->vocab_size);
    }
    s->pos = malloc((size_t)s->n * sizeof(int));
    s->logits = malloc(want);
    bool ok = s->pos != NULL && s->logits != NULL && fread(s->logits, 1, want, f) == want;
    fclose(f);
    if (!ok) return step_fail(err, "%s: read error", path);
    for (int i = 0; i < s->n; i++) s->pos[i] = first_pos + i;
    return true;
}

bool logits_set_read(LogitsSet *s, const char *path, StepError *err) {
    memset(s, 0, sizeof *s);
    size_t len = strlen(path);
    bool raw = len > 4 && strcmp(path + len - 4, ".f32") == 0;
    bool ok = raw ? read_raw(s, path, err) : read_jsonl(s, path, err);
    if (!ok) logits_set_free(s);
    return ok;
}

bool diff_tolerance_preset(DiffTolerance *t, const char *name, StepError *err) {
    *t = (DiffTolerance){.preset = name, .atol = 1e-5, .rtol = 1.3e-6};
    if (strcmp(name, "fp32") == 0) return true;
    if (strcmp(name, "fp16") == 0) {
        t->rtol = 1e-3;
        return true;
    }
    if (strcmp(name, "bf16") == 0) {
        t->rtol = 1.6e-2;
        return true;
    }
    if (strcmp(name, "int8") == 0) {
        t->by_kl = true, t->kl_mean_max = 0.05, t->top1_min = 0.90;
        return true;
    }
    return step_fail(err, "unknown --preset '%s' (fp32, fp16, bf16, int8)", name);
}

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

static int compare_doubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* One position's statistics, folded into the report. */
static void compare_position(const float *r, const float *c, int V, int pos,
                             const DiffTolerance *tol, double *lr, double *lc, double *kl_out,
                             DiffReport *rep) {
    double se = 0, ss = 0;
    for (int i = 0; i < V; i++) {
        double d = fabs((double)c[i] - (double)r[i]);
        if (rep->max_abs_pos < 0 || !(d <= rep->max_abs)) { /* a NaN counts as larger */
            rep->max_abs = d, rep->max_abs_pos = pos, rep->max_abs_id = i;
            rep->max_abs_ref = r[i], rep->max_abs_cand = c[i];
        }
        rep->mean_abs += d;
        double allowed = tol->atol + tol->rtol * fabs((double)r[i]);
        if (!(d <= allowed)) {
            if (rep->outside++ == 0) {
                rep->first_outside_pos = pos, rep->first_outside_id = i;
                rep->first_outside_ref = r[i], rep->first_outside_cand = c[i];
                rep->first_outside_allowed = allowed;
            }
        }
        se += d * d, ss += (double)r[i] * r[i];
    }
    double nmse = ss > 0 ? se / ss : se;
    rep->nmse_mean += nmse;
    if (nmse > rep->nmse_max || rep->nmse_max_pos < 0)
        rep->nmse_max = nmse, rep->nmse_max_pos = pos;
    log_softmax(r, V, lr);
    log_softmax(c, V, lc);
    double kl = 0;
    for (int i = 0; i < V; i++) kl += exp(lr[i]) * (lr[i] - lc[i]);
    *kl_out = kl;
    if (kl > rep->kl_max || rep->kl_max_pos < 0) rep->kl_max = kl, rep->kl_max_pos = pos;
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

/* A candidate KV row's key, for finding the row that matches a reference
 * row in O(log n) rather than by scanning (a file may hold many rows). */
typedef struct {
    int layer, pos, index;
} KvKey;

static int compare_kv_keys(const void *a, const void *b) {
    const KvKey *x = a, *y = b;
    if (x->layer != y->layer) return (x->layer > y->layer) - (x->layer < y->layer);
    if (x->pos != y->pos) return (x->pos > y->pos) - (x->pos < y->pos);
    return (x->index > y->index) - (x->index < y->index);
}

/* The first candidate row (lowest index) at (layer, pos), or -1. */
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

/* One matched pair of rows: the per-layer maxima (for the first
 * DIFF_KV_LAYERS layers) and whether any value is outside the tolerance. */
static bool compare_kv_row(const LogitsSet *ref, int a, const LogitsSet *cand, int b, int layer,
                           const DiffTolerance *tol, DiffReport *rep) {
    bool over = false, tabled = layer < DIFF_KV_LAYERS;
    for (int i = 0; i < ref->kv_dim; i++) {
        size_t ia = (size_t)a * ref->kv_dim + i, ib = (size_t)b * ref->kv_dim + i;
        double dk = fabs((double)cand->k[ib] - ref->k[ia]);
        double dv = fabs((double)cand->v[ib] - ref->v[ia]);
        if (tabled && dk > rep->kv_max_k[layer]) rep->kv_max_k[layer] = dk;
        if (tabled && dv > rep->kv_max_v[layer]) rep->kv_max_v[layer] = dv;
        over |= !(dk <= tol->atol + tol->rtol * fabs((double)ref->k[ia]));
        over |= !(dv <= tol->atol + tol->rtol * fabs((double)ref->v[ia]));
    }
    return over;
}

/* KV rows present on both sides, matched by (layer, pos). */
static bool compare_kv(const LogitsSet *ref, const LogitsSet *cand, const DiffTolerance *tol,
                       DiffReport *rep) {
    rep->kv_first_layer = rep->kv_first_pos = -1;
    if (ref->n_kv == 0 || cand->n_kv == 0 || ref->kv_dim != cand->kv_dim) return true;
    KvKey *keys = malloc((size_t)cand->n_kv * sizeof *keys);
    if (keys == NULL) return false;
    for (int b = 0; b < cand->n_kv; b++) keys[b] = (KvKey){cand->kv_layer[b], cand->kv_pos[b], b};
    qsort(keys, (size_t)cand->n_kv, sizeof *keys, compare_kv_keys);
    for (int a = 0; a < ref->n_kv; a++) {
        int layer = ref->kv_layer[a];
        int b = find_kv_row(keys, cand->n_kv, layer, ref->kv_pos[a]);
        if (b < 0) continue;
        int shown = layer < DIFF_KV_LAYERS ? layer + 1 : DIFF_KV_LAYERS;
        if (shown > rep->n_layers_kv) rep->n_layers_kv = shown;
        bool over = compare_kv_row(ref, a, cand, b, layer, tol, rep);
        rep->kv_compared++;
        if (over && rep->kv_first_layer < 0)
            rep->kv_first_layer = layer, rep->kv_first_pos = ref->kv_pos[a];
    }
    free(keys);
    return true;
}

bool trace_diff(const LogitsSet *ref, const LogitsSet *cand, const DiffTolerance *tol,
                DiffReport *rep, StepError *err) {
    memset(rep, 0, sizeof *rep);
    if (ref->vocab_size != cand->vocab_size)
        return step_fail(err, "vocabulary sizes differ: reference %d, candidate %d",
                         ref->vocab_size, cand->vocab_size);
    if (ref->n != cand->n)
        return step_fail(err, "the reference has %d positions, the candidate %d", ref->n, cand->n);
    for (int p = 0; p < ref->n; p++) {
        if (ref->pos[p] != cand->pos[p])
            return step_fail(err, "position %d of the reference is %d, of the candidate %d", p,
                             ref->pos[p], cand->pos[p]);
    }
    int V = ref->vocab_size;
    rep->n = ref->n, rep->vocab_size = V;
    rep->max_abs_pos = rep->nmse_max_pos = rep->kl_max_pos = rep->first_argmax_pos = -1;
    double *lr = malloc((size_t)V * sizeof(double)), *lc = malloc((size_t)V * sizeof(double));
    double *kl = malloc((size_t)ref->n * sizeof(double));
    if (lr == NULL || lc == NULL || kl == NULL) {
        free(lr), free(lc), free(kl);
        return step_fail(err, "diff: out of memory");
    }
    for (int p = 0; p < ref->n; p++) {
        compare_position(ref->logits + (size_t)p * V, cand->logits + (size_t)p * V, V, ref->pos[p],
                         tol, lr, lc, &kl[p], rep);
        rep->kl_mean += kl[p];
    }
    rep->nmse_mean /= ref->n;
    rep->mean_abs /= (double)ref->n * V;
    rep->kl_mean /= ref->n;
    rep->dp_top_rms = sqrt(rep->dp_top_rms / ref->n);
    qsort(kl, (size_t)ref->n, sizeof(double), compare_doubles);
    int i99 = (int)ceil(0.99 * ref->n) - 1;
    rep->kl_p99 = kl[i99 < 0 ? 0 : i99];
    free(lr), free(lc), free(kl);
    if (!compare_kv(ref, cand, tol, rep)) return step_fail(err, "diff: out of memory");
    if (tol->by_kl)
        rep->pass =
            rep->kl_mean <= tol->kl_mean_max && (double)rep->top1_agree >= tol->top1_min * rep->n;
    else
        rep->pass = rep->outside == 0 && rep->kv_first_layer < 0;
    return true;
}
