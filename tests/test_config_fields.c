/* test_config_fields.c: the table of model fields (config_table.h) and
 * what it drives: the run header's model against trace/schema's
 * run.schema.json (every field the header shows is in the schema with its
 * type, and every property the schema lists is a field or one of the
 * header's derived facts), config_validate's ranges, and
 * config_is_llama2c. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ref/config.h"
#include "trace/schema_check.h"
#include "trace/trace_events.h"

/* run.schema.json's model object schema. */
static cJSON *run_schema(void) {
    for (const TraceSchemaText *t = trace_schema_texts; t->event != NULL; t++)
        if (strcmp(t->event, "run") == 0) return cJSON_Parse(t->json);
    return NULL;
}

static const cJSON *properties(const cJSON *schema, const char *path) {
    const cJSON *o = schema;
    char buf[128];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *name = strtok(buf, "."); name != NULL && o != NULL; name = strtok(NULL, "."))
        o = cJSON_GetObjectItem(cJSON_GetObjectItem(o, "properties"), name);
    return cJSON_GetObjectItem(o, "properties");
}

/* A number of the header: trace_float writes float32s raw, in their
 * shortest form. */
static double number(const cJSON *v) {
    return cJSON_IsRaw(v) ? strtod(v->valuestring, NULL) : v->valuedouble;
}

/* A model with every field set to a value in its range: the smallest whole
 * number, a float in range, true. */
/* Every field set: one config with every field but MLA's (mla false), or
 * one with MLA's and every field MLA's block admits (config_validate
 * refuses q/k/v biases, q/k norms, partial RoPE, a window and a soft-cap
 * with it). */
static Config every_field_set(bool mla) {
    Config c = {.dim = 64,
                .hidden_dim = 128,
                .n_layers = 4,
                .n_heads = 4,
                .n_kv_heads = 4, /* as many as the query heads: MLA's rule */
                .vocab_size = 32,
                .seq_len = 16};
    for (int i = 0; i < CONFIG_FIELD_COUNT; i++) {
        const ConfigField *f = &CONFIG_FIELD_LIST[i];
        if (f->group == CF_SHAPE) continue;
        double v = f->type == CF_TYPE_BOOL ? 1 : f->type == CF_TYPE_INT ? f->min : 0.5 * f->max;
        config_field_set(&c, f, v);
    }
    c.head_dim = 16, c.rope_dims = 8, c.n_experts = 4, c.n_experts_used = 2;
    if (mla) {
        c.qkv_bias = c.qk_norm = false;
        c.rope_dims = c.sliding_window = c.sliding_pattern = 0;
        c.attn_softcap = 0;
    } else {
        c.kv_lora_rank = c.qk_rope_head_dim = c.q_lora_rank = c.v_head_dim = 0;
    }
    return c;
}

Test(config_fields, every_shown_field_is_in_the_schema_with_its_type) {
    cJSON *schema = run_schema();
    cr_assert(schema != NULL);
    const cJSON *top = properties(schema, "model"), *arch = properties(schema, "model.arch");
    const cJSON *moe = properties(schema, "model.arch.moe");
    cr_assert(top && arch && moe, "run.schema.json has model, model.arch and model.arch.moe");
    for (int i = 0; i < CONFIG_FIELD_COUNT; i++) {
        const ConfigField *f = &CONFIG_FIELD_LIST[i];
        if (f->show == CF_NEVER) continue;
        const cJSON *where = f->group == CF_SHAPE ? top : f->group == CF_MOE ? moe : arch;
        const cJSON *p = cJSON_GetObjectItem(where, f->trace);
        cr_assert(p != NULL, "the schema lists %s (field %s)", f->trace, f->name);
        const char *type = cJSON_GetStringValue(cJSON_GetObjectItem(p, "type"));
        const char *want = f->type == CF_TYPE_BOOL  ? "boolean"
                           : f->type == CF_TYPE_INT ? "integer"
                                                    : "number";
        cr_expect(type != NULL && strcmp(type, want) == 0, "%s is a %s in the schema, not %s",
                  f->trace, want, type ? type : "(no type)");
    }
    cJSON_Delete(schema);
}

/* The schema's properties that are not fields: what the header derives. */
static bool derived(const char *name) {
    static const char *const names[] = {"head_dim",     "kv_dim",       "queries_per_kv_head",
                                        "params",       "weight_bytes", "attention",
                                        "arch",         "family",       "rope_layout",
                                        "norm",         "mlp",          "position",
                                        "moe",          "rope_scaling", "moe_layers",
                                        "active_params"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(names[i], name) == 0) return true;
    return false;
}

Test(config_fields, every_schema_property_is_a_field_or_derived) {
    cJSON *schema = run_schema();
    const char *paths[] = {"model", "model.arch", "model.arch.moe"};
    for (int k = 0; k < 3; k++) {
        const cJSON *p;
        cJSON_ArrayForEach(p, properties(schema, paths[k])) {
            bool field = false;
            for (int i = 0; i < CONFIG_FIELD_COUNT; i++)
                field |= strcmp(CONFIG_FIELD_LIST[i].trace, p->string) == 0;
            /* a run's choice a version 1 header held here (now run_options):
             * kept so that older traces still validate, and so marked */
            const char *note = cJSON_GetStringValue(cJSON_GetObjectItem(p, "description"));
            bool former = note != NULL && strncmp(note, "format_version 1 only", 21) == 0;
            cr_expect(field || derived(p->string) || former, "%s.%s is neither a field nor derived",
                      paths[k], p->string);
            cr_expect(!(field && former), "%s.%s: a field marked version 1's", paths[k], p->string);
        }
    }
    cJSON_Delete(schema);
}

/* The header of a model with every field set passes the schema (whose
 * arch and moe refuse properties they do not list) and shows every field
 * the table says it shows. */
static void header_passes_the_schema(Config c, int *shown);

Test(config_fields, a_header_with_every_field_passes_the_schema) {
    int shown[CONFIG_FIELD_COUNT] = {0};
    for (int mla = 0; mla < 2; mla++) header_passes_the_schema(every_field_set(mla), shown);
    for (int i = 0; i < CONFIG_FIELD_COUNT; i++) /* each field in one header or the other */
        cr_expect(CONFIG_FIELD_LIST[i].show == CF_NEVER || shown[i] > 0, "%s is shown",
                  CONFIG_FIELD_LIST[i].name);
}

/* c's header passes the schema and shows, as held, every field of c that
 * is set (or always shown); shown[i] counts the headers field i was in. */
static void header_passes_the_schema(Config c, int *shown) {
    StepError err;
    cr_assert(config_validate(&c, "every field", &err), "%s", err.message);
    cJSON *schema = run_schema(), *made = trace_config_json(&c);
    char *text = cJSON_PrintUnformatted(made); /* as a trace holds it: raw floats read back */
    cJSON *model = cJSON_Parse(text);
    free(text);
    cJSON_Delete(made);
    const cJSON *arch_schema = cJSON_GetObjectItem(
        cJSON_GetObjectItem(cJSON_GetObjectItem(schema, "properties"), "model"), "properties");
    arch_schema = cJSON_GetObjectItem(arch_schema, "arch");
    char msg[256];
    const cJSON *arch = cJSON_GetObjectItem(model, "arch");
    cr_assert(arch != NULL);
    cr_expect(schema_check(arch_schema, arch, msg, sizeof msg), "%s", msg);
    for (int i = 0; i < CONFIG_FIELD_COUNT; i++) {
        const ConfigField *f = &CONFIG_FIELD_LIST[i];
        if (f->show == CF_NEVER || (f->show != CF_ALWAYS && config_field_get(&c, f) == 0)) continue;
        shown[i]++;
        const cJSON *in = f->group == CF_SHAPE ? model
                          : f->group == CF_MOE ? cJSON_GetObjectItem(arch, "moe")
                                               : arch;
        const cJSON *v = cJSON_GetObjectItem(in, f->trace);
        cr_assert(v != NULL, "the header shows %s", f->trace);
        double want = config_field_effective(&c, f);
        double got = cJSON_IsBool(v) ? cJSON_IsTrue(v) : number(v);
        cr_expect(fabs(got - want) <= 1e-6 * fabs(want), "%s: %g in the header, %g held", f->trace,
                  got, want);
    }
    cJSON_Delete(model);
    cJSON_Delete(schema);
}

/* Gemma 2's numbers, by hand: the header shows the caps and the window,
 * the pattern with it, and no expert object. */
Test(config_fields, gemma2s_header_by_hand) {
    Config c = {.dim = 8,
                .hidden_dim = 16,
                .n_layers = 2,
                .n_heads = 2,
                .n_kv_heads = 1,
                .vocab_size = 10,
                .seq_len = 32,
                .attn_softcap = 50,
                .final_softcap = 30,
                .sliding_window = 4,
                .sliding_pattern = 2,
                .post_norms = true};
    cJSON *m = trace_config_json(&c);
    const cJSON *a = cJSON_GetObjectItem(m, "arch");
    cr_assert(a != NULL);
    cr_expect_eq(number(cJSON_GetObjectItem(a, "attn_softcap")), 50);
    cr_expect_eq(number(cJSON_GetObjectItem(a, "final_softcap")), 30);
    cr_expect_eq(cJSON_GetObjectItem(a, "sliding_window")->valuedouble, 4);
    cr_expect_eq(cJSON_GetObjectItem(a, "sliding_pattern")->valuedouble, 2);
    cr_expect_eq(number(cJSON_GetObjectItem(a, "rope_theta")), 10000); /* 0: 10000 */
    cr_expect(cJSON_IsFalse(cJSON_GetObjectItem(a, "qk_norm")));
    cr_expect(cJSON_GetObjectItem(a, "query_scale") == NULL, "0 is not shown");
    cr_expect(cJSON_GetObjectItem(a, "moe") == NULL);
    cr_expect_str_eq(cJSON_GetObjectItem(a, "family")->valuestring, "gemma2");
    cJSON_Delete(m);
    c.sliding_window = 0; /* the pattern goes with the window */
    m = trace_config_json(&c);
    cr_expect(cJSON_GetObjectItem(cJSON_GetObjectItem(m, "arch"), "sliding_pattern") == NULL);
    cJSON_Delete(m);
}

/* Each field past its range is refused, naming the field. */
Test(config_fields, validate_refuses_each_field_out_of_range) {
    for (int i = 0; i < CONFIG_FIELD_COUNT; i++) {
        const ConfigField *f = &CONFIG_FIELD_LIST[i];
        if (f->group == CF_SHAPE || f->type == CF_TYPE_BOOL) continue;
        double bad[] = {-1, f->max * 2 + 1, NAN};
        for (int k = 0; k < (f->type == CF_TYPE_FLOAT ? 3 : 2); k++) {
            Config c = every_field_set(false);
            if (f->type == CF_TYPE_INT && bad[k] > 2147483647.0) bad[k] = -5;
            config_field_set(&c, f, bad[k]);
            StepError err = {0};
            cr_expect(!config_validate(&c, "m", &err), "%s = %g refused", f->name, bad[k]);
            cr_expect(strstr(err.message, f->name) != NULL, "the message names %s: %s", f->name,
                      err.message);
        }
    }
}

/* llama2.c's architecture is every field but the shape 0, or what 0
 * stands for: rope_theta 10000 is, 10001 is not. */
Test(config_fields, llama2c_is_every_field_at_its_zero) {
    Config c = {.dim = 8,
                .hidden_dim = 16,
                .n_layers = 1,
                .n_heads = 2,
                .n_kv_heads = 2,
                .vocab_size = 10,
                .seq_len = 4};
    cr_expect(config_is_llama2c(&c));
    c.rope_theta = 10000, c.norm_eps = 1e-5f, c.head_dim = 4;
    cr_expect(config_is_llama2c(&c));
    for (int i = 0; i < CONFIG_FIELD_COUNT; i++) {
        const ConfigField *f = &CONFIG_FIELD_LIST[i];
        if (f->group == CF_SHAPE) continue;
        Config d = c;
        config_field_set(&d, f, f->type == CF_TYPE_BOOL ? 1 : f->max);
        cr_expect(!config_is_llama2c(&d), "%s set is not llama2.c's", f->name);
    }
}

/* Names, trace names and options are each used once. */
Test(config_fields, names_are_unique) {
    for (int i = 0; i < CONFIG_FIELD_COUNT; i++)
        for (int j = i + 1; j < CONFIG_FIELD_COUNT; j++) {
            const ConfigField *a = &CONFIG_FIELD_LIST[i], *b = &CONFIG_FIELD_LIST[j];
            cr_expect(strcmp(a->name, b->name) != 0 && a->offset != b->offset);
            cr_expect(strcmp(a->trace, b->trace) != 0, "%s twice", a->trace);
            cr_expect(a->option[0] == '\0' || strcmp(a->option, b->option) != 0, "--%s twice",
                      a->option);
        }
    /* a flag cannot say "not given" (make-model marks numbers only): none has an option */
    for (int i = 0; i < CONFIG_FIELD_COUNT; i++)
        cr_expect(CONFIG_FIELD_LIST[i].type != CF_TYPE_BOOL || CONFIG_FIELD_LIST[i].option[0] == 0,
                  "%s is a bool with an option", CONFIG_FIELD_LIST[i].name);
    cr_expect_str_eq(config_field_find("attn_softcap")->hf, "attn_logit_softcapping");
    cr_expect(config_field_find("no_such_field") == NULL);
    cr_expect(config_field_in_family(config_field_find("attn_softcap"), "gemma2"));
    cr_expect(!config_field_in_family(config_field_find("attn_softcap"), "gemma"));
    cr_expect(!config_field_in_family(config_field_find("attn_softcap"), "llama"));
    cr_expect(config_field_in_family(config_field_find("rope_theta"), "llama"));
}
