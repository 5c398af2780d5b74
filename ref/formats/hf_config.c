/* hf_config.c: see hf_config.h. */
#include "ref/formats/hf_config.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ref/formats/hf_deepseek2.h"
#include "ref/formats/hf_gemma.h"
#include "ref/formats/hf_gpt2.h"
#include "ref/formats/hf_moe.h"
#include "ref/util/json_util.h"

static bool need_int(const cJSON *o, const char *key, int *out, const char *what, StepError *err) {
    if (!json_int_field(o, key, 1, 1 << 30, out))
        return step_fail(err, "%s: config.json needs %s, a whole number from 1", what, key);
    return true;
}

/* An optional positive number; absent or null leaves *out. */
static bool optional_number(const cJSON *o, const char *key, float *out, const char *what,
                            StepError *err) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (v == NULL || cJSON_IsNull(v)) return true;
    double d;
    if (!json_number_field(o, key, 1e-30, 1e30, &d))
        return step_fail(err, "%s: config.json's %s must be a positive number", what, key);
    *out = (float)d;
    return true;
}

static bool optional_bool(const cJSON *o, const char *key, bool *out) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (cJSON_IsBool(v)) *out = cJSON_IsTrue(v);
    return v == NULL || cJSON_IsBool(v) || cJSON_IsNull(v);
}

/* YaRN's rope_scaling as DeepSeek-V2's DeepseekV2YarnRotaryEmbedding reads
 * it: factor and original_max_position_embeddings required; beta_fast 32,
 * beta_slow 1, mscale 1 and mscale_all_dim 0 unless given; cos and sin
 * multiplied by mscale's factor over mscale_all_dim's (config_yarn_mscale). */
static bool read_yarn(const cJSON *o, RopeScaling *s, const char *what, StepError *err) {
    *s = (RopeScaling){
        .type = ROPE_SCALING_YARN, .beta_fast = 32, .beta_slow = 1, .mscale = 1, .factor = 0};
    const cJSON *all_dim = cJSON_GetObjectItemCaseSensitive(o, "mscale_all_dim");
    double d = 0;
    if (all_dim != NULL && !cJSON_IsNull(all_dim) &&
        !json_number_field(o, "mscale_all_dim", 0, 1e3, &d))
        return step_fail(err, "%s: yarn's mscale_all_dim must be a number in [0, 1000]", what);
    s->mscale_all_dim = (float)d;
    if (!optional_number(o, "factor", &s->factor, what, err) ||
        !optional_number(o, "beta_fast", &s->beta_fast, what, err) ||
        !optional_number(o, "beta_slow", &s->beta_slow, what, err) ||
        !optional_number(o, "mscale", &s->mscale, what, err))
        return false;
    if (!(s->factor >= 1) ||
        !json_int_field(o, "original_max_position_embeddings", 1, 1 << 30, &s->original_context))
        return step_fail(err,
                         "%s: yarn rope_scaling needs factor (at least 1) and "
                         "original_max_position_embeddings",
                         what);
    s->attention_factor =
        config_yarn_mscale(s->factor, s->mscale) / config_yarn_mscale(s->factor, s->mscale_all_dim);
    return true;
}

/* rope_scaling: null, "default", "linear" or "llama3" (Hugging Face's
 * rope_type, or the older "type"). */
static bool read_rope_scaling(const cJSON *root, RopeScaling *s, const char *what, StepError *err) {
    const cJSON *o = cJSON_GetObjectItemCaseSensitive(root, "rope_scaling");
    if (o == NULL || cJSON_IsNull(o)) return true;
    const char *type = json_string_field(o, "rope_type");
    if (type == NULL) type = json_string_field(o, "type");
    if (type != NULL && strcmp(type, "default") == 0) return true;
    if (type != NULL && (strcmp(type, "longrope") == 0 || strcmp(type, "su") == 0)) {
        s->type =
            ROPE_SCALING_LONGROPE; /* its factors once the RoPE dims are known: read_longrope */
        return true;
    } else if (type != NULL && strcmp(type, "linear") == 0) {
        s->type = ROPE_SCALING_LINEAR;
    } else if (type != NULL && strcmp(type, "llama3") == 0) {
        s->type = ROPE_SCALING_LLAMA3;
    } else if (type != NULL && strcmp(type, "yarn") == 0) {
        return read_yarn(o, s, what, err);
    } else {
        return step_fail(err,
                         "%s: rope_scaling type %.40s is not supported (linear, llama3, yarn, "
                         "longrope)",
                         what, type ? type : "(none)");
    }
    bool ok = optional_number(o, "factor", &s->factor, what, err) &&
              optional_number(o, "low_freq_factor", &s->low_freq_factor, what, err) &&
              optional_number(o, "high_freq_factor", &s->high_freq_factor, what, err);
    if (ok && s->type == ROPE_SCALING_LLAMA3 &&
        !json_int_field(o, "original_max_position_embeddings", 1, 1 << 30, &s->original_context))
        ok = step_fail(err, "%s: llama3 rope_scaling needs original_max_position_embeddings", what);
    return ok;
}

/* n factors of rope_scaling's list `key`, each in (0, 1e6], into out. */
static bool factor_list(const cJSON *o, const char *key, int n, float *out, const char *what,
                        StepError *err) {
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(o, key), *v;
    if (!cJSON_IsArray(list) || cJSON_GetArraySize(list) != n)
        return step_fail(err, "%s: longrope's %s must list %d factors (one a pair of turned dims)",
                         what, key, n);
    int i = 0;
    cJSON_ArrayForEach(v, list) {
        if (!cJSON_IsNumber(v) || !(v->valuedouble > 0 && v->valuedouble <= 1e6))
            return step_fail(err, "%s: longrope's %s[%d] must be a number in (0, 1e6]", what, key,
                             i);
        out[i++] = (float)v->valuedouble;
    }
    return true;
}

/* Phi-3's longrope, as Hugging Face's _compute_longrope_parameters reads
 * it: short and long factors, one a pair of the dims RoPE turns; the
 * context it was trained on, original_max_position_embeddings (absent:
 * max_position_embeddings, and the long factors never apply); its factor,
 * max_position_embeddings / that; and the attention factor, given or
 * sqrt(1 + ln(factor) / ln(original)) (1 for a factor of at most 1). */
static bool read_longrope(const cJSON *root, Config *c, const char *what, StepError *err) {
    const cJSON *o = cJSON_GetObjectItemCaseSensitive(root, "rope_scaling");
    RopeScaling *s = &c->rope_scaling;
    int pairs = config_rope_dims(c) / 2;
    if (pairs > ROPE_MAX_FACTORS)
        return step_fail(err, "%s: longrope's factors need rope dimensions <= %d", what,
                         2 * ROPE_MAX_FACTORS);
    if (!factor_list(o, "short_factor", pairs, s->factors, what, err) ||
        !factor_list(o, "long_factor", pairs, s->long_factors, what, err))
        return false;
    s->original_context = c->seq_len;
    const cJSON *orig = cJSON_GetObjectItemCaseSensitive(root, "original_max_position_embeddings");
    if (orig != NULL &&
        !json_int_field(root, "original_max_position_embeddings", 1, 1 << 30, &s->original_context))
        return step_fail(err, "%s: original_max_position_embeddings must be a whole number from 1",
                         what);
    double factor = (double)c->seq_len / (double)s->original_context, attention;
    s->factor = (float)factor;
    const cJSON *given = cJSON_GetObjectItemCaseSensitive(o, "attention_factor");
    if (given != NULL && !cJSON_IsNull(given)) {
        if (!json_number_field(o, "attention_factor", 1e-6, 1e3, &attention))
            return step_fail(err, "%s: longrope's attention_factor must be in (0, 1000]", what);
    } else {
        attention = factor <= 1.0 || s->original_context < 2
                        ? 1.0
                        : sqrt(1.0 + log(factor) / log((double)s->original_context));
    }
    s->attention_factor = (float)attention;
    return true;
}

/* The family (the first of "architectures"), if supported. */
static bool read_architecture(const cJSON *root, const Family **a, const char *what,
                              StepError *err) {
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(root, "architectures");
    const cJSON *first = cJSON_IsArray(list) ? list->child : NULL;
    const char *name = cJSON_IsString(first) ? first->valuestring : NULL;
    if ((*a = family_from_hf_class(name)) != NULL) {
        /* Hugging Face's Auto classes pick the model by model_type (when
         * given): another family's would run another model there */
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(root, "model_type");
        if (type == NULL || cJSON_IsNull(type) ||
            (cJSON_IsString(type) && strcmp(type->valuestring, (*a)->hf_model_type) == 0))
            return true;
        return step_fail(err, "%s: model_type %.60s is not %s's %s", what,
                         cJSON_IsString(type) ? type->valuestring : "(not a string)", name,
                         (*a)->hf_model_type);
    }
    char classes[512];
    family_classes_text(classes, sizeof classes);
    return step_fail(err, "%s: architecture %.60s is not supported (%s)", what,
                     name ? name : "(none in config.json)", classes);
}

/* root's key of f (present, not null) as f's type in its range, into *d. */
static bool key_value(const cJSON *root, const ConfigField *f, double *d) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, f->hf);
    int n;
    switch (f->type) {
        case CF_TYPE_BOOL:
            *d = cJSON_IsTrue(v);
            return cJSON_IsBool(v);
        case CF_TYPE_INT:
            if (!json_int_field(root, f->hf, (int)f->min, (int)fmin(f->max, CF_INT_MAX), &n))
                return false;
            *d = n;
            return true;
        case CF_TYPE_FLOAT:
            return json_number_field(root, f->hf, f->min, f->max, d);
    }
    return false;
}

bool hf_config_fields_read(const cJSON *root, const Family *a, Config *c, const char *what,
                           StepError *err) {
    family_defaults_apply(a, FAMILY_IN_HF, c, NULL); /* the config class's */
    for (int i = 0; i < CONFIG_FIELD_COUNT; i++) {
        const ConfigField *f = &CONFIG_FIELD_LIST[i];
        if (f->group == CF_SHAPE || f->hf[0] == '\0' || !config_field_in_family(f, a->name))
            continue;
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, f->hf);
        if (v == NULL) continue; /* the class's default stays */
        if (cJSON_IsNull(v)) {   /* none; for a number whose 0 stands for a value, that value */
            if (f->zero == 0) config_field_set(c, f, 0);
            continue;
        }
        double d;
        if (!key_value(root, f, &d)) {
            char takes[64];
            config_field_describe(f, takes, sizeof takes);
            return step_fail(err, "%s: config.json's %s must be %s or null", what, f->hf, takes);
        }
        config_field_set(c, f, d);
    }
    return true;
}

void hf_config_fields_write(cJSON *o, const Config *c, const Family *a) {
    for (int i = 0; i < CONFIG_FIELD_COUNT; i++) {
        const ConfigField *f = &CONFIG_FIELD_LIST[i];
        if (f->group == CF_SHAPE || f->hf[0] == '\0' || !config_field_in_family(f, a->name) ||
            cJSON_GetObjectItemCaseSensitive(o, f->hf) != NULL)
            continue;
        double v = config_field_effective(c, f);
        if (f->type == CF_TYPE_BOOL)
            cJSON_AddBoolToObject(o, f->hf, v != 0);
        else if (v == 0) /* none: null, as absent may mean the class's default */
            cJSON_AddNullToObject(o, f->hf);
        else if (f->type == CF_TYPE_INT)
            cJSON_AddNumberToObject(o, f->hf, v);
        else
            cJSON_AddNumberToObject(o, f->hf, (float)v);
    }
}

bool hf_config_parse(const char *text, const char *what, Config *c, char *arch, size_t arch_size,
                     StepError *err) {
    memset(c, 0, sizeof *c);
    cJSON *root = json_parse_whole(text);
    const Family *a = NULL;
    bool ok = cJSON_IsObject(root) || step_fail(err, "%s: config.json is not a JSON object", what);
    ok = ok && read_architecture(root, &a, what, err);
    if (ok) snprintf(arch, arch_size, "%s", a->hf_class);
    if (!ok || a->position == POS_LEARNED) { /* refused; or GPT-2's own keys (hf_gpt2.h) */
        ok = ok && hf_gpt2_config(root, c, what, err);
        cJSON_Delete(root);
        return ok;
    }
    ok = need_int(root, "hidden_size", &c->dim, what, err) &&
         need_int(root, "intermediate_size", &c->hidden_dim, what, err) &&
         need_int(root, "num_hidden_layers", &c->n_layers, what, err) &&
         need_int(root, "num_attention_heads", &c->n_heads, what, err) &&
         need_int(root, "vocab_size", &c->vocab_size, what, err) &&
         need_int(root, "max_position_embeddings", &c->seq_len, what, err);
    c->n_kv_heads = c->n_heads;
    if (ok && cJSON_GetObjectItemCaseSensitive(root, "num_key_value_heads") != NULL)
        ok = need_int(root, "num_key_value_heads", &c->n_kv_heads, what, err);
    /* the keys that are a field's value (config_table.h), over the class's defaults */
    ok = ok && hf_config_fields_read(root, a, c, what, err) &&
         read_rope_scaling(root, &c->rope_scaling, what, err);
    bool gemma = a->window == FAMILY_WINDOW_PATTERN;
    bool every_layer = a->window == FAMILY_WINDOW_EVERY_LAYER;
    /* Gemma's config classes tie the classifier unless told otherwise */
    bool tied = a->tied, bias = false, sliding = every_layer;
    float rotary = 1.0f; /* Phi-3's partial_rotary_factor: the share of a head RoPE turns */
    if (ok && !optional_number(root, "partial_rotary_factor", &rotary, what, err)) ok = false;
    if (ok && !(rotary > 0 && rotary <= 1))
        ok = step_fail(err, "%s: partial_rotary_factor %g must be in (0, 1]", what, (double)rotary);
    if (ok && (!optional_bool(root, "tie_word_embeddings", &tied) ||
               !optional_bool(root, "attention_bias", &bias) ||
               !optional_bool(root, "use_sliding_window", &sliding)))
        ok = step_fail(err,
                       "%s: config.json's tie_word_embeddings, attention_bias and "
                       "use_sliding_window must be true or false",
                       what);
    /* SwiGLU's activation (Gemma's GeGLU reads its own: hf_gemma.h) */
    const char *act = a->mlp == MLP_SWIGLU ? json_string_field(root, "hidden_act") : NULL;
    if (ok && act != NULL && strcmp(act, "silu") != 0)
        ok = step_fail(err, "%s: hidden_act %.40s is not supported (silu)", what, act);
    /* Llama's and Qwen3's attention_bias also biases o_proj, which the
     * block has no place for; Qwen2 biases q, k and v only, always. */
    if (ok && bias)
        ok = step_fail(err, "%s: attention_bias (with an o_proj bias) is not supported", what);
    if (ok && gemma) /* hf_gemma.h, over the class's every sliding_pattern-th layer full */
        ok = hf_gemma_config(root, (int)family_default(a, "sliding_pattern"), c, what, err);
    if (ok && (a->routing == FAMILY_ROUTING_QWEN3MOE || a->routing == FAMILY_ROUTING_MIXTRAL))
        ok =
            hf_moe_config(root, a->routing == FAMILY_ROUTING_QWEN3MOE, c, what, err); /* hf_moe.h */
    if (ok && a->attention == FAMILY_ATTENTION_MLA) ok = hf_deepseek2_config(root, c, what, err);
    family_apply(a, c); /* the family's flags, and its experts' width rule */
    c->shared_classifier = tied;
    c->rope_layout = ROPE_INTERLEAVED; /* the loader interleaves q and k (hf_interleave_heads) */
    if (ok && rotary < 1) { /* RoPE turns the first int(head_dim · factor) of each head, in
                               Hugging Face's halves: q and k are kept as stored, not interleaved */
        int hd = c->head_dim > 0 ? c->head_dim : c->dim / c->n_heads;
        c->rope_dims = (int)((double)hd * (double)rotary);
        c->rope_layout = ROPE_HALVES;
    }
    if (ok && c->rope_scaling.type == ROPE_SCALING_LONGROPE) ok = read_longrope(root, c, what, err);
    /* Mistral's, Mixtral's and Phi-3's window (read with the table's keys)
     * slides on every layer: the query at p sees p - window + 1 .. p, as
     * Hugging Face's sliding mask lets it; use_sliding_window false, or a
     * window as wide as the context, masks nothing. Qwen2's (on the layers
     * past max_window_layers) is not run: its context is capped at the
     * window, where no position falls outside it. */
    if (every_layer && (!sliding || c->sliding_window >= c->seq_len)) c->sliding_window = 0;
    int window;
    const cJSON *window_key = cJSON_GetObjectItemCaseSensitive(root, "sliding_window");
    if (ok && a->window == FAMILY_WINDOW_CAPS_CONTEXT && sliding && window_key != NULL &&
        !cJSON_IsNull(window_key)) {
        /* a positive whole number (null: no window): 0, -3 or "16" must not
         * silently mean full attention */
        if (!json_int_field(root, "sliding_window", 1, 1 << 30, &window))
            ok = step_fail(err,
                           "%s: config.json's sliding_window must be a whole number in [1, 2^30] "
                           "(or null: no window)",
                           what);
        else if (window < c->seq_len)
            c->seq_len = window;
    }
    cJSON_Delete(root);
    return ok && config_validate(c, what, err);
}
