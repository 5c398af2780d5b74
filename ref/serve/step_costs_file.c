/* step_costs_file.c: see step_costs_file.h. */
#include "ref/serve/step_costs_file.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ref/util/file_util.h"
#include "ref/util/json_util.h"

#define COSTS_FORMAT "stepwise-step-costs"

/* The most a coefficient may say, in seconds: an hour. */
#define MAX_COST_SECONDS 3600.0

static bool parse_pass(const cJSON *root, const char *key, PassCost *out, StepError *err) {
    const cJSON *o = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!cJSON_IsObject(o)) return step_fail(err, "step costs: no \"%s\" object", key);
    const char *names[3] = {"fixed_s", "per_row_s", "per_attended_s"};
    double *dest[3] = {&out->fixed, &out->per_row, &out->per_attended};
    for (int i = 0; i < 3; i++)
        if (!json_number_field(o, names[i], 0, MAX_COST_SECONDS, dest[i]))
            return step_fail(err, "step costs: %s.%s must be a number of seconds in [0, 3600]", key,
                             names[i]);
    return true;
}

static bool pass_is_free(const PassCost *p) {
    return p->fixed == 0 && p->per_row == 0 && p->per_attended == 0;
}

bool step_costs_parse(const char *text, size_t n, StepCosts *out, StepError *err) {
    memset(out, 0, sizeof *out);
    if (memchr(text, '\0', n) != NULL) /* cJSON would skip it as white space */
        return step_fail(err, "step costs: has a NUL byte (not text)");
    cJSON *root = json_parse_whole_n(text, n);
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return step_fail(err, "step costs: not a JSON object");
    }
    const char *format = json_string_field(root, "format");
    int version = 0, seq_len = 0, threads = 1;
    double kv_bytes = 0;
    bool ok = true;
    if (format == NULL || strcmp(format, COSTS_FORMAT) != 0)
        ok = step_fail(err, "step costs: \"format\" is not \"" COSTS_FORMAT "\"");
    else if (!json_int_field(root, "version", 1, 1, &version))
        ok = step_fail(err, "step costs: \"version\" must be 1");
    else if (!json_int_field(root, "seq_len", 1, 1 << 24, &seq_len))
        ok = step_fail(err, "step costs: \"seq_len\" must be a whole number in [1, 2^24]");
    else if (!json_number_field(root, "kv_bytes_per_position", 1, 1099511627776.0, &kv_bytes) ||
             kv_bytes != (double)(uint64_t)kv_bytes)
        ok = step_fail(err, "step costs: \"kv_bytes_per_position\" must be a whole number in "
                            "[1, 2^40]");
    else if (cJSON_GetObjectItemCaseSensitive(root, "threads") != NULL &&
             !json_int_field(root, "threads", 1, 4096, &threads))
        ok = step_fail(err, "step costs: \"threads\" must be a whole number in [1, 4096]");
    if (ok)
        ok = parse_pass(root, "decode", &out->decode, err) &&
             parse_pass(root, "prefill", &out->prefill, err);
    /* Every pass at 0 s: simulated time never moves, and a report of so
     * many tokens in 0 s (tokens/s: none, or infinitely many) is nonsense. */
    if (ok && pass_is_free(&out->decode) && pass_is_free(&out->prefill))
        ok = step_fail(err, "step costs: every cost is 0: no time passes (a decode step or a "
                            "prefill must cost something)");
    if (ok) {
        out->seq_len = seq_len;
        out->kv_bytes_per_position = (uint64_t)kv_bytes;
        out->threads = threads;
    }
    cJSON_Delete(root);
    return ok;
}

bool step_costs_read(const char *path, StepCosts *out, StepError *err) {
    *out = (StepCosts){0}; /* the caller frees it whatever happens: a file that cannot
                              be read must leave it empty, not as it was */
    char *text = NULL;
    if (!file_read_text(path, "step costs", &text, err)) return false;
    bool ok = step_costs_parse(text, strlen(text), out, err);
    if (!ok) {
        char why[sizeof err->message];
        snprintf(why, sizeof why, "%s", err->message);
        step_fail(err, "%s: %s", path, why);
    }
    free(text);
    return ok;
}

/* A double written with 17 digits, so that it reads back to the same bits
 * (cJSON's own printing stops at 15 when the value reads back "close"). */
static void add_exact(cJSON *o, const char *key, double v) {
    char text[40];
    snprintf(text, sizeof text, "%.17g", v);
    cJSON_AddRawToObject(o, key, text);
}

static cJSON *pass_json(const PassCost *p) {
    cJSON *o = cJSON_CreateObject();
    add_exact(o, "fixed_s", p->fixed);
    add_exact(o, "per_row_s", p->per_row);
    add_exact(o, "per_attended_s", p->per_attended);
    return o;
}

cJSON *step_costs_json(const StepCosts *c, const char *model) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "format", COSTS_FORMAT);
    cJSON_AddNumberToObject(o, "version", 1);
    cJSON_AddStringToObject(o, "model", model != NULL ? model : "");
    cJSON_AddNumberToObject(o, "seq_len", c->seq_len);
    cJSON_AddNumberToObject(o, "kv_bytes_per_position", (double)c->kv_bytes_per_position);
    cJSON_AddNumberToObject(o, "threads", c->threads);
    cJSON_AddItemToObject(o, "decode", pass_json(&c->decode));
    cJSON_AddItemToObject(o, "prefill", pass_json(&c->prefill));
    cJSON *points = cJSON_AddArrayToObject(o, "points");
    for (int i = 0; i < c->n_points; i++) {
        cJSON *p = cJSON_CreateObject();
        const StepCostPoint *q = &c->points[i];
        cJSON_AddStringToObject(p, "kind", q->kind == PASS_KIND_DECODE ? "decode" : "prefill");
        cJSON_AddNumberToObject(p, "rows", q->rows);
        cJSON_AddNumberToObject(p, "attended", q->attended);
        add_exact(p, "seconds", q->seconds);
        cJSON_AddItemToArray(points, p);
    }
    return o;
}

bool step_costs_write(const char *path, const StepCosts *c, const char *model, StepError *err) {
    cJSON *o = step_costs_json(c, model);
    char *printed = cJSON_Print(o);
    cJSON_Delete(o);
    if (printed == NULL) return step_fail(err, "step costs: out of memory");
    AtomicFile f;
    bool ok = atomic_file_open(&f, path, err);
    if (ok) {
        fprintf(f.file, "%s\n", printed);
        ok = atomic_file_commit(&f, err);
    }
    cJSON_free(printed);
    return ok;
}
