/* cli/command.c: see command.h. */
#include "ref/cli/command.h"

#include "ref/cli/common.h"
#include "ref/cli/signals.h"

int cli_command_run(const CliCommandOptions *c, int argc, char **argv, void *args,
                    CliCommandRun run) {
    StepError err;
    int first, parsed = cli_options_parse(c, argc, argv, args, &first, &err);
    if (parsed == 0) return 0;
    int status = parsed < 0 ? EXIT_BAD_INPUT : run(args, argc - first, argv + first, &err);
    if (status != EXIT_BAD_INPUT) return status;
    cli_print_error(&err);
    /* a signal while deferring ends the run with its error: report it as
     * the shell would have (the signal is only caught while deferring) */
    return cli_signal_caught() ? 128 + cli_signal_caught() : EXIT_BAD_INPUT;
}
