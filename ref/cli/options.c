/* cli/options.c: see options.h. */
#include "ref/cli/options.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ref/cli/common.h"
#include "ref/util/file_util.h"

#define HELP_COLUMN     21  /* where options' help starts at the least */
#define HELP_COLUMN_MAX 28  /* and at the most: a longer head puts two spaces before it */
#define FIRST_ID        256 /* getopt ids of the table's options: FIRST_ID + their index */

/* Group g of c's tables: its own first (base 0, no heading), then the
 * shared ones. False past the last. */
static bool group_at(const CliCommandOptions *c, int g, CliOptionGroup *group) {
    if (g == 0) {
        *group = (CliOptionGroup){.options = c->options};
        return true;
    }
    if (c->groups == NULL || c->groups[g - 1].options == NULL) return false;
    *group = c->groups[g - 1];
    return true;
}

static int count_options(const CliCommandOptions *c) {
    int n = 0;
    CliOptionGroup group;
    for (int g = 0; group_at(c, g, &group); g++)
        for (const CliOption *o = group.options; o->name != NULL; o++) n++;
    return n;
}

/* The i-th option of all the tables, and its destination in args. */
static const CliOption *option_at(const CliCommandOptions *c, int i, void *args, void **dest) {
    CliOptionGroup group;
    for (int g = 0; group_at(c, g, &group); g++)
        for (const CliOption *o = group.options; o->name != NULL; o++)
            if (i-- == 0) {
                *dest = (char *)args + group.base + o->offset;
                return o;
            }
    return NULL;
}

static bool apply(const CliOption *o, const char *value, void *dest, StepError *err) {
    char name[64];
    snprintf(name, sizeof name, "--%s", o->name);
    switch (o->kind) {
        case OPTION_FLAG:
            *(bool *)dest = true;
            return true;
        case OPTION_TEXT:
            *(const char **)dest = value;
            return true;
        case OPTION_UNSET:
            *(bool *)dest = false;
            return true;
        case OPTION_INT:
            return cli_parse_int(value, name, o->min, o->max, (int *)dest, err);
        case OPTION_FLOAT:
            return cli_parse_float(value, name, false, (float *)dest, err) &&
                   ((o->min == 0 && o->max == 0) ||
                    (*(float *)dest >= o->min && *(float *)dest <= o->max) ||
                    step_fail(err, "%s must be in [%ld, %ld], got %s", name, o->min, o->max,
                              value));
        case OPTION_CUSTOM:
            return o->parse(o, value, dest, err);
    }
    return false;
}

/* A path the command line gave: its option's name ("--model") or the
 * operands' noun, its role and the value. */
typedef struct {
    char name[64];
    CliPathRole role;
    const char *path;
} GivenPath;

bool cli_output_not_input(const char *command, const char *out_name, const char *out,
                          bool out_folder, const char *in_name, const char *in, StepError *err) {
    FileAlias alias = file_alias(out, out_folder, in);
    struct stat st;
    const char *kind = stat(in, &st) == 0 && S_ISDIR(st.st_mode) ? "folder" : "file";
    switch (alias) {
        case FILE_ALIAS_NONE:
            return true;
        case FILE_ALIAS_SAME:
            return step_fail(err, "%s: %s %s is the %s %s %s", command, out_name, out, in_name,
                             kind, in);
        case FILE_ALIAS_INSIDE:
            return step_fail(err, "%s: %s %s is a file of the %s folder %s", command, out_name, out,
                             in_name, in);
        case FILE_ALIAS_HOLDS:
            return step_fail(err, "%s: %s %s holds the %s %s %s", command, out_name, out, in_name,
                             kind, in);
    }
    return true;
}

/* The rule of CliPathRole: every output given against every input given. */
static bool outputs_not_inputs(const char *command, const GivenPath *paths, int n, StepError *err) {
    for (int o = 0; o < n; o++) {
        if (paths[o].role != PATH_OUT && paths[o].role != PATH_OUT_FOLDER) continue;
        for (int i = 0; i < n; i++)
            if (paths[i].role == PATH_IN &&
                !cli_output_not_input(command, paths[o].name, paths[o].path,
                                      paths[o].role == PATH_OUT_FOLDER, paths[i].name,
                                      paths[i].path, err))
                return false;
    }
    return true;
}

int cli_options_parse(const CliCommandOptions *c, int argc, char **argv, void *args,
                      int *first_operand, StepError *err) {
    int n = count_options(c);
    struct option *longs = calloc((size_t)n + 2, sizeof *longs);
    if (longs == NULL) return step_fail(err, "%s: out of memory", c->command), -1;
    void *unused;
    for (int i = 0; i < n; i++) {
        const CliOption *o = option_at(c, i, args, &unused);
        int has = o->value == NULL ? no_argument /* a flag */
                  : o->optional    ? optional_argument
                                   : required_argument;
        longs[i] = (struct option){o->name, has, NULL, FIRST_ID + i};
    }
    longs[n] = (struct option){"help", no_argument, NULL, 'h'};
    char shorts[64] = ":h"; /* the short names, each with ':' when it takes a value */
    size_t len = 2;
    for (int i = 0; i < n && len + 3 < sizeof shorts; i++) {
        const CliOption *o = option_at(c, i, args, &unused);
        if (o->short_name == 0) continue;
        shorts[len++] = o->short_name;
        if (o->value != NULL) shorts[len++] = ':';
        shorts[len] = '\0';
    }
    bool *given = calloc((size_t)n + 1, sizeof *given);         /* which options the line has */
    GivenPath *paths = calloc((size_t)argc + 1, sizeof *paths); /* at most one an argument */
    int status = given != NULL && paths != NULL ? 1 : -1, opt, n_paths = 0;
    if (status < 0) step_fail(err, "%s: out of memory", c->command);
    opterr = 0;
    optind = 1;
    while (status == 1 && (opt = getopt_long(argc, argv, shorts, longs, NULL)) != -1) {
        int i = opt >= FIRST_ID ? opt - FIRST_ID : -1; /* the option's index, or -1 */
        void *dest = NULL;
        for (int k = 0; i < 0 && opt != 'h' && opt != '?' && opt != ':' && k < n; k++)
            if (option_at(c, k, args, &dest)->short_name == opt) i = k;
        if (i >= 0) {
            const CliOption *o = option_at(c, i, args, &dest);
            given[i] = true;
            if (!apply(o, optarg, dest, err)) status = -1;
            if (o->path != PATH_NONE && optarg != NULL) {
                GivenPath *p = &paths[n_paths++];
                snprintf(p->name, sizeof p->name, "--%s", o->name);
                p->role = o->path, p->path = optarg;
            }
        } else if (opt == 'h') {
            cli_options_help(c, stdout);
            status = 0;
        } else {
            cli_option_error(c->command, opt, optopt, argv, optind, err);
            status = -1;
        }
    }
    for (int i = 0; status == 1 && i < n; i++) {
        void *dest;
        const CliOption *o = option_at(c, i, args, &dest);
        if (o->required && !given[i]) {
            step_fail(err, "%s: --%s is required (see --help)", c->command, o->name);
            status = -1;
        }
    }
    int operands = argc - optind;
    if (status == 1 && (operands < c->min_operands || operands > c->max_operands)) {
        if (c->operands != NULL)
            step_fail(err, "%s: expects %s (see --help)", c->command, c->operands);
        else
            step_fail(err, "%s: unexpected argument '%s' (see --help)", c->command, argv[optind]);
        status = -1;
    }
    for (int k = optind; status == 1 && c->operand_input != NULL && k < argc; k++) {
        GivenPath *p = &paths[n_paths++];
        snprintf(p->name, sizeof p->name, "%s", c->operand_input);
        p->role = PATH_IN, p->path = argv[k];
    }
    if (status == 1 && !outputs_not_inputs(c->command, paths, n_paths, err)) status = -1;
    free(paths);
    free(given);
    free(longs);
    if (first_operand != NULL) *first_operand = optind;
    return status;
}

void cli_help_wrap(char *text, int width) {
    char *line = text, *space = NULL;
    for (char *p = text; *p != '\0'; p++) {
        if (*p == '\n') line = p + 1, space = NULL;
        if (*p == ' ') space = p;
        if (p - line >= width && space != NULL) *space = '\n', line = space + 1, space = NULL;
    }
}

/* "  --name VALUE" (or "  -o, --name VALUE") into buf: its width. */
static int option_head(const CliOption *o, char *buf, size_t size) {
    const char *value = o->value ? o->value : "", *space = o->value && !o->optional ? " " : "";
    if (o->short_name)
        return snprintf(buf, size, "  -%c, --%s%s%s", o->short_name, o->name, space, value);
    return snprintf(buf, size, "  --%s%s%s", o->name, space, value);
}

/* The head, then the help's lines: the first at `column` (or two spaces
 * after a longer head), the rest under it. */
static void print_option(FILE *to, const CliOption *o, int column) {
    char head[128];
    int width = option_head(o, head, sizeof head);
    fprintf(to, "%s%*s", head, width <= column - 2 ? column - width : 2, "");
    for (const char *line = o->help; *line != '\0';) {
        const char *end = strchr(line, '\n');
        int len = end ? (int)(end - line) : (int)strlen(line);
        fprintf(to, "%.*s\n", len, line);
        if (end == NULL) break;
        line = end + 1;
        fprintf(to, "%*s", column, "");
    }
}

void cli_options_help(const CliCommandOptions *c, FILE *to) {
    /* the help's column: past the longest head, within reason */
    int column = HELP_COLUMN;
    CliOptionGroup group;
    for (int g = 0; group_at(c, g, &group); g++)
        for (const CliOption *o = group.options; o->name != NULL; o++) {
            char head[128];
            int width = option_head(o, head, sizeof head) + 2;
            if (width > column && width <= HELP_COLUMN_MAX) column = width;
        }
    fputs(c->usage, to);
    fputc('\n', to);
    for (int g = 0; group_at(c, g, &group); g++) {
        if (group.heading != NULL) fprintf(to, "\n%s\n", group.heading);
        for (const CliOption *o = group.options; o->name != NULL; o++) print_option(to, o, column);
    }
    fprintf(to, "  -h, --help%*sthis help\n", column - 12, "");
    bool writes = false;
    for (int g = 0; group_at(c, g, &group); g++)
        for (const CliOption *o = group.options; o->name != NULL; o++)
            writes = writes || o->path == PATH_OUT || o->path == PATH_OUT_FOLDER;
    if (writes)
        fputs("\nAn output never replaces an input: one that is an input (by its path, a\n"
              "symlink or a hard link) is refused before anything is written.\n",
              to);
    if (c->after != NULL) fputs(c->after, to);
}
