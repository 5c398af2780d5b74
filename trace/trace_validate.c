/* trace_validate.c: see trace_validate.h. */
#include "trace/trace_validate.h"

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "trace/diff_tensors.h"
#include "trace/schema_check.h"
#include "trace/trace_reader.h"

#define MAX_REPORTED 20

typedef struct {
    const char *path;
    FILE *report;
    long line;
    int violations;
    /* from the run header */
    bool have_run;
    int vocab_size, kv_dim;
    cJSON *prompt_tokens; /* owned copy */
    /* ordering */
    int last_logits_pos, last_sample_pos, last_token_pos, last_logprobs_pos;
    const char *ended_by; /* "done", "scored" or "error" once seen */
} Validation;

static void violation(Validation *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void violation(Validation *v, const char *fmt, ...) {
    if (v->violations++ >= MAX_REPORTED) return;
    fprintf(v->report, "%s:%ld: ", v->path, v->line);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(v->report, fmt, ap);
    va_end(ap);
    fputc('\n', v->report);
}

static int int_field(const cJSON *o, const char *key) {
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(f) ? f->valueint : -1;
}

static bool ids_contain(const cJSON *ids, int id) {
    const cJSON *x;
    cJSON_ArrayForEach(x, ids) {
        if (x->valueint == id) return true;
    }
    return false;
}

static void expect_length(Validation *v, const cJSON *e, const char *key, int n, const char *what) {
    int got = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(e, key));
    if (got != n) violation(v, "%s has %d values, expected %d (%s)", key, got, n, what);
}

static void expect_increasing(Validation *v, int *last, int pos, const char *event) {
    if (pos <= *last) violation(v, "%s at pos %d does not follow pos %d", event, pos, *last);
    *last = pos;
}

static void check_sample(Validation *v, const cJSON *e) {
    expect_increasing(v, &v->last_sample_pos, int_field(e, "pos"), "sample");
    int token = int_field(e, "token");
    const cJSON *probs = cJSON_GetObjectItemCaseSensitive(e, "probs");
    const cJSON *survivors = cJSON_GetObjectItemCaseSensitive(e, "survivors");
    if (probs != NULL) {
        double sum = 0;
        const cJSON *p;
        cJSON_ArrayForEach(p, probs) sum += p->valuedouble;
        if (fabs(sum - 1.0) > 1e-6) violation(v, "sample probs sum to %.9f, not 1", sum);
        if (cJSON_GetArraySize(probs) != cJSON_GetArraySize(survivors))
            violation(v, "sample has %d probs for %d survivors", cJSON_GetArraySize(probs),
                      cJSON_GetArraySize(survivors));
    }
    if (survivors != NULL && !ids_contain(survivors, token))
        violation(v, "sample token %d is not among the survivors", token);
    const char *stages[] = {"top_k", "top_p", "min_p"};
    for (int i = 0; i < 3; i++) {
        const cJSON *kept = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(e, stages[i]), "kept");
        if (kept != NULL && !ids_contain(kept, token))
            violation(v, "sample token %d did not survive %s", token, stages[i]);
    }
}

static void check_done(Validation *v, const cJSON *e) {
    const cJSON *tokens = cJSON_GetObjectItemCaseSensitive(e, "tokens");
    int n_prompt = cJSON_GetArraySize(v->prompt_tokens);
    if (cJSON_GetArraySize(tokens) < n_prompt) {
        violation(v, "done has fewer tokens than the prompt");
        return;
    }
    for (int i = 0; i < n_prompt; i++) {
        if (cJSON_GetArrayItem(tokens, i)->valueint !=
            cJSON_GetArrayItem(v->prompt_tokens, i)->valueint) {
            violation(v, "done tokens do not start with the prompt tokens (index %d)", i);
            return;
        }
    }
}

/* A scored position: its top list best first, and the next token's
 * log-probability no better than the best. */
static void check_logprobs(Validation *v, const cJSON *e) {
    expect_increasing(v, &v->last_logprobs_pos, int_field(e, "pos"), "logprobs");
    const cJSON *top = cJSON_GetObjectItemCaseSensitive(e, "top"), *t;
    double prev = 1.0;
    cJSON_ArrayForEach(t, top) {
        const cJSON *lp_item = cJSON_GetObjectItemCaseSensitive(t, "logprob");
        double lp = cJSON_IsNumber(lp_item) ? lp_item->valuedouble : NAN;
        if (lp > prev) violation(v, "logprobs top list is not in descending order");
        prev = lp;
    }
    const cJSON *lp = cJSON_GetObjectItemCaseSensitive(e, "logprob");
    const cJSON *best = cJSON_GetArrayItem(top, 0);
    const cJSON *best_lp = cJSON_GetObjectItemCaseSensitive(best, "logprob");
    if (cJSON_IsNumber(lp) && cJSON_IsNumber(best_lp) &&
        lp->valuedouble > best_lp->valuedouble + 1e-12)
        violation(v, "logprob of the next token exceeds the best listed");
}

static void check_consistency(Validation *v, const cJSON *e, const char *name);

/* A row of a tensors file, as the logits event it stands for: checked as one. */
static bool check_tensor_row(void *ctx, cJSON *event) {
    check_consistency(ctx, event, trace_event_name(event));
    cJSON_Delete(event);
    return true;
}

/* The tensors file a score file names: read as `trace show` and `diff` read
 * it (its tensors the ones the event lists, of those shapes), and each
 * logits row checked against the run as a logits event is. */
static void check_tensors(Validation *v, const cJSON *e) {
    StepError err;
    if (!tensors_events(e, v->path, false, false, check_tensor_row, v, &err))
        violation(v, "tensors: %s", err.message);
}

/* The checks of one event against the trace so far. */
static void check_consistency(Validation *v, const cJSON *e, const char *name) {
    if (v->ended_by != NULL) violation(v, "event after the final %s line", v->ended_by);
    if (!v->have_run && strcmp(name, "run") != 0) {
        violation(v, "the first line must be the run header, not %s", name);
        v->have_run = true; /* report once */
        return;
    }
    if (strcmp(name, "run") == 0) {
        if (v->have_run) violation(v, "a second run header");
        v->have_run = true;
        const cJSON *model = cJSON_GetObjectItemCaseSensitive(e, "model");
        v->vocab_size = int_field(model, "vocab_size");
        v->kv_dim = int_field(model, "kv_dim");
        cJSON_Delete(v->prompt_tokens);
        v->prompt_tokens =
            cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(e, "prompt_tokens"), true);
    } else if (strcmp(name, "logits") == 0) {
        expect_length(v, e, "logits", v->vocab_size, "vocab_size");
        expect_increasing(v, &v->last_logits_pos, int_field(e, "pos"), "logits");
    } else if (strcmp(name, "kv") == 0) {
        expect_length(v, e, "k", v->kv_dim, "kv_dim");
        expect_length(v, e, "v", v->kv_dim, "kv_dim");
    } else if (strcmp(name, "kv_snapshot") == 0) {
        int n_pos = int_field(e, "n_pos");
        /* in 64 bits: pos may be INT_MAX, and pos + 1 must not wrap */
        if ((long long)n_pos != (long long)int_field(e, "pos") + 1)
            violation(v, "kv_snapshot n_pos is not pos + 1");
        expect_length(v, e, "k", n_pos, "n_pos rows");
        expect_length(v, e, "v", n_pos, "n_pos rows");
    } else if (strcmp(name, "activation") == 0) {
        /* In 64 bits, stopping past INT_MAX: no product can wrap to a
         * small number that a short data array would then match. */
        const cJSON *shape = cJSON_GetObjectItemCaseSensitive(e, "shape"), *d;
        long long n = 1;
        cJSON_ArrayForEach(d, shape) {
            if (d->valueint < 0 || (n *= d->valueint) > INT_MAX) break;
        }
        if (d != NULL)
            violation(v, "activation shape is negative or its product exceeds %d", INT_MAX);
        else
            expect_length(v, e, "data", (int)n, "the product of shape");
    } else if (strcmp(name, "sample") == 0) {
        check_sample(v, e);
    } else if (strcmp(name, "token") == 0) {
        expect_increasing(v, &v->last_token_pos, int_field(e, "pos"), "token");
    } else if (strcmp(name, "context") == 0) {
        /* the kept tokens are prefilled again from position 0 */
        int kept = int_field(e, "kept");
        v->last_logits_pos = v->last_sample_pos = kept > INT_MIN ? kept - 1 : INT_MIN;
        v->last_token_pos = kept;
    } else if (strcmp(name, "logprobs") == 0) {
        check_logprobs(v, e);
    } else if (strcmp(name, "tensors") == 0) {
        check_tensors(v, e);
    } else if (strcmp(name, "done") == 0 || strcmp(name, "error") == 0 ||
               strcmp(name, "scored") == 0) {
        if (strcmp(name, "done") == 0) check_done(v, e);
        v->ended_by = strcmp(name, "done") == 0    ? "done"
                      : strcmp(name, "error") == 0 ? "error"
                                                   : "scored";
    }
}

struct TraceSchemas {
    int n;
    cJSON *parsed[64]; /* [n], in the order of trace_schema_texts */
};

TraceSchemas *trace_schemas_load(void) {
    TraceSchemas *s = calloc(1, sizeof *s);
    if (s == NULL) return NULL;
    while (trace_schema_texts[s->n].event != NULL && s->n < 64) {
        s->parsed[s->n] = cJSON_Parse(trace_schema_texts[s->n].json);
        if (s->parsed[s->n++] == NULL) { /* the compiled-in text is ours: cannot happen */
            trace_schemas_free(s);
            return NULL;
        }
    }
    return s;
}

void trace_schemas_free(TraceSchemas *s) {
    for (int i = 0; s != NULL && i < s->n; i++) cJSON_Delete(s->parsed[i]);
    free(s);
}

/* One line: its schema, then its consistency with the lines before it. */
static void validate_event(Validation *v, const TraceSchemas *schemas, const cJSON *e) {
    const char *name = trace_event_name(e);
    const cJSON *schema = NULL;
    for (int i = 0; name != NULL && i < schemas->n; i++) {
        if (strcmp(trace_schema_texts[i].event, name) == 0) schema = schemas->parsed[i];
    }
    char msg[600];
    if (name == NULL)
        violation(v, "no \"event\" field");
    else if (schema == NULL)
        violation(v, "unknown event \"%.60s\"", name);
    else if (!schema_check(schema, e, msg, sizeof msg))
        violation(v, "%s: %s", name, msg);
    else
        check_consistency(v, e, name);
}

int trace_validate_with(const TraceSchemas *schemas, const char *path, FILE *report,
                        StepError *err) {
    TraceReader r;
    if (!trace_reader_open(&r, path, err)) return -1;
    Validation v = {.path = path,
                    .report = report,
                    .last_logits_pos = -1,
                    .last_sample_pos = -1,
                    .last_token_pos = -1,
                    .last_logprobs_pos = -1};
    cJSON *e;
    bool not_json;
    while ((e = trace_reader_next(&r, &not_json)) != NULL || not_json) {
        v.line = r.line_no;
        if (not_json)
            violation(&v, "not valid JSON");
        else
            validate_event(&v, schemas, e);
        cJSON_Delete(e);
    }
    v.line = r.line_no;
    if (r.line_no == 0)
        violation(&v, "the trace is empty");
    else if (v.ended_by == NULL)
        violation(&v, "the trace does not end with a done, scored or error line");
    if (v.violations > MAX_REPORTED)
        fprintf(report, "%s: %d more violations not shown\n", path, v.violations - MAX_REPORTED);
    cJSON_Delete(v.prompt_tokens);
    trace_reader_close(&r);
    return v.violations;
}

int trace_validate_file(const char *path, FILE *report, StepError *err) {
    TraceSchemas *schemas = trace_schemas_load();
    if (schemas == NULL) {
        step_fail(err, "trace validate: out of memory");
        return -1;
    }
    int violations = trace_validate_with(schemas, path, report, err);
    trace_schemas_free(schemas);
    return violations;
}
