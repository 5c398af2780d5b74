/* json_util.c: see json_util.h. */
#include "ref/util/json_util.h"

#include <float.h>
#include <math.h>

bool json_whole_number(const cJSON *v, double min, double max, long long *out) {
    if (!cJSON_IsNumber(v)) return false;
    double d = v->valuedouble;
    /* The range test comes first: it also rejects NaN and the infinities,
     * and keeps the cast below defined. */
    if (!(d >= min && d <= max) || d != floor(d)) return false;
    *out = (long long)d;
    return true;
}

bool json_int_field(const cJSON *obj, const char *key, int min, int max, int *out) {
    long long v;
    if (!json_whole_number(cJSON_GetObjectItemCaseSensitive(obj, key), min, max, &v)) return false;
    *out = (int)v;
    return true;
}

bool json_number_field(const cJSON *obj, const char *key, double min, double max, double *out) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= min && v->valuedouble <= max)) return false;
    *out = v->valuedouble;
    return true;
}

float json_float(double d) {
    if (d > FLT_MAX) return INFINITY;
    if (d < -FLT_MAX) return -INFINITY;
    return (float)d; /* NaN stays NaN */
}

const char *json_string_field(const cJSON *obj, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

cJSON *json_parse_whole(const char *text) {
    return cJSON_ParseWithOpts(text, NULL, true);
}

cJSON *json_parse_whole_n(const char *text, size_t n) {
    const char *end = NULL;
    cJSON *doc = cJSON_ParseWithLengthOpts(text, n, &end, false);
    if (doc == NULL) return NULL;
    for (const char *p = end; p < text + n; p++) {
        if (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r') {
            cJSON_Delete(doc);
            return NULL;
        }
    }
    return doc;
}
