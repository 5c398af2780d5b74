/* trace_diff.c: see trace_diff.h. */
#include "trace_diff.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../ref/file_util.h"
#include "../ref/score.h"
#include "trace_reader.h"

void logits_set_free(LogitsSet *s) {
    free(s->pos), free(s->logits), free(s->kv_layer), free(s->kv_pos), free(s->k), free(s->v);
    memset(s, 0, sizeof *s);
}

/* Copy a JSON array of numbers (null: NaN) into dst[0..n); false if the
 * length differs. */
static bool read_floats(const cJSON *arr, float *dst, int n) {
    if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) != n) return false;
    int i = 0;
    const cJSON *v;
    cJSON_ArrayForEach(v, arr) dst[i++] = cJSON_IsNumber(v) ? (float)v->valuedouble : NAN;
    return true;
}

/* Grow *p (of elem bytes) to hold `need` elements, doubling. */
static bool grow(void **p, int *cap, int need, size_t elem) {
    if (need <= *cap) return true;
    int c = *cap ? *cap : 64;
    while (c < need) c *= 2;
    void *q = realloc(*p, (size_t)c * elem);
    if (q == NULL) return false;
    *p = q, *cap = c;
    return true;
}

static bool read_logits_event(LogitsSet *s, const cJSON *e, int *cap, long line, const char *path,
                              StepError *err) {
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(e, "logits");
    const cJSON *pos = cJSON_GetObjectItemCaseSensitive(e, "pos");
    if (!cJSON_IsArray(arr) || !cJSON_IsNumber(pos))
        return step_fail(err, "%s:%ld: a logits event needs \"pos\" and \"logits\"", path, line);
    if (s->vocab_size == 0) s->vocab_size = cJSON_GetArraySize(arr);
    int cap_pos = *cap;
    void *p = s->pos, *l = s->logits;
    if (!grow(&p, &cap_pos, s->n + 1, sizeof(int)) ||
        !grow(&l, cap, s->n + 1, (size_t)s->vocab_size * sizeof(float)))
        return step_fail(err, "%s: out of memory", path);
    s->pos = p, s->logits = l;
    if (s->n > 0 && pos->valueint <= s->pos[s->n - 1])
        return step_fail(err, "%s:%ld: logits at pos %d after pos %d (positions must increase)",
                         path, line, pos->valueint, s->pos[s->n - 1]);
    s->pos[s->n] = pos->valueint;
    if (!read_floats(arr, s->logits + (size_t)s->n * s->vocab_size, s->vocab_size))
        return step_fail(err, "%s:%ld: logits has %d values, the first had %d", path, line,
                         cJSON_GetArraySize(arr), s->vocab_size);
    s->n++;
    return true;
}

static bool read_kv_event(LogitsSet *s, const cJSON *e, int *cap, long line, const char *path,
                          StepError *err) {
    const cJSON *k = cJSON_GetObjectItemCaseSensitive(e, "k");
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(e, "v");
    if (!cJSON_IsArray(k) || !cJSON_IsArray(v))
        return step_fail(err, "%s:%ld: a kv event needs \"k\" and \"v\"", path, line);
    if (s->kv_dim == 0) s->kv_dim = cJSON_GetArraySize(k);
    int c1 = *cap, c2 = *cap, c3 = *cap;
    void *pl = s->kv_layer, *pp = s->kv_pos, *pk = s->k, *pv = s->v;
    size_t row = (size_t)s->kv_dim * sizeof(float);
    if (!grow(&pl, &c1, s->n_kv + 1, sizeof(int)) || !grow(&pp, &c2, s->n_kv + 1, sizeof(int)) ||
        !grow(&pk, &c3, s->n_kv + 1, row) || !grow(&pv, cap, s->n_kv + 1, row))
        return step_fail(err, "%s: out of memory", path);
    s->kv_layer = pl, s->kv_pos = pp, s->k = pk, s->v = pv;
    s->kv_layer[s->n_kv] = cJSON_GetObjectItemCaseSensitive(e, "layer")->valueint;
    s->kv_pos[s->n_kv] = cJSON_GetObjectItemCaseSensitive(e, "pos")->valueint;
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
    int cap = 0, kv_cap = 0;
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
            ok = read_kv_event(s, e, &kv_cap, r.line_no, path, err);
        cJSON_Delete(e);
    }
    trace_reader_close(&r);
    if (ok && s->n == 0) ok = step_fail(err, "%s: no logits events", path);
    return ok;
}

/* Raw float32 [positions, vocab_size], described by FILE.json beside it. */
static bool read_raw(LogitsSet *s, const char *path, StepError *err) {
    char sidecar[4096];
    snprintf(sidecar, sizeof sidecar, "%s.json", path);
    char *text;
    if (!file_read_text(sidecar, "sidecar", &text, err)) return false;
    cJSON *meta = cJSON_Parse(text);
    free(text);
    const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(meta, "format");
    const cJSON *vocab = cJSON_GetObjectItemCaseSensitive(meta, "vocab_size");
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(meta, "positions");
    const cJSON *first = cJSON_GetObjectItemCaseSensitive(meta, "first_pos");
    bool ok = cJSON_IsString(fmt) && strcmp(fmt->valuestring, "stepwise-logits-f32") == 0 &&
              cJSON_IsNumber(vocab) && vocab->valueint > 0 && cJSON_IsNumber(n) && n->valueint > 0;
    if (!ok) {
        cJSON_Delete(meta);
        return step_fail(err,
                         "%s: needs {\"format\": \"stepwise-logits-f32\", \"vocab_size\", "
                         "\"positions\"}",
                         sidecar);
    }
    s->vocab_size = vocab->valueint, s->n = n->valueint;
    int first_pos = cJSON_IsNumber(first) ? first->valueint : 0;
    cJSON_Delete(meta);
    uint64_t want = (uint64_t)s->n * (uint64_t)s->vocab_size * sizeof(float);
    FILE *f = fopen(path, "rb");
    struct stat st;
    if (f == NULL) return step_fail(err, "%s: cannot open: %s", path, strerror(errno));
    if (fstat(fileno(f), &st) != 0 || (uint64_t)st.st_size != want) {
        fclose(f);
        return step_fail(err, "%s: %lld bytes, the sidecar promises %llu (%d x %d float32)", path,
                         (long long)st.st_size, (unsigned long long)want, s->n, s->vocab_size);
    }
    s->pos = malloc((size_t)s->n * sizeof(int));
    s->logits = malloc(want);
    ok = s->pos != NULL && s->logits != NULL && fread(s->logits, 1, want, f) == want;
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
    *t = (DiffTolerance){name, 1e-5, 1.3e-6, false, 0, 0};
    if (strcmp(name, "fp32") == 0) return true;
    if (strcmp(name, "fp16") == 0) return t->rtol = 1e-3, true;
    if (strcmp(name, "bf16") == 0) return t->rtol = 1.6e-2, true;
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

/* KV rows present on both sides, matched by (layer, pos). */
static void compare_kv(const LogitsSet *ref, const LogitsSet *cand, const DiffTolerance *tol,
                       DiffReport *rep) {
    rep->kv_first_layer = rep->kv_first_pos = -1;
    if (ref->n_kv == 0 || cand->n_kv == 0 || ref->kv_dim != cand->kv_dim) return;
    for (int a = 0; a < ref->n_kv; a++) {
        for (int b = 0; b < cand->n_kv; b++) {
            if (ref->kv_layer[a] != cand->kv_layer[b] || ref->kv_pos[a] != cand->kv_pos[b])
                continue;
            int layer = ref->kv_layer[a];
            if (layer >= 64) break;
            if (layer + 1 > rep->n_layers_kv) rep->n_layers_kv = layer + 1;
            bool over = false;
            for (int i = 0; i < ref->kv_dim; i++) {
                size_t ia = (size_t)a * ref->kv_dim + i, ib = (size_t)b * ref->kv_dim + i;
                double dk = fabs((double)cand->k[ib] - ref->k[ia]);
                double dv = fabs((double)cand->v[ib] - ref->v[ia]);
                if (dk > rep->kv_max_k[layer]) rep->kv_max_k[layer] = dk;
                if (dv > rep->kv_max_v[layer]) rep->kv_max_v[layer] = dv;
                over |= !(dk <= tol->atol + tol->rtol * fabs((double)ref->k[ia]));
                over |= !(dv <= tol->atol + tol->rtol * fabs((double)ref->v[ia]));
            }
            rep->kv_compared++;
            if (over && rep->kv_first_layer < 0)
                rep->kv_first_layer = layer, rep->kv_first_pos = ref->kv_pos[a];
            break;
        }
    }
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
    compare_kv(ref, cand, tol, rep);
    if (tol->by_kl)
        rep->pass =
            rep->kl_mean <= tol->kl_mean_max && (double)rep->top1_agree >= tol->top1_min * rep->n;
    else
        rep->pass = rep->outside == 0 && rep->kv_first_layer < 0;
    return true;
}
