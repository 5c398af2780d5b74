/* json_util.h: reading numbers from JSON that came from elsewhere.
 *
 * cJSON keeps every number as a double and fills valueint by a saturating
 * cast; a file can hold 1e400, -0.5 or 2^31. These helpers accept a number
 * only when it is a whole number inside the range the caller can use, so
 * that no float-to-int conversion is ever out of range. */
#ifndef STEPWISE_JSON_UTIL_H
#define STEPWISE_JSON_UTIL_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

/* Whether v is a number, whole, within [min, max]; *out gets it. */
bool json_whole_number(const cJSON *v, double min, double max, long long *out);

/* obj[key] (case-sensitive) as an int within [min, max]. */
bool json_int_field(const cJSON *obj, const char *key, int min, int max, int *out);

/* obj[key] as a finite number within [min, max]. */
bool json_number_field(const cJSON *obj, const char *key, double min, double max, double *out);

/* A JSON number as a float32: beyond float's range it is the infinity of
 * its sign (a plain cast would be undefined there). */
float json_float(double d);

/* One JSON document that is the whole of text (NUL-terminated), or of
 * text[0..n): anything but white space after it (a second document, say)
 * is refused, as a reader of files from elsewhere must. NULL on failure;
 * free with cJSON_Delete. */
cJSON *json_parse_whole(const char *text);
cJSON *json_parse_whole_n(const char *text, size_t n);

/* obj[key] if it is a string, else NULL. */
const char *json_string_field(const cJSON *obj, const char *key);

#endif
