/* schema_check.c: the JSON Schema subset the trace schemas use. */
#include "trace/schema_check.h"

#include <math.h>
#include <regex.h>
#include <stdio.h>
#include <string.h>

static bool fail(char *msg, size_t size, const char *path, const char *why) {
    snprintf(msg, size, "%s: %s", path, why);
    return false;
}

static bool type_matches(const char *type, const cJSON *v) {
    if (strcmp(type, "object") == 0) return cJSON_IsObject(v);
    if (strcmp(type, "array") == 0) return cJSON_IsArray(v);
    if (strcmp(type, "string") == 0) return cJSON_IsString(v);
    if (strcmp(type, "boolean") == 0) return cJSON_IsBool(v);
    if (strcmp(type, "null") == 0) return cJSON_IsNull(v);
    if (strcmp(type, "number") == 0) return cJSON_IsNumber(v);
    if (strcmp(type, "integer") == 0)
        return cJSON_IsNumber(v) && v->valuedouble == floor(v->valuedouble) &&
               fabs(v->valuedouble) < 9007199254740992.0;
    return false;
}

/* JSON equality for const and enum (scalars are all the schemas use). */
static bool json_equal(const cJSON *a, const cJSON *b) {
    return cJSON_Compare(a, b, true);
}

static const char *const KNOWN[] = {"$schema",
                                    "$id",
                                    "title",
                                    "description",
                                    "type",
                                    "properties",
                                    "required",
                                    "additionalProperties",
                                    "items",
                                    "enum",
                                    "const",
                                    "minimum",
                                    "maximum",
                                    "exclusiveMaximum",
                                    "exclusiveMinimum",
                                    "minItems",
                                    "maxItems",
                                    "pattern"};

static bool check_at(const cJSON *schema, const cJSON *v, const char *path, char *msg, size_t size);

/* "pattern": the string matches the regular expression (the schemas'
 * patterns are anchored POSIX extended ones, which ECMA-262 reads alike). */
static bool check_pattern(const cJSON *pattern, const cJSON *v, const char *path, char *msg,
                          size_t size) {
    regex_t re;
    if (!cJSON_IsString(pattern) ||
        regcomp(&re, pattern->valuestring, REG_EXTENDED | REG_NOSUB) != 0)
        return fail(msg, size, path, "the schema's pattern is not a regular expression");
    bool matches = regexec(&re, v->valuestring, 0, NULL, 0) == 0;
    regfree(&re);
    return matches || fail(msg, size, path, "does not match the pattern");
}

static bool check_type(const cJSON *type, const cJSON *v, const char *path, char *msg,
                       size_t size) {
    if (cJSON_IsString(type)) {
        if (type_matches(type->valuestring, v)) return true;
        char why[96];
        snprintf(why, sizeof why, "expected %s", type->valuestring);
        return fail(msg, size, path, why);
    }
    const cJSON *t;
    cJSON_ArrayForEach(t, type) {
        if (type_matches(t->valuestring, v)) return true;
    }
    return fail(msg, size, path, "has none of the allowed types");
}

static bool check_object(const cJSON *schema, const cJSON *v, const char *path, char *msg,
                         size_t size) {
    const cJSON *props = cJSON_GetObjectItemCaseSensitive(schema, "properties");
    const cJSON *required = cJSON_GetObjectItemCaseSensitive(schema, "required");
    const cJSON *extra = cJSON_GetObjectItemCaseSensitive(schema, "additionalProperties");
    const cJSON *r;
    cJSON_ArrayForEach(r, required) {
        if (!cJSON_HasObjectItem(v, r->valuestring)) {
            char why[160];
            snprintf(why, sizeof why, "missing required field \"%s\"", r->valuestring);
            return fail(msg, size, path, why);
        }
    }
    const cJSON *field;
    cJSON_ArrayForEach(field, v) {
        char sub[512];
        snprintf(sub, sizeof sub, "%s.%s", path, field->string);
        const cJSON *fs = props ? cJSON_GetObjectItemCaseSensitive(props, field->string) : NULL;
        if (fs == NULL && cJSON_IsFalse(extra)) return fail(msg, size, sub, "is not allowed here");
        if (fs == NULL && cJSON_IsObject(extra)) fs = extra;
        if (fs != NULL && !check_at(fs, field, sub, msg, size)) return false;
    }
    return true;
}

static bool check_array(const cJSON *schema, const cJSON *v, const char *path, char *msg,
                        size_t size) {
    int n = cJSON_GetArraySize(v);
    const cJSON *min = cJSON_GetObjectItemCaseSensitive(schema, "minItems");
    const cJSON *max = cJSON_GetObjectItemCaseSensitive(schema, "maxItems");
    if (min != NULL && n < min->valueint) return fail(msg, size, path, "has too few items");
    if (max != NULL && n > max->valueint) return fail(msg, size, path, "has too many items");
    const cJSON *items = cJSON_GetObjectItemCaseSensitive(schema, "items");
    if (items == NULL) return true;
    int i = 0;
    const cJSON *item;
    cJSON_ArrayForEach(item, v) {
        char sub[512];
        snprintf(sub, sizeof sub, "%s[%d]", path, i++);
        if (!check_at(items, item, sub, msg, size)) return false;
    }
    return true;
}

static bool check_number(const cJSON *schema, const cJSON *v, const char *path, char *msg,
                         size_t size) {
    const cJSON *min = cJSON_GetObjectItemCaseSensitive(schema, "minimum");
    const cJSON *max = cJSON_GetObjectItemCaseSensitive(schema, "maximum");
    const cJSON *xmax = cJSON_GetObjectItemCaseSensitive(schema, "exclusiveMaximum");
    const cJSON *xmin = cJSON_GetObjectItemCaseSensitive(schema, "exclusiveMinimum");
    if (xmin != NULL && v->valuedouble <= xmin->valuedouble)
        return fail(msg, size, path, "is not above its exclusive minimum");
    if (min != NULL && v->valuedouble < min->valuedouble)
        return fail(msg, size, path, "is below its minimum");
    if (max != NULL && v->valuedouble > max->valuedouble)
        return fail(msg, size, path, "is above its maximum");
    if (xmax != NULL && v->valuedouble >= xmax->valuedouble)
        return fail(msg, size, path, "is not below its exclusive maximum");
    return true;
}

static bool check_at(const cJSON *schema, const cJSON *v, const char *path, char *msg,
                     size_t size) {
    const cJSON *kw;
    cJSON_ArrayForEach(kw, schema) {
        bool known = false;
        for (size_t i = 0; i < sizeof KNOWN / sizeof KNOWN[0]; i++)
            known |= strcmp(kw->string, KNOWN[i]) == 0;
        if (!known) {
            char why[160];
            snprintf(why, sizeof why, "schema keyword \"%s\" is not supported", kw->string);
            return fail(msg, size, path, why);
        }
    }
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(schema, "type");
    if (type != NULL && !check_type(type, v, path, msg, size)) return false;
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(schema, "const");
    if (c != NULL && !json_equal(c, v))
        return fail(msg, size, path, "does not have the required value");
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(schema, "enum");
    if (e != NULL) {
        bool found = false;
        const cJSON *option;
        cJSON_ArrayForEach(option, e) found |= json_equal(option, v);
        if (!found) return fail(msg, size, path, "is not one of the allowed values");
    }
    const cJSON *pattern = cJSON_GetObjectItemCaseSensitive(schema, "pattern");
    if (pattern != NULL && cJSON_IsString(v) && !check_pattern(pattern, v, path, msg, size))
        return false;
    if (cJSON_IsObject(v)) return check_object(schema, v, path, msg, size);
    if (cJSON_IsArray(v)) return check_array(schema, v, path, msg, size);
    if (cJSON_IsNumber(v)) return check_number(schema, v, path, msg, size);
    return true;
}

bool schema_check(const cJSON *schema, const cJSON *value, char *msg, size_t msg_size) {
    return check_at(schema, value, "$", msg, msg_size);
}
