/* trace_show.c: see trace_show.h.
 *
 * A trace to show may come from anywhere, so every field is checked before
 * it is used: a malformed event the step needs is a one-line error naming
 * its line, and a field that only decorates the display (a piece, a mass)
 * is left out when it is not what it should be. */
#include "trace_show.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../ref/json_util.h"
#include "../ref/layers.h"
#include "trace_reader.h"

/* The largest vocabulary and position a trace may name: far beyond any
 * model, and small enough that a table of pieces costs at most 16 MiB. */
#define SHOW_MAX_VOCAB (1 << 21)
#define SHOW_MAX_POS   (1 << 30)

/* What the step needs from the whole trace. */
typedef struct {
    cJSON *run, *logits, *sample, *forward; /* owned; the events at the step */
    char **pieces;                          /* [vocab] known piece texts, or NULL */
    int vocab, n_prompt, pos;
} Step;

static void remember_piece(Step *s, const cJSON *id_json, const cJSON *piece) {
    long long id;
    if (!json_whole_number(id_json, 0, s->vocab - 1, &id) || !cJSON_IsString(piece)) return;
    if (s->pieces[id] == NULL) s->pieces[id] = strdup(piece->valuestring);
}

/* Keep `e` in *slot (deleting what was there) and return true. */
static bool keep(cJSON **slot, cJSON *e) {
    cJSON_Delete(*slot);
    *slot = e;
    return true;
}

static bool read_header(Step *s, const cJSON *e, const char *path, long line, StepError *err) {
    if (!json_int_field(cJSON_GetObjectItemCaseSensitive(e, "model"), "vocab_size", 1,
                        SHOW_MAX_VOCAB, &s->vocab))
        return step_fail(err, "trace %s:%ld: the run header needs model.vocab_size in [1, %d]",
                         path, line, SHOW_MAX_VOCAB);
    s->n_prompt = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(e, "prompt_tokens"));
    s->pieces = calloc((size_t)s->vocab, sizeof(char *));
    if (s->pieces == NULL) return step_fail(err, "trace %s: out of memory", path);
    if (s->pos < 0 && s->n_prompt == 0)
        return step_fail(err, "trace %s:%ld: the run header has no prompt_tokens; give --pos", path,
                         line);
    if (s->pos < 0) s->pos = s->n_prompt - 1;
    return true;
}

/* A logits event the step can show: its pos, token and a non-empty array
 * of at most vocab entries. */
static bool logits_ok(const Step *s, const cJSON *e) {
    int token, pos;
    int n = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(e, "logits"));
    return json_int_field(e, "pos", 0, SHOW_MAX_POS, &pos) &&
           json_int_field(e, "token", 0, s->vocab - 1, &token) &&
           cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(e, "logits")) && n > 0 && n <= s->vocab;
}

/* One event, after the header: remember its pieces, keep it if it is at
 * the step. Returns false (err set) on a malformed event the step needs. */
static bool take_event(Step *s, cJSON *e, const char *name, const char *path, long line, bool *kept,
                       StepError *err) {
    int pos = -1, n = 0;
    if (strcmp(name, "tokenize") == 0) {
        const cJSON *ids = cJSON_GetObjectItemCaseSensitive(e, "ids"),
                    *pieces = cJSON_GetObjectItemCaseSensitive(e, "pieces");
        int count = cJSON_GetArraySize(ids);
        if (cJSON_GetArraySize(pieces) < count) count = cJSON_GetArraySize(pieces);
        const cJSON *id = ids ? ids->child : NULL, *piece = pieces ? pieces->child : NULL;
        for (int i = 0; i < count; i++, id = id->next, piece = piece->next)
            remember_piece(s, id, piece);
    } else if (strcmp(name, "token") == 0) {
        remember_piece(s, cJSON_GetObjectItemCaseSensitive(e, "token"),
                       cJSON_GetObjectItemCaseSensitive(e, "piece"));
    } else if (strcmp(name, "forward") == 0) {
        if (!json_int_field(e, "pos", 0, SHOW_MAX_POS, &pos) ||
            !json_int_field(e, "n_tokens", 1, SHOW_MAX_POS, &n))
            return step_fail(err, "trace %s:%ld: a forward event needs whole pos and n_tokens",
                             path, line);
        if (s->pos >= pos && s->pos - pos < n) *kept = keep(&s->forward, e);
    } else if (strcmp(name, "logits") == 0 || strcmp(name, "sample") == 0) {
        bool is_logits = name[0] == 'l';
        if (!json_int_field(e, "pos", 0, SHOW_MAX_POS, &pos))
            return step_fail(err, "trace %s:%ld: a %s event needs a whole-number pos", path, line,
                             name);
        if (pos != s->pos) return true;
        if (is_logits && !logits_ok(s, e))
            return step_fail(err,
                             "trace %s:%ld: a logits event needs a token below vocab_size %d and "
                             "1 to %d logits",
                             path, line, s->vocab, s->vocab);
        *kept = keep(is_logits ? &s->logits : &s->sample, e);
    }
    return true;
}

/* One pass over the trace: the header, the pieces, and the events at pos. */
static bool collect(Step *s, const char *path, StepError *err) {
    TraceReader r;
    if (!trace_reader_open(&r, path, err)) return false;
    cJSON *e;
    bool not_json, ok = true;
    while (ok && ((e = trace_reader_next(&r, &not_json)) != NULL || not_json)) {
        if (not_json) continue;
        const char *name = trace_event_name(e);
        bool kept = false;
        if (name == NULL) {
        } else if (strcmp(name, "run") == 0 && s->run == NULL) {
            ok = read_header(s, e, path, r.line_no, err);
            kept = keep(&s->run, e);
        } else if (s->run != NULL) {
            ok = take_event(s, e, name, path, r.line_no, &kept, err);
        }
        if (!kept) cJSON_Delete(e);
    }
    trace_reader_close(&r);
    if (ok && s->run == NULL) return step_fail(err, "trace %s: no run header", path);
    return ok;
}

static const char *piece_of(const Step *s, const Tokenizer *tok, int id) {
    if (id >= 0 && id < s->vocab && s->pieces[id] != NULL) return s->pieces[id];
    if (tok != NULL && id >= 0 && id < tok->vocab_size) return tok->pieces[id];
    return "?";
}

/* A token as id and quoted piece, with newlines shown as \n. */
static void print_token(FILE *out, const Step *s, const Tokenizer *tok, int id) {
    fprintf(out, "%6d \"", id);
    for (const char *c = piece_of(s, tok, id); *c; c++) {
        if (*c == '\n')
            fputs("\\n", out);
        else
            fputc(*c, out);
    }
    fputc('"', out);
}

/* obj[key] as an int, or fallback when it is not a whole number in range. */
static int int_or(const cJSON *obj, const char *key, int fallback) {
    int v;
    return json_int_field(obj, key, -SHOW_MAX_POS, SHOW_MAX_POS, &v) ? v : fallback;
}

/* obj[key] as a double, or NaN. */
static double num_or_nan(const cJSON *obj, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

/* The filter that removed id, or NULL if it survived them all. */
static const char *cut_by(const cJSON *sample, int id) {
    const cJSON *stages = cJSON_GetObjectItemCaseSensitive(sample, "stages"), *name;
    cJSON_ArrayForEach(name, stages) {
        if (!cJSON_IsString(name)) continue;
        const cJSON *kept = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(sample, name->valuestring), "kept");
        if (!cJSON_IsArray(kept)) continue;
        bool found = false;
        const cJSON *k;
        cJSON_ArrayForEach(k, kept) found |= cJSON_IsNumber(k) && k->valuedouble == id;
        if (!found) return name->valuestring;
    }
    return NULL;
}

static void print_bar(FILE *out, double p) {
    int full = p >= 0 && p <= 1 ? (int)lround(p * 30) : 0; /* NaN draws no bar */
    for (int i = 0; i < 30; i++) fputs(i < full ? "\u2588" : "\u00b7", out);
    fprintf(out, " %5.1f%%", 100 * p);
}

/* The top tokens of softmax(logits / T) with bars and what cut them. */
static bool print_top(FILE *out, const Step *s, const Tokenizer *tok, int top, float t) {
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(s->logits, "logits");
    int n = cJSON_GetArraySize(arr); /* 1..vocab, checked by logits_ok */
    float *p = malloc((size_t)n * sizeof(float));
    int *order = malloc((size_t)n * sizeof(int));
    if (p == NULL || order == NULL) {
        free(p), free(order);
        return false;
    }
    int i = 0;
    const cJSON *v;
    cJSON_ArrayForEach(v, arr) p[i++] =
        cJSON_IsNumber(v) ? json_float(v->valuedouble) / t : -INFINITY;
    softmax_forward(p, n);
    for (i = 0; i < n; i++) order[i] = i;
    if (top > n) top = n;
    for (i = 0; i < top; i++) { /* partial selection sort: top is small */
        int best = i;
        for (int j = i + 1; j < n; j++) best = p[order[j]] > p[order[best]] ? j : best;
        int tmp = order[i];
        order[i] = order[best], order[best] = tmp;
    }
    fprintf(out, "top %d of %d tokens, softmax(logits / %g):\n", top, n, (double)t);
    for (i = 0; i < top; i++) {
        print_token(out, s, tok, order[i]);
        int width = (int)strlen(piece_of(s, tok, order[i]));
        fprintf(out, "%*s", width < 14 ? 14 - width : 1, "");
        print_bar(out, p[order[i]]);
        const char *cut = s->sample ? cut_by(s->sample, order[i]) : NULL;
        if (cut != NULL) fprintf(out, "  cut by %s", cut);
        fputc('\n', out);
    }
    free(p);
    free(order);
    return true;
}

static void print_stages(FILE *out, const cJSON *e) {
    const cJSON *name;
    cJSON_ArrayForEach(name, cJSON_GetObjectItemCaseSensitive(e, "stages")) {
        if (!cJSON_IsString(name)) continue;
        const cJSON *st = cJSON_GetObjectItemCaseSensitive(e, name->valuestring);
        int n_kept = int_or(st, "n_kept", -1);
        fprintf(out, " %s", name->valuestring);
        if (strcmp(name->valuestring, "temperature") == 0)
            fprintf(out, " %g", num_or_nan(st, "t"));
        else if (n_kept < 0)
            fputs(" off", out);
        else
            fprintf(out, " kept %d", n_kept);
        double mass = num_or_nan(st, "mass");
        if (!isnan(mass)) fprintf(out, " (mass %.1f%%)", 100 * mass);
        fputc(';', out);
    }
}

static void print_sampler(FILE *out, const Step *s, const Tokenizer *tok) {
    const cJSON *e = s->sample;
    int token = int_or(e, "token", -1);
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, "greedy"))) {
        fputs("sampler: greedy (temperature 0): the argmax, nothing drawn\nchosen:", out);
        print_token(out, s, tok, token);
        fputc('\n', out);
        return;
    }
    fputs("sampler:", out);
    print_stages(out, e);
    const cJSON *survivors = cJSON_GetObjectItemCaseSensitive(e, "survivors");
    const cJSON *probs = cJSON_GetObjectItemCaseSensitive(e, "probs");
    fprintf(out, "\n%d survivors", int_or(e, "n_survivors", -1));
    if (survivors == NULL) fputs(" (every filter off: the whole vocabulary)", out);
    const cJSON *id = cJSON_IsArray(survivors) ? survivors->child : NULL;
    const cJSON *p = cJSON_IsArray(probs) ? probs->child : NULL;
    for (int i = 0; id != NULL && p != NULL && i < 5; i++, id = id->next, p = p->next) {
        long long v;
        fputs(i == 0 ? ", renormalised:" : ",", out);
        print_token(out, s, tok, json_whole_number(id, 0, s->vocab - 1, &v) ? (int)v : -1);
        fprintf(out, " %.1f%%", 100 * (cJSON_IsNumber(p) ? p->valuedouble : NAN));
    }
    fprintf(out, "\nu = %.6f -> chosen", num_or_nan(e, "u"));
    print_token(out, s, tok, token);
    fputc('\n', out);
}

static void print_pass(FILE *out, const Step *s, const Tokenizer *tok) {
    fprintf(out, ", input");
    print_token(out, s, tok, int_or(s->logits, "token", -1));
}

bool trace_show_step(const char *path, int pos, const Tokenizer *tok, int top, FILE *out,
                     StepError *err) {
    Step s = {.pos = pos};
    bool ok = collect(&s, path, err);
    if (ok && s.logits == NULL && s.sample == NULL)
        ok = step_fail(err, "trace %s: nothing recorded at position %d (see --pos)", path, s.pos);
    if (ok) {
        double t = num_or_nan(cJSON_GetObjectItemCaseSensitive(s.run, "sampler"), "temperature");
        fprintf(out, "%s: position %d", path, s.pos);
        if (s.logits != NULL) print_pass(out, &s, tok);
        int n_pass = s.forward ? int_or(s.forward, "n_tokens", 0) : 0;
        const char *phase = json_string_field(s.forward, "phase");
        if (n_pass > 1)
            fprintf(out, " (prefill of %d tokens in one pass)", n_pass);
        else if (n_pass == 1 && phase != NULL)
            fprintf(out, " (%s)", phase);
        fputs("\n\n", out);
        /* score traces have no sampler: their logits are shown at T = 1 */
        float shown_t = t > 0 && t <= 1e6 ? (float)t : 1.0f;
        if (s.logits != NULL)
            ok = print_top(out, &s, tok, top, shown_t) || step_fail(err, "out of memory");
        else
            fputs("(no logits at this position: the trace level is below logits)\n", out);
        fputc('\n', out);
        if (s.sample != NULL) print_sampler(out, &s, tok);
        int bytes =
            int_or(cJSON_GetObjectItemCaseSensitive(s.run, "kv_cache"), "bytes_per_token", -1);
        if (bytes >= 0)
            fprintf(out, "\nKV cache after this step: %d positions x %d bytes = %lld bytes\n",
                    s.pos + 1, bytes, (long long)(s.pos + 1) * bytes);
    }
    for (int i = 0; s.pieces != NULL && i < s.vocab; i++) free(s.pieces[i]);
    free(s.pieces);
    cJSON_Delete(s.run), cJSON_Delete(s.logits), cJSON_Delete(s.sample), cJSON_Delete(s.forward);
    return ok;
}
