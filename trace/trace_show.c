/* trace_show.c: see trace_show.h. */
#include "trace_show.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../ref/layers.h"
#include "trace_reader.h"

/* What the step needs from the whole trace. */
typedef struct {
    cJSON *run, *logits, *sample, *forward; /* owned; the events at the step */
    char **pieces;                          /* [vocab] known piece texts, or NULL */
    int vocab, n_prompt, pos;
} Step;

static void remember_piece(Step *s, int id, const char *piece) {
    if (id < 0 || id >= s->vocab || s->pieces[id] != NULL) return;
    s->pieces[id] = strdup(piece);
}

/* Keep `e` in *slot (deleting what was there) and return true. */
static bool keep(cJSON **slot, cJSON *e) {
    cJSON_Delete(*slot);
    *slot = e;
    return true;
}

/* One pass over the trace: the header, the pieces, and the events at pos. */
static bool collect(Step *s, const char *path, StepError *err) {
    TraceReader r;
    if (!trace_reader_open(&r, path, err)) return false;
    cJSON *e;
    bool not_json;
    while ((e = trace_reader_next(&r, &not_json)) != NULL || not_json) {
        if (not_json) continue;
        const char *name = trace_event_name(e);
        bool kept = false;
        if (name == NULL) {
        } else if (strcmp(name, "run") == 0 && s->run == NULL) {
            s->vocab = cJSON_GetObjectItem(cJSON_GetObjectItem(e, "model"), "vocab_size")->valueint;
            s->n_prompt = cJSON_GetArraySize(cJSON_GetObjectItem(e, "prompt_tokens"));
            s->pieces = calloc((size_t)s->vocab, sizeof(char *));
            if (s->pos < 0) s->pos = s->n_prompt - 1;
            kept = keep(&s->run, e);
        } else if (s->run == NULL) {
        } else if (strcmp(name, "tokenize") == 0) {
            const cJSON *ids = cJSON_GetObjectItem(e, "ids"),
                        *pieces = cJSON_GetObjectItem(e, "pieces");
            for (int i = 0; i < cJSON_GetArraySize(ids); i++)
                remember_piece(s, cJSON_GetArrayItem(ids, i)->valueint,
                               cJSON_GetArrayItem(pieces, i)->valuestring);
        } else if (strcmp(name, "token") == 0) {
            remember_piece(s, cJSON_GetObjectItem(e, "token")->valueint,
                           cJSON_GetObjectItem(e, "piece")->valuestring);
        } else if (strcmp(name, "forward") == 0) {
            int p0 = cJSON_GetObjectItem(e, "pos")->valueint;
            int n = cJSON_GetObjectItem(e, "n_tokens")->valueint;
            if (s->pos >= p0 && s->pos < p0 + n) kept = keep(&s->forward, e);
        } else if (strcmp(name, "logits") == 0 &&
                   cJSON_GetObjectItem(e, "pos")->valueint == s->pos) {
            kept = keep(&s->logits, e);
        } else if (strcmp(name, "sample") == 0 &&
                   cJSON_GetObjectItem(e, "pos")->valueint == s->pos) {
            kept = keep(&s->sample, e);
        }
        if (!kept) cJSON_Delete(e);
    }
    trace_reader_close(&r);
    if (s->run == NULL) return step_fail(err, "trace %s: no run header", path);
    return true;
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

/* The filter that removed id, or NULL if it survived them all. */
static const char *cut_by(const cJSON *sample, int id) {
    const cJSON *stages = cJSON_GetObjectItem(sample, "stages"), *name;
    cJSON_ArrayForEach(name, stages) {
        const cJSON *kept =
            cJSON_GetObjectItem(cJSON_GetObjectItem(sample, name->valuestring), "kept");
        if (kept == NULL) continue;
        bool found = false;
        const cJSON *k;
        cJSON_ArrayForEach(k, kept) found |= k->valueint == id;
        if (!found) return name->valuestring;
    }
    return NULL;
}

static void print_bar(FILE *out, double p) {
    int full = (int)lround(p * 30);
    for (int i = 0; i < 30; i++) fputs(i < full ? "\u2588" : "\u00b7", out);
    fprintf(out, " %5.1f%%", 100 * p);
}

/* The top tokens of softmax(logits / T) with bars and what cut them. */
static void print_top(FILE *out, const Step *s, const Tokenizer *tok, int top, float t) {
    const cJSON *arr = cJSON_GetObjectItem(s->logits, "logits");
    int n = cJSON_GetArraySize(arr);
    float *p = malloc((size_t)n * sizeof(float));
    int *order = malloc((size_t)n * sizeof(int));
    if (p == NULL || order == NULL) {
        free(p), free(order);
        return;
    }
    int i = 0;
    const cJSON *v;
    cJSON_ArrayForEach(v, arr) p[i++] = cJSON_IsNumber(v) ? (float)v->valuedouble / t : -INFINITY;
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
}

static void print_sampler(FILE *out, const Step *s, const Tokenizer *tok) {
    const cJSON *e = s->sample;
    int token = cJSON_GetObjectItem(e, "token")->valueint;
    if (cJSON_IsTrue(cJSON_GetObjectItem(e, "greedy"))) {
        fputs("sampler: greedy (temperature 0): the argmax, nothing drawn\nchosen:", out);
        print_token(out, s, tok, token);
        fputc('\n', out);
        return;
    }
    fputs("sampler:", out);
    const cJSON *name;
    cJSON_ArrayForEach(name, cJSON_GetObjectItem(e, "stages")) {
        const cJSON *st = cJSON_GetObjectItem(e, name->valuestring);
        const cJSON *n_kept = cJSON_GetObjectItem(st, "n_kept");
        fprintf(out, " %s", name->valuestring);
        if (strcmp(name->valuestring, "temperature") == 0)
            fprintf(out, " %g", cJSON_GetObjectItem(st, "t")->valuedouble);
        else if (n_kept == NULL)
            fputs(" off", out);
        else
            fprintf(out, " kept %d", n_kept->valueint);
        const cJSON *mass = cJSON_GetObjectItem(st, "mass");
        if (mass != NULL) fprintf(out, " (mass %.1f%%)", 100 * mass->valuedouble);
        fputc(';', out);
    }
    const cJSON *survivors = cJSON_GetObjectItem(e, "survivors");
    const cJSON *probs = cJSON_GetObjectItem(e, "probs");
    fprintf(out, "\n%d survivors", cJSON_GetObjectItem(e, "n_survivors")->valueint);
    if (survivors == NULL) fputs(" (every filter off: the whole vocabulary)", out);
    for (int i = 0; survivors != NULL && i < cJSON_GetArraySize(survivors) && i < 5; i++) {
        fputs(i == 0 ? ", renormalised:" : ",", out);
        print_token(out, s, tok, cJSON_GetArrayItem(survivors, i)->valueint);
        fprintf(out, " %.1f%%", 100 * cJSON_GetArrayItem(probs, i)->valuedouble);
    }
    fprintf(out, "\nu = %.6f -> chosen", cJSON_GetObjectItem(e, "u")->valuedouble);
    print_token(out, s, tok, token);
    fputc('\n', out);
}

/* The tokenizer file the run header names, when readable and of the
 * trace's vocabulary; NULL otherwise. */
static const Tokenizer *header_tokenizer(const Step *s, Tokenizer *storage) {
    const cJSON *env = cJSON_GetObjectItem(s->run, "environment");
    const cJSON *path = cJSON_GetObjectItem(env, "tokenizer_path");
    StepError ignored;
    if (!cJSON_IsString(path) || path->valuestring[0] == '(') return NULL;
    return tokenizer_load_bin(storage, path->valuestring, s->vocab, &ignored) ? storage : NULL;
}

bool trace_show_step(const char *path, int pos, const Tokenizer *tok, int top, FILE *out,
                     StepError *err) {
    Step s = {.pos = pos};
    bool ok = collect(&s, path, err);
    Tokenizer from_header = {0};
    if (ok && tok == NULL) tok = header_tokenizer(&s, &from_header);
    if (ok && s.logits == NULL && s.sample == NULL)
        ok = step_fail(err, "trace %s: nothing recorded at position %d (see --pos)", path, s.pos);
    if (ok) {
        const cJSON *sampler = cJSON_GetObjectItem(s.run, "sampler");
        const cJSON *kv = cJSON_GetObjectItem(s.run, "kv_cache");
        float t = (float)cJSON_GetObjectItem(sampler, "temperature")->valuedouble;
        fprintf(out, "%s: position %d", path, s.pos);
        if (s.logits != NULL) {
            fputs(", input", out);
            print_token(out, &s, tok, cJSON_GetObjectItem(s.logits, "token")->valueint);
        }
        int n_pass = s.forward ? cJSON_GetObjectItem(s.forward, "n_tokens")->valueint : 0;
        if (n_pass > 1)
            fprintf(out, " (prefill of %d tokens in one pass)", n_pass);
        else if (n_pass == 1)
            fprintf(out, " (%s)", cJSON_GetObjectItem(s.forward, "phase")->valuestring);
        fputs("\n\n", out);
        if (s.logits != NULL)
            print_top(out, &s, tok, top, t > 0 ? t : 1.0f);
        else
            fputs("(no logits at this position: the trace level is below logits)\n", out);
        fputc('\n', out);
        if (s.sample != NULL) print_sampler(out, &s, tok);
        int bytes = cJSON_GetObjectItem(kv, "bytes_per_token")->valueint;
        fprintf(out, "\nKV cache after this step: %d positions x %d bytes = %d bytes\n", s.pos + 1,
                bytes, (s.pos + 1) * bytes);
    }
    tokenizer_free(&from_header);
    for (int i = 0; s.pieces != NULL && i < s.vocab; i++) free(s.pieces[i]);
    free(s.pieces);
    cJSON_Delete(s.run), cJSON_Delete(s.logits), cJSON_Delete(s.sample), cJSON_Delete(s.forward);
    return ok;
}
