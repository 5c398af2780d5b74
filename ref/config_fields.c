/* config_fields.c: the table of config_fields.h as data, and what reads a
 * field through it. */
#include "ref/config.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define CONFIG_FIELD_ENTRY(group_, type_, name_, trace_, zero_, min_, max_, show_, hf_, gguf_,     \
                           option_, families_, help_)                                              \
    {.group = group_,                                                                              \
     .type = CF_TYPE_##type_,                                                                      \
     .name = #name_,                                                                               \
     .trace = trace_,                                                                              \
     .zero = zero_,                                                                                \
     .min = min_,                                                                                  \
     .max = max_,                                                                                  \
     .show = show_,                                                                                \
     .hf = hf_,                                                                                    \
     .gguf = gguf_,                                                                                \
     .option = option_,                                                                            \
     .families = families_,                                                                        \
     .help = help_,                                                                                \
     .offset = offsetof(Config, name_)},

const ConfigField CONFIG_FIELD_LIST[] = {CONFIG_FIELDS(CONFIG_FIELD_ENTRY)};
const int CONFIG_N_FIELDS = (int)(sizeof CONFIG_FIELD_LIST / sizeof CONFIG_FIELD_LIST[0]);

const ConfigField *config_field_find(const char *name) {
    for (int i = 0; i < CONFIG_N_FIELDS; i++)
        if (strcmp(CONFIG_FIELD_LIST[i].name, name) == 0) return &CONFIG_FIELD_LIST[i];
    return NULL;
}

double config_field_get(const Config *c, const ConfigField *f) {
    const char *at = (const char *)c + f->offset;
    switch (f->type) {
        case CF_TYPE_INT:
            return *(const int *)at;
        case CF_TYPE_FLOAT:
            return *(const float *)at;
        case CF_TYPE_BOOL:
            return *(const bool *)at ? 1 : 0;
    }
    return 0;
}

double config_field_effective(const Config *c, const ConfigField *f) {
    double v = config_field_get(c, f);
    return v == 0 ? f->zero : v;
}

void config_field_set(Config *c, const ConfigField *f, double v) {
    char *at = (char *)c + f->offset;
    switch (f->type) {
        case CF_TYPE_INT:
            *(int *)at = (int)v;
            break;
        case CF_TYPE_FLOAT:
            *(float *)at = (float)v;
            break;
        case CF_TYPE_BOOL:
            *(bool *)at = v != 0;
            break;
    }
}

bool config_field_in_family(const ConfigField *f, const char *family) {
    if (f->families[0] == '\0') return true;
    size_t n = strlen(family);
    for (const char *p = f->families; *p != '\0';) {
        const char *end = strchr(p, ' ');
        size_t len = end != NULL ? (size_t)(end - p) : strlen(p);
        if (len == n && strncmp(p, family, n) == 0) return true;
        p += len + (end != NULL);
    }
    return false;
}

/* A bound as people write it: 2^30 for 1073741824. */
static void bound_text(double v, char *buf, size_t size) {
    int e = 0;
    if (v >= 1024 && frexp(v, &e) == 0.5)
        snprintf(buf, size, "2^%d", e - 1);
    else
        snprintf(buf, size, "%.9g", v);
}

void config_field_describe(const ConfigField *f, char *buf, size_t size) {
    char lo[32], hi[32];
    bound_text(f->min, lo, sizeof lo);
    bound_text(f->max, hi, sizeof hi);
    if (f->type == CF_TYPE_BOOL)
        snprintf(buf, size, "true or false");
    else if (f->type == CF_TYPE_INT)
        snprintf(buf, size, "a whole number in [%s, %s]", lo, hi);
    else if (f->min > 0 && f->min < 1e-6 && f->max >= 1e9)
        snprintf(buf, size, "a positive number");
    else if (f->min > 0 && f->min < 1e-6)
        snprintf(buf, size, "a number in (0, %s]", hi);
    else
        snprintf(buf, size, "a number in [%s, %s]", lo, hi);
}

bool config_fields_valid(const Config *c, const char *what, StepError *err) {
    for (int i = 0; i < CONFIG_N_FIELDS; i++) {
        const ConfigField *f = &CONFIG_FIELD_LIST[i];
        double v = config_field_get(c, f);
        if (f->group == CF_SHAPE || v == 0 || (v >= f->min && v <= f->max)) continue;
        char takes[64];
        config_field_describe(f, takes, sizeof takes);
        int about = (int)strcspn(f->help, "\n"); /* the help's first line */
        return step_fail(err, "%s: %s %.9g (%.*s) must be %s, or 0", what, f->name, v, about,
                         f->help, takes);
    }
    return true;
}

bool config_fields_llama2c(const Config *c) {
    for (int i = 0; i < CONFIG_N_FIELDS; i++) {
        const ConfigField *f = &CONFIG_FIELD_LIST[i];
        double v = config_field_get(c, f);
        /* the shape is the checkpoint's; a value equal to what 0 stands for is 0 */
        if (f->group != CF_SHAPE && f->offset != offsetof(Config, head_dim) && v != 0 &&
            (float)v != (float)f->zero)
            return false;
    }
    return true;
}
