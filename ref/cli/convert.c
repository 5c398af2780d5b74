/* cli/convert.c: `stepwise convert`, any model stepwise loads written as a
 * GGUF file, so that another engine runs the very weights stepwise runs. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "ref/cli/commands.h"
#include "ref/cli/common.h"
#include "ref/cli/options.h"
#include "ref/cli/progress.h"
#include "ref/util/file_util.h"
#include "ref/formats/gguf_convert.h"
#include "ref/formats/gguf_model.h"

/* The help's usage lines and what the command does. */
static const char CONVERT_USAGE[] =
    "usage: stepwise convert --model M [--tokenizer T] --out FILE.gguf [options]\n"
    "\n"
    "Write the model M (a llama2.c checkpoint with its --tokenizer, a Hugging Face\n"
    "directory, a GGUF file or a JSON model) as GGUF v3, with its tokenizer\n"
    "embedded, for llama.cpp and other engines; docs/gguf.md says what is written.\n";

typedef struct {
    const char *model, *tokenizer, *out, *name;
    GgufOutType type;
    bool no_tokenizer;
} ConvertArgs;

static bool parse_type(const CliOption *o, const char *value, void *dest, StepError *err) {
    (void)o;
    return gguf_out_type_parse(value, dest) ||
           step_fail(err, "--type must be f32, f16, bf16 or q8_0, not '%.40s'", value);
}

static const CliOption CONVERT_OPTIONS[] = {
    {"model", "M", OPTION_TEXT, offsetof(ConvertArgs, model), .required = true, .path = PATH_IN,
     .help = "the model to write (any stepwise loads)"},
    {"out", "FILE.gguf", OPTION_TEXT, offsetof(ConvertArgs, out), .required = true,
     .path = PATH_OUT, .help = "where to write (written whole or not at all)"},
    {"type", "T", OPTION_CUSTOM, offsetof(ConvertArgs, type), .parse = parse_type,
     .help = "f32 (default: the weights exactly), f16, bf16, or q8_0 (blocks\n"
             "of 32 int8 values with an F16 scale; matrices whose rows are\n"
             "not whole blocks are written f16). Norm weights stay f32. The\n"
             "matrices are read as the model stores them, a row at a time,\n"
             "so a bf16 folder converts in about its own size of memory"},
    {"tokenizer", "T", OPTION_TEXT, offsetof(ConvertArgs, tokenizer), .path = PATH_IN,
     .help = "the tokenizer to embed (a tokenizer.bin, a tokenizer.json or a\n"
             "folder holding one); default: the model's own"},
    {"no-tokenizer", NULL, OPTION_FLAG, offsetof(ConvertArgs, no_tokenizer),
     .help = "write no tokenizer (the file then needs --tokenizer to run)"},
    {"name", "NAME", OPTION_TEXT, offsetof(ConvertArgs, name),
     .help = "general.name (default: \"stepwise\", the attention's kind, the\n"
             "layers and the parameters, as \"stepwise GQA, 5 layers, 260032\n"
             "parameters\" for stories260K: no family's name, which llama.cpp\n"
             "takes as a cue to look for that family's special tokens)"},
    CLI_OPTIONS_END};

static const CliCommandOptions CONVERT_COMMAND = {
    .command = "convert", .options = CONVERT_OPTIONS, .usage = CONVERT_USAGE};

/* 1: parsed; 0: --help; -1: a bad option (err set). */
static int parse_convert_args(int argc, char **argv, ConvertArgs *a, StepError *err) {
    *a = (ConvertArgs){.type = GGUF_OUT_F32};
    int parsed = cli_options_parse(&CONVERT_COMMAND, argc, argv, a, NULL, err);
    if (parsed <= 0) return parsed;
    if (!gguf_is_model_path(a->out))
        return step_fail(err, "convert: --out must end in .gguf, as stepwise and llama.cpp expect"),
               -1;
    if (a->no_tokenizer && a->tokenizer != NULL)
        return step_fail(err, "convert: --tokenizer and --no-tokenizer contradict each other"), -1;
    return 1;
}

static const char *const TYPE_NAMES[] = {"f32", "f16", "q8_0", "bf16"};

int cli_convert(int argc, char **argv) {
    ConvertArgs a;
    StepError err;
    int parsed = parse_convert_args(argc, argv, &a, &err);
    if (parsed == 0) return 0;
    bool ok = parsed > 0 && file_check_output(a.out, "--out", &err);
    Model m = {0};
    Tokenizer tok = {0};
    CliProgress progress;
    cli_progress_init(&progress, false);
    ProgressSink sink = cli_progress_sink(&progress);
    /* the weights as the file stores them, widened a row at a time as they
     * are written (gguf_save_streams), so that the whole model is never
     * float32 in memory; a family whose tensors convert rearranges is
     * loaded again as float32 */
    for (int pass = 0; ok && pass < 2; pass++) {
        WeightsMode mode = pass == 0 ? WEIGHTS_STORED : WEIGHTS_F32;
        ok = a.no_tokenizer ? cli_load_model_only(a.model, mode, &m, &sink, &err)
                            : cli_load_model_as(a.model, a.tokenizer, mode, &m, &tok, &sink, &err);
        if (!ok || pass == 1 || gguf_save_streams(&m.config)) break;
        model_free(&m), tokenizer_free(&tok);
    }
    m.progress = &sink; /* the tensors as they are written */
    /* not the file's name: llama.cpp's vocabulary loader reads family cues
     * from general.name ("phi3" in it: Phi-3's special tokens looked up,
     * and a file whose vocabulary lacks them refused) */
    char name[128];
    if (a.name != NULL)
        snprintf(name, sizeof name, "%s", a.name);
    else if (ok)
        snprintf(name, sizeof name, "stepwise %s, %d layers, %llu parameters",
                 config_attention_kind(&m.config), m.config.n_layers,
                 (unsigned long long)config_param_count(&m.config));
    GgufSaveReport r;
    if (ok) ok = gguf_model_save(&m, a.no_tokenizer ? NULL : &tok, a.type, name, a.out, &r, &err);
    cli_progress_clear(&progress);
    m.progress = NULL;
    struct stat st;
    char bf16[32] = ""; /* the count of a type asked for only */
    if (a.type == GGUF_OUT_BF16) snprintf(bf16, sizeof bf16, ", %d BF16", r.bf16);
    if (ok && stat(a.out, &st) == 0) {
        fprintf(stderr,
                "wrote %s: GGUF v3, %s, %s, %d tensors (%d F32, %d F16, %d Q8_0%s), %lld bytes%s\n",
                a.out, r.arch, TYPE_NAMES[a.type], r.tensors, r.f32, r.f16, r.q8_0, bf16,
                (long long)st.st_size, a.no_tokenizer ? ", no tokenizer" : "");
        if (r.q8_0_fallbacks > 0)
            fprintf(stderr,
                    "  %d matrices have rows that are not whole blocks of 32: written F16\n",
                    r.q8_0_fallbacks);
    }
    model_free(&m);
    if (!a.no_tokenizer) tokenizer_free(&tok);
    if (!ok) {
        cli_print_error(&err);
        return EXIT_BAD_INPUT;
    }
    return 0;
}
