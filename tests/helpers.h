/* helpers.h: what several test files share: finding the real models,
 * reading golden JSON, and running the stepwise binary. */
#ifndef STEPWISE_TEST_HELPERS_H
#define STEPWISE_TEST_HELPERS_H

#include <cjson/cJSON.h>
#include <stdbool.h>

#include "ref/generate.h"
#include "ref/model/model.h"
#include "ref/text/tokenizer.h"

/* Path of a file in the models folder ($STEPWISE_MODELS, else
 * ../shared/models), or NULL when it is not there. The path lives in one of
 * four static buffers, reused round-robin. */
const char *model_file(const char *name);

/* Path of a golden file (../shared/golden beside the models folder). */
const char *golden_file(const char *name);

/* Parse a JSON file; NULL on failure. Caller deletes. */
cJSON *read_json_file(const char *path);

/* Load stories260K with tok512 (skips the test when they are absent). */
void load_stories260k(Model *m, Tokenizer *tok);

/* Load the built-in tiny model (data/tiny-model.json). */
void load_tiny(Model *m, Tokenizer *tok);

/* Greedy generation from BOS alone, up to `steps` new tokens, with the
 * default options; fails the test if generate does. Caller frees. */
GenerateResult greedy_from_bos(const Model *m, int steps);

/* Run `build/stepwise ARGS...` through the shell; returns its exit status and
 * fills out/err (each up to cap bytes, NUL-terminated) when not NULL. */
int run_stepwise(const char *args, char *out, int out_cap, char *err, int err_cap);

/* A fresh temporary file path under build/tmp (created dir, file absent). */
const char *temp_path(const char *name);

#endif
