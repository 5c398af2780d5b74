/* cli/score.c: `stepwise score`, teacher-forced scoring of a fixed sequence
 * into a file of trace events: every position's logits and log-probabilities,
 * the cross-entropy of each next token, and the perplexity. */
#include <ctype.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "trace/trace_events.h"
#include "trace/trace_observer.h"
#include "ref/cli/commands.h"
#include "ref/cli/common.h"
#include "ref/cli/options.h"
#include "ref/cli/identity.h"
#include "ref/cli/signals.h"
#include "ref/util/clock.h"
#include "ref/util/file_util.h"
#include "ref/model/model_quant.h"
#include "ref/score.h"

/* The help's usage lines and what the command does. */
static const char SCORE_USAGE[] =
    "usage: stepwise score --model M [--tokenizer T] (--text STR | --tokens 1,403,407 |\n"
    "                      --tokens-file F) --out FILE [options]\n"
    "\n"
    "Run one prefill over a fixed sequence and write, as trace events\n"
    "(docs/oracle.md): the logits at every position, each position's top\n"
    "log-probabilities with their pieces, the log-probability (cross-entropy) of\n"
    "the token that actually comes next, and the sequence's perplexity. Prompt\n"
    "tokens get log-probabilities too: every token after the first is predicted.\n";

typedef struct {
    CliModelRun load;
    const char *text, *tokens, *tokens_file, *out;
    const char *tensors; /* --tensors, or NULL */
    int top_n;
} ScoreArgs;

/* Parse integers separated by commas or white space into a malloc'd array. */
static bool parse_token_list(const char *text, const char *what, int **out, int *n,
                             StepError *err) {
    size_t len = strlen(text);
    int *ids = malloc((len / 2 + 1) * sizeof(int));
    if (ids == NULL) return step_fail(err, "%s: out of memory", what);
    int count = 0;
    const char *p = text;
    while (*p) {
        while (*p == ',' || isspace((unsigned char)*p)) p++;
        if (*p == '\0') break;
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v < 0 || v > 1 << 30 ||
            (*end && *end != ',' && !isspace((unsigned char)*end))) {
            free(ids);
            return step_fail(err, "%s: expects token ids separated by commas, near '%.20s'", what,
                             p);
        }
        ids[count++] = (int)v;
        p = end;
    }
    if (count == 0) {
        free(ids);
        return step_fail(err, "%s: no token ids", what);
    }
    *out = ids, *n = count;
    return true;
}

/* --hooks: "default", "none" or hook globs, into the trace's options. */
static bool parse_hooks(const CliOption *o, const char *value, void *dest, StepError *err) {
    (void)o;
    if (strcmp(value, "none") == 0) return true;
    return trace_hooks_parse(dest, strcmp(value, "default") == 0 ? TRACE_DEFAULT_HOOKS : value,
                             err);
}

static const CliOption SCORE_OPTIONS[] = {
    {"text", "STR", OPTION_TEXT, offsetof(ScoreArgs, text), .help = "encode this text (BOS first)"},
    {"tokens", "LIST", OPTION_TEXT, offsetof(ScoreArgs, tokens),
     .help = "these token ids, e.g. 1,403,407"},
    {"tokens-file", "F", OPTION_TEXT, offsetof(ScoreArgs, tokens_file), .path = PATH_IN,
     .help = "token ids from a file, separated by commas or white space"},
    {"out", "FILE", OPTION_TEXT, offsetof(ScoreArgs, out), .required = true, .path = PATH_OUT,
     .help = "where to write (written whole or not at all)"},
    {"tensors", "F.safetensors", OPTION_TEXT, offsetof(ScoreArgs, tensors), .path = PATH_OUT,
     .help = "put the logits, the KV rows and the activations in\n"
             "F as float32 tensors of [positions, ...] (attn.scores and\n"
             "attn.pattern: [positions, heads, positions], padded past\n"
             "each position with what the causal mask makes them, -inf\n"
             "and 0); --out keeps the other events and names the\n"
             "tensors in one \"tensors\" event"},
    {"top-n", "N", OPTION_INT, offsetof(ScoreArgs, top_n), 0, 1000,
     .help = "most likely tokens listed per position (default 5; 0: none,\n"
             "and with --tokens no --tokenizer is needed)"},
    {"hooks", "P", OPTION_CUSTOM, offsetof(ScoreArgs, load.trace), .parse = parse_hooks,
     .help = "also write activations at every position: \"default\" (the\n"
             "residual stream of every block, attn_out, mlp_out and\n"
             "final_norm), or hook globs as --trace-hooks takes them"},
    {"quiet", NULL, OPTION_FLAG, offsetof(ScoreArgs, load.quiet),
     .help = "print nothing but errors (no summary, no progress line)"},
    CLI_OPTIONS_END};

static const CliCommandOptions SCORE_COMMAND = {
    .command = "score",
    .options = SCORE_OPTIONS,
    .groups =
        (const CliOptionGroup[]){
            CLI_MODEL_GROUP(ScoreArgs, load, "the model:"),
            CLI_QUANT_GROUP(ScoreArgs, load, NULL),
            CLI_TRACE_GROUP(ScoreArgs, load, "what the --out file holds (docs/trace-format.md):"),
            {0}},
    .usage = SCORE_USAGE};

static int parse_score_args(int argc, char **argv, ScoreArgs *a, StepError *err) {
    *a = (ScoreArgs){.top_n = 5, .load = {.quant = {.run = {.group = 32}}, .layer_progress = true}};
    trace_options_default(&a->load.trace);
    a->load.trace.level = TRACE_LOGITS;
    int parsed = cli_options_parse(&SCORE_COMMAND, argc, argv, a, NULL, err);
    if (parsed <= 0) return parsed;
    if (a->load.trace.level < TRACE_LOGITS)
        a->load.trace.level = TRACE_LOGITS; /* the point of a score */
    int sources = (a->text != NULL) + (a->tokens != NULL) + (a->tokens_file != NULL);
    if (sources != 1) {
        step_fail(err, "score: give exactly one of --text, --tokens, --tokens-file");
        return -1;
    }
    if (a->tensors != NULL) {
        size_t n = strlen(a->tensors);
        if (n < 12 || strcmp(a->tensors + n - 12, ".safetensors") != 0) {
            step_fail(err, "score: --tensors %s: the file must end in .safetensors", a->tensors);
            return -1;
        }
        if (strcmp(a->tensors, a->out) == 0) {
            step_fail(err, "score: --tensors and --out name the same file");
            return -1;
        }
        if (!file_check_output(a->tensors, "--tensors", err)) return -1;
    }
    /* ids in and no pieces out (--top-n 0): no tokenizer needed */
    a->load.no_tokenizer = a->text == NULL && a->top_n == 0 && a->load.tokenizer == NULL;
    return file_check_output(a->out, "--out", err) ? 1 : -1;
}

/* The tensors file as the JSON Lines file names it: its own name when both
 * lie in one folder, else the path as given (readers resolve a relative one
 * from the JSON Lines file's folder). */
static const char *tensors_reference(const char *tensors, const char *out) {
    const char *ts = strrchr(tensors, '/'), *os = strrchr(out, '/');
    size_t td = ts ? (size_t)(ts - tensors) : 0, od = os ? (size_t)(os - out) : 0;
    bool same_folder = td == od && strncmp(tensors, out, td) == 0;
    return same_folder ? (ts ? ts + 1 : tensors) : tensors;
}

/* The tensors file's metadata: what it is and the ids it was scored on. */
static cJSON *tensors_metadata(const int *ids, int n) {
    cJSON *m = cJSON_CreateObject(), *list = cJSON_CreateIntArray(ids, n);
    char *text = cJSON_PrintUnformatted(list);
    cJSON_AddStringToObject(m, "format", "stepwise-tensors");
    cJSON_AddStringToObject(m, "first_pos", "0");
    cJSON_AddStringToObject(m, "values", "logits");
    cJSON_AddStringToObject(m, "token_ids", text != NULL ? text : "[]");
    cJSON_free(text);
    cJSON_Delete(list);
    return m;
}

/* The sequence to score, from whichever source was given. */
static bool score_input(const ScoreArgs *a, const Tokenizer *tok, int **ids, int *n,
                        StepError *err) {
    if (a->text != NULL) return tokenizer_encode(tok, a->text, true, ids, n, err);
    if (a->tokens != NULL) return parse_token_list(a->tokens, "--tokens", ids, n, err);
    char *text;
    if (!file_read_text(a->tokens_file, "tokens file", &text, err)) return false;
    bool ok = parse_token_list(text, a->tokens_file, ids, n, err);
    free(text);
    return ok;
}

static int run_score(void *args, Model *m, Tokenizer *tok, CliProgress *progress, StepError *err) {
    ScoreArgs *a = args;
    (void)progress; /* the layers' progress goes through m's sink */
    double t0 = clock_seconds();
    int *ids = NULL, n = 0;
    cJSON *files = NULL; /* the model's files and SHA-256, for the run header */
    if (!cli_model_files(a->load.model, a->load.trace.no_hash, &files, err)) return EXIT_BAD_INPUT;
    if (!score_input(a, tok, &ids, &n, err)) {
        cJSON_Delete(files);
        return EXIT_BAD_INPUT;
    }
    TraceObserver to = {
        .options = &a->load.trace,
        .tokenizer = tok,
        .bytes_per_token = kv_cache_bytes_of(
            &m->config, 1, kv_type_for(&m->config, m->run.kv, a->load.quant.run.kv))};
    TensorFile tf = {0};
    if ((a->tensors != NULL && !tensor_file_open(&tf, err)) ||
        (to.writer = trace_writer_open(a->out, err)) == NULL) {
        tensor_file_free(&tf), free(ids), cJSON_Delete(files);
        return EXIT_BAD_INPUT;
    }
    if (a->tensors != NULL) /* a per-head row spans the run's n positions */
        to.tensors = &tf, to.tensor_heads = m->config.n_heads, to.tensor_keys = n;
    TraceRunInfo info = {.mode = "score",
                         .prompt = a->text ? a->text : "",
                         .prompt_tokens = ids,
                         .n_prompt = n,
                         .model_path = a->load.model,
                         .tokenizer_path = a->load.tokenizer,
                         .model_source = m->source,
                         .model_files = files,
                         .weight_group = m->weight_group,
                         .quant = a->load.quant.run,
                         .run = m->run};
    trace_observer_write(&to, trace_event_run(&m->config, NULL, &info, &a->load.trace));
    cJSON_Delete(files);
    if (a->text != NULL) trace_observer_write(&to, trace_event_tokenize(tok, a->text, ids, n));
    StepObserver obs = trace_step_observer(&to);
    ScoreResult r;
    int status = 0;
    char summary[160] = "";
    r.keep_logits = false;
    bool scored = score_tokens(m, ids, n, a->top_n, &a->load.quant.run, &obs, &r, err);
    if (scored && cli_signal_caught()) { /* the pass ran to its end; the file says it was cut */
        score_result_free(&r);
        scored = step_fail(err, "score: interrupted (%s)", cli_signal_name(cli_signal_caught()));
        trace_observer_write(&to, trace_event_error("interrupted", err->message, ids, n));
        status = 128 + cli_signal_caught();
    } else if (!scored || !model_files_unchanged(m, err)) {
        if (scored) score_result_free(&r);
        trace_observer_write(&to, trace_event_error("bad_input", err->message, ids, n));
        status = EXIT_BAD_INPUT;
    } else {
        for (int p = 0; p < r.n; p++)
            trace_observer_write(&to, trace_event_logprobs(&r.positions[p], tok));
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        ScoreMeasured measured = {clock_seconds() - t0, (uint64_t)ru.ru_maxrss * 1024u};
        if (a->tensors != NULL) {
            cJSON *e = tensor_file_event(&tf, tensors_reference(a->tensors, a->out));
            cJSON_AddNumberToObject(e, "first_pos", 0);
            cJSON_AddItemToObject(e, "token_ids", cJSON_CreateIntArray(ids, n));
            trace_observer_write(&to, e);
        }
        trace_observer_write(&to,
                             trace_event_scored(&r, a->load.trace.reproducible ? NULL : &measured));
        snprintf(summary, sizeof summary,
                 "scored %d tokens: cross-entropy %.4f nats/token, perplexity %.4f\n", r.n,
                 r.cross_entropy, r.perplexity);
        score_result_free(&r);
    }
    /* the tensors first: the JSON Lines file that names them appears only
     * once they are whole */
    cJSON *meta = a->tensors != NULL && status == 0 ? tensors_metadata(ids, n) : NULL;
    if (meta != NULL && !tensor_file_commit(&tf, a->tensors, meta, err)) {
        trace_writer_discard(to.writer);
        status = EXIT_BAD_INPUT;
    } else if (!trace_writer_commit(to.writer, err)) {
        status = EXIT_BAD_INPUT;
    }
    cJSON_Delete(meta);
    tensor_file_free(&tf);
    free(ids);
    if (status == 0 && !a->load.quiet) fputs(summary, stderr); /* once both files are whole */
    return status;
}

int cli_score(int argc, char **argv) {
    ScoreArgs a;
    StepError err;
    int parsed = parse_score_args(argc, argv, &a, &err);
    return cli_run_with_model(parsed, &a.load, run_score, &a, &err);
}
