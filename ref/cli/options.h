/* cli/options.h: a command's options declared once, in tables, and both
 * the parser and the help made from them (as llama.cpp's common/arg.cpp
 * does), so the help cannot drift from what the command takes.
 *
 * A command lists its own table and the shared groups it takes (each a
 * table and where its struct lies in the command's arguments); an option
 * says its name, its value's name in the help, its kind, where it goes
 * and its help. The common kinds are set here; anything else is a CUSTOM
 * option whose parse function the table names, so the special cases stay
 * in the command's own code. */
#ifndef STEPWISE_CLI_OPTIONS_H
#define STEPWISE_CLI_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "ref/util/error.h"

typedef enum {
    OPTION_FLAG,   /* no value: sets a bool to true */
    OPTION_UNSET,  /* no value: sets a bool to false (--no-...) */
    OPTION_TEXT,   /* a string (const char *, borrowed from argv) */
    OPTION_INT,    /* a whole number in [min, max] (int) */
    OPTION_FLOAT,  /* a finite number in [min, max], or any when both are 0 (float) */
    OPTION_CUSTOM, /* parse(value, dest, err) */
} OptionKind;

/* What a path option's value is, for the one rule every command keeps:
 * an output never replaces one of the command's own inputs. After parsing,
 * each output given is compared with each input given (file_alias: by
 * device and inode), and a match is refused, naming both, before anything
 * is read or written. */
typedef enum {
    PATH_NONE,       /* not a path, or one the rule does not see */
    PATH_IN,         /* a file or folder the command reads */
    PATH_OUT,        /* a file the command writes (replaces) */
    PATH_OUT_FOLDER, /* a folder it writes files into or replaces whole */
} CliPathRole;

typedef struct CliOption {
    const char *name;  /* "steps" for --steps; NULL ends a table */
    const char *value; /* the value's name in the help ("N"); NULL: a flag, which takes
                          none (an OPTION_CUSTOM flag's parse gets value NULL) */
    OptionKind kind;
    size_t offset; /* where the value goes in the group's struct (offsetof) */
    long min, max; /* OPTION_INT and OPTION_FLOAT: the range */
    /* OPTION_CUSTOM: parse value into dest (the field at offset); false
     * with err set when the value is refused. It gets the option too: its
     * name for messages, its id to tell apart the options one parse
     * function serves. */
    bool (*parse)(const struct CliOption *o, const char *value, void *dest, StepError *err);
    int id; /* OPTION_CUSTOM: which of its options, for a parse function serving several */
    const char *help; /* its lines, '\n' between them: the first beside the name */
    char short_name;  /* 'o' for -o too, or 0 */
    bool required;    /* the command refuses to run without it */
    bool optional;    /* OPTION_CUSTOM: the value may be left out (--trace-kv or
                         --trace-kv=full; value NULL then), its name in the help
                         written right after the option's ("[=full]") */
    CliPathRole path; /* its value is a path read or written (each one given,
                         for a repeatable option) */
} CliOption;

/* The end of a table. */
#define CLI_OPTIONS_END                                                                            \
    { .name = NULL }

/* A table and where its struct lies in the command's arguments. */
typedef struct {
    const CliOption *options;
    size_t base;         /* offsetof the group's struct in the arguments (0: the arguments) */
    const char *heading; /* a line before its options in the help, or NULL */
} CliOptionGroup;

/* The groups many commands share (option_groups.c), each over its own
 * struct: SamplerParams (the temperature apart: sample takes a list),
 * TraceOptions and CliQuant. */
extern const CliOption CLI_TEMPERATURE_OPTIONS[];
extern const CliOption CLI_SAMPLER_OPTIONS[];
extern const CliOption CLI_TRACE_OPTIONS[];
extern const CliOption CLI_QUANT_OPTIONS[];
/* --model and --tokenizer, over a CliModelRun (common.h). */
extern const CliOption CLI_MODEL_OPTIONS[];

/* The groups of a command that runs a model, over the CliModelRun at
 * `run` in its arguments Args, each under its heading (or none): --model
 * and --tokenizer, how the model runs (CLI_QUANT_OPTIONS), its trace
 * (CLI_TRACE_OPTIONS). */
#define CLI_MODEL_GROUP(Args, run, model_heading)                                                  \
    { .options = CLI_MODEL_OPTIONS, .base = offsetof(Args, run), .heading = (model_heading) }
#define CLI_QUANT_GROUP(Args, run, quant_heading)                                                  \
    { .options = CLI_QUANT_OPTIONS, .base = offsetof(Args, run.quant), .heading = (quant_heading) }
#define CLI_TRACE_GROUP(Args, run, trace_heading)                                                  \
    { .options = CLI_TRACE_OPTIONS, .base = offsetof(Args, run.trace), .heading = (trace_heading) }

/* A parse function several commands' tables share: a chat template name
 * (chat.h) into a ChatTemplate. */
bool cli_option_chat_template(const CliOption *o, const char *value, void *dest, StepError *err);

/* A command's options: its own table, then the shared groups it takes,
 * and the arguments that are not options (operands) it takes. */
typedef struct {
    const char *command;          /* "quantize", for messages */
    const char *usage;            /* the usage lines and what the command does */
    const CliOption *options;     /* its own table, into the arguments themselves */
    const CliOptionGroup *groups; /* then these, ended by {.options = NULL}; or NULL */
    int min_operands, max_operands;
    const char *operands;      /* what they are, for the message when their count is off
                                  ("REF and CANDIDATE"); NULL: "unexpected argument" */
    const char *operand_input; /* the operands are inputs (PATH_IN), each named so in
                                  messages ("trace"); NULL: they are not paths */
    const char *after;         /* the help's lines after the options, or NULL */
} CliCommandOptions;

/* Parse argv (argv[0] the command) into args by c's tables. Returns 1 to
 * run (*first_operand, unless NULL: argv's first argument that is not an
 * option; their
 * count is in c's range), 0 when --help printed the help, -1 with err set
 * on an unknown option, a missing or refused value, a required option
 * not given, operands too few or too many, or an output that would
 * replace an input (CliPathRole). */
int cli_options_parse(const CliCommandOptions *c, int argc, char **argv, void *args,
                      int *first_operand, StepError *err);

/* The alias rule for one output the tables do not declare (view's default
 * page): refused, naming both, when it would replace input `in`.
 * out_name and in_name are the options' ("--out", "--model"), or in_name
 * an operand's noun ("trace"). */
bool cli_output_not_input(const char *command, const char *out_name, const char *out,
                          bool out_folder, const char *in_name, const char *in, StepError *err);

/* The help: the usage, then every option of every table, -h, and c's
 * lines after them. */
void cli_options_help(const CliCommandOptions *c, FILE *to);

/* Break text's one line into lines of at most width characters, in place,
 * at its spaces (a word longer than width stays whole): for an option's
 * help made at run time from a table (make-model's --arch and --preset). */
void cli_help_wrap(char *text, int width);

#endif
