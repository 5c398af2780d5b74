/* cli_common.c: see cli_common.h. */
#include "cli_common.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_json.h"

extern const char stepwise_tiny_model_json[]; /* data/tiny-model.json, built in */

bool cli_parse_int(const char *text, const char *option, long min, long max, int *out,
                   StepError *err) {
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (text[0] == '\0' || *end != '\0' || errno == ERANGE)
        return step_fail(err, "%s expects a whole number, got '%s'", option, text);
    if (v < min || v > max)
        return step_fail(err, "%s must be in [%ld, %ld], got %ld", option, min, max, v);
    *out = (int)v;
    return true;
}

static bool ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

bool cli_load_model(const char *model_path, const char *tokenizer_path, Model *m, Tokenizer *tok,
                    StepError *err) {
    bool ok;
    if (model_path == NULL) {
        ok = model_load_json_text(m, tok, stepwise_tiny_model_json, "built-in tiny model", err);
    } else if (ends_with(model_path, ".json")) {
        ok = model_load_json_file(m, tok, model_path, err);
    } else {
        if (tokenizer_path == NULL)
            return step_fail(err, "model %s is a checkpoint: --tokenizer is required", model_path);
        memset(tok, 0, sizeof *tok);
        ok = model_load_checkpoint(m, model_path, err);
    }
    if (!ok || tokenizer_path == NULL) return ok;
    tokenizer_free(tok);
    if (!tokenizer_load_bin(tok, tokenizer_path, m->config.vocab_size, err)) {
        model_free(m);
        return false;
    }
    return true;
}

void cli_print_error(const StepError *err) {
    fprintf(stderr, "stepwise: error: %s\n", err->message);
}

bool cli_option_error(const char *command, int c, int optopt_value, char **argv, int optind_value,
                      StepError *err) {
    const char *arg = argv[optind_value - 1];
    if (c == ':') return step_fail(err, "%s: option '%s' needs a value", command, arg);
    if (optopt_value != 0)
        return step_fail(err, "%s: unknown option '-%c' (see --help)", command, optopt_value);
    return step_fail(err, "%s: unknown option '%s' (see --help)", command, arg);
}
