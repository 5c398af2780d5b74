/* cli/quantize.c: `stepwise quantize`, a float32 checkpoint written as
 * stepwise's int8 file (.q8), loadable by generate, score and inspect. */
#include <getopt.h>
#include <stdio.h>

#include "ref/cli/commands.h"
#include "ref/cli/common.h"
#include "ref/cli/progress.h"
#include "ref/util/file_util.h"
#include "ref/kernels/quant_model.h"

static const char QUANTIZE_USAGE[] =
    "usage: stepwise quantize --model M --out FILE.q8 [--group G]\n"
    "\n"
    "Quantize every matrix and the embedding of M to int8 with one float32 scale\n"
    "per group of G values along each row (default 32; the last group of a row\n"
    "is shorter when G does not divide it), and write the .q8 file described in\n"
    "docs/quantization.md. Norm weights stay float32.\n";

int cli_quantize(int argc, char **argv) {
    enum { OPT_MODEL = 256, OPT_OUT, OPT_GROUP };
    static const struct option options[] = {{"model", required_argument, NULL, OPT_MODEL},
                                            {"out", required_argument, NULL, OPT_OUT},
                                            {"group", required_argument, NULL, OPT_GROUP},
                                            {"help", no_argument, NULL, 'h'},
                                            {NULL, 0, NULL, 0}};
    const char *model = NULL, *out = NULL;
    int group = 32;
    StepError err;
    bool ok = true;
    opterr = 0;
    optind = 1;
    int c;
    while (ok && (c = getopt_long(argc, argv, ":h", options, NULL)) != -1) {
        switch (c) {
            case OPT_MODEL:
                model = optarg;
                break;
            case OPT_OUT:
                out = optarg;
                break;
            case OPT_GROUP:
                ok = cli_parse_int(optarg, "--group", 1, 1 << 20, &group, &err);
                break;
            case 'h':
                fputs(QUANTIZE_USAGE, stdout);
                return 0;
            default:
                ok = cli_option_error("quantize", c, optopt, argv, optind, &err);
        }
    }
    if (ok && (model == NULL || out == NULL || optind < argc))
        ok = step_fail(&err, "quantize: needs --model and --out (see --help)");
    if (ok) ok = file_check_output(out, "--out", &err);
    Model m = {0};
    CliProgress progress;
    cli_progress_init(&progress, false);
    ProgressSink sink = cli_progress_sink(&progress);
    if (ok) cli_progress_note(&progress, "loading the model");
    if (ok) ok = cli_load_model_only(model, WEIGHTS_F32, &m, &sink, &err);
    if (ok && m.weight_group > 0) ok = step_fail(&err, "quantize: %s is already int8", model);
    m.progress = &sink;
    if (ok) ok = model_quantize(&m, group, &err);
    cli_progress_note(&progress, "writing the int8 model");
    if (ok) ok = model_save_q8(&m, out, &err);
    cli_progress_clear(&progress);
    m.progress = NULL;
    if (ok)
        fprintf(stderr, "wrote %s: %llu bytes of weights in int8 (group %d), %llu in float32\n",
                out, (unsigned long long)quant_weight_bytes(&m.config, group), group,
                (unsigned long long)(config_param_count(&m.config) * sizeof(float)));
    model_free(&m);
    if (!ok) {
        cli_print_error(&err);
        return EXIT_BAD_INPUT;
    }
    return 0;
}
