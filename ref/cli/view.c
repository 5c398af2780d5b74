/* cli/view.c: `stepwise view TRACE [TRACE2] -o page.html`, one
 * self-contained HTML page of a run for a projector or a mail: the page
 * (trace/viewer.html, compiled in) with the trace's events embedded as
 * JSON. The C side only selects and embeds the events; the page draws. */
#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace/diff_tensors.h"
#include "trace/trace_reader.h"
#include "trace/trace_validate.h"
#include "ref/cli/command.h"
#include "ref/cli/commands.h"
#include "ref/cli/common.h"
#include "ref/cli/options.h"
#include "ref/formats/model_open.h"
#include "ref/util/file_util.h"
#include "ref/util/text_buffer.h"

/* The help's usage lines and what the command does. */
static const char VIEW_USAGE[] =
    "usage: stepwise view TRACE [TRACE2] [-o PAGE.html] [--tokenizer T]\n"
    "       stepwise view --example -o PAGE.html\n"
    "\n"
    "Write one self-contained HTML page of a trace (no network: it opens from\n"
    "file:// and can be mailed): the tokens, for each step the top logits, a\n"
    "temperature slider that recomputes the softmax, top-k, top-p and min-p drawn\n"
    "as cuts with the survivors renormalised and the draw u on their CDF, the\n"
    "attention patterns as heatmaps when the trace has them, and the KV cache row\n"
    "by row, its K and V values as heatmaps when it was traced with --trace-kv.\n"
    "With TRACE2, the two runs side by side from their first divergence.\n"
    "--example writes the (2, 1, 0) classroom example, no trace needed.\n"
    "Each TRACE is first checked as `stepwise trace validate` checks it, and\n"
    "refused (exit 2, naming its first violation) unless it passes.\n";

extern const char stepwise_viewer_html[]; /* trace/viewer.html, built in */

/* The events the page draws (the KV rows of --trace-kv among them: its K
 * and V heatmaps); the rest (snapshots, most activations, merges) would
 * only make it heavy. */
static bool wanted(const char *name, const cJSON *e) {
    static const char *const keep[] = {"run",     "tokenize", "chat",    "token",
                                       "forward", "logits",   "sample",  "done",
                                       "error",   "context",  "routing", "kv"};
    for (size_t i = 0; i < sizeof keep / sizeof keep[0]; i++)
        if (strcmp(name, keep[i]) == 0) return true;
    const char *hook = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "hook"));
    size_t n = hook ? strlen(hook) : 0;
    return strcmp(name, "activation") == 0 && n > 13 && strcmp(hook + n - 13, ".attn.pattern") == 0;
}

/* Whether the trace at path passes `trace validate`: err names its first
 * violation when not. A page drawn from a file that is no trace would
 * show numbers that mean nothing. */
static bool trace_is_valid(const char *path, StepError *err) {
    if (strcmp(path, "-") == 0)
        return step_fail(err, "view: reads traces from files (it validates each before drawing "
                              "it); save standard input to a file first");
    char *report = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&report, &size);
    if (f == NULL) return step_fail(err, "view: out of memory");
    int violations = trace_validate_file(path, f, err);
    fclose(f);
    bool ok = violations == 0;
    if (violations > 0) {
        size_t line = strcspn(report, "\n");
        step_fail(err, "view: %.*s (%d violation%s: see stepwise trace validate)", (int)line,
                  report, violations, violations == 1 ? "" : "s");
    }
    free(report);
    return ok;
}

/* A logits row or a head's attention pattern of a score file's tensors
 * file, as the event the page draws. */
static bool add_row(void *events, cJSON *logits_event) {
    cJSON_AddItemToArray(events, logits_event);
    return true;
}

/* {"name", "events": [...]} of the trace at path (a score file's logits
 * from its tensors file, when it has one). */
static cJSON *read_trace(const char *path, StepError *err) {
    TraceReader r;
    if (!trace_reader_open(&r, path, err)) return NULL;
    cJSON *t = cJSON_CreateObject(), *events = cJSON_AddArrayToObject(t, "events");
    const char *base = strrchr(path, '/');
    cJSON_AddStringToObject(t, "name", base != NULL ? base + 1 : path);
    bool ok = true, not_json, has_run = false;
    cJSON *e;
    while (ok && ((e = trace_reader_next(&r, &not_json)) != NULL || not_json)) {
        if (not_json) {
            ok = step_fail(err, "%s:%ld: not valid JSON (malformed or truncated)", path, r.line_no);
            break;
        }
        const char *name = trace_event_name(e);
        if (name != NULL && strcmp(name, "tensors") == 0) {
            ok = tensors_events(e, path, true, true, add_row, events, err);
            cJSON_Delete(e);
        } else if (name != NULL && wanted(name, e)) {
            has_run |= strcmp(name, "run") == 0;
            cJSON_AddItemToArray(events, e);
        } else {
            cJSON_Delete(e);
        }
    }
    trace_reader_close(&r);
    if (ok && !has_run) ok = step_fail(err, "%s: no run event: not a stepwise trace", path);
    if (!ok) cJSON_Delete(t), t = NULL;
    return t;
}

/* The page: the template with the data where __STEPWISE_DATA__ stands,
 * "</" written "<\/" so that no string in it ends the script element. */
static char *page_of(const cJSON *data) {
    char *json = cJSON_PrintUnformatted(data);
    const char *mark = strstr(stepwise_viewer_html, "__STEPWISE_DATA__");
    if (json == NULL || mark == NULL) {
        cJSON_free(json);
        return NULL;
    }
    TextBuffer b = TEXT_BUFFER_INIT;
    text_buffer_add(&b, stepwise_viewer_html, (size_t)(mark - stepwise_viewer_html));
    for (const char *p = json; *p; p++) {
        if (p[0] == '<' && p[1] == '/')
            text_buffer_add(&b, "<\\/", 3), p++; /* the '/' is written */
        else if (p[0] == '<' && p[1] == '!')
            text_buffer_add(&b, "\\u003c", 6);
        else
            text_buffer_add(&b, p, 1);
    }
    const char *rest = mark + strlen("__STEPWISE_DATA__");
    text_buffer_add(&b, rest, strlen(rest));
    cJSON_free(json);
    if (!b.ok) free(b.s);
    return b.ok ? b.s : NULL;
}

typedef struct {
    const char *out, *tokenizer;
    bool example;
} ViewArgs;

static const CliOption VIEW_OPTIONS[] = {
    {"out", "PAGE", OPTION_TEXT, offsetof(ViewArgs, out), .short_name = 'o', .path = PATH_OUT,
     .help = "where to write (default: TRACE with .html for .jsonl)"},
    {"example", NULL, OPTION_FLAG, offsetof(ViewArgs, example),
     .help = "the (2, 1, 0) classroom example instead of a trace"},
    {"tokenizer", "T", OPTION_TEXT, offsetof(ViewArgs, tokenizer), .path = PATH_IN,
     .help = "name every token by its piece (a tokenizer.bin, a\n"
             "tokenizer.json or a folder): a trace names only its own"},
    CLI_OPTIONS_END};

static const CliCommandOptions VIEW_COMMAND = {.command = "view",
                                               .options = VIEW_OPTIONS,
                                               .max_operands = 2,
                                               .operands = "one or two traces, or --example",
                                               .operand_input = "trace",
                                               .usage = VIEW_USAGE};

static int view(void *view_args, int n, char **paths, StepError *err) {
    const ViewArgs *args = view_args;
    bool ok = true;
    const char *out = args->out; /* or the default, below */
    if (args->example ? n != 0 : n < 1 || n > 2)
        ok = step_fail(err, "view: expects one or two traces, or --example (see --help)");
    char default_out[4096];
    if (ok && out == NULL) {
        const char *t = args->example ? NULL : paths[0];
        size_t len = t ? strlen(t) : 0;
        if (t == NULL || strcmp(t, "-") == 0 || len < 7 || strcmp(t + len - 6, ".jsonl") != 0 ||
            len + 1 > sizeof default_out)
            ok = step_fail(err, "view: give -o PAGE.html (the default is only for a .jsonl trace)");
        else
            snprintf(default_out, sizeof default_out, "%.*s.html", (int)(len - 6), t),
                out = default_out;
    }
    /* The default page is no option, so the tables' rule (options.h) is
     * applied to it here: it is no trace and no tokenizer, even by a link. */
    for (int i = 0; ok && out == default_out && i < n; i++)
        ok = cli_output_not_input("view", "-o", out, false, "trace", paths[i], err);
    if (ok && out == default_out && args->tokenizer != NULL)
        ok = cli_output_not_input("view", "-o", out, false, "--tokenizer", args->tokenizer, err);
    if (ok) ok = file_check_output(out, "-o", err);
    cJSON *data = cJSON_CreateObject(), *traces = cJSON_AddArrayToObject(data, "traces");
    for (int i = 0; ok && i < n; i++) {
        cJSON *t = trace_is_valid(paths[i], err) ? read_trace(paths[i], err) : NULL;
        ok = t != NULL;
        if (ok) cJSON_AddItemToArray(traces, t);
    }
    Tokenizer tok;
    if (ok && args->tokenizer != NULL && (ok = tokenizer_open(args->tokenizer, 0, &tok, err))) {
        cJSON *pieces = cJSON_AddArrayToObject(data, "pieces");
        for (int i = 0; i < tok.vocab_size; i++)
            cJSON_AddItemToArray(pieces, cJSON_CreateString(tok.pieces[i]));
        tokenizer_free(&tok);
    }
    char *page = ok ? page_of(data) : NULL;
    if (ok && page == NULL) ok = step_fail(err, "view: out of memory");
    AtomicFile f = {0};
    if (ok) ok = atomic_file_open(&f, out, err);
    if (ok) {
        fputs(page, f.file);
        ok = atomic_file_commit(&f, err);
    }
    if (ok) fprintf(stderr, "wrote %s: open it in a browser (file://)\n", out);
    free(page);
    cJSON_Delete(data);
    return ok ? 0 : EXIT_BAD_INPUT;
}

int cli_view(int argc, char **argv) {
    ViewArgs args = {0};
    return cli_command_run(&VIEW_COMMAND, argc, argv, &args, view);
}
