/* step_costs_file.h: step costs (step_costs.h) as a JSON file, so that one
 * measurement serves many simulations (docs/serving-under-load.md has the
 * fields). */
#ifndef STEPWISE_STEP_COSTS_FILE_H
#define STEPWISE_STEP_COSTS_FILE_H

#include <cjson/cJSON.h>
#include <stddef.h>

#include "ref/serve/step_costs.h"

/* Parse text[0..n) into *out (points left NULL; caller frees with
 * step_costs_free). Every coefficient must be a finite number >= 0 and
 * below an hour, and not all of them 0 (no time would pass), seq_len in [1, 2^24],
 * kv_bytes_per_position in [1, 2^40]; a "format" other than "stepwise-step-costs" or a version
 * other than 1 is refused. */
bool step_costs_parse(const char *text, size_t n, StepCosts *out, StepError *err);

/* step_costs_parse of the file at path. *out is emptied first, whatever
 * fails: the caller may step_costs_free it on every path. */
bool step_costs_read(const char *path, StepCosts *out, StepError *err);

/* c as the file's JSON object (its points too, when it has them); `model`
 * is recorded as where the costs came from. Caller owns it. */
cJSON *step_costs_json(const StepCosts *c, const char *model);

/* Write step_costs_json(c, model) to path, whole or not at all. */
bool step_costs_write(const char *path, const StepCosts *c, const char *model, StepError *err);

#endif
