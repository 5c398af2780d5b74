/* cli/trace.c: `stepwise trace show|validate`, reading traces. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "trace/trace_show.h"
#include "trace/trace_validate.h"
#include "ref/cli/commands.h"
#include "ref/cli/common.h"
#include "ref/cli/options.h"

/* The help's usage lines and what the command does. */
static const char TRACE_USAGE[] =
    "usage: stepwise trace show FILE [--step N | --pos N] [--top N] [--tokenizer FILE]\n"
    "       stepwise trace validate FILE\n"
    "\n"
    "show      print one step of a trace as a person reads it: the top tokens\n"
    "          with their probabilities as bars, what each filter removed, the\n"
    "          chosen token and the KV-cache size\n"
    "validate  check every line against its schema (trace/schema/) and the trace\n"
    "          against itself; prints FILE:LINE: for each violation and exits 1\n";

typedef struct {
    int pos, step, top;
    const char *tokenizer;
} ShowArgs;

static const CliOption SHOW_OPTIONS[] = {
    {"step", "N", OPTION_INT, offsetof(ShowArgs, step), 1, 1 << 30,
     .help = "the N-th draw (from 1): one step, even after a context shift\n"
             "repeats positions"},
    {"pos", "N", OPTION_INT, offsetof(ShowArgs, pos), 0, 1 << 30,
     .help = "the position to show (default: the first draw); when it occurs\n"
             "more than once, the first, and the output says so"},
    {"top", "N", OPTION_INT, offsetof(ShowArgs, top), 1, 1000,
     .help = "how many tokens to list (default 10)"},
    {"tokenizer", "FILE", OPTION_TEXT, offsetof(ShowArgs, tokenizer), .path = PATH_IN,
     .help = "tokenizer.bin, for the pieces the trace does not name\n"
             "(a file named inside the trace is never opened)"},
    CLI_OPTIONS_END};

/* The help's closing lines, after the options. */
static const char TRACE_HELP_END[] = "\n"
                                     "FILE may be - for standard input.\n"
                                     "exit status: 0 fine, 1 violations found, 2 bad input.\n";

static const CliCommandOptions TRACE_COMMAND = {.command = "trace show",
                                                .options = SHOW_OPTIONS,
                                                .min_operands = 1,
                                                .max_operands = 1,
                                                .operands = "one trace file",
                                                .operand_input = "trace",
                                                .after = TRACE_HELP_END,
                                                .usage = TRACE_USAGE};

static int trace_show_command(int argc, char **argv, StepError *err) {
    ShowArgs a = {.pos = -1, .top = 10};
    int first, parsed = cli_options_parse(&TRACE_COMMAND, argc, argv, &a, &first, err);
    if (parsed == 0) return 0;
    if (parsed < 0) return EXIT_BAD_INPUT;
    int pos = a.pos, step = a.step, top = a.top;
    const char *tokenizer = a.tokenizer;
    if (step > 0 && pos >= 0) {
        step_fail(err, "trace show: give --step or --pos, not both");
        return EXIT_BAD_INPUT;
    }
    Tokenizer tok;
    if (tokenizer != NULL && !tokenizer_load_bin(&tok, tokenizer, 0, err)) return EXIT_BAD_INPUT;
    TraceStepAt at = {.pos = pos, .step = step};
    bool ok = trace_show_step(argv[first], at, tokenizer ? &tok : NULL, top, stdout, err);
    if (tokenizer != NULL) tokenizer_free(&tok);
    return ok ? 0 : EXIT_BAD_INPUT;
}

static int trace_validate_command(int argc, char **argv, StepError *err) {
    if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        cli_options_help(&TRACE_COMMAND, stdout);
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
        cli_options_help(&TRACE_COMMAND, stdout);
        return 0;
    } else {
        status = EXIT_BAD_INPUT;
        step_fail(&err, "trace: expects show or validate (see stepwise trace --help)");
    }
    if (status == EXIT_BAD_INPUT) cli_print_error(&err);
    return status;
}
