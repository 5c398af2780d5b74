/* cli/generate.c: `stepwise generate`, the generation loop from the command
 * line, with the text streamed to stdout and an optional JSON Lines trace. */
#include <stddef.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "trace/trace_events.h"
#include "trace/trace_observer.h"
#include "ref/cli/commands.h"
#include "ref/cli/common.h"
#include "ref/cli/options.h"
#include "ref/kernels/threads.h"
#include "ref/cli/identity.h"
#include "ref/cli/signals.h"
#include "ref/text/chat.h"
#include "ref/util/file_util.h"
#include "ref/util/clock.h"
#include "ref/generate.h"
#include "ref/model/model_quant.h"

/* The help's usage lines and what the command does. */
static const char GENERATE_USAGE[] =
    "usage: stepwise generate [options]\n"
    "\n"
    "Run a prompt through the model and generate, token by token: prefill the\n"
    "prompt in one pass, then decode one token at a time against the KV cache.\n"
    "Each next token is chosen by the sampler (greedy unless --temperature > 0).\n"
    "The text streams to stdout; a metrics line goes to stderr.\n";

/* summarize's default prompt: the span where {span} is. */
#define DEFAULT_SUMMARY_PROMPT "Summarize this story in one sentence.\nStory: {span}\nSummary:"
#define DEFAULT_SUMMARY_PROMPT_HELP                                                                \
    "Summarize this story in one sentence.\\nStory: {span}\\nSummary:"

/* Paths given by a repeatable option. */
typedef struct {
    const char **paths;
    int n;
} PathList;

typedef struct {
    CliModelRun load; /* the model, its tokenizer, quantization and trace options */
    const char *prompt, *trace;
    const char *summary_prompt;          /* --summary-prompt, with {span} */
    int *summary_before, *summary_after; /* its tokens either side of {span} (owned) */
    PathList memory, documents;          /* --memory, --document */
    GenerateOptions gen;
    bool quiet; /* no text on stdout, no metrics on stderr */
} GenerateArgs;

static bool path_list_add(PathList *l, const char *path, StepError *err) {
    const char **grown = realloc(l->paths, (size_t)(l->n + 1) * sizeof *grown);
    if (grown == NULL) return step_fail(err, "out of memory");
    l->paths = grown;
    l->paths[l->n++] = path;
    return true;
}

static bool parse_memory(const CliOption *o, const char *value, void *dest, StepError *err) {
    (void)o;
    return path_list_add(dest, value, err);
}
static bool parse_policy(const CliOption *o, const char *value, void *dest, StepError *err) {
    (void)o;
    return context_policy_parse(value, dest, err);
}

static const CliOption GENERATE_OPTIONS[] = {
    {"prompt", "TEXT", OPTION_TEXT, offsetof(GenerateArgs, prompt),
     .help = "the prompt (default: empty, i.e. BOS only)"},
    {"steps", "N", OPTION_INT, offsetof(GenerateArgs, gen.steps), 1, 1 << 30,
     .help = "most new tokens to generate (default 256)"},
    {"memory", "FILE", OPTION_CUSTOM, offsetof(GenerateArgs, memory), .parse = parse_memory,
     .path = PATH_IN, .help = "a memory note (the file's text) before the prompt; repeatable"},
    {"document", "FILE", OPTION_CUSTOM, offsetof(GenerateArgs, documents), .parse = parse_memory,
     .path = PATH_IN,
     .help = "a retrieved document before the prompt, its id the file's\n"
             "name; repeatable (docs/context-window.md)"},
    {"all-logits", NULL, OPTION_FLAG, offsetof(GenerateArgs, gen.all_logits),
     .help = "compute the logits of every prompt position, not only the last"},
    {"quiet", NULL, OPTION_FLAG, offsetof(GenerateArgs, quiet),
     .help = "print nothing but errors (the trace still records everything)"},
    CLI_OPTIONS_END};

static const CliOption CONTEXT_OPTIONS[] = {
    {"no-kv-cache", NULL, OPTION_FLAG, offsetof(GenerateArgs, gen.no_kv_cache),
     .help = "recompute K and V of the whole sequence at every step\n"
             "(same logits, to the bit; the work grows with the square)"},
    {"context", "N", OPTION_INT, offsetof(GenerateArgs, gen.context), 2, 1 << 30,
     .help = "a window of N positions (default: the model's seq_len)"},
    {"context-policy", "P", OPTION_CUSTOM, offsetof(GenerateArgs, gen.policy),
     .parse = parse_policy,
     .help = "at a full window: stop (default), drop-oldest (drop the\n"
             "oldest tokens and prefill the rest again), keep-prefix\n"
             "(keep the first --keep tokens and the most recent ones),\n"
             "summarize (replace the oldest by the model's summary of\n"
             "them) or retrieve (store the oldest; bring back the chunks\n"
             "BM25 ranks best against the prompt)"},
    {"context-drop", "N", OPTION_INT, offsetof(GenerateArgs, gen.context_drop), 1, 1 << 30,
     .help = "tokens dropped at a full window (default: half the window)"},
    {"keep", "N", OPTION_INT, offsetof(GenerateArgs, gen.keep), 0, 1 << 30,
     .help = "keep-prefix, summarize, retrieve: the prefix kept, e.g. a\n"
             "system prompt (default 0)"},
    {"summary-prompt", "T", OPTION_TEXT, offsetof(GenerateArgs, summary_prompt),
     .help = "summarize: the prompt the model summarises the span under;\n"
             "{span} marks where the span's tokens go (default:\n"
             "\"" DEFAULT_SUMMARY_PROMPT_HELP "\")"},
    {"summary-tokens", "N", OPTION_INT, offsetof(GenerateArgs, gen.summary_tokens), 1, 1 << 30,
     .help = "summarize: the longest summary (< --context-drop; default half\n"
             "the dropped span, at most 32)"},
    {"retrieve-k", "K", OPTION_INT, offsetof(GenerateArgs, gen.retrieve_k), 1, 1 << 20,
     .help = "retrieve: most stored chunks brought back (default 2)"},
    CLI_OPTIONS_END};

static const CliOption TRACE_FILE_OPTIONS[] = {{"trace", "FILE", OPTION_TEXT,
                                                offsetof(GenerateArgs, trace), .path = PATH_OUT,
                                                .help = "write a JSON Lines trace"},
                                               CLI_OPTIONS_END};

static const CliCommandOptions GENERATE_COMMAND = {
    .command = "generate",
    .after = "\n"
             "Generation stops on BOS or EOS, after --steps tokens, when the context\n"
             "(seq_len) is full, or on Ctrl-C (exit status 130; the trace ends with an\n"
             "error line).\n",
    .options = GENERATE_OPTIONS,
    .groups =
        (const CliOptionGroup[]){
            CLI_MODEL_GROUP(GenerateArgs, load, "the model:"),
            CLI_QUANT_GROUP(GenerateArgs, load, "quantization (docs/quantization.md):"),
            {.options = CONTEXT_OPTIONS,
             .heading = "the KV cache and the context window (docs/kv-cache.md):"},
            {.options = CLI_TEMPERATURE_OPTIONS,
             .base = offsetof(GenerateArgs, gen.sampler),
             .heading = "sampling (docs/sampling.md):"},
            {.options = CLI_SAMPLER_OPTIONS, .base = offsetof(GenerateArgs, gen.sampler)},
            {.options = TRACE_FILE_OPTIONS, .heading = "tracing (docs/trace-format.md):"},
            CLI_TRACE_GROUP(GenerateArgs, load, NULL),
            {0}},
    .usage = GENERATE_USAGE,
};

/* 1: parsed; 0: --help printed; -1: error in err. */
static int parse_generate_args(int argc, char **argv, GenerateArgs *a, StepError *err) {
    *a = (GenerateArgs){.prompt = "",
                        .summary_prompt = DEFAULT_SUMMARY_PROMPT,
                        .load = {.quant = {.run = {.group = 32}}, .layer_progress = true}};
    generate_options_default(&a->gen);
    trace_options_default(&a->load.trace);
    int parsed = cli_options_parse(&GENERATE_COMMAND, argc, argv, a, NULL, err);
    if (parsed <= 0) return parsed;
    if (a->trace != NULL && !file_check_output(a->trace, "--trace", err)) return -1;
    /* The text streams to stdout: on a terminal it is the progress, and a
     * line redrawn on stderr would overwrite it. */
    a->load.quiet = a->quiet || isatty(STDOUT_FILENO);
    return sampler_params_validate(&a->gen.sampler, err) ? 1 : -1;
}

/* Where each chosen token goes: its text to stdout as soon as it is picked
 * (unless --quiet), and a count to the progress line (when one is on). */
typedef struct {
    const Tokenizer *tok;
    bool print;
    CliProgress *progress;
    int picked, steps;
} TokenOut;

static void on_token(void *ctx, int prev, int token) {
    TokenOut *o = ctx;
    if (o->print) {
        char buf[8];
        int len;
        const char *piece = tokenizer_decode(o->tok, prev, token, buf, &len);
        fwrite(piece, 1, (size_t)len, stdout);
        fflush(stdout);
    }
    cli_progress_update(o->progress, "generating (tokens)", (uint64_t)++o->picked,
                        (uint64_t)o->steps);
}

static void print_metrics(const GenerateResult *r, const Model *m) {
    double prefill_tps = r->prefill_seconds > 0 ? r->n_prompt / r->prefill_seconds : 0;
    double decode_tps = r->decode_seconds > 0 ? r->n_decoded / r->decode_seconds : 0;
    fprintf(stderr,
            "stop: %s | ttft %.3f ms | prefill %d tokens, %.1f tokens/s | decode %d tokens, "
            "%.1f tokens/s | %.3g multiply-adds | peak RSS %.1f MiB | threads %d\n",
            stop_reason_name(r->stop_reason), r->first_token_seconds * 1e3, r->n_prompt,
            prefill_tps, r->n_decoded, decode_tps, (double)r->work.macs,
            (double)cli_peak_rss_bytes() / (1024.0 * 1024.0), thread_pool_size(m->pool));
}

/* summarize: --summary-prompt encoded either side of {span} (BOS first),
 * into a->gen. Nothing to do for the other policies. */
static bool encode_summary_prompt(GenerateArgs *a, const Tokenizer *tok, StepError *err) {
    if (a->gen.policy != CONTEXT_SUMMARIZE) return true;
    const char *t = a->summary_prompt, *mark = strstr(t, "{span}");
    if (mark == NULL)
        return step_fail(err, "--summary-prompt must contain {span}, where the span's tokens go");
    bool blank = true;
    for (const char *c = t; *c; c++)
        if (c < mark || c >= mark + 6) blank &= *c == ' ' || (*c >= '\t' && *c <= '\r');
    if (blank)
        return step_fail(err, "--summary-prompt is empty around {span}: the model must be asked "
                              "for a summary");
    char *head = strndup(t, (size_t)(mark - t));
    if (head == NULL) return step_fail(err, "out of memory");
    bool ok =
        tokenizer_encode(tok, head, true, &a->summary_before, &a->gen.n_summary_before, err) &&
        tokenizer_encode(tok, mark + 6, false, &a->summary_after, &a->gen.n_summary_after, err);
    free(head);
    a->gen.summary_before = a->summary_before, a->gen.summary_after = a->summary_after;
    return ok;
}

/* A file's text without its last line break: one note or document. */
static bool read_part(const char *path, const char *what, char **text, StepError *err) {
    if (!file_read_text(path, what, text, err)) return false;
    size_t n = strlen(*text);
    if (n > 0 && (*text)[n - 1] == '\n') (*text)[--n] = '\0';
    if (n > 0 && (*text)[n - 1] == '\r') (*text)[--n] = '\0';
    return true;
}

/* The prompt with the --memory and --document files before it
 * (chat_assemble_plain); each part must fit in the window alone. */
static bool assemble_parts(const GenerateArgs *a, const Tokenizer *tok, int window, ChatPrompt *out,
                           StepError *err) {
    int n_notes = a->memory.n, n_docs = a->documents.n;
    char **texts = calloc((size_t)(n_notes + n_docs), sizeof *texts);
    const char **notes = calloc((size_t)(n_notes > 0 ? n_notes : 1), sizeof *notes);
    ChatDocument *docs = calloc((size_t)(n_docs > 0 ? n_docs : 1), sizeof *docs);
    bool ok = (texts != NULL && notes != NULL && docs != NULL) || step_fail(err, "out of memory");
    for (int i = 0; ok && i < n_notes; i++) {
        ok = read_part(a->memory.paths[i], "--memory", &texts[i], err);
        notes[i] = texts[i];
    }
    for (int i = 0; ok && i < n_docs; i++) {
        const char *path = a->documents.paths[i], *slash = strrchr(path, '/');
        docs[i].id = slash != NULL ? slash + 1 : path;
        if (!file_name_is_plain(docs[i].id, 64))
            ok = step_fail(err,
                           "--document %s: the file's name is the document's id, and may only "
                           "use letters, digits, '.', '_' and '-' (64 at most)",
                           path);
        ok = ok && read_part(path, "--document", &texts[n_notes + i], err);
        docs[i].text = texts[n_notes + i];
    }
    ChatInput in = {.memory = notes, .n_memory = n_notes, .documents = docs, .n_documents = n_docs};
    ok = ok && chat_assemble_plain(tok, &in, a->prompt, out, err);
    if (ok && !chat_parts_fit(out, window, err)) {
        chat_prompt_free(out);
        ok = false;
    }
    for (int i = 0; texts != NULL && i < n_notes + n_docs; i++) free(texts[i]);
    free(texts), free(notes), free(docs);
    return ok;
}

/* The trace of one run, or nothing when no --trace was asked for. */
typedef struct {
    TraceObserver obs;
    bool open;
} RunTrace;

static void trace_write(RunTrace *t, cJSON *event) {
    if (t->open)
        trace_observer_write(&t->obs, event);
    else
        cJSON_Delete(event);
}

/* The run proper, once arguments are parsed and files loaded. Returns the
 * exit status; err holds the message when it is not 0. Long because it is
 * the run's one sequence (header, prompt, generation, done), with one
 * cleanup path. */
static int run_generate(void *args, Model *m, Tokenizer *tok, CliProgress *progress,
                        StepError *err) {
    GenerateArgs *a = args;
    if (!encode_summary_prompt(a, tok, err) || !generate_options_validate(&a->gen, &m->config, err))
        return EXIT_BAD_INPUT;
    double t_start = clock_seconds();
    int status = EXIT_BAD_INPUT;
    RunTrace t = {
        .obs = {.options = &a->load.trace,
                .tokenizer = tok,
                .bytes_per_token = kv_cache_bytes_of(
                    &m->config, 1, kv_type_for(&m->config, m->run.kv, a->load.quant.run.kv))}};
    cJSON *files = NULL;  /* the model's files and SHA-256, for the run header */
    cJSON *merges = NULL; /* the encoder's merges, held until the header is out */
    int *prompt = NULL, n_prompt = 0;
    ChatPrompt parts = {0}; /* with --memory or --document: the prompt they make */
    GenerateResult r = {0};
    if (!tokenizer_may_fit(tok, a->prompt, m->config.seq_len)) {
        step_fail(err,
                  "the prompt's %zu bytes need more than %d tokens (none covers more than %d "
                  "bytes) but the context holds %d",
                  strlen(a->prompt), m->config.seq_len, tok->max_piece_bytes, m->config.seq_len);
        goto done;
    }
    if (a->trace != NULL && !cli_model_files(a->load.model, a->load.trace.no_hash, &files, err))
        goto done;
    if (a->trace != NULL) {
        if ((t.obs.writer = trace_writer_open(a->trace, err)) == NULL) goto done;
        t.open = true;
    }
    /* Encode first (its merges wait), then the header, then the merges. */
    merges = cJSON_CreateArray();
    t.obs.held = t.open ? merges : NULL;
    BpeObserver bpe = trace_bpe_observer(&t.obs);
    bool encoded = tokenizer_encode_observed(tok, a->prompt, true, t.open ? &bpe : NULL, &prompt,
                                             &n_prompt, err);
    t.obs.held = NULL;
    if (!encoded) goto done;
    if (a->memory.n + a->documents.n > 0) {
        if (!assemble_parts(a, tok, generate_window(&a->gen, &m->config), &parts, err)) goto done;
        free(prompt);
        prompt = parts.tokens, n_prompt = parts.n;
        parts.tokens = NULL;
    }
    if (n_prompt == 0) { /* a tokenizer that adds no BOS, and an empty prompt */
        step_fail(err,
                  "generate: the prompt is empty and the tokenizer adds no BOS: give --prompt");
        goto done;
    }
    a->gen.quant = a->load.quant.run;
    a->gen.bos_id = tok->bos_id, a->gen.eos_id = tok->eos_id;
    /* retrieve ranks the store against the user's message: the prompt's own
     * tokens (not BOS, notes or documents) */
    a->gen.query = prompt, a->gen.n_query = n_prompt;
    if (n_prompt > 0 && prompt[0] == tok->bos_id) a->gen.query++, a->gen.n_query--;
    for (int i = 0; i < parts.n_segments; i++)
        if (strcmp(parts.segments[i].source, "user") == 0)
            a->gen.query = prompt + parts.segments[i].start,
            a->gen.n_query = parts.segments[i].end - parts.segments[i].start;
    TraceRunInfo info = {.mode = "generate",
                         .prompt = a->prompt,
                         .prompt_tokens = prompt,
                         .n_prompt = n_prompt,
                         .steps = a->gen.steps,
                         .model_path = a->load.model,
                         .tokenizer_path = a->load.tokenizer,
                         .model_source = m->source,
                         .model_files = files,
                         .weight_group = m->weight_group,
                         .quant = a->gen.quant,
                         .run = m->run};
    trace_write(&t, trace_event_run(&m->config, &a->gen.sampler, &info, &a->load.trace));
    if (t.open) trace_weight_quant_events(&t.obs, m);
    trace_write(&t, trace_event_tokenize(tok, a->prompt, prompt, n_prompt));
    cJSON *merge;
    while ((merge = cJSON_DetachItemFromArray(merges, 0)) != NULL) trace_write(&t, merge);
    if (parts.n_segments > 0)
        trace_write(&t, trace_event_chat(chat_template_name(parts.template_used), parts.segments,
                                         parts.n_segments));

    status = 0;
    if (n_prompt > m->config.seq_len) {
        step_fail(err, "the prompt has %d tokens but the context holds %d", n_prompt,
                  m->config.seq_len);
        trace_write(&t, trace_event_error("bad_input", err->message, prompt, n_prompt));
        status = EXIT_BAD_INPUT;
    } else {
        char *prompt_text = tokenizer_decode_tokens(tok, prompt, n_prompt, -1);
        if (!a->quiet) fputs(prompt_text ? prompt_text : "", stdout);
        fflush(stdout);
        free(prompt_text);
        StepObserver obs = t.open ? trace_step_observer(&t.obs) : (StepObserver){0};
        TokenOut out = {
            .tok = tok, .print = !a->quiet, .progress = progress, .steps = a->gen.steps};
        TokenSink sink = {&out, on_token};
        a->gen.interrupt = cli_interrupt_flag(); /* a signal stops the loop at its next step */
        bool ok = generate(m, prompt, n_prompt, &a->gen, &obs, &sink, &r, err);
        cli_progress_clear(progress);
        if (!a->quiet) putchar('\n');
        fflush(stdout); /* the text's last line before the metrics on stderr */
        if (ok && !model_files_unchanged(m, err)) {
            trace_write(&t, trace_event_error("bad_input", err->message, prompt, n_prompt));
            status = EXIT_BAD_INPUT;
        } else if (!ok) {
            trace_write(&t, trace_event_error("engine", err->message, prompt, n_prompt));
            status = EXIT_BAD_INPUT;
        } else if (r.stop_reason == STOP_INTERRUPTED) {
            if (!a->quiet) print_metrics(&r, m);
            int sig = cli_signal_caught();
            step_fail(err, "interrupted (%s) after %d new tokens", cli_signal_name(sig),
                      r.n_tokens - r.n_prompt);
            trace_write(&t, trace_event_error("interrupted", err->message, r.tokens, r.n_tokens));
            status = 128 + sig; /* as shells report it: 130 for SIGINT */
        } else {
            if (!a->quiet) print_metrics(&r, m);
            trace_write(&t, cli_done_event(m, tok, &r, clock_seconds() - t_start,
                                           !a->load.trace.reproducible));
        }
    }
    /* the trace is kept whole (an error event says why a run stopped) */
    if (t.open && !trace_writer_commit(t.obs.writer, err)) status = EXIT_BAD_INPUT;
    t.open = false, t.obs.writer = NULL;
done:
    trace_writer_discard(t.obs.writer); /* a run that failed before its header: no trace */
    generate_result_free(&r);
    chat_prompt_free(&parts);
    free(prompt);
    cJSON_Delete(merges), cJSON_Delete(files);
    return status;
}

int cli_generate(int argc, char **argv) {
    GenerateArgs a;
    StepError err;
    int parsed = parse_generate_args(argc, argv, &a, &err);
    int status = cli_run_with_model(parsed, &a.load, run_generate, &a, &err);
    free(a.memory.paths), free(a.documents.paths);
    free(a.summary_before), free(a.summary_after);
    return status;
}
