/* cli/presets.c: see presets.h. */
#include "ref/cli/presets.h"

#include <stdio.h>
#include <string.h>

static const ModelPreset PRESETS[] = {
    {.name = "smollm2-135m",
     .source = "HuggingFaceTB/SmolLM2-135M",
     .family = "llama",
     .config = {.dim = 576,
                .hidden_dim = 1536,
                .n_layers = 30,
                .n_heads = 9,
                .n_kv_heads = 3,
                .head_dim = 64,
                .vocab_size = 49152,
                .seq_len = 8192,
                .rope_theta = 100000.0f,
                .norm_eps = 1e-5f}},
    {.name = "qwen3-0.6b",
     .source = "Qwen/Qwen3-0.6B",
     .family = "qwen3",
     .config = {.dim = 1024,
                .hidden_dim = 3072,
                .n_layers = 28,
                .n_heads = 16,
                .n_kv_heads = 8,
                .head_dim = 128,
                .vocab_size = 151936,
                .seq_len = 40960,
                .rope_theta = 1000000.0f,
                .norm_eps = 1e-6f}},
    {.name = "llama-3.2-1b",
     .source = "meta-llama/Llama-3.2-1B",
     .family = "llama",
     .config = {.dim = 2048,
                .hidden_dim = 8192,
                .n_layers = 16,
                .n_heads = 32,
                .n_kv_heads = 8,
                .head_dim = 64,
                .vocab_size = 128256,
                .seq_len = 131072,
                .rope_theta = 500000.0f,
                .norm_eps = 1e-5f,
                .rope_scaling = {.type = ROPE_SCALING_LLAMA3,
                                 .factor = 32.0f,
                                 .low_freq_factor = 1.0f,
                                 .high_freq_factor = 4.0f,
                                 .original_context = 8192}}},
    {.name = "llama-3-8b",
     .source = "meta-llama/Meta-Llama-3-8B",
     .note = "16 GB in bf16",
     .family = "llama",
     .untied = true,
     .config = {.dim = 4096,
                .hidden_dim = 14336,
                .n_layers = 32,
                .n_heads = 32,
                .n_kv_heads = 8,
                .head_dim = 128,
                .vocab_size = 128256,
                .seq_len = 8192,
                .rope_theta = 500000.0f,
                .norm_eps = 1e-5f}},
    /* Llama 2: multi-head attention (as many KV heads as query heads), the
     * classic example of a cache's size: 0.5 MiB a token in fp16 at 7B */
    {.name = "llama-2-7b",
     .source = "meta-llama/Llama-2-7b-hf",
     .note = "MHA, 13 GB in bf16",
     .family = "llama",
     .untied = true,
     .config = {.dim = 4096,
                .hidden_dim = 11008,
                .n_layers = 32,
                .n_heads = 32,
                .n_kv_heads = 32,
                .head_dim = 128,
                .vocab_size = 32000,
                .seq_len = 4096,
                .rope_theta = 10000.0f,
                .norm_eps = 1e-5f}},
    {.name = "llama-2-13b",
     .source = "meta-llama/Llama-2-13b-hf",
     .note = "26 GB in bf16",
     .family = "llama",
     .untied = true,
     .config = {.dim = 5120,
                .hidden_dim = 13824,
                .n_layers = 40,
                .n_heads = 40,
                .n_kv_heads = 40,
                .head_dim = 128,
                .vocab_size = 32000,
                .seq_len = 4096,
                .rope_theta = 10000.0f,
                .norm_eps = 1e-5f}},
    {.name = "tinyllama-1.1b",
     .source = "TinyLlama/TinyLlama-1.1B-Chat-v1.0",
     .family = "llama",
     .untied = true,
     .config = {.dim = 2048,
                .hidden_dim = 5632,
                .n_layers = 22,
                .n_heads = 32,
                .n_kv_heads = 4,
                .head_dim = 64,
                .vocab_size = 32000,
                .seq_len = 2048,
                .rope_theta = 10000.0f,
                .norm_eps = 1e-5f}},
    {.name = "gpt2",
     .source = "openai-community/gpt2",
     .note = "124M",
     .family = "gpt2",
     .config = {.dim = 768,
                .hidden_dim = 3072,
                .n_layers = 12,
                .n_heads = 12,
                .n_kv_heads = 12,
                .head_dim = 64,
                .vocab_size = 50257,
                .seq_len = 1024,
                .norm_eps = 1e-5f}},
    {.name = "gpt2-medium",
     .source = "openai-community/gpt2-medium",
     .note = "355M",
     .family = "gpt2",
     .config = {.dim = 1024,
                .hidden_dim = 4096,
                .n_layers = 24,
                .n_heads = 16,
                .n_kv_heads = 16,
                .head_dim = 64,
                .vocab_size = 50257,
                .seq_len = 1024,
                .norm_eps = 1e-5f}},
    {.name = "phi-3-mini-4k",
     .source = "microsoft/Phi-3-mini-4k-instruct",
     .family = "phi3",
     .untied = true,
     .config = {.dim = 3072,
                .hidden_dim = 8192,
                .n_layers = 32,
                .n_heads = 32,
                .n_kv_heads = 32,
                .head_dim = 96,
                .vocab_size = 32064,
                .seq_len = 4096,
                .rope_theta = 10000.0f,
                .norm_eps = 1e-5f,
                .sliding_window = 2047}},
    {.name = "mixtral-8x7b",
     .source = "mistralai/Mixtral-8x7B-v0.1",
     .note = "93 GB in bf16",
     .family = "mixtral",
     .untied = true,
     .config = {.dim = 4096,
                .hidden_dim = 14336,
                .n_layers = 32,
                .n_heads = 32,
                .n_kv_heads = 8,
                .head_dim = 128,
                .vocab_size = 32000,
                .seq_len = 32768,
                .rope_theta = 1000000.0f,
                .norm_eps = 1e-5f,
                .n_experts = 8}}, /* each expert hidden_dim wide: the family's rule */
    {.name = "qwen3-30b-a3b",
     .source = "Qwen/Qwen3-30B-A3B",
     .note = "61 GB in bf16",
     .family = "qwen3moe",
     .untied = true,
     .config = {.dim = 2048,
                .hidden_dim = 6144,
                .n_layers = 48,
                .n_heads = 32,
                .n_kv_heads = 4,
                .head_dim = 128,
                .vocab_size = 151936,
                .seq_len = 40960,
                .rope_theta = 1000000.0f,
                .norm_eps = 1e-6f,
                .n_experts = 128,
                .n_experts_used = 8,
                .expert_hidden_dim = 768}},
    {.name = "gemma-2-2b",
     .source = "google/gemma-2-2b",
     .family = "gemma2",
     .config = {.dim = 2304,
                .hidden_dim = 9216,
                .n_layers = 26,
                .n_heads = 8,
                .n_kv_heads = 4,
                .head_dim = 256,
                .vocab_size = 256000,
                .seq_len = 8192,
                .rope_theta = 10000.0f,
                .norm_eps = 1e-6f,
                .query_scale = 256,
                .sliding_window = 4096}},
    {.name = "gemma-3-1b",
     .source = "google/gemma-3-1b-pt",
     .family = "gemma3",
     .config = {.dim = 1152,
                .hidden_dim = 6912,
                .n_layers = 26,
                .n_heads = 4,
                .n_kv_heads = 1,
                .head_dim = 256,
                .vocab_size = 262144,
                .seq_len = 32768,
                .rope_theta = 1000000.0f,
                .norm_eps = 1e-6f,
                .query_scale = 256,
                .sliding_window = 512}},
    /* DeepSeek-V2-Lite: multi-head latent attention (the query direct, no
     * q_lora_rank), 64 routed experts of which 6 a token and 2 shared ones,
     * the first layer dense, YaRN's RoPE (factor 40 over 4096; mscale and
     * mscale_all_dim 0.707, so cos and sin stay and the scores grow). */
    {.name = "deepseek-v2-lite",
     .source = "deepseek-ai/DeepSeek-V2-Lite",
     .family = "deepseek2",
     .untied = true,
     .config = {.dim = 2048,
                .hidden_dim = 10944,
                .n_layers = 27,
                .n_heads = 16,
                .n_kv_heads = 16,
                .head_dim = 192, /* qk_nope_head_dim 128 + qk_rope_head_dim 64 */
                .vocab_size = 102400,
                .seq_len = 163840,
                .rope_theta = 10000.0f,
                .norm_eps = 1e-6f,
                .kv_lora_rank = 512,
                .qk_rope_head_dim = 64,
                .v_head_dim = 128,
                .n_experts = 64,
                .n_experts_used = 6,
                .expert_hidden_dim = 1408,
                .n_shared_experts = 2,
                .routed_scaling_factor = 1.0f,
                .n_dense_layers = 1, /* first_k_dense_replace 1 */
                .dense_layers = {0},
                .rope_scaling = {.type = ROPE_SCALING_YARN,
                                 .factor = 40,
                                 .original_context = 4096,
                                 .beta_fast = 32,
                                 .beta_slow = 1,
                                 .mscale = 0.707f,
                                 .mscale_all_dim = 0.707f,
                                 .attention_factor = 1}}},
};
#define N_PRESETS (int)(sizeof PRESETS / sizeof PRESETS[0])

void model_presets_text(char *buf, size_t size, bool sources) {
    size_t at = 0;
    buf[0] = '\0';
    for (int i = 0; i < N_PRESETS && at < size; i++) {
        const ModelPreset *p = &PRESETS[i];
        const char *sep = i == 0 ? "" : !sources || i < N_PRESETS - 1 ? ", " : " or ";
        if (sources)
            at += (size_t)snprintf(buf + at, size - at, "%s%s (%s%s%s)", sep, p->name, p->source,
                                   p->note ? "; " : "", p->note ? p->note : "");
        else
            at += (size_t)snprintf(buf + at, size - at, "%s%s", sep, p->name);
    }
}

const ModelPreset *model_preset_find(const char *name, StepError *err) {
    for (int i = 0; i < N_PRESETS; i++)
        if (strcmp(PRESETS[i].name, name) == 0) return &PRESETS[i];
    char names[512];
    model_presets_text(names, sizeof names, false);
    step_fail(err, "unknown --preset '%.64s' (%s)", name, names);
    return NULL;
}

bool model_field_marked(const ConfigField *f) {
    return f->group != CF_SHAPE && f->type != CF_TYPE_BOOL;
}

void model_fields_mark(Config *c) {
    for (int i = 0; i < CONFIG_FIELD_COUNT; i++)
        if (model_field_marked(&CONFIG_FIELD_LIST[i]))
            config_field_set(c, &CONFIG_FIELD_LIST[i], -1);
}

bool model_field_given(const Config *c, const ConfigField *f) {
    double v = config_field_get(c, f);
    return model_field_marked(f) ? v >= 0 : f->group == CF_SHAPE && v != 0;
}

void model_fields_settle(Config *c) {
    for (int i = 0; i < CONFIG_FIELD_COUNT; i++)
        if (model_field_marked(&CONFIG_FIELD_LIST[i]) &&
            config_field_get(c, &CONFIG_FIELD_LIST[i]) < 0)
            config_field_set(c, &CONFIG_FIELD_LIST[i], 0);
}

/* Whether the preset's field is set (its family's default is for the rest). */
static bool preset_sets(const Config *c, const ConfigField *f) {
    return config_field_get(c, f) != 0;
}

void model_preset_apply(const ModelPreset *p, Config *c, bool *untied) {
    Config base = p->config; /* with its family's defaults where it says nothing */
    family_defaults_apply(family_find(p->family), FAMILY_IN_MAKE, &base, preset_sets);
    for (int i = 0; i < CONFIG_FIELD_COUNT; i++) {
        const ConfigField *f = &CONFIG_FIELD_LIST[i];
        if ((f->group == CF_SHAPE || model_field_marked(f)) && !model_field_given(c, f))
            config_field_set(c, f, config_field_get(&base, f));
        else if (f->type == CF_TYPE_BOOL && config_field_get(&base, f) != 0)
            config_field_set(c, f, 1); /* a flag the preset sets (its experts renormalised) */
    }
    c->rope_scaling = p->config.rope_scaling;
    if (c->n_dense_layers == 0) { /* the preset's dense layers (DeepSeek's first ones) */
        c->n_dense_layers = p->config.n_dense_layers;
        memcpy(c->dense_layers, p->config.dense_layers, sizeof c->dense_layers);
    }
    *untied = *untied || p->untied;
}
