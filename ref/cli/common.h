/* cli/common.h: what every stepwise subcommand shares: strict parsing of
 * option values, and finding the model and tokenizer the user named. */
#ifndef STEPWISE_CLI_COMMON_H
#define STEPWISE_CLI_COMMON_H

#include "ref/util/error.h"
#include <cjson/cJSON.h>

#include "ref/generate.h"
#include "ref/model.h"
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

/* A positive byte count given to `option` (a whole number, 1 to 2^62). */
bool cli_parse_bytes(const char *text, const char *option, long long *out, StepError *err);

/* Parse a whole decimal float given to `option` (NaN is refused; "inf"
 * and "-inf" are accepted only when allow_inf). */
bool cli_parse_float(const char *text, const char *option, bool allow_inf, float *out,
                     StepError *err);

/* Parse a comma-separated list of floats into a malloc'd array (*out, caller
 * frees) of *n entries (at least one). */
bool cli_parse_float_list(const char *text, const char *option, bool allow_inf, float **out, int *n,
                          StepError *err);

/* The sampler's options, shared by generate and sample. */
enum {
    OPT_TEMPERATURE = 512,
    OPT_TOP_K,
    OPT_TOP_P,
    OPT_MIN_P,
    OPT_SEED,
    OPT_SAMPLER_ORDER,
    OPT_RNG,
};
#define SAMPLER_LONG_OPTIONS                                                                       \
    {"temperature", required_argument, NULL, OPT_TEMPERATURE},                                     \
        {"top-k", required_argument, NULL, OPT_TOP_K},                                             \
        {"top-p", required_argument, NULL, OPT_TOP_P},                                             \
        {"min-p", required_argument, NULL, OPT_MIN_P},                                             \
        {"seed", required_argument, NULL, OPT_SEED},                                               \
        {"sampler-order", required_argument, NULL, OPT_SAMPLER_ORDER}, {                           \
        "rng", required_argument, NULL, OPT_RNG                                                    \
    }

#define SAMPLER_OPTIONS_HELP                                                                       \
    "  --temperature T    divide the logits by T; 0 = greedy (argmax, no draw)\n"                  \
    "  --top-k K          keep the K highest logits; 0 = off (default)\n"                          \
    "  --top-p P          keep the smallest top set whose probability reaches P; 1 = off\n"        \
    "  --min-p M          keep tokens with probability >= M x the top one; 0 = off\n"              \
    "  --seed S           seed of the random draw (default 42; not 0)\n"                           \
    "  --sampler-order O  default|hf (T, top-k, top-p, min-p), llama.cpp (top-k, top-p,\n"         \
    "                     min-p, T) or vllm (T, min-p, top-k, top-p)\n"                            \
    "  --rng NAME         the generator: xorshift (llama2.c's xorshift*, the only one)\n"

/* Apply one sampler option (c from getopt_long) to p. Returns 1 if c was a
 * sampler option, 0 if not, -1 on a bad value (err filled). The ranges are
 * checked later by sampler_params_validate. */
int cli_sampler_option(int c, const char *arg, SamplerParams *p, StepError *err);

/* The trace's options, shared by generate and score. */
enum {
    OPT_TRACE_LEVEL = 640,
    OPT_TRACE_KV,
    OPT_TRACE_BPE,
    OPT_TRACE_TEMPERATURES,
    OPT_TRACE_LAYERS,
    OPT_TRACE_POSITIONS,
    OPT_TRACE_HOOKS,
    OPT_REPRODUCIBLE,
    OPT_NO_HASH,
};
#define TRACE_LONG_OPTIONS                                                                         \
    {"trace-level", required_argument, NULL, OPT_TRACE_LEVEL},                                     \
        {"trace-kv", optional_argument, NULL, OPT_TRACE_KV},                                       \
        {"trace-bpe", no_argument, NULL, OPT_TRACE_BPE},                                           \
        {"trace-temperatures", required_argument, NULL, OPT_TRACE_TEMPERATURES},                   \
        {"trace-layers", required_argument, NULL, OPT_TRACE_LAYERS},                               \
        {"trace-positions", required_argument, NULL, OPT_TRACE_POSITIONS},                         \
        {"trace-hooks", required_argument, NULL, OPT_TRACE_HOOKS},                                 \
        {"reproducible", no_argument, NULL, OPT_REPRODUCIBLE}, {                                   \
        "no-hash", no_argument, NULL, OPT_NO_HASH                                                  \
    }

#define TRACE_OPTIONS_HELP                                                                         \
    "  --trace-level L    summary|tokens|logits|sampling|layers|full (default sampling)\n"         \
    "  --trace-kv[=full]  add every KV-cache row written; =full also a snapshot of one\n"          \
    "                     layer's whole cache after each step\n"                                   \
    "  --trace-bpe        add each merge of the byte-pair encoder\n"                               \
    "  --trace-temperatures T1,T2,...\n"                                                           \
    "                     add the full softmax at each temperature to every sample event\n"        \
    "  --trace-layers 0,3          only these layers\n"                                            \
    "  --trace-positions 5-9,12    only these positions\n"                                         \
    "  --trace-hooks PATTERNS      only activations whose names match these globs,\n"              \
    "                              e.g. 'blocks.*.attn.pattern' (at any level)\n"                  \
    "  --no-hash          leave the model files' SHA-256 out of the run header (for big\n"         \
    "                     models: hashing reads every byte)\n"                                     \
    "  --reproducible     leave out every measured figure (clock, memory), so that the\n"          \
    "                     same run writes the same bytes\n"

/* Apply one trace option (c from getopt_long) to o: 1 if it was one, 0 if
 * not, -1 on a bad value (err filled). */
int cli_trace_option(int c, const char *arg, TraceOptions *o, StepError *err);

/* Which matmul kernels run the model: the same sums in the same order
 * either way, so the same bits (docs/performance.md). */
typedef enum {
    KERNELS_FAST,  /* the weights packed at load, many sums at once (default) */
    KERNELS_PLAIN, /* the row-major weights, one dot product at a time */
} KernelChoice;

/* How a model runs: what to quantize (docs/quantization.md) and with which
 * kernels; shared by generate, score and batch. */
typedef struct {
    bool weights;             /* --quant-weights int8 */
    QuantRuntime run;         /* --quant-activations int8, --quant-kv int8, --quant-group G */
    KernelChoice kernels;     /* --kernels plain|fast */
    int threads;              /* --threads N; 0: every online processor */
    WeightsMode weights_mode; /* --weights stored|f32 */
} CliQuant;

enum {
    OPT_QUANT_WEIGHTS = 700,
    OPT_QUANT_ACTIVATIONS,
    OPT_QUANT_KV,
    OPT_QUANT_GROUP,
    OPT_KERNELS,
    OPT_THREADS,
    OPT_WEIGHTS
};
#define QUANT_LONG_OPTIONS                                                                         \
    {"quant-weights", required_argument, NULL, OPT_QUANT_WEIGHTS},                                 \
        {"quant-activations", required_argument, NULL, OPT_QUANT_ACTIVATIONS},                     \
        {"quant-kv", required_argument, NULL, OPT_QUANT_KV},                                       \
        {"quant-group", required_argument, NULL, OPT_QUANT_GROUP},                                 \
        {"kernels", required_argument, NULL, OPT_KERNELS},                                         \
        {"threads", required_argument, NULL, OPT_THREADS}, {                                       \
        "weights", required_argument, NULL, OPT_WEIGHTS                                            \
    }
#define QUANT_OPTIONS_HELP                                                                         \
    "  --quant-weights int8      every matrix and the embedding in int8 (norms stay float)\n"      \
    "  --quant-activations int8  quantize each matmul input on the fly\n"                          \
    "  --quant-kv int8           store the KV cache in int8, one scale per position and head\n"    \
    "  --quant-group G           values per scale (default 32; float32 everywhere by default)\n"   \
    "  --kernels K               fast (default: packed weights, many sums at once) or plain\n"     \
    "                            (the row-by-row loop of docs/forward-pass.md); same bits\n"       \
    "  --threads N               threads the fast kernels split rows and heads over (default:\n"   \
    "                            every online processor; plain kernels use one); same bits\n"      \
    "  --weights W               stored (default: matrices kept in the file's dtype, widened\n"    \
    "                            as read) or f32 (widened to float32 at load); same bits\n"

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
