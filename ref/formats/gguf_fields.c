/* gguf_fields.c: see gguf_fields.h. */
#include "ref/formats/gguf_fields.h"

#include <stdio.h>
#include <string.h>

#include "ref/family.h"

/* Whether the key of f is one this file's family holds. */
static bool ours(const ConfigField *f, const char *arch) {
    return f->group != CF_SHAPE && f->gguf[0] != '\0' && config_field_in_family(f, arch);
}

bool gguf_fields_read(const GgufFile *f, const char *arch, Config *c, StepError *err) {
    /* what llama.cpp gives a key its file leaves out (family.h's FAMILY_IN_GGUF) */
    const Family *family = family_from_gguf(arch);
    if (family != NULL) family_defaults_apply(family, FAMILY_IN_GGUF, c, NULL);
    for (int i = 0; i < CONFIG_FIELD_COUNT; i++) {
        const ConfigField *field = &CONFIG_FIELD_LIST[i];
        if (!ours(field, arch)) continue;
        char key[160];
        snprintf(key, sizeof key, "%s.%s", arch, field->gguf);
        if (gguf_find_kv(f, key) == NULL) continue;
        uint64_t u = 0;
        double v = 0;
        bool ok = field->type == CF_TYPE_FLOAT ? gguf_get_float(f, key, &v)
                                               : gguf_get_uint(f, key, UINT32_MAX, &u);
        if (field->type != CF_TYPE_FLOAT) v = (double)u;
        bool none = v == 0 && field->zero == 0; /* 0 where it means none (q_lora_rank's) */
        if (!ok || !(none || (v >= field->min && v <= field->max))) {
            char takes[64];
            config_field_describe(field, takes, sizeof takes);
            return step_fail(err, "%s: %s must be %s", f->path, key, takes);
        }
        config_field_set(c, field, v);
    }
    return true;
}

/* <arch>.<name>'s whole-number value into *v (absent: *v untouched), or
 * false with err set when it is not one. */
static bool mode_value(const GgufFile *f, const char *arch, const char *name, uint64_t *v,
                       char *key, size_t key_size, StepError *err) {
    snprintf(key, key_size, "%s.%s", arch, name);
    if (gguf_find_kv(f, key) == NULL || gguf_get_uint(f, key, UINT32_MAX, v)) return true;
    return step_fail(err, "%s: %s must be a whole number", f->path, key);
}

bool gguf_fields_check_modes(const GgufFile *f, const char *arch, StepError *err) {
    /* llama.cpp's llama_expert_gating_func_type */
    static const char *const gating[] = {"none", "softmax", "sigmoid", "softmax_weight"};
    char key[160];
    uint64_t v = 0;
    if (!mode_value(f, arch, "expert_gating_func", &v, key, sizeof key, err)) return false;
    if (v > 1 && v < sizeof gating / sizeof gating[0])
        return step_fail(err, "%s: %s %llu (%s) is not implemented (0 or 1: softmax)", f->path, key,
                         (unsigned long long)v, gating[v]);
    if (v > 1)
        return step_fail(err,
                         "%s: %s %llu is not a gating function stepwise knows (0 or 1: softmax)",
                         f->path, key, (unsigned long long)v);
    v = 0;
    if (!mode_value(f, arch, "expert_group_count", &v, key, sizeof key, err)) return false;
    if (v > 1)
        return step_fail(
            err,
            "%s: %s %llu: llama.cpp's group-limited routing (a group scored by its two "
            "best experts, DeepSeek-V3's) is not implemented",
            f->path, key, (unsigned long long)v);
    v = 0;
    if (!mode_value(f, arch, "pooling_type", &v, key, sizeof key, err)) return false;
    if (v != 0)
        return step_fail(
            err, "%s: %s %llu: a pooled (embedding) model is not implemented, only none (0)",
            f->path, key, (unsigned long long)v);
    v = 1;
    if (!mode_value(f, arch, "attention.causal", &v, key, sizeof key, err)) return false;
    if (v == 0)
        return step_fail(err, "%s: %s false: non-causal attention is not implemented", f->path,
                         key);
    return true;
}

void gguf_fields_write(GgufMetadata *meta, const Config *c, const char *arch) {
    for (int i = 0; i < CONFIG_FIELD_COUNT; i++) {
        const ConfigField *field = &CONFIG_FIELD_LIST[i];
        double v = config_field_effective(c, field);
        if (!ours(field, arch) || v == 0) continue;
        char key[160];
        snprintf(key, sizeof key, "%s.%s", arch, field->gguf);
        if (field->type == CF_TYPE_INT)
            gguf_meta_u32(meta, key, (uint32_t)v);
        else if (field->type == CF_TYPE_FLOAT)
            gguf_meta_f32(meta, key, (float)v);
        else
            gguf_meta_bool(meta, key, v != 0);
    }
}
