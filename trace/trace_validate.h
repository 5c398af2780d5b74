/* trace_validate.h: `stepwise trace validate`: every line against its
 * schema, and the trace against itself. */
#ifndef STEPWISE_TRACE_VALIDATE_H
#define STEPWISE_TRACE_VALIDATE_H

#include <stdio.h>

#include "ref/util/error.h"

/* Check the trace at path, printing each violation as "path:line: message"
 * to report. Returns the number of violations, or -1 (err set) when the file
 * cannot be read. Checks: each line is JSON and matches the schema of its
 * event; the first line is "run" and the last "done", "scored" or "error", with nothing
 * after; logits have vocab_size values and kv rows kv_dim; an activation's
 * data fits its shape; positions of logits, sample and token events
 * increase (restarting after a context shift); a sample's probs sum to 1 within 1e-6 and its token
 * survived every filter; done's tokens start with the prompt's. */
int trace_validate_file(const char *path, FILE *report, StepError *err);

/* The schemas, parsed once, for a caller that validates many traces. */
typedef struct TraceSchemas TraceSchemas;
TraceSchemas *trace_schemas_load(void); /* NULL when out of memory */
void trace_schemas_free(TraceSchemas *s);
int trace_validate_with(const TraceSchemas *schemas, const char *path, FILE *report,
                        StepError *err);

#endif
