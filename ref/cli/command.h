/* cli/command.h: the frame of a command that does not run through
 * cli_run_with_model (common.h): its options parsed by its tables, its
 * --help, then its run, and the one way it ends: err printed on one line
 * and the exit status. */
#ifndef STEPWISE_CLI_COMMAND_H
#define STEPWISE_CLI_COMMAND_H

#include "ref/cli/options.h"
#include "ref/util/error.h"

/* A command's run once its options are in args and its operands (n of
 * them, the arguments that are no options) are counted as its table says:
 * its exit status, err set when that is EXIT_BAD_INPUT. */
typedef int (*CliCommandRun)(void *args, int n, char **operands, StepError *err);

/* Parse argv (argv[0] the command) by c's tables into args (which hold
 * the defaults), then run it. After a failure, err is printed, and the
 * status is 128 + the signal when one stopped a deferring stretch
 * (signals.h), else EXIT_BAD_INPUT. Returns 0 after --help,
 * EXIT_BAD_INPUT when an option is refused, or the run's status. */
int cli_command_run(const CliCommandOptions *c, int argc, char **argv, void *args,
                    CliCommandRun run);

#endif
