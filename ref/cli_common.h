/* cli_common.h: what every stepwise subcommand shares: strict parsing of
 * option values, and finding the model and tokenizer the user named. */
#ifndef STEPWISE_CLI_COMMON_H
#define STEPWISE_CLI_COMMON_H

#include "error.h"
#include "model.h"
#include "tokenizer.h"

/* Exit status for bad input: files, options, JSON. */
#define EXIT_BAD_INPUT 2

/* Parse a whole decimal integer in [min, max] given to `option`. */
bool cli_parse_int(const char *text, const char *option, long min, long max, int *out,
                   StepError *err);

/* Load the model at model_path (NULL: stepwise's embedded tiny model; a
 * path ending in .json: a JSON model with its own tokenizer; anything else: a
 * llama2.c checkpoint, which needs tokenizer_path). A tokenizer_path always
 * wins over a JSON model's own tokenizer. */
bool cli_load_model(const char *model_path, const char *tokenizer_path, Model *m, Tokenizer *tok,
                    StepError *err);

/* Print "stepwise: error: <message>" on stderr. */
void cli_print_error(const StepError *err);

/* Report an option-parsing failure of getopt_long (unknown option or a
 * missing value) as a StepError; `c` is getopt's return, argv its argv. */
bool cli_option_error(const char *command, int c, int optopt_value, char **argv, int optind_value,
                      StepError *err);

#endif
