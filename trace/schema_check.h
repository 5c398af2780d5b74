/* schema_check.h: checking a JSON value against one of the trace schemas.
 *
 * It implements the subset of JSON Schema (draft 2020-12) that
 * the files in trace/schema use: type, properties, required,
 * additionalProperties, items, enum, const, minimum, maximum,
 * exclusiveMaximum, exclusiveMinimum, minItems, maxItems (and the annotations $schema, $id,
 * title, description). A schema using any other keyword is refused, so the
 * schemas cannot silently outgrow this checker; `make test` also validates
 * traces with python3-jsonschema, the full implementation. */
#ifndef STEPWISE_SCHEMA_CHECK_H
#define STEPWISE_SCHEMA_CHECK_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

/* The schemas, compiled in from trace/schema/ by the Makefile. */
typedef struct {
    const char *event; /* the value of "event" the schema describes */
    const char *json;  /* the schema's text */
} TraceSchemaText;

extern const TraceSchemaText trace_schema_texts[]; /* ends with {NULL, NULL} */

/* Check `value` against `schema`. On failure writes where and why into msg
 * (e.g. "$.model.dim: expected integer") and returns false. */
bool schema_check(const cJSON *schema, const cJSON *value, char *msg, size_t msg_size);

#endif
