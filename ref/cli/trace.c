/* cli/trace.c: `stepwise trace show|validate`, reading traces. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "trace/trace_show.h"
#include "trace/trace_validate.h"
#include "ref/cli/commands.h"
#include "ref/cli/common.h"

static const char TRACE_USAGE[] =
    "usage: stepwise trace show FILE [--step N | --pos N] [--top N] [--tokenizer FILE]\n"
    "       stepwise trace validate FILE\n"
    "\n"
    "show      print one step of a trace as a person reads it: the top tokens\n"
    "          with their probabilities as bars, what each filter removed, the\n"
    "          chosen token and the KV-cache size\n"
    "  --step N         the N-th draw (from 1): one step, even after a context shift\n"
    "                   repeats positions\n"
    "  --pos N          the position to show (default: the first draw); when it occurs\n"
    "                   more than once, the first, and the output says so\n"
    "  --top N          how many tokens to list (default 10)\n"
    "  --tokenizer FILE tokenizer.bin, for the pieces the trace does not name\n"
    "                   (a file named inside the trace is never opened)\n"
    "validate  check every line against its schema (trace/schema/) and the trace\n"
    "          against itself; prints FILE:LINE: for each violation and exits 1\n"
    "  -h, --help       show this help\n"
    "\n"
    "FILE may be - for standard input.\n"
    "exit status: 0 fine, 1 violations found, 2 bad input.\n";

enum { OPT_POS = 256, OPT_STEP, OPT_TOP, OPT_TOKENIZER };

static int trace_show_command(int argc, char **argv, StepError *err) {
    static const struct option options[] = {{"pos", required_argument, NULL, OPT_POS},
                                            {"step", required_argument, NULL, OPT_STEP},
                                            {"top", required_argument, NULL, OPT_TOP},
                                            {"tokenizer", required_argument, NULL, OPT_TOKENIZER},
                                            {"help", no_argument, NULL, 'h'},
                                            {NULL, 0, NULL, 0}};
    int pos = -1, step = 0, top = 10;
    const char *tokenizer = NULL;
    opterr = 0;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, ":h", options, NULL)) != -1) {
        switch (c) {
            case OPT_POS:
                if (!cli_parse_int(optarg, "--pos", 0, 1 << 30, &pos, err)) return EXIT_BAD_INPUT;
                break;
            case OPT_STEP:
                if (!cli_parse_int(optarg, "--step", 1, 1 << 30, &step, err)) return EXIT_BAD_INPUT;
                break;
            case OPT_TOP:
                if (!cli_parse_int(optarg, "--top", 1, 1000, &top, err)) return EXIT_BAD_INPUT;
                break;
            case OPT_TOKENIZER:
                tokenizer = optarg;
                break;
            case 'h':
                fputs(TRACE_USAGE, stdout);
                return 0;
            default:
                cli_option_error("trace show", c, optopt, argv, optind, err);
                return EXIT_BAD_INPUT;
        }
    }
    if (optind != argc - 1) {
        step_fail(err, "trace show: expects one trace file (see --help)");
        return EXIT_BAD_INPUT;
    }
    if (step > 0 && pos >= 0) {
        step_fail(err, "trace show: give --step or --pos, not both");
        return EXIT_BAD_INPUT;
    }
    Tokenizer tok;
    if (tokenizer != NULL && !tokenizer_load_bin(&tok, tokenizer, 0, err)) return EXIT_BAD_INPUT;
    TraceStepAt at = {.pos = pos, .step = step};
    bool ok = trace_show_step(argv[optind], at, tokenizer ? &tok : NULL, top, stdout, err);
    if (tokenizer != NULL) tokenizer_free(&tok);
    return ok ? 0 : EXIT_BAD_INPUT;
}

static int trace_validate_command(int argc, char **argv, StepError *err) {
    if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        fputs(TRACE_USAGE, stdout);
        return 0;
    }
    if (argc != 2 || (argv[1][0] == '-' && argv[1][1] != '\0')) {
        step_fail(err, "trace validate: expects one trace file (see --help)");
        return EXIT_BAD_INPUT;
    }
    int violations = trace_validate_file(argv[1], stdout, err);
    if (violations < 0) return EXIT_BAD_INPUT;
    if (violations == 0)
        printf("%s: valid\n", argv[1]);
    else
        printf("%s: %d violation%s\n", argv[1], violations, violations == 1 ? "" : "s");
    return violations == 0 ? 0 : 1;
}

int cli_trace(int argc, char **argv) {
    StepError err;
    int status;
    if (argc >= 2 && strcmp(argv[1], "show") == 0)
        status = trace_show_command(argc - 1, argv + 1, &err);
    else if (argc >= 2 && strcmp(argv[1], "validate") == 0)
        status = trace_validate_command(argc - 1, argv + 1, &err);
    else if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        fputs(TRACE_USAGE, stdout);
        return 0;
    } else {
        status = EXIT_BAD_INPUT;
        step_fail(&err, "trace: expects show or validate (see stepwise trace --help)");
    }
    if (status == EXIT_BAD_INPUT) cli_print_error(&err);
    return status;
}
