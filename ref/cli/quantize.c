/* cli/quantize.c: `stepwise quantize`, a float32 checkpoint written as
 * stepwise's int8 file (.q8), loadable by generate, score and inspect. */
#include <stddef.h>
#include <stdio.h>

#include "ref/cli/command.h"
#include "ref/cli/commands.h"
#include "ref/cli/common.h"
#include "ref/cli/options.h"
#include "ref/cli/progress.h"
#include "ref/util/file_util.h"
#include "ref/model/model_quant.h"
#include "ref/formats/q8_file.h"

/* The help's usage lines and what the command does. */
static const char QUANTIZE_USAGE[] =
    "usage: stepwise quantize --model M --out FILE.q8 [--group G]\n"
    "\n"
    "Quantize every matrix and the embedding of M to int8 with one float32 scale\n"
    "per group of G values along each row (default 32; the last group of a row\n"
    "is shorter when G does not divide it), and write the .q8 file described in\n"
    "docs/quantization.md. Norm weights stay float32.\n";

typedef struct {
    const char *model, *out;
    int group;
} QuantizeArgs;

static const CliOption QUANTIZE_OPTIONS[] = {
    {"model", "M", OPTION_TEXT, offsetof(QuantizeArgs, model), .required = true, .path = PATH_IN,
     .help = "the float model to quantize"},
    {"out", "FILE.q8", OPTION_TEXT, offsetof(QuantizeArgs, out), .required = true, .path = PATH_OUT,
     .help = "where to write (written whole or not at all)"},
    {"group", "G", OPTION_INT, offsetof(QuantizeArgs, group), 1, 1 << 20,
     .help = "values per scale (default 32)"},
    CLI_OPTIONS_END};

static const CliCommandOptions QUANTIZE_COMMAND = {
    .command = "quantize", .options = QUANTIZE_OPTIONS, .usage = QUANTIZE_USAGE};

static int quantize(void *args, int n, char **operands, StepError *err) {
    const QuantizeArgs *a = args;
    (void)n, (void)operands;
    bool ok = file_check_output(a->out, "--out", err);
    Model m = {0};
    CliProgress progress;
    cli_progress_init(&progress, false);
    ProgressSink sink = cli_progress_sink(&progress);
    if (ok) cli_progress_note(&progress, "loading the model");
    if (ok) ok = cli_load_model_only(a->model, WEIGHTS_F32, &m, &sink, err);
    if (ok && m.weight_group > 0) ok = step_fail(err, "quantize: %s is already int8", a->model);
    m.progress = &sink;
    if (ok) ok = model_quantize(&m, a->group, err);
    cli_progress_note(&progress, "writing the int8 model");
    if (ok) ok = model_save_q8(&m, a->out, err);
    cli_progress_clear(&progress);
    m.progress = NULL;
    if (ok)
        fprintf(stderr, "wrote %s: %llu bytes of weights in int8 (group %d), %llu in float32\n",
                a->out, (unsigned long long)quant_weight_bytes(&m.config, a->group), a->group,
                (unsigned long long)(config_param_count(&m.config) * sizeof(float)));
    model_free(&m);
    return ok ? 0 : EXIT_BAD_INPUT;
}

int cli_quantize(int argc, char **argv) {
    QuantizeArgs a = {.group = 32};
    return cli_command_run(&QUANTIZE_COMMAND, argc, argv, &a, quantize);
}
