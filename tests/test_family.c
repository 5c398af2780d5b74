/* test_family.c: the family table (ref/family.h): every row complete and
 * self-consistent, each name found back at its row and no other name
 * found, the defaults as the families' own sources give them, and convert
 * refusing a field llama.cpp's architecture would ignore. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "ref/family.h"
#include "ref/formats/gguf_convert.h"
#include "ref/formats/gguf_model.h"
#include "ref/formats/hf_config.h"
#include "ref/model/model.h"
#include "tests/helpers.h"

/* Every row has its four names, a default list of known fields each in
 * its field's range, and a llama.cpp field list exactly on the row that
 * first writes its GGUF name, of known fields. */
Test(family, every_row_is_complete) {
    cr_assert_gt(FAMILY_COUNT, 0);
    for (int i = 0; i < FAMILY_COUNT; i++) {
        const Family *f = &FAMILY_LIST[i];
        cr_assert(f->name != NULL && f->name[0] != '\0', "row %d has no name", i);
        cr_assert(f->hf_class != NULL && f->hf_class[0] != '\0', "%s: no class", f->name);
        cr_assert(f->hf_model_type != NULL && f->hf_model_type[0] != '\0', "%s", f->name);
        cr_assert(f->gguf != NULL && f->gguf[0] != '\0', "%s: no GGUF name", f->name);
        int n = 0;
        for (const FamilyDefault *d = f->defaults; d->field != NULL; d++, n++) {
            const ConfigField *field = config_field_find(d->field);
            cr_assert(field != NULL, "%s: default of unknown field %s", f->name, d->field);
            cr_expect(field->group != CF_SHAPE, "%s: %s is the shape's", f->name, d->field);
            cr_expect(d->value >= field->min && d->value <= field->max, "%s: %s = %g", f->name,
                      d->field, d->value);
            cr_expect(d->where != 0 && (d->where & ~FAMILY_IN_ALL) == 0, "%s: %s holds nowhere",
                      f->name, d->field);
        }
        cr_assert_lt(n, FAMILY_MAX_DEFAULTS, "%s: the defaults need their NULL end", f->name);
        bool reader = family_from_gguf(f->gguf) == f;
        cr_expect((f->llama_cpp_fields != NULL) == reader,
                  "%s: the llama.cpp fields belong on the first row writing %s", f->name, f->gguf);
        for (const char *p = f->llama_cpp_fields; p != NULL && *p != '\0';) {
            char name[64];
            size_t len = strcspn(p, " ");
            snprintf(name, sizeof name, "%.*s", (int)len, p);
            cr_expect(config_field_find(name) != NULL, "%s: llama.cpp reads unknown %s", f->name,
                      name);
            p += len + (p[len] == ' ');
        }
    }
}

/* parse(name(f)) == f, for each of its names; no two rows share a name,
 * class or model_type; the GGUF name leads to a row that writes it. */
Test(family, each_name_maps_back_to_its_row) {
    for (int i = 0; i < FAMILY_COUNT; i++) {
        const Family *f = &FAMILY_LIST[i];
        cr_expect_eq(family_find(f->name), f, "%s", f->name);
        cr_expect_eq(family_from_hf_class(f->hf_class), f, "%s", f->hf_class);
        const Family *g = family_from_gguf(f->gguf);
        cr_assert(g != NULL, "%s: GGUF %s has no reader", f->name, f->gguf);
        cr_expect_str_eq(g->gguf, f->gguf);
        for (int j = 0; j < i; j++)
            cr_expect(strcmp(FAMILY_LIST[j].hf_model_type, f->hf_model_type) != 0, "%s twice",
                      f->hf_model_type);
    }
    /* llama.cpp writes Mistral and Mixtral as llama: the llama row reads them */
    cr_expect_eq(family_from_gguf("llama"), family_find("llama"));
    cr_expect_str_eq(family_find("mixtral")->gguf, "llama");
    cr_expect_str_eq(family_find("gemma3")->hf_model_type, "gemma3_text");
}

Test(family, unknown_names_are_refused) {
    const char *bad[] = {"", "Llama", "llama ", "llama2", "gemma", "LlamaForCausalLM"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        cr_expect_null(family_find(bad[i]), "'%s' found", bad[i]);
    cr_expect_null(family_find(NULL));
    cr_expect_null(family_from_hf_class("llama"));
    cr_expect_null(family_from_hf_class("LlamaForCausalLm"));
    cr_expect_null(family_from_hf_class(NULL));
    cr_expect_null(family_from_gguf("mistral")); /* llama.cpp has no mistral: it is llama */
    cr_expect_null(family_from_gguf("mixtral"));
    cr_expect_null(family_from_gguf(NULL));
}

/* A small model of family f, its traits applied (and what a mixture or
 * MLA needs beside them). */
static Config small(const Family *f) {
    Config c = {.dim = 32,
                .hidden_dim = 48,
                .n_layers = 3,
                .n_heads = 4,
                .n_kv_heads = 4,
                .vocab_size = 61,
                .seq_len = 16};
    if (f->routing != FAMILY_ROUTING_NONE) c.n_experts = 4, c.n_experts_used = 2;
    if (f->attention == FAMILY_ATTENTION_MLA)
        c.head_dim = 12, c.kv_lora_rank = 8, c.qk_rope_head_dim = 4, c.v_head_dim = 8;
    family_apply(f, &c);
    return c;
}

/* A row's traits make a Config whose family (config_family, which reads
 * the fields alone) writes the row's GGUF architecture, and whose block
 * is the row's. */
Test(family, traits_make_their_family) {
    for (int i = 0; i < FAMILY_COUNT; i++) {
        const Family *f = &FAMILY_LIST[i];
        Config c = small(f);
        const Family *back = family_of_config(&c);
        cr_assert(back != NULL, "%s: config_family %s is no row", f->name, config_family(&c));
        cr_expect_str_eq(back->gguf, f->gguf, "%s's fields make %s", f->name, back->name);
        cr_expect(family_block_matches(back, &c), "%s", f->name);
        cr_expect(family_block_matches(f, &c), "%s", f->name);
    }
}

/* Gemma 2's soft-caps, 50 on the scores and 30 on the logits, wherever a
 * file or option leaves them out: Gemma2Config's attn_logit_softcapping
 * 50.0 and final_logit_softcapping 30.0, and llama.cpp's gemma2 loader's
 * same defaults; Gemma 3's config class caps neither. */
Test(family, gemma2_soft_caps_in_every_context) {
    const int where[] = {FAMILY_IN_MAKE, FAMILY_IN_HF, FAMILY_IN_GGUF};
    for (int i = 0; i < 3; i++) {
        Config c = {0};
        family_defaults_apply(family_find("gemma2"), where[i], &c, NULL);
        cr_expect_float_eq(c.attn_softcap, 50.0f, 0, "context %d", where[i]);
        cr_expect_float_eq(c.final_softcap, 30.0f, 0, "context %d", where[i]);
        Config d = {0};
        family_defaults_apply(family_find("gemma3"), where[i], &d, NULL);
        cr_expect(d.attn_softcap == 0 && d.final_softcap == 0);
    }
    /* DeepseekV2Config's q_lora_rank 1536 holds for a config.json alone */
    Config c = {0};
    family_defaults_apply(family_find("deepseek2"), FAMILY_IN_MAKE, &c, NULL);
    cr_expect_eq(c.q_lora_rank, 0);
    family_defaults_apply(family_find("deepseek2"), FAMILY_IN_HF, &c, NULL);
    cr_expect_eq(c.q_lora_rank, 1536);
}

/* llama.cpp's llama reads no shared experts (only its deepseek2 does): a
 * Mixtral-like model with one would be written as a llama file that
 * llama.cpp runs without it. convert refuses it by name and writes
 * nothing. */
Test(family, convert_refuses_a_field_llama_cpp_ignores) {
    Config c = small(family_find("mixtral"));
    c.n_shared_experts = 1;
    const ConfigField *ignored = family_llama_cpp_ignored(family_find("mixtral"), &c);
    cr_assert(ignored != NULL);
    cr_expect_str_eq(ignored->name, "n_shared_experts");
    Model m;
    StepError err;
    cr_assert(model_init_random(&m, &c, 7, &err), "%s", err.message);
    const char *path = temp_path("family-shared.gguf");
    remove(path);
    GgufSaveReport r;
    cr_expect_not(gguf_model_save(&m, NULL, GGUF_OUT_F32, "t", path, &r, &err));
    cr_expect(strstr(err.message, "llama.cpp's llama ignores n_shared_experts") != NULL, "%s",
              err.message);
    struct stat st;
    cr_expect_neq(stat(path, &st), 0, "nothing is written");
    model_free(&m);
    /* the same model without it is written */
    c.n_shared_experts = 0;
    cr_expect_null(family_llama_cpp_ignored(family_find("mixtral"), &c));
    /* Gemma 2's block reads its soft-caps; a local RoPE base only Gemma 3's */
    Config g = small(family_find("gemma2"));
    family_defaults_apply(family_find("gemma2"), FAMILY_IN_ALL, &g, NULL);
    cr_expect_null(family_llama_cpp_ignored(family_find("gemma2"), &g));
    g.rope_local_theta = 10000;
    cr_expect_str_eq(family_llama_cpp_ignored(family_find("gemma2"), &g)->name, "rope_local_theta");
}

/* llama.cpp's gemma2 and gemma3 loaders take a 27B model by its layer
 * count (llama-model.cpp: gemma2's case 46, gemma3's case 62: LLM_TYPE_27B)
 * and scale its scores by 1/√(n_embd / n_head), every other shape's by
 * 1/√head_dim. A model of dim 32 and 4 heads of width 16: at 46 (62)
 * layers llama.cpp's query_pre_attn_scalar is 32 / 4 = 8, so convert
 * writes the model whose scale is 8 and the file reads back as 8; one
 * layer fewer, llama.cpp's is 16, and convert refuses the 8. */
Test(family, llama_cpp_scales_a_gemma_27b_by_dim_over_heads) {
    const struct {
        const char *family;
        int layers;
    } cases[] = {{"gemma2", 46}, {"gemma3", 62}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (int fewer = 0; fewer <= 1; fewer++) {
            const Family *f = family_find(cases[i].family);
            Config c = small(f);
            c.n_layers = cases[i].layers - fewer;
            c.head_dim = 16;
            c.query_scale = 8;
            family_defaults_apply(f, FAMILY_IN_MAKE, &c, NULL);
            Model m;
            StepError err;
            cr_assert(model_init_random(&m, &c, 7, &err), "%s", err.message);
            const char *path = temp_path("family-27b.gguf");
            remove(path);
            GgufSaveReport r;
            bool saved = gguf_model_save(&m, NULL, GGUF_OUT_F32, "t", path, &r, &err);
            model_free(&m);
            cr_expect_eq(saved, !fewer, "%s, %d layers, scale 8: %s", f->name, c.n_layers,
                         saved ? "written" : err.message);
            if (!saved) {
                cr_expect(strstr(err.message, "query_pre_attn_scalar 16") != NULL, "%s",
                          err.message);
                continue;
            }
            Model back;
            GgufLoadReport lr;
            cr_assert(gguf_model_load(&back, NULL, path, WEIGHTS_F32, NULL, &lr, &err), "%s",
                      err.message);
            cr_expect_float_eq(config_query_scale(&back.config), 8.0f, 0, "%s read back: %g",
                               f->name, (double)config_query_scale(&back.config));
            model_free(&back);
            remove(path);
        }
}

/* A config.json that leaves norm_topk_prob out keeps its class's default:
 * Qwen3MoeConfig's norm_topk_prob=False (the k weights not renormalised);
 * MixtralConfig has no such key and always renormalises. */
Test(family, a_config_json_without_norm_topk_prob_keeps_its_class_default) {
    const struct {
        const char *cls, *extra;
        bool norm;
    } cases[] = {
        {"Qwen3MoeForCausalLM", "\"num_experts\": 4, \"moe_intermediate_size\": 8", false},
        {"MixtralForCausalLM", "\"num_local_experts\": 4", true},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[1024], arch[64];
        snprintf(text, sizeof text,
                 "{\"architectures\": [\"%s\"], \"hidden_size\": 32, \"intermediate_size\": 48, "
                 "\"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"vocab_size\": 61, "
                 "\"max_position_embeddings\": 16, \"num_experts_per_tok\": 2, %s}",
                 cases[i].cls, cases[i].extra);
        Config c;
        StepError err;
        cr_assert(hf_config_parse(text, "config.json", &c, arch, sizeof arch, &err), "%s: %s",
                  cases[i].cls, err.message);
        cr_expect_eq(c.n_experts, 4, "%s", cases[i].cls);
        cr_expect_eq(c.expert_norm_topk, cases[i].norm, "%s: norm_topk %d", cases[i].cls,
                     (int)c.expert_norm_topk);
    }
}

/* A block no row has, in the traits no field says (the MLP, the norm):
 * Llama's fields with GeGLU's MLP, GPT-2's with RMSNorm. config_family
 * names llama and gpt2 from the fields alone, and llama.cpp's llama runs
 * SwiGLU, its gpt2 LayerNorm: convert refuses each, naming the mix, and
 * writes nothing. */
Test(family, convert_refuses_a_block_no_family_has) {
    Config llama = small(family_find("llama")), gpt2 = small(family_find("gpt2"));
    llama.mlp = MLP_GEGLU;
    gpt2.norm = NORM_RMS;
    const Config *cases[] = {&llama, &gpt2};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        Model m;
        StepError err;
        cr_assert(model_init_random(&m, cases[i], 7, &err), "%s", err.message);
        const char *path = temp_path("family-mix.gguf");
        remove(path);
        GgufSaveReport r;
        cr_expect_not(gguf_model_save(&m, NULL, GGUF_OUT_F32, "t", path, &r, &err), "case %zu", i);
        cr_expect(strstr(err.message, "no GGUF architecture has this model's mix") != NULL,
                  "case %zu: %s", i, err.message);
        struct stat st;
        cr_expect_neq(stat(path, &st), 0, "case %zu: nothing is written", i);
        model_free(&m);
    }
}
