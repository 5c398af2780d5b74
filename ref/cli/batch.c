/* cli/batch.c: `stepwise batch`, one model serving many requests, with a
 * JSON line per finished request and the serving metrics at the end. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "trace/trace_events.h"
#include "trace/trace_observer.h"
#include "ref/cli/commands.h"
#include "ref/cli/common.h"
#include "ref/cli/options.h"
#include "ref/cli/identity.h"
#include "ref/cli/signals.h"
#include "ref/util/file_util.h"
#include "ref/model/model_quant.h"
#include "ref/serve/requests.h"

/* The help's usage lines and what the command does. */
static const char BATCH_USAGE[] =
    "usage: stepwise batch --model M --tokenizer T --requests FILE.jsonl [options]\n"
    "\n"
    "Serve every request of FILE.jsonl (one JSON object per line: docs/batching.md)\n"
    "with one model: each request has its own tokens, KV cache and sampler; up to\n"
    "--max-batch of them are decoded together, one token each per step; requests\n"
    "are prefilled as they arrive and leave as soon as they finish. Each request's\n"
    "result is bitwise what `stepwise generate` gives for it alone.\n";

typedef struct {
    CliModelRun load;
    const char *requests, *out, *trace_dir, *metrics_json;
    int max_batch;
    int prefill_chunk; /* --prefill-chunk: 0 means whole prompts */
    ChatTemplate chat;
    bool prefix_cache;            /* --prefix-cache */
    long long prefix_cache_bytes; /* its budget */
} BatchArgs;

/* What the sink needs while the batch runs. */
typedef struct {
    const BatchArgs *a;
    const Model *m;
    const Tokenizer *tok;
    BatchRequest *reqs;
    FILE *out;
    TraceObserver *traces;   /* [n] one per request */
    StepObserver *observers; /* [n] */
    int done;
    int n;
    int trace_failures;   /* traces that could not be opened or written */
    CliProgress progress; /* on a terminal: one line instead of a line per request */
    cJSON *model_files;   /* the model's files and SHA-256, for every run header; owned */
} BatchCli;

/* --prefix-cache-bytes N: the budget, and the cache on. */
static bool parse_prefix_bytes(const CliOption *o, const char *value, void *dest, StepError *err) {
    (void)o;
    BatchArgs *a = dest;
    a->prefix_cache = true;
    return cli_parse_bytes(value, "--prefix-cache-bytes", &a->prefix_cache_bytes, err);
}

static const CliOption BATCH_OPTIONS[] = {
    {"requests", "FILE", OPTION_TEXT, offsetof(BatchArgs, requests), .required = true,
     .path = PATH_IN, .help = "the requests, one JSON object per line"},
    {"max-batch", "B", OPTION_INT, offsetof(BatchArgs, max_batch), 1, 4096,
     .help = "most requests decoded together (default 8)"},
    {"prefill-chunk", "N", OPTION_INT, offsetof(BatchArgs, prefill_chunk), 0, 1 << 30,
     .help = "compute an admitted prompt N positions a step, between\n"
             "the others' decode steps, so that a long prompt does not\n"
             "stall their tokens (chunked prefill; the same bits);\n"
             "default 0: each prompt in one pass"},
    {"chat-template", "T", OPTION_CUSTOM, offsetof(BatchArgs, chat),
     .parse = cli_option_chat_template,
     .help = "for requests with messages: llama2, chatml or llama3;\n"
             "default: the tokenizer's own (a tokenizer.json's template,\n"
             "recognised), llama2 for a llama2.c vocabulary"},
    {"out", "FILE", OPTION_TEXT, offsetof(BatchArgs, out), .path = PATH_OUT,
     .help = "one JSON line per finished request (default stdout)"},
    {"trace", "DIR", OPTION_TEXT, offsetof(BatchArgs, trace_dir), .path = PATH_OUT_FOLDER,
     .help = "one trace per request, DIR/<id>.jsonl (the trace options below)"},
    {"metrics-json", "FILE", OPTION_TEXT, offsetof(BatchArgs, metrics_json), .path = PATH_OUT,
     .help = "the summary and every request's metrics as JSON"},
    {"quiet", NULL, OPTION_FLAG, offsetof(BatchArgs, load.quiet),
     .help = "no progress or summary on stderr"},
    {"prefix-cache", NULL, OPTION_FLAG, offsetof(BatchArgs, prefix_cache),
     .help = "copy the KV rows of a prompt's start that an earlier\n"
             "request computed, instead of computing them again (the\n"
             "same bits either way); the summary says how many"},
    {"prefix-cache-bytes", "N", OPTION_CUSTOM, .parse = parse_prefix_bytes,
     .help = "the most bytes of rows it keeps (default 268435456),\n"
             "the least recently used prompt evicted first"},
    CLI_OPTIONS_END};

static const CliCommandOptions BATCH_COMMAND = {
    .command = "batch",
    .options = BATCH_OPTIONS,
    .groups =
        (const CliOptionGroup[]){
            CLI_MODEL_GROUP(BatchArgs, load, "the model:"),
            CLI_QUANT_GROUP(BatchArgs, load, NULL),
            CLI_TRACE_GROUP(BatchArgs, load, "tracing (with --trace DIR, as for generate):"),
            {0}},
    .after = "\n"
             "exit status: 0 when every request was served, 1 when some failed (each has\n"
             "its error line), 2 when the model or the requests file cannot be read.\n",
    .usage = BATCH_USAGE};

static int parse_batch_args(int argc, char **argv, BatchArgs *a, StepError *err) {
    *a = (BatchArgs){.max_batch = 8,
                     .chat = CHAT_DEFAULT,
                     .load = {.quant = {.run = {.group = 32}}},
                     .prefix_cache_bytes = 256LL << 20};
    trace_options_default(&a->load.trace);
    int parsed = cli_options_parse(&BATCH_COMMAND, argc, argv, a, NULL, err);
    if (parsed <= 0) return parsed;
    struct stat st;
    if (a->trace_dir != NULL && stat(a->trace_dir, &st) == 0 && !S_ISDIR(st.st_mode)) {
        step_fail(err, "--trace %s: is not a folder", a->trace_dir);
        return -1;
    }
    if ((a->out != NULL && !file_check_output(a->out, "--out", err)) ||
        (a->metrics_json != NULL && !file_check_output(a->metrics_json, "--metrics-json", err)))
        return -1;
    return 1;
}

/* Before its prefill: open the request's trace and write what generate
 * writes before its prefill: the run header, the tokenization (and BPE
 * merges), and for a chat the origin of each token. */
static void on_admitted(void *ctx, BatchRequest *r) {
    BatchCli *b = ctx;
    if (b->a->trace_dir == NULL) return;
    int i = (int)(r - b->reqs);
    TraceObserver *to = &b->traces[i];
    char path[4096];
    StepError err;
    snprintf(path, sizeof path, "%s/%s.jsonl", b->a->trace_dir, r->id);
    *to = (TraceObserver){
        .options = &b->a->load.trace,
        .tokenizer = b->tok,
        .bytes_per_token = kv_cache_bytes_of(
            &b->m->config, 1, kv_type_for(&b->m->config, b->m->run.kv, r->opt.quant.kv))};
    if ((to->writer = trace_writer_open(path, &err)) == NULL) {
        r->error = strdup(err.message);
        b->trace_failures++;
        return;
    }
    cJSON *merges = cJSON_CreateArray();
    if (r->prompt_text != NULL && (b->a->load.trace.bpe || b->a->load.trace.level == TRACE_FULL)) {
        int *ids, n;
        BpeObserver bpe = trace_bpe_observer(to);
        to->held = merges;
        if (tokenizer_encode_observed(b->tok, r->prompt_text, true, &bpe, &ids, &n, &err))
            free(ids);
        to->held = NULL;
    }
    TraceRunInfo info = {.mode = "generate",
                         .prompt = r->prompt_text ? r->prompt_text : "",
                         .prompt_tokens = r->prompt,
                         .n_prompt = r->n_prompt,
                         .steps = r->opt.steps,
                         .model_path = b->a->load.model,
                         .tokenizer_path = b->a->load.tokenizer,
                         .model_source = b->m->source,
                         .model_files = b->model_files,
                         .weight_group = b->m->weight_group,
                         .quant = r->opt.quant,
                         .run = b->m->run};
    trace_observer_write(to,
                         trace_event_run(&b->m->config, &r->opt.sampler, &info, &b->a->load.trace));
    trace_observer_write(to, trace_event_tokenize(b->tok, r->prompt_text ? r->prompt_text : "",
                                                  r->prompt, r->n_prompt));
    cJSON *merge;
    while ((merge = cJSON_DetachItemFromArray(merges, 0)) != NULL) trace_observer_write(to, merge);
    cJSON_Delete(merges);
    if (r->chat.n_segments > 0)
        trace_observer_write(to, trace_event_chat(chat_template_name(r->chat.template_used),
                                                  r->chat.segments, r->chat.n_segments));
    b->observers[i] = trace_step_observer(to);
    r->obs = &b->observers[i];
}

static cJSON *metrics_json(const RequestMetrics *m) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "queue_time_ms", m->queue_ms);
    cJSON_AddNumberToObject(o, "ttft_ms", m->ttft_ms);
    cJSON_AddNumberToObject(o, "itl_mean_ms", m->itl_mean_ms);
    cJSON_AddNumberToObject(o, "itl_p95_ms", m->itl_p95_ms);
    cJSON_AddNumberToObject(o, "itl_max_ms", m->itl_max_ms);
    cJSON_AddNumberToObject(o, "e2e_latency_ms", m->e2e_ms);
    cJSON_AddNumberToObject(o, "tokens_per_second", m->tokens_per_second);
    return o;
}

/* A finished (or failed) request: its output line, and the end of its trace. */
static void on_finished(void *ctx, BatchRequest *r) {
    BatchCli *b = ctx;
    int i = (int)(r - b->reqs);
    TraceObserver *to = b->traces ? &b->traces[i] : NULL;
    cJSON *line = cJSON_CreateObject();
    cJSON_AddStringToObject(line, "id", r->id);
    if (r->error != NULL) {
        cJSON_AddStringToObject(line, "error", r->error);
        if (to != NULL && to->writer != NULL)
            trace_observer_write(to,
                                 trace_event_error("bad_input", r->error, r->prompt, r->n_prompt));
    } else {
        const GenerateResult *g = &r->result;
        char *text = tokenizer_decode_tokens(b->tok, g->tokens, g->n_tokens, -1);
        char *completion = tokenizer_decode_tokens(
            b->tok, g->tokens + g->n_prompt, g->n_tokens - g->n_prompt, g->tokens[g->n_prompt - 1]);
        cJSON_AddStringToObject(line, "stop_reason", stop_reason_name(g->stop_reason));
        cJSON_AddItemToObject(line, "text", trace_text(text ? text : "", text ? strlen(text) : 0));
        cJSON_AddItemToObject(
            line, "completion",
            trace_text(completion ? completion : "", completion ? strlen(completion) : 0));
        cJSON_AddItemToObject(line, "tokens", cJSON_CreateIntArray(g->tokens, g->n_tokens));
        cJSON_AddNumberToObject(line, "prompt_tokens", g->n_prompt);
        cJSON_AddNumberToObject(line, "generated_tokens", g->n_tokens - g->n_prompt);
        cJSON *metrics = metrics_json(&r->metrics);
        cJSON_AddNumberToObject(metrics, "prefix_tokens_reused", r->prefix_reused);
        cJSON_AddItemToObject(line, "metrics", metrics);
        free(text), free(completion);
        if (to != NULL && to->writer != NULL && g->stop_reason == STOP_INTERRUPTED)
            trace_observer_write(to, trace_event_error("interrupted", "interrupted by a signal",
                                                       g->tokens, g->n_tokens));
        else if (to != NULL && to->writer != NULL)
            trace_observer_write(to, cli_done_event(b->m, b->tok, g, r->metrics.e2e_ms / 1e3,
                                                    !b->a->load.trace.reproducible));
    }
    StepError err;
    if (to != NULL && to->writer != NULL && !trace_writer_commit(to->writer, &err)) {
        fprintf(stderr, "stepwise: error: %s\n", err.message);
        b->trace_failures++;
    }
    if (to != NULL) to->writer = NULL;
    char *s = cJSON_PrintUnformatted(line);
    fprintf(b->out, "%s\n", s);
    fflush(b->out);
    cJSON_free(s);
    cJSON_Delete(line);
    b->done++;
    if (b->progress.on)
        cli_progress_update(&b->progress, "serving (requests)", (uint64_t)b->done, (uint64_t)b->n);
    else if (!b->a->load.quiet)
        fprintf(stderr, "[%d/%d] %s: %s\n", b->done, b->n, r->id,
                r->error ? r->error : stop_reason_name(r->result.stop_reason));
}

static void print_summary(const BatchMetrics *m, int max_batch, bool prefix) {
    fprintf(stderr,
            "\n| requests | completed | failed | max batch | generated tokens | seconds | "
            "throughput (tokens/s) | peak active | peak KV bytes | mean TTFT (ms) | mean ITL (ms) "
            "| mean e2e (ms) |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n"
            "| %d | %d | %d | %d | %ld | %.3f | %.1f | %d | %llu | %.2f | %.2f | %.2f |\n",
            m->requests, m->completed, m->failed, max_batch, m->generated, m->seconds,
            m->throughput, m->peak_active, (unsigned long long)m->peak_kv_bytes, m->mean_ttft_ms,
            m->mean_itl_ms, m->mean_e2e_ms);
    if (prefix)
        fprintf(stderr,
                "prefix cache: %ld prompt positions copied, not computed (%.3g multiply-adds "
                "saved); it holds %d prompts in %llu bytes, %d evicted\n",
                m->prefix_tokens_reused, (double)m->prefill_macs_saved, m->prefix_cache_entries,
                (unsigned long long)m->prefix_cache_bytes, m->prefix_cache_evicted);
}

static bool write_metrics_json(const char *path, const BatchMetrics *m, int max_batch,
                               const BatchRequest *reqs, int n, StepError *err) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "requests", m->requests);
    cJSON_AddNumberToObject(o, "completed", m->completed);
    cJSON_AddNumberToObject(o, "failed", m->failed);
    cJSON_AddNumberToObject(o, "max_batch", max_batch);
    cJSON_AddNumberToObject(o, "generated_tokens", (double)m->generated);
    cJSON_AddNumberToObject(o, "seconds", m->seconds);
    cJSON_AddNumberToObject(o, "throughput_tokens_per_second", m->throughput);
    cJSON_AddNumberToObject(o, "peak_active", m->peak_active);
    cJSON_AddNumberToObject(o, "peak_kv_bytes", (double)m->peak_kv_bytes);
    cJSON_AddNumberToObject(o, "mean_ttft_ms", m->mean_ttft_ms);
    cJSON_AddNumberToObject(o, "mean_itl_ms", m->mean_itl_ms);
    cJSON_AddNumberToObject(o, "prefix_tokens_reused", (double)m->prefix_tokens_reused);
    cJSON_AddNumberToObject(o, "prefill_macs_saved", (double)m->prefill_macs_saved);
    cJSON_AddNumberToObject(o, "prefix_cache_bytes", (double)m->prefix_cache_bytes);
    cJSON_AddNumberToObject(o, "prefix_cache_entries", m->prefix_cache_entries);
    cJSON_AddNumberToObject(o, "prefix_cache_evicted", m->prefix_cache_evicted);
    cJSON_AddNumberToObject(o, "mean_e2e_latency_ms", m->mean_e2e_ms);
    cJSON_AddNumberToObject(o, "batched_steps", m->steps);
    cJSON *per = cJSON_AddArrayToObject(o, "per_request");
    for (int i = 0; i < n; i++) {
        cJSON *r = metrics_json(&reqs[i].metrics);
        cJSON_AddStringToObject(r, "id", reqs[i].id);
        if (reqs[i].error) cJSON_AddStringToObject(r, "error", reqs[i].error);
        cJSON_AddItemToArray(per, r);
    }
    AtomicFile f;
    bool ok = atomic_file_open(&f, path, err);
    if (ok) {
        char *s = cJSON_Print(o);
        fprintf(f.file, "%s\n", s);
        cJSON_free(s);
        ok = atomic_file_commit(&f, err);
    }
    cJSON_Delete(o);
    return ok;
}

static int run_batch(void *args, Model *m, Tokenizer *tok, CliProgress *progress, StepError *err) {
    BatchArgs *a = args;
    (void)progress; /* the batch draws its own line, request by request */
    GenerateOptions defaults;
    generate_options_default(&defaults);
    defaults.quant = a->load.quant.run;
    defaults.bos_id = tok->bos_id, defaults.eos_id = tok->eos_id;
    defaults.interrupt = cli_interrupt_flag(); /* a signal stops every request */
    BatchRequest *reqs = NULL;
    int n = 0;
    if (!requests_load(a->requests, m, tok, a->chat, &defaults, &reqs, &n, err))
        return EXIT_BAD_INPUT;
    if (a->trace_dir != NULL && mkdir(a->trace_dir, 0755) != 0 && errno != EEXIST) {
        step_fail(err, "batch: cannot create %s: %s", a->trace_dir, strerror(errno));
        for (int i = 0; i < n; i++) batch_request_free(&reqs[i]);
        free(reqs);
        return EXIT_BAD_INPUT;
    }
    BatchCli b = {.a = a, .m = m, .tok = tok, .reqs = reqs, .out = stdout, .n = n};
    cli_progress_init(&b.progress, a->load.quiet);
    if (a->trace_dir != NULL &&
        !cli_model_files(a->load.model, a->load.trace.no_hash, &b.model_files, err)) {
        for (int i = 0; i < n; i++) batch_request_free(&reqs[i]);
        free(reqs);
        return EXIT_BAD_INPUT;
    }
    AtomicFile out = {0};
    bool ok = true;
    if (a->out != NULL && (ok = atomic_file_open(&out, a->out, err))) b.out = out.file;
    if (ok && a->trace_dir != NULL) {
        b.traces = calloc((size_t)(n > 0 ? n : 1), sizeof *b.traces);
        b.observers = calloc((size_t)(n > 0 ? n : 1), sizeof *b.observers);
        ok = b.traces && b.observers;
        if (!ok) step_fail(err, "batch: out of memory");
    }
    BatchMetrics metrics;
    BatchSink sink = {&b, on_admitted, on_finished};
    PrefixCache prefix = {0};
    if (ok && a->prefix_cache)
        ok = prefix_cache_init(&prefix, &m->config,
                               kv_type_for(&m->config, m->run.kv, a->load.quant.run.kv),
                               (uint64_t)a->prefix_cache_bytes, err);
    if (ok)
        ok = batch_run(m, reqs, n, a->max_batch, a->prefill_chunk, &a->load.quant.run,
                       a->prefix_cache ? &prefix : NULL, &sink, &metrics, err);
    prefix_cache_free(&prefix);
    if (ok) ok = model_files_unchanged(m, err);
    if (ok && a->out != NULL)
        ok = atomic_file_commit(&out, err);
    else if (a->out != NULL)
        atomic_file_discard(&out);
    cli_progress_clear(&b.progress);
    if (ok && !a->load.quiet) print_summary(&metrics, a->max_batch, a->prefix_cache);
    if (ok && a->metrics_json != NULL)
        ok = write_metrics_json(a->metrics_json, &metrics, a->max_batch, reqs, n, err);
    if (ok && b.trace_failures > 0)
        ok = step_fail(err, "batch: %d trace%s could not be written (see above)", b.trace_failures,
                       b.trace_failures == 1 ? "" : "s");
    int status = !ok ? EXIT_BAD_INPUT : metrics.failed > 0 ? 1 : 0;
    if (cli_signal_caught() != 0) {
        status = 128 + cli_signal_caught();
        step_fail(err, "batch: interrupted (%s)", cli_signal_name(cli_signal_caught()));
    }
    for (int i = 0; i < n; i++) batch_request_free(&reqs[i]);
    free(reqs), free(b.traces), free(b.observers);
    cJSON_Delete(b.model_files);
    return status;
}

int cli_batch(int argc, char **argv) {
    BatchArgs a;
    StepError err;
    int parsed = parse_batch_args(argc, argv, &a, &err);
    return cli_run_with_model(parsed, &a.load, run_batch, &a, &err);
}
