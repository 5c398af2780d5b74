/* cli/presets.c: see presets.h. */
#include "presets.h"

#include <string.h>

static const ModelPreset PRESETS[] = {
    {.name = "smollm2-135m",
     .source = "HuggingFaceTB/SmolLM2-135M",
     .arch = HF_LLAMA,
     .dim = 576,
     .hidden = 1536,
     .layers = 30,
     .heads = 9,
     .kv_heads = 3,
     .head_dim = 64,
     .vocab = 49152,
     .seq_len = 8192,
     .rope_theta = 100000.0f,
     .norm_eps = 1e-5f},
    {.name = "qwen3-0.6b",
     .source = "Qwen/Qwen3-0.6B",
     .arch = HF_QWEN3,
     .dim = 1024,
     .hidden = 3072,
     .layers = 28,
     .heads = 16,
     .kv_heads = 8,
     .head_dim = 128,
     .vocab = 151936,
     .seq_len = 40960,
     .rope_theta = 1000000.0f,
     .norm_eps = 1e-6f},
    {.name = "llama-3.2-1b",
     .source = "meta-llama/Llama-3.2-1B",
     .arch = HF_LLAMA,
     .dim = 2048,
     .hidden = 8192,
     .layers = 16,
     .heads = 32,
     .kv_heads = 8,
     .head_dim = 64,
     .vocab = 128256,
     .seq_len = 131072,
     .rope_theta = 500000.0f,
     .norm_eps = 1e-5f,
     .scaling = {.type = ROPE_SCALING_LLAMA3,
                 .factor = 32.0f,
                 .low_freq_factor = 1.0f,
                 .high_freq_factor = 4.0f,
                 .original_context = 8192}},
    {.name = "llama-3-8b",
     .source = "meta-llama/Meta-Llama-3-8B",
     .arch = HF_LLAMA,
     .dim = 4096,
     .hidden = 14336,
     .layers = 32,
     .heads = 32,
     .kv_heads = 8,
     .head_dim = 128,
     .vocab = 128256,
     .seq_len = 8192,
     .rope_theta = 500000.0f,
     .norm_eps = 1e-5f,
     .untied = true},
    {.name = "tinyllama-1.1b",
     .source = "TinyLlama/TinyLlama-1.1B-Chat-v1.0",
     .arch = HF_LLAMA,
     .dim = 2048,
     .hidden = 5632,
     .layers = 22,
     .heads = 32,
     .kv_heads = 4,
     .head_dim = 64,
     .vocab = 32000,
     .seq_len = 2048,
     .rope_theta = 10000.0f,
     .norm_eps = 1e-5f,
     .untied = true},
    {.name = "gpt2",
     .source = "openai-community/gpt2",
     .arch = HF_GPT2,
     .dim = 768,
     .hidden = 3072,
     .layers = 12,
     .heads = 12,
     .kv_heads = 12,
     .head_dim = 64,
     .vocab = 50257,
     .seq_len = 1024,
     .norm_eps = 1e-5f},
    {.name = "gpt2-medium",
     .source = "openai-community/gpt2-medium",
     .arch = HF_GPT2,
     .dim = 1024,
     .hidden = 4096,
     .layers = 24,
     .heads = 16,
     .kv_heads = 16,
     .head_dim = 64,
     .vocab = 50257,
     .seq_len = 1024,
     .norm_eps = 1e-5f},
    {.name = "gemma-2-2b",
     .source = "google/gemma-2-2b",
     .arch = HF_GEMMA2,
     .dim = 2304,
     .hidden = 9216,
     .layers = 26,
     .heads = 8,
     .kv_heads = 4,
     .head_dim = 256,
     .vocab = 256000,
     .seq_len = 8192,
     .rope_theta = 10000.0f,
     .norm_eps = 1e-6f,
     .query_scale = 256,
     .attn_softcap = 50,
     .final_softcap = 30,
     .sliding_window = 4096,
     .sliding_pattern = 2},
    {.name = "gemma-3-1b",
     .source = "google/gemma-3-1b-pt",
     .arch = HF_GEMMA3,
     .dim = 1152,
     .hidden = 6912,
     .layers = 26,
     .heads = 4,
     .kv_heads = 1,
     .head_dim = 256,
     .vocab = 262144,
     .seq_len = 32768,
     .rope_theta = 1000000.0f,
     .norm_eps = 1e-6f,
     .query_scale = 256,
     .sliding_window = 512,
     .sliding_pattern = 6,
     .rope_local_theta = 10000.0f},
};
#define N_PRESETS (int)(sizeof PRESETS / sizeof PRESETS[0])

const ModelPreset *model_preset_find(const char *name, StepError *err) {
    for (int i = 0; i < N_PRESETS; i++)
        if (strcmp(PRESETS[i].name, name) == 0) return &PRESETS[i];
    step_fail(err,
              "unknown --preset '%.64s' (smollm2-135m, qwen3-0.6b, llama-3.2-1b, "
              "llama-3-8b, tinyllama-1.1b, gpt2, gpt2-medium, gemma-2-2b, gemma-3-1b)",
              name);
    return NULL;
}

void model_preset_apply(const ModelPreset *p, Config *c, bool *untied) {
    int *fields[] = {&c->dim,        &c->hidden_dim, &c->n_layers,   &c->n_heads,
                     &c->n_kv_heads, &c->head_dim,   &c->vocab_size, &c->seq_len};
    int values[] = {p->dim,      p->hidden,   p->layers, p->heads,
                    p->kv_heads, p->head_dim, p->vocab,  p->seq_len};
    for (int i = 0; i < 8; i++)
        if (*fields[i] == 0) *fields[i] = values[i];
    if (c->rope_theta == 0) c->rope_theta = p->rope_theta;
    c->norm_eps = p->norm_eps;
    c->rope_scaling = p->scaling;
    *untied = *untied || p->untied;
    float *numbers[] = {&c->query_scale, &c->attn_softcap, &c->final_softcap, &c->rope_local_theta};
    float preset[] = {p->query_scale, p->attn_softcap, p->final_softcap, p->rope_local_theta};
    bool gemma = p->arch == HF_GEMMA2 || p->arch == HF_GEMMA3;
    for (int i = 0; gemma && i < 4; i++)
        if (*numbers[i] < 0) *numbers[i] = preset[i];
    if (gemma && c->sliding_window < 0) c->sliding_window = p->sliding_window;
    if (gemma && c->sliding_pattern < 0) c->sliding_pattern = p->sliding_pattern;
}
