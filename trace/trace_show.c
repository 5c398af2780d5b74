/* trace_show.c: see trace_show.h.
 *
 * A trace to show may come from anywhere, so every field is checked before
 * it is used: a malformed event the step needs is a one-line error naming
 * its line, and a field that only decorates the display (a piece, a mass)
 * is left out when it is not what it should be. */
#include "trace/trace_show.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ref/util/json_util.h"
#include "ref/layers.h"
#include "trace/diff_tensors.h"
#include "trace/trace_reader.h"

/* The largest vocabulary and position a trace may name: far beyond any
 * model, and small enough that a table of pieces costs at most 16 MiB. */
#define SHOW_MAX_VOCAB (1 << 21)
#define SHOW_MAX_POS   (1 << 30)

/* What the step needs from the whole trace. */
typedef struct {
    cJSON *run, *logits, *sample, *forward; /* owned; the events at the step */
    cJSON *last_logits, *last_forward;      /* owned; by step: the latest seen */
    cJSON *nth_logits; /* owned; by step: the step'th logits event, for a trace without draws */
    int logits_seen;
    char **pieces; /* [vocab] known piece texts, or NULL */
    int vocab, n_prompt, pos;
    int step;    /* > 0: the step'th draw; else by pos */
    int draws;   /* sample events read so far */
    int repeats; /* by pos: further logits or sample events at the same pos */
    /* owned arrays of routing events (a mixture of experts): those of the
     * passes so far (by step: since the last forward event), and the step's */
    cJSON *pending_routing, *routing;
} Step;

static void remember_piece(Step *s, const cJSON *id_json, const cJSON *piece) {
    long long id;
    if (!json_whole_number(id_json, 0, s->vocab - 1, &id) || !cJSON_IsString(piece)) return;
    if (s->pieces[id] == NULL) s->pieces[id] = strdup(piece->valuestring);
}

/* obj[key] as a whole number in [0, SHOW_MAX_POS], or -1. */
static int int_or_minus1(const cJSON *obj, const char *key) {
    int v;
    return json_int_field(obj, key, 0, SHOW_MAX_POS, &v) ? v : -1;
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
    if (s->step > 0) return true; /* the position comes with the step */
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

/* By step: the latest logits and forward events until the step'th sample
 * event, which takes them when they are at its position. */
static bool take_by_step(Step *s, cJSON *e, bool is_logits, int pos, bool *kept) {
    if (s->sample != NULL) return true; /* found already */
    if (is_logits) {
        if (++s->logits_seen == s->step) s->nth_logits = cJSON_Duplicate(e, true);
        *kept = keep(&s->last_logits, e);
        return true;
    }
    if (++s->draws != s->step) return true;
    *kept = keep(&s->sample, e);
    s->pos = pos;
    if (s->last_logits != NULL && int_or_minus1(s->last_logits, "pos") == pos)
        s->logits = s->last_logits, s->last_logits = NULL;
    s->forward = s->last_forward, s->last_forward = NULL;
    s->routing = s->pending_routing, s->pending_routing = NULL;
    return true;
}

/* A routing event: kept for the step (by pos: at the pos; by step: with
 * the pass it belongs to, sorted out by pos when shown). */
static bool take_routing(Step *s, cJSON *e, bool *kept) {
    int pos = int_or_minus1(e, "pos");
    if (pos < 0 || (s->step <= 0 && pos != s->pos) || (s->step > 0 && s->sample != NULL))
        return true;
    cJSON **list = s->step > 0 ? &s->pending_routing : &s->routing;
    if (*list == NULL) *list = cJSON_CreateArray();
    if (*list == NULL || cJSON_GetArraySize(*list) >= 4096) return *list != NULL;
    cJSON_AddItemToArray(*list, e);
    *kept = true;
    return true;
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
    } else if (strcmp(name, "routing") == 0) {
        return take_routing(s, e, kept) || step_fail(err, "out of memory");
    } else if (strcmp(name, "forward") == 0) {
        if (s->step > 0 && s->sample == NULL) /* a new pass: its routing from here */
            cJSON_Delete(s->pending_routing), s->pending_routing = NULL;
        if (!json_int_field(e, "pos", 0, SHOW_MAX_POS, &pos) ||
            !json_int_field(e, "n_tokens", 1, SHOW_MAX_POS, &n))
            return step_fail(err, "trace %s:%ld: a forward event needs whole pos and n_tokens",
                             path, line);
        if (s->step > 0 && s->sample == NULL)
            *kept = keep(&s->last_forward, e);
        else if (s->step <= 0 && s->forward == NULL && s->pos >= pos && s->pos - pos < n)
            *kept = keep(&s->forward, e);
    } else if (strcmp(name, "logits") == 0 || strcmp(name, "sample") == 0) {
        bool is_logits = name[0] == 'l';
        if (!json_int_field(e, "pos", 0, SHOW_MAX_POS, &pos))
            return step_fail(err, "trace %s:%ld: a %s event needs a whole-number pos", path, line,
                             name);
        if (is_logits && !logits_ok(s, e))
            return step_fail(err,
                             "trace %s:%ld: a logits event needs a token below vocab_size %d and "
                             "1 to %d logits",
                             path, line, s->vocab, s->vocab);
        if (s->step > 0) return take_by_step(s, e, is_logits, pos, kept);
        if (pos != s->pos) return true;
        cJSON **slot = is_logits ? &s->logits : &s->sample;
        if (*slot != NULL) { /* the same position again: after a context shift */
            s->repeats += is_logits;
            return true;
        }
        *kept = keep(slot, e);
    }
    return true;
}

/* A logits row of a tensors file, taken as the event it stands for. */
typedef struct {
    Step *s;
    const char *path;
    long line;
    StepError *err;
} RowTaker;

static bool take_row(void *ctx, cJSON *e) {
    RowTaker *t = ctx;
    bool kept = false, ok = take_event(t->s, e, "logits", t->path, t->line, &kept, t->err);
    if (!kept) cJSON_Delete(e);
    return ok;
}

/* One pass over the trace: the header, the pieces, and the events at pos
 * (a score file's logits from its tensors file, when it has one). */
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
        } else if (s->run != NULL && strcmp(name, "tensors") == 0) {
            RowTaker t = {s, path, r.line_no, err};
            ok = tensors_events(e, path, false, false, take_row, &t, err);
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

/* The widest a piece is shown (columns), so that every line fits 80. */
#define PIECE_COLUMNS 14

/* One character of a piece as shown (newline as \n, another control byte
 * as ?) appended to buf at *n; returns the bytes of piece it used and sets
 * *cols to its columns. */
static int show_char(const unsigned char *c, char *buf, size_t *n, int *cols) {
    if (*c == '\n') {
        buf[(*n)++] = '\\', buf[(*n)++] = 'n', *cols = 2;
        return 1;
    }
    *cols = 1;
    if (*c < 0x20 || *c == 0x7F) {
        buf[(*n)++] = '?';
        return 1;
    }
    int len = *c < 0x80 ? 1 : (*c >> 5) == 6 ? 2 : (*c >> 4) == 14 ? 3 : (*c >> 3) == 30 ? 4 : 1;
    int k = 0;
    for (; k < len && c[k]; k++) buf[(*n)++] = (char)c[k];
    return k;
}

/* A piece as shown, in at most PIECE_COLUMNS columns (a longer one is cut
 * and ends in "~"); buf holds at least 4 * PIECE_COLUMNS + 8 bytes.
 * Returns its columns. */
static int piece_text(const char *piece, char *buf) {
    char scratch[8];
    int total = 0, cols, used = 0;
    size_t n = 0, m;
    for (const unsigned char *c = (const unsigned char *)piece; *c; total += cols)
        m = 0, c += show_char(c, scratch, &m, &cols);
    for (const unsigned char *c = (const unsigned char *)piece; *c; used += cols) {
        size_t before = n;
        int step = show_char(c, buf, &n, &cols);
        if (total > PIECE_COLUMNS && used + cols > PIECE_COLUMNS - 1) {
            n = before, buf[n++] = '~', used++;
            break;
        }
        c += step;
    }
    buf[n] = '\0';
    return used;
}

/* A token as id and quoted piece; returns the columns used. */
static int print_token(FILE *out, const Step *s, const Tokenizer *tok, int id) {
    char text[PIECE_COLUMNS * 4 + 16];
    int cols = piece_text(piece_of(s, tok, id), text);
    fprintf(out, "%6d \"%s\"", id, text);
    return 9 + cols;
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

/* 25 cells of bar and the percentage: 32 columns. */
static void print_bar(FILE *out, double p) {
    int full = p >= 0 && p <= 1 ? (int)lround(p * 25) : 0; /* NaN draws no bar */
    for (int i = 0; i < 25; i++) fputs(i < full ? "\u2588" : "\u00b7", out);
    fprintf(out, " %5.1f%%", 100 * p);
}

/* The ids of the top entries of p[0..n) into order[0..top), best first. */
static void top_order(const float *p, int n, int top, int *order) {
    int *all = malloc((size_t)n * sizeof(int));
    if (all == NULL) return;
    for (int i = 0; i < n; i++) all[i] = i;
    for (int i = 0; i < top; i++) { /* partial selection sort: top is small */
        int best = i;
        for (int j = i + 1; j < n; j++) best = p[all[j]] > p[all[best]] ? j : best;
        int tmp = all[i];
        all[i] = all[best], all[best] = tmp;
        order[i] = all[i];
    }
    free(all);
}

/* The top tokens of softmax(logits / T) with bars and what cut them. */
static bool print_top(FILE *out, const Step *s, const Tokenizer *tok, int top, float t,
                      int *shown) {
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(s->logits, "logits");
    int n = cJSON_GetArraySize(arr); /* 1..vocab, checked by logits_ok */
    float *p = malloc((size_t)n * sizeof(float));
    if (p == NULL) return false;
    int i = 0;
    const cJSON *v;
    cJSON_ArrayForEach(v, arr) p[i++] =
        cJSON_IsNumber(v) ? json_float(v->valuedouble) / t : -INFINITY;
    softmax_forward(p, n);
    if (top > n) top = n;
    top_order(p, n, top, shown);
    fprintf(out, "top %d of %d tokens, softmax(logits / %g):\n", top, n, (double)t);
    for (i = 0; i < top; i++) {
        int cols = print_token(out, s, tok, shown[i]);
        fprintf(out, "%*s", cols < 25 ? 25 - cols : 1, "");
        print_bar(out, p[shown[i]]);
        const char *cut = s->sample ? cut_by(s->sample, shown[i]) : NULL;
        if (cut != NULL) fprintf(out, " cut: %.12s", cut);
        fputc('\n', out);
    }
    free(p);
    return true;
}

/* The softmax at each temperature --trace-temperatures recorded, for the
 * tokens shown above: a row a token, a column a temperature (at most 5). */
static void print_temperatures(FILE *out, const Step *s, const Tokenizer *tok, const int *shown,
                               int n_shown) {
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(s->sample, "softmax"), *t;
    int cols = 0;
    cJSON_ArrayForEach(t, list) cols += cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(t, "probs"));
    if (cols == 0) return;
    fputs("\nsoftmax at the traced temperatures:\n", out);
    fprintf(out, "%25s", "");
    int k = 0;
    cJSON_ArrayForEach(t, list) {
        char label[32];
        if (k++ == 5) break;
        snprintf(label, sizeof label, "T=%g", num_or_nan(t, "temperature"));
        fprintf(out, "  %8.8s", label);
    }
    fputc('\n', out);
    for (int i = 0; i < n_shown && i < 5; i++) {
        int used = print_token(out, s, tok, shown[i]);
        fprintf(out, "%*s", used < 25 ? 25 - used : 1, "");
        k = 0;
        cJSON_ArrayForEach(t, list) {
            if (k++ == 5) break;
            const cJSON *probs = cJSON_GetObjectItemCaseSensitive(t, "probs");
            const cJSON *pv = cJSON_GetArrayItem(probs, shown[i]);
            fprintf(out, "  %7.1f%%", 100 * (cJSON_IsNumber(pv) ? pv->valuedouble : NAN));
        }
        fputc('\n', out);
    }
    if (cols > 5) fprintf(out, "(%d more temperatures in the trace)\n", cols - 5);
}

static void print_stages(FILE *out, const cJSON *e) {
    const cJSON *name;
    cJSON_ArrayForEach(name, cJSON_GetObjectItemCaseSensitive(e, "stages")) {
        if (!cJSON_IsString(name)) continue;
        const cJSON *st = cJSON_GetObjectItemCaseSensitive(e, name->valuestring);
        int n_kept = int_or(st, "n_kept", -1);
        fprintf(out, "  %-12.12s", name->valuestring);
        if (strcmp(name->valuestring, "temperature") == 0)
            fprintf(out, " %g", num_or_nan(st, "t"));
        else if (n_kept < 0)
            fputs(" off", out);
        else
            fprintf(out, " kept %d", n_kept);
        double mass = num_or_nan(st, "mass");
        if (!isnan(mass)) fprintf(out, " (mass %.1f%%)", 100 * mass);
        fputc('\n', out);
    }
}

static void print_sampler(FILE *out, const Step *s, const Tokenizer *tok) {
    const cJSON *e = s->sample;
    int token = int_or(e, "token", -1);
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, "greedy"))) {
        fputs("sampler: greedy (temperature 0): the argmax, nothing drawn\nchosen", out);
        print_token(out, s, tok, token);
        fputc('\n', out);
        return;
    }
    fputs("sampler, stage by stage:\n", out);
    print_stages(out, e);
    const cJSON *survivors = cJSON_GetObjectItemCaseSensitive(e, "survivors");
    const cJSON *probs = cJSON_GetObjectItemCaseSensitive(e, "probs");
    fprintf(out, "%d survivors", int_or(e, "n_survivors", -1));
    if (survivors == NULL) fputs(" (every filter off: the whole vocabulary)", out);
    const cJSON *id = cJSON_IsArray(survivors) ? survivors->child : NULL;
    const cJSON *p = cJSON_IsArray(probs) ? probs->child : NULL;
    if (id != NULL) fputs(", renormalised:", out);
    for (int i = 0; id != NULL && p != NULL && i < 5; i++, id = id->next, p = p->next) {
        long long v;
        fputs("\n  ", out);
        print_token(out, s, tok, json_whole_number(id, 0, s->vocab - 1, &v) ? (int)v : -1);
        fprintf(out, " %.1f%%", 100 * (cJSON_IsNumber(p) ? p->valuedouble : NAN));
    }
    fprintf(out, "\nu = %.6f -> chosen", num_or_nan(e, "u"));
    print_token(out, s, tok, token);
    fputc('\n', out);
}

static void step_free(Step *s) {
    for (int i = 0; s->pieces != NULL && i < s->vocab; i++) free(s->pieces[i]);
    free(s->pieces);
    cJSON_Delete(s->run), cJSON_Delete(s->logits), cJSON_Delete(s->sample);
    cJSON_Delete(s->forward), cJSON_Delete(s->last_logits), cJSON_Delete(s->last_forward);
    cJSON_Delete(s->nth_logits), cJSON_Delete(s->pending_routing), cJSON_Delete(s->routing);
}

/* A mixture of experts: each MoE layer's choice at the step's position,
 * the experts with their weights, most probable first. */
static void print_routing(FILE *out, const Step *s) {
    const cJSON *e;
    bool any = false;
    cJSON_ArrayForEach(e, s->routing) {
        const cJSON *experts = cJSON_GetObjectItemCaseSensitive(e, "experts");
        const cJSON *weights = cJSON_GetObjectItemCaseSensitive(e, "weights");
        int layer = int_or_minus1(e, "layer");
        if (int_or_minus1(e, "pos") != s->pos || layer < 0 || !cJSON_IsArray(experts)) continue;
        if (!any)
            fputs("\nrouting (a mixture of experts): the experts each layer chose, weights\n", out);
        any = true;
        fprintf(out, "  layer %3d:", layer);
        const cJSON *x = experts->child, *w = cJSON_IsArray(weights) ? weights->child : NULL;
        for (int j = 0; x != NULL && j < 16; j++, x = x->next, w = w ? w->next : NULL)
            if (cJSON_IsNumber(x))
                fprintf(out, "%s expert %d (%.3f)", j ? "," : "", x->valueint,
                        cJSON_IsNumber(w) ? w->valuedouble : NAN);
        fputc('\n', out);
    }
}

/* Read the trace and find the step; err names what is missing. */
static bool find_step(Step *s, const char *path, TraceStepAt at, StepError *err) {
    *s = (Step){.pos = at.step > 0 ? -1 : at.pos, .step = at.step};
    bool ok = collect(s, path, err);
    if (ok && at.step > 0 && s->draws == 0 && s->nth_logits != NULL) {
        /* no sample events (greedy below --trace-level sampling, a score
         * file): the step'th logits event is the step */
        s->logits = s->nth_logits, s->nth_logits = NULL;
        s->pos = int_or_minus1(s->logits, "pos");
        cJSON_Delete(s->forward), s->forward = NULL;
        return true;
    }
    if (ok && at.step > 0 && s->sample == NULL)
        return step_fail(err, "trace %s: there is no step %d: it has %d draws (sample events)",
                         path, at.step, s->draws > 0 ? s->draws : s->logits_seen);
    if (ok && s->logits == NULL && s->sample == NULL)
        return step_fail(err, "trace %s: nothing recorded at position %d (see --pos, --step)", path,
                         s->pos);
    return ok;
}

bool trace_show_step(const char *path, TraceStepAt at, const Tokenizer *tok, int top, FILE *out,
                     StepError *err) {
    Step s;
    bool ok = find_step(&s, path, at, err);
    if (ok) {
        double t = num_or_nan(cJSON_GetObjectItemCaseSensitive(s.run, "sampler"), "temperature");
        const cJSON *arch = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(s.run, "model"), "arch");
        const char *family = json_string_field(arch, "family");
        if (family != NULL) /* a model beyond llama2.c's: name its family */
            fprintf(out, "trace %.70s (%.16s)\n", path, family);
        else
            fprintf(out, "trace %.70s\n", path);
        if (at.step > 0) fprintf(out, "step %d: ", at.step);
        fprintf(out, "position %d", s.pos);
        if (s.logits != NULL) {
            fputs(", input", out);
            print_token(out, &s, tok, int_or(s.logits, "token", -1));
        }
        int n_pass = s.forward ? int_or(s.forward, "n_tokens", 0) : 0;
        const char *phase = json_string_field(s.forward, "phase");
        if (n_pass > 1)
            fprintf(out, "\n(prefill of %d tokens in one pass)", n_pass);
        else if (n_pass == 1 && phase != NULL)
            fprintf(out, " (%.12s)", phase);
        fputc('\n', out);
        if (s.repeats > 0)
            fprintf(out,
                    "position %d occurs %d times in this trace (a context shift repeats\n"
                    "positions): this is the first; --step N picks one draw\n",
                    s.pos, s.repeats + 1);
        fputc('\n', out);
        /* score traces have no sampler: their logits are shown at T = 1 */
        float shown_t = t > 0 && t <= 1e6 ? (float)t : 1.0f;
        int shown[1000], n_shown = 0;
        if (top > 1000) top = 1000;
        if (s.logits != NULL) {
            ok = print_top(out, &s, tok, top, shown_t, shown) || step_fail(err, "out of memory");
            n_shown =
                top < cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(s.logits, "logits"))
                    ? top
                    : cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(s.logits, "logits"));
        } else {
            fputs("(no logits at this position: the trace level is below logits;\n"
                  "--trace-level logits adds them)\n",
                  out);
        }
        if (s.sample != NULL && n_shown > 0) print_temperatures(out, &s, tok, shown, n_shown);
        fputc('\n', out);
        if (s.sample != NULL) print_sampler(out, &s, tok);
        print_routing(out, &s);
        int bytes =
            int_or(cJSON_GetObjectItemCaseSensitive(s.run, "kv_cache"), "bytes_per_token", -1);
        if (bytes >= 0)
            fprintf(out, "\nKV cache after this step: %lld positions x %d bytes = %lld bytes\n",
                    (long long)s.pos + 1, bytes, ((long long)s.pos + 1) * bytes);
    }
    step_free(&s);
    return ok;
}

void trace_pieces_free(char **pieces, int n) {
    for (int i = 0; pieces != NULL && i < n; i++) free(pieces[i]);
    free(pieces);
}

bool trace_step_logits(const char *path, TraceStepAt at, float **logits, int *n, char ***pieces,
                       StepError *err) {
    Step s;
    *logits = NULL, *n = 0;
    if (pieces != NULL) *pieces = NULL;
    bool ok = find_step(&s, path, at, err);
    if (ok && s.logits == NULL)
        ok = step_fail(err, "trace %s: no logits at %s %d (--trace-level logits records them)",
                       path, at.step > 0 ? "step" : "position", at.step > 0 ? at.step : s.pos);
    if (ok) {
        const cJSON *arr = cJSON_GetObjectItemCaseSensitive(s.logits, "logits"), *v;
        *n = cJSON_GetArraySize(arr);
        *logits = malloc((size_t)*n * sizeof(float));
        ok = *logits != NULL || step_fail(err, "out of memory");
        int i = 0;
        if (ok)
            cJSON_ArrayForEach(v, arr)(*logits)[i++] =
                cJSON_IsNumber(v) ? json_float(v->valuedouble) : -INFINITY;
    }
    if (ok && pieces != NULL) { /* hand the table over: the vocabulary is at least n */
        *pieces = s.pieces, s.pieces = NULL;
        for (int i = *n; i < s.vocab; i++) free((*pieces)[i]);
    }
    step_free(&s);
    if (!ok) free(*logits), *logits = NULL;
    return ok;
}
