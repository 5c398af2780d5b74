/* cli_generate.c: `stepwise generate`, the generation loop from the command
 * line, with the text streamed to stdout and an optional JSON Lines trace. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../trace/trace_events.h"
#include "cli.h"
#include "cli_common.h"
#include "generate.h"

static const char GENERATE_USAGE[] =
    "usage: stepwise generate [options]\n"
    "\n"
    "Run a prompt through the model and generate, token by token: prefill the\n"
    "prompt in one pass, then decode one token at a time against the KV cache.\n"
    "Each next token is chosen by the sampler (greedy unless --temperature > 0).\n"
    "The text streams to stdout; a metrics line goes to stderr.\n"
    "\n"
    "  --model FILE       llama2.c checkpoint (.bin) or stepwise JSON model (.json);\n"
    "                     default: the built-in tiny model (data/tiny-model.json)\n"
    "  --tokenizer FILE   llama2.c tokenizer.bin (required for a checkpoint)\n"
    "  --prompt TEXT      the prompt (default: empty, i.e. BOS only)\n"
    "  --steps N          most new tokens to generate (default 256)\n"
    "  --trace FILE       write a JSON Lines trace (docs/trace-format.md)\n"
    "  --trace-kv         trace every KV-cache row written\n"
    "  --all-logits       compute and trace the logits of every prompt position\n"
    "  --trace-temperatures T1,T2,...\n"
    "                     add the full softmax at each temperature to every sample event\n"
    "\n"
    "sampling (docs/sampling.md):\n" SAMPLER_OPTIONS_HELP "  -h, --help         show this help\n"
    "\n"
    "Generation stops on BOS or EOS, after --steps tokens, or when the context\n"
    "(seq_len) is full; the stop reason is in the metrics line and the trace.\n";

typedef struct {
    const char *model, *tokenizer, *prompt, *trace;
    GenerateOptions gen;
    bool trace_kv;
    float *trace_temperatures; /* owned */
    int n_trace_temperatures;
} GenerateArgs;

enum {
    OPT_MODEL = 256,
    OPT_TOKENIZER,
    OPT_PROMPT,
    OPT_STEPS,
    OPT_TRACE,
    OPT_TRACE_KV,
    OPT_ALL_LOGITS,
    OPT_TRACE_TEMPERATURES
};

/* 1: parsed; 0: --help printed; -1: error in err. */
static int parse_generate_args(int argc, char **argv, GenerateArgs *a, StepError *err) {
    static const struct option options[] = {
        {"model", required_argument, NULL, OPT_MODEL},
        {"tokenizer", required_argument, NULL, OPT_TOKENIZER},
        {"prompt", required_argument, NULL, OPT_PROMPT},
        {"steps", required_argument, NULL, OPT_STEPS},
        {"trace", required_argument, NULL, OPT_TRACE},
        {"trace-kv", no_argument, NULL, OPT_TRACE_KV},
        {"all-logits", no_argument, NULL, OPT_ALL_LOGITS},
        {"trace-temperatures", required_argument, NULL, OPT_TRACE_TEMPERATURES},
        SAMPLER_LONG_OPTIONS,
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    *a = (GenerateArgs){.prompt = ""};
    generate_options_default(&a->gen);
    opterr = 0;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, ":h", options, NULL)) != -1) {
        switch (c) {
            case OPT_MODEL:
                a->model = optarg;
                break;
            case OPT_TOKENIZER:
                a->tokenizer = optarg;
                break;
            case OPT_PROMPT:
                a->prompt = optarg;
                break;
            case OPT_STEPS:
                if (!cli_parse_int(optarg, "--steps", 1, 1 << 30, &a->gen.steps, err)) return -1;
                break;
            case OPT_TRACE:
                a->trace = optarg;
                break;
            case OPT_TRACE_KV:
                a->trace_kv = true;
                break;
            case OPT_ALL_LOGITS:
                a->gen.all_logits = true;
                break;
            case OPT_TRACE_TEMPERATURES:
                free(a->trace_temperatures);
                if (!cli_parse_float_list(optarg, "--trace-temperatures", false,
                                          &a->trace_temperatures, &a->n_trace_temperatures, err))
                    return -1;
                for (int i = 0; i < a->n_trace_temperatures; i++) {
                    if (a->trace_temperatures[i] <= 0.0f)
                        return step_fail(err, "--trace-temperatures must all be > 0"), -1;
                }
                break;
            case 'h':
                fputs(GENERATE_USAGE, stdout);
                return 0;
            default: {
                int handled = cli_sampler_option(c, optarg, &a->gen.sampler, err);
                if (handled == 0) cli_option_error("generate", c, optopt, argv, optind, err);
                if (handled <= 0) return -1;
            }
        }
    }
    if (optind < argc) {
        step_fail(err, "generate: unexpected argument '%s' (see --help)", argv[optind]);
        return -1;
    }
    return sampler_params_validate(&a->gen.sampler, err) ? 1 : -1;
}

/* Streams each chosen token's text to stdout as soon as it is picked. */
static void print_token(void *ctx, int prev, int token) {
    char buf[8];
    int len;
    const char *piece = tokenizer_decode(ctx, prev, token, buf, &len);
    fwrite(piece, 1, (size_t)len, stdout);
    fflush(stdout);
}

static void print_metrics(const GenerateResult *r) {
    double prefill_tps = r->prefill_seconds > 0 ? r->n_prompt / r->prefill_seconds : 0;
    double decode_tps = r->decode_seconds > 0 ? r->n_decoded / r->decode_seconds : 0;
    fprintf(stderr,
            "stop: %s | ttft %.3f ms | prefill %d tokens, %.1f tokens/s | decode %d tokens, "
            "%.1f tokens/s\n",
            stop_reason_name(r->stop_reason), r->first_token_seconds * 1e3, r->n_prompt,
            prefill_tps, r->n_decoded, decode_tps);
}

/* The run proper, once arguments are parsed and files loaded. */
static bool run_generate(const GenerateArgs *a, const Model *m, const Tokenizer *tok,
                         StepError *err) {
    int *prompt = NULL, n_prompt = 0;
    if (!tokenizer_encode(tok, a->prompt, true, &prompt, &n_prompt, err)) return false;
    if (n_prompt > m->config.seq_len) {
        free(prompt);
        return step_fail(err, "the prompt has %d tokens but the context holds %d", n_prompt,
                         m->config.seq_len);
    }
    TraceObserver to = {NULL, {a->trace_kv, a->trace_temperatures, a->n_trace_temperatures}};
    StepObserver obs = {0};
    if (a->trace != NULL) {
        if ((to.writer = trace_writer_open(a->trace, err)) == NULL) {
            free(prompt);
            return false;
        }
        obs = trace_observer(&to);
        cJSON *run =
            trace_event_run(&m->config, &a->gen.sampler, a->prompt, prompt, n_prompt, a->gen.steps);
        trace_writer_write(to.writer, run);
        cJSON_Delete(run);
    }
    char *prompt_text = tokenizer_decode_tokens(tok, prompt, n_prompt, -1);
    fputs(prompt_text ? prompt_text : "", stdout);
    fflush(stdout);
    free(prompt_text);

    TokenSink sink = {(void *)tok, print_token};
    GenerateResult r;
    bool ok = generate(m, prompt, n_prompt, &a->gen, &obs, &sink, &r, err);
    free(prompt);
    if (!ok) {
        trace_writer_discard(to.writer);
        return false;
    }
    putchar('\n');
    fflush(stdout); /* the text's last line before the metrics on stderr */
    print_metrics(&r);
    if (to.writer != NULL) {
        /* The stop token, if any, is the last token and adds no text. */
        char *text = tokenizer_decode_tokens(tok, r.tokens, r.n_tokens, -1);
        int last_prompt = r.tokens[r.n_prompt - 1];
        char *completion = tokenizer_decode_tokens(tok, r.tokens + r.n_prompt,
                                                   r.n_tokens - r.n_prompt, last_prompt);
        TraceTiming timing = {r.first_token_seconds, r.prefill_seconds, r.decode_seconds,
                              r.n_prompt, r.n_decoded};
        cJSON *done = trace_event_done(stop_reason_name(r.stop_reason), r.tokens, r.n_tokens,
                                       text ? text : "", completion ? completion : "", &timing);
        trace_writer_write(to.writer, done);
        cJSON_Delete(done);
        free(text);
        free(completion);
        ok = trace_writer_commit(to.writer, err);
    }
    generate_result_free(&r);
    return ok;
}

int cli_generate(int argc, char **argv) {
    GenerateArgs a;
    StepError err;
    int parsed = parse_generate_args(argc, argv, &a, &err);
    if (parsed <= 0) {
        if (parsed < 0) cli_print_error(&err);
        free(a.trace_temperatures);
        return parsed < 0 ? EXIT_BAD_INPUT : 0;
    }
    Model m;
    Tokenizer tok;
    bool ok = cli_load_model(a.model, a.tokenizer, &m, &tok, &err);
    if (ok) {
        ok = run_generate(&a, &m, &tok, &err);
        model_free(&m);
        tokenizer_free(&tok);
    }
    if (!ok) cli_print_error(&err);
    free(a.trace_temperatures);
    return ok ? 0 : EXIT_BAD_INPUT;
}
