/* api_runs.c: stepwise.h's reading and comparing of runs (sw_run_*,
 * sw_diff*): the command line's diff (trace/), from files or arrays. */
#include "ref/api/stepwise.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ref/api/api_status.h"
#include "trace/diff_input.h"
#include "trace/diff_pair.h"
#include "trace/diff_text.h"
#include "trace/trace_diff.h"

struct sw_run {
    DiffRun run;
    float *logits; /* [positions, vocab], whole: the run may hold its rows in a mapped file */
};

/* ---- reading and comparing runs ---- */

sw_status sw_run_read(const char *path, sw_run **out, sw_error *err) {
    if (path == NULL || out == NULL)
        return api_fail(err, SW_ERR_INPUT, "sw_run_read: a NULL argument");
    *out = NULL;
    sw_run *r = calloc(1, sizeof *r);
    if (r == NULL) return api_fail(err, SW_ERR_MEMORY, "out of memory");
    StepError e;
    if (!diff_run_read(&r->run, path, NULL, &e)) {
        free(r);
        return api_fail_step(err, &e);
    }
    if ((r->logits = diff_run_logits_copy(&r->run)) == NULL) {
        sw_run_free(r);
        return api_fail(err, SW_ERR_MEMORY, "out of memory");
    }
    if (diff_run_read_short(&r->run)) {
        sw_run_free(r);
        return api_fail(err, SW_ERR_INPUT, "%s shrank while it was read", path);
    }
    *out = r;
    return api_ok(err);
}

void sw_run_free(sw_run *r) {
    if (r == NULL) return;
    diff_run_free(&r->run);
    free(r->logits);
    free(r);
}

int sw_run_positions(const sw_run *r) {
    return r != NULL ? r->run.n : 0;
}
int sw_run_vocab_size(const sw_run *r) {
    return r != NULL ? r->run.vocab_size : 0;
}
const float *sw_run_logits(const sw_run *r) {
    return r != NULL ? r->logits : NULL;
}
int sw_run_logprobs(const sw_run *r) {
    return r != NULL ? r->run.logprobs : 0;
}
const int *sw_run_position_ids(const sw_run *r) {
    return r != NULL ? r->run.pos : NULL;
}
int sw_run_token(const sw_run *r, int pos) {
    return r != NULL ? diff_run_input(&r->run, pos) : -1;
}

sw_status sw_diff(const char *reference, const char *candidate, const char *preset,
                  sw_diff_report *report, sw_error *err) {
    sw_diff_options o = {.preset = preset, .atol = -1, .rtol = -1};
    return sw_diff_with(reference, candidate, &o, report, err);
}

/* One comparison as the command line makes it, its parts kept for the
 * report: both runs (their names map loaded into *names), the tolerance
 * and the report (*r, allocated: large, its per-layer tables). The caller
 * frees all four, whatever the result. */
typedef struct {
    DiffRun ref, cand;
    HookNames names;
    DiffTolerance tol;
    DiffReport *r;
} DiffDone;

static bool diff_compute(const char *reference, const char *candidate, const DiffArrays *arrays,
                         const sw_diff_options *options, DiffDone *d, StepError *e) {
    *d = (DiffDone){0};
    sw_diff_options o = options != NULL ? *options : (sw_diff_options){.atol = -1, .rtol = -1};
    if (!diff_tolerance_preset(&d->tol, o.preset != NULL ? o.preset : "fp32", e) ||
        !diff_tolerance_custom(&d->tol, o.atol, o.rtol, e))
        return false;
    d->r = malloc(sizeof *d->r);
    if (d->r == NULL) return step_fail(e, "out of memory");
    return diff_pair_read(&d->ref, &d->cand, reference, candidate, arrays, o.names,
                          o.rope_halves != 0, &d->names, e) &&
           trace_diff(&d->ref, &d->cand, &d->tol, o.teacher_forced != 0, d->r, e);
}

static void diff_done_free(DiffDone *d) {
    hook_names_free(&d->names);
    diff_run_free(&d->ref), diff_run_free(&d->cand), free(d->r);
}

/* report (may be NULL) from the comparison d made. */
static void report_fill(sw_diff_report *report, const DiffReport *r) {
    if (report == NULL) return;
    *report = (sw_diff_report){.passed = r->pass,
                               .positions = r->n,
                               .inputs_checked = r->inputs_checked,
                               .inputs_compared = r->inputs_compared,
                               .inputs_differ_pos = r->inputs_differ_pos,
                               .ref_token = r->ref_token,
                               .cand_token = r->cand_token,
                               .activations = r->acts_compared,
                               .max_abs_logit = r->max_abs,
                               .kl_mean = r->kl_mean,
                               .top1_agreement = r->n > 0 ? (double)r->top1_agree / r->n : 0,
                               .diverged = r->diverged,
                               .first_layer = r->diverged ? r->first.layer : -1,
                               .first_pos = r->diverged ? r->first.pos : -1,
                               .max_abs_pos = r->n > 0 ? r->max_abs_pos : -1,
                               .max_abs_token = r->n > 0 ? r->max_abs_id : -1};
    if (r->diverged && r->first.point == HOOK_KV_ROW)
        snprintf(report->first_hook, sizeof report->first_hook, "kv");
    else if (r->diverged)
        hook_name((HookPoint)r->first.point, r->first.layer, report->first_hook,
                  sizeof report->first_hook);
    if (r->first_is_other_hook)
        hook_name((HookPoint)r->first_other.point, r->first_other.layer, report->other_hook,
                  sizeof report->other_hook);
    snprintf(report->fail_reason, sizeof report->fail_reason, "%s", r->fail_reason);
}

/* The command line's text of the comparison d made into text[0..size)
 * (size 0: none) and its whole size into *needed (may be NULL). */
static bool report_text(const DiffDone *d, const char *reference, const char *candidate, bool names,
                        char *text, size_t size, size_t *needed, StepError *e) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (f == NULL) return step_fail(e, "out of memory");
    DiffNameHint hint;
    diff_name_hint(d->r, names ? &d->names : NULL, &hint);
    diff_text_write(f, reference, candidate, &d->ref, &d->cand, &d->tol, d->r, &hint);
    bool done = fclose(f) == 0 && buf != NULL;
    if (done && needed != NULL) *needed = len + 1;
    if (done && size > 0) {
        size_t n = len < size - 1 ? len : size - 1;
        memcpy(text, buf, n), text[n] = '\0';
    }
    free(buf);
    return done || step_fail(e, "out of memory");
}

/* One comparison of reference with the candidate at path, or (arrays not
 * NULL) in arrays: report (may be NULL) and, with text or needed, its text. */
static sw_status diff_report(const char *reference, const char *candidate, const DiffArrays *arrays,
                             const sw_diff_options *options, sw_diff_report *report, char *text,
                             size_t size, size_t *needed, sw_error *err) {
    if (report != NULL)
        *report = (sw_diff_report){
            .first_layer = -1, .first_pos = -1, .inputs_differ_pos = -1, .max_abs_pos = -1};
    if (needed != NULL) *needed = 0;
    if (size > 0) text[0] = '\0';
    DiffDone d;
    StepError e;
    bool done = diff_compute(reference, candidate, arrays, options, &d, &e);
    if (done) report_fill(report, d.r);
    if (done && (size > 0 || needed != NULL))
        done = report_text(&d, reference, candidate != NULL ? candidate : "(arrays)",
                           options != NULL && options->names != NULL, text, size, needed, &e);
    diff_done_free(&d);
    return done ? api_ok(err) : api_fail_step(err, &e);
}

sw_status sw_diff_with(const char *reference, const char *candidate, const sw_diff_options *options,
                       sw_diff_report *report, sw_error *err) {
    if (reference == NULL || candidate == NULL || report == NULL)
        return api_fail(err, SW_ERR_INPUT, "sw_diff: a NULL argument");
    return diff_report(reference, candidate, NULL, options, report, NULL, 0, NULL, err);
}

sw_status sw_diff_arrays(const char *reference, const float *logits, int positions, int vocab_size,
                         const int *token_ids, const sw_diff_tensor *tensors, int n_tensors,
                         const sw_diff_options *options, sw_diff_report *report, sw_error *err) {
    if (report == NULL) return api_fail(err, SW_ERR_INPUT, "sw_diff_arrays: a NULL argument");
    return sw_diff_arrays_text(reference, logits, positions, vocab_size, token_ids, tensors,
                               n_tensors, options, report, NULL, 0, NULL, err);
}

sw_status sw_diff_arrays_text(const char *reference, const float *logits, int positions,
                              int vocab_size, const int *token_ids, const sw_diff_tensor *tensors,
                              int n_tensors, const sw_diff_options *options, sw_diff_report *report,
                              char *text, size_t size, size_t *needed, sw_error *err) {
    if (reference == NULL || (text == NULL && size > 0))
        return api_fail(err, SW_ERR_INPUT, "sw_diff_arrays: a NULL argument");
    if (n_tensors < 0 || n_tensors > (1 << 20) || (n_tensors > 0 && tensors == NULL))
        return api_fail(err, SW_ERR_INPUT,
                        "sw_diff_arrays: n_tensors %d, from 0 to 2^20, with tensors", n_tensors);
    DiffArrayTensor *t = malloc(((size_t)n_tensors + 1) * sizeof *t);
    if (t == NULL) return api_fail(err, SW_ERR_MEMORY, "sw_diff_arrays: out of memory");
    for (int i = 0; i < n_tensors; i++)
        t[i] = (DiffArrayTensor){tensors[i].hook, tensors[i].data, tensors[i].width};
    DiffArrays a = {.logits = logits,
                    .positions = positions,
                    .vocab_size = vocab_size,
                    .token_ids = token_ids,
                    .tensors = t,
                    .n_tensors = n_tensors};
    sw_status status = diff_report(reference, NULL, &a, options, report, text, size, needed, err);
    free(t);
    return status;
}

sw_status sw_diff_text(const char *reference, const char *candidate, const sw_diff_options *options,
                       sw_diff_report *report, char *text, size_t size, size_t *needed,
                       sw_error *err) {
    if (reference == NULL || candidate == NULL || (text == NULL && size > 0))
        return api_fail(err, SW_ERR_INPUT, "sw_diff_text: a NULL argument");
    return diff_report(reference, candidate, NULL, options, report, text, size, needed, err);
}
