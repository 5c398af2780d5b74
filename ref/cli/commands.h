/* cli/commands.h: the subcommands of the stepwise program. Each takes the arguments
 * after its name (argv[0] is the subcommand) and returns the exit status. */
#ifndef STEPWISE_CLI_H
#define STEPWISE_CLI_H

#include "ref/util/build_info.h"

int cli_generate(int argc, char **argv);
int cli_tokenize(int argc, char **argv);
int cli_sample(int argc, char **argv);
int cli_trace(int argc, char **argv);
int cli_make_model(int argc, char **argv);
int cli_inspect(int argc, char **argv);
int cli_score(int argc, char **argv);
int cli_diff(int argc, char **argv);
int cli_golden(int argc, char **argv);
int cli_golden_merge(int argc, char **argv);
int cli_quantize(int argc, char **argv);
int cli_compare_quant(int argc, char **argv);
int cli_batch(int argc, char **argv);
int cli_serve_sim(int argc, char **argv);
int cli_convert(int argc, char **argv);
int cli_view(int argc, char **argv);

#endif
