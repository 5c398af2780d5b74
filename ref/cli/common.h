/* cli/common.h: what every stepwise subcommand shares: strict parsing of
 * option values, and finding the model and tokenizer the user named. */
#ifndef STEPWISE_CLI_COMMON_H
#define STEPWISE_CLI_COMMON_H

#include "ref/util/error.h"
#include <cjson/cJSON.h>

#include "ref/generate.h"
#include "ref/model/model.h"
#include "ref/model/model_prepare.h"
#include "ref/kernels/quant.h"
#include "ref/sampler.h"
#include "trace/trace_options.h"
#include "ref/text/tokenizer.h"
#include "ref/cli/progress.h"

/* Exit status for bad input: files, options, JSON. */
#define EXIT_BAD_INPUT 2

/* Parse a whole decimal integer in [min, max] given to `option`. */
bool cli_parse_int(const char *text, const char *option, long min, long max, int *out,
                   StepError *err);

/* A positive byte count given to `option`: a whole number (1 to 2^62),
 * optionally with a unit, KB, MB, GB, TB (powers of 1000) or KiB, MiB,
 * GiB, TiB (powers of 1024), the B optional ("24GiB", "80GB"). */
bool cli_parse_bytes(const char *text, const char *option, long long *out, StepError *err);

/* Parse a whole decimal float given to `option` (NaN is refused; "inf"
 * and "-inf" are accepted only when allow_inf). */
bool cli_parse_float(const char *text, const char *option, bool allow_inf, float *out,
                     StepError *err);

/* arg, one of two words: *is_second says which; false with err set
 * ("--kernels takes fast or plain, got 'x'") for any other. */
bool cli_parse_either(const char *arg, const char *option, const char *first, const char *second,
                      bool *is_second, StepError *err);

/* Parse a comma-separated list of floats into a malloc'd array (*out, caller
 * frees) of *n entries (at least one). */
bool cli_parse_float_list(const char *text, const char *option, bool allow_inf, float **out, int *n,
                          StepError *err);

/* The sampler's options, shared by generate and sample. */
enum {
    OPT_SEED,
    OPT_SAMPLER_ORDER,
    OPT_RNG,
};

/* Apply sampler option c (its id; option_groups.c holds the table) to p. Returns 1 if c was a
 * sampler option, 0 if not, -1 on a bad value (err filled). The ranges are
 * checked later by sampler_params_validate. */
int cli_sampler_option(int c, const char *arg, SamplerParams *p, StepError *err);

/* The trace's options, shared by generate and score. */
enum {
    OPT_TRACE_LEVEL,
    OPT_TRACE_KV,
    OPT_TRACE_TEMPERATURES,
    OPT_TRACE_LAYERS,
    OPT_TRACE_POSITIONS,
    OPT_TRACE_HOOKS,
};

/* Apply trace option c (its id; option_groups.c holds the table) to o: 1 if it was one, 0 if
 * not, -1 on a bad value (err filled). */
int cli_trace_option(int c, const char *arg, TraceOptions *o, StepError *err);

/* How a model runs: what to quantize (docs/quantization.md) and with which
 * kernels; shared by generate, score and batch. */
typedef struct {
    bool weights;             /* --quant-weights int8 */
    QuantRuntime run;         /* --quant-activations int8, --quant-kv int8, --quant-group G */
    KernelChoice kernels;     /* --kernels plain|fast */
    int threads;              /* --threads N; 0: every online processor */
    WeightsMode weights_mode; /* --weights stored|f32 */
    MlaForm mla_form;         /* --mla rebuilt|absorbed */
    bool gelu_ggml;           /* --gelu ggml */
    int kv_dtype;             /* --kv-dtype f32|f16|bf16: 0, 1, 2 */
    bool kv_rounding_ggml;    /* --kv-rounding llama.cpp */
} CliQuant;

enum {
    OPT_QUANT_WEIGHTS,
    OPT_QUANT_ACTIVATIONS,
    OPT_QUANT_KV,
    OPT_QUANT_GROUP,
    OPT_KERNELS,
    OPT_THREADS,
    OPT_WEIGHTS,
    OPT_MLA,
    OPT_GELU,
    OPT_KV_DTYPE,
    OPT_KV_ROUNDING
};

/* Apply one quantization option: 1 if it was one, 0 if not, -1 on a bad value. */
int cli_quant_option(int c, const char *arg, CliQuant *q, StepError *err);

/* Load the model at model_path (NULL: stepwise's embedded tiny model; a
 * path ending in .json: a JSON model with its own tokenizer; a directory: a
 * Hugging Face model with its tokenizer.json; a .gguf: its own tokenizer;
 * anything else: a llama2.c checkpoint, which needs tokenizer_path). A
 * tokenizer_path (a tokenizer.bin, a JSON model, a tokenizer.json or a
 * directory holding one) always wins over the model's own tokenizer. tok
 * NULL (with tokenizer_path NULL): no tokenizer is wanted (score --tokens
 * --top-n 0), and none is required or read. */
bool cli_load_model(const char *model_path, const char *tokenizer_path, Model *m, Tokenizer *tok,
                    const ProgressSink *progress, StepError *err);

/* The same, its weights held as mode says (cli_load_model: WEIGHTS_F32). */
bool cli_load_model_as(const char *model_path, const char *tokenizer_path, WeightsMode mode,
                       Model *m, Tokenizer *tok, const ProgressSink *progress, StepError *err);

/* cli_load_model, then make the model ready to run: check the trace's
 * --trace-layers against it, quantize its weights when q asks and they are
 * not already int8 (a .q8 file), and with the fast kernels put them into
 * the packed layout (pack.h) and start its threads. progress shows the
 * loading, quantizing and packing (when it is on). The caller frees m and tok
 * either way; tok NULL as for cli_load_model. */
bool cli_load_model_to_run(const char *model_path, const char *tokenizer_path, const CliQuant *q,
                           const TraceOptions *trace, CliProgress *progress, Model *m,
                           Tokenizer *tok, StepError *err);

/* Load only the model at model_path (NULL: the built-in tiny model), for
 * commands that need its shape or weights but no tokenizer: float32 views
 * for those that write or quantize the weights (WEIGHTS_F32), or the
 * matrices as stored for those that only look (inspect: a Hugging Face
 * folder is then mapped, not read). */
/* What a command that runs a model (generate, score, batch) loads, and
 * how: the model and its tokenizer (CLI_MODEL_OPTIONS), quantized and
 * packed as quant says (CLI_QUANT_OPTIONS), traced as trace says
 * (CLI_TRACE_OPTIONS). Owns trace's lists. */
typedef struct {
    const char *model, *tokenizer;
    CliQuant quant;
    TraceOptions trace;
    bool quiet;          /* no progress line */
    bool layer_progress; /* a long pass shows its layers on the progress line */
    bool no_tokenizer;   /* ids in and out: no tokenizer loaded (run gets NULL) */
} CliModelRun;

/* The command's run, given the loaded model: its exit status, err set
 * when it is EXIT_BAD_INPUT. */
typedef int (*CliRunFunction)(void *args, Model *m, Tokenizer *tok, CliProgress *progress,
                              StepError *err);

/* The rest of a command that runs a model, once its options are parsed
 * (parsed as cli_options_parse returns it): load what r says, then
 * run(args, ...) with signals deferred (from then on the run ends its own
 * files), free the model, the tokenizer and r's lists, and print err when
 * the status is EXIT_BAD_INPUT or a signal's. Returns the exit status: 0
 * after --help, EXIT_BAD_INPUT when the options or the loading failed, or
 * the run's. */
int cli_run_with_model(int parsed, CliModelRun *r, CliRunFunction run, void *args, StepError *err);

bool cli_load_model_only(const char *model_path, WeightsMode mode, Model *m,
                         const ProgressSink *progress, StepError *err);

/* The process's peak resident memory, in bytes. */
uint64_t cli_peak_rss_bytes(void);

/* The trace's done event of a finished generation (measured figures unless
 * measured is false). Caller owns it. */
cJSON *cli_done_event(const Model *m, const Tokenizer *tok, const GenerateResult *r,
                      double total_seconds, bool measured);

/* Print "stepwise: error: <message>" on stderr. */
void cli_print_error(const StepError *err);

/* Report an option-parsing failure of getopt_long (unknown option or a
 * missing value) as a StepError; `c` is getopt's return, argv its argv. */
bool cli_option_error(const char *command, int c, int optopt_value, char **argv, int optind_value,
                      StepError *err);

#endif
