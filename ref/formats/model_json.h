/* model_json.h: stepwise's human-readable model format, a JSON file with the
 * config, the tokenizer's pieces and every weight as nested arrays. It is for
 * models small enough to read (data/tiny-model.json); see docs/model-json.md. */
#ifndef STEPWISE_MODEL_JSON_H
#define STEPWISE_MODEL_JSON_H

#include "ref/model/model.h"
#include "ref/text/tokenizer.h"

/* Parse a JSON model from text; `what` names it in errors. Fills both the
 * model and its tokenizer (both owned by the caller on success). */
bool model_load_json_text(Model *m, Tokenizer *tok, const char *text, const char *what,
                          StepError *err);

/* The same, reading the text from a file. */
bool model_load_json_file(Model *m, Tokenizer *tok, const char *path, StepError *err);

#endif
