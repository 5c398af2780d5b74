/* family.c: see family.h. */
#include "ref/family.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* The fields of llama.cpp's architectures beyond the shape: the RoPE and
 * norm numbers every RoPE family reads (a window the writer turns into a
 * capped context), then each one's own. */
#define ROPE_FIELDS    "head_dim rope_theta rope_dims norm_eps sliding_window"
#define EXPERTS_FIELDS "n_experts n_experts_used expert_hidden_dim expert_norm_topk moe_step"
#define GEMMA_FIELDS                                                                               \
    ROPE_FIELDS " query_scale final_softcap sliding_pattern norm_plus_one post_norms embed_scale"

const Family FAMILY_LIST[] = {
    {.name = "llama",
     .hf_class = "LlamaForCausalLM",
     .hf_model_type = "llama",
     .gguf = "llama",
     .expert_width = FAMILY_EXPERTS_HIDDEN, /* llama.cpp's llama with experts: Mixtral's */
     .gguf_rope = ROPE_INTERLEAVED,
     .llama_cpp_fields = ROPE_FIELDS " " EXPERTS_FIELDS},
    {.name = "mistral",
     .hf_class = "MistralForCausalLM",
     .hf_model_type = "mistral",
     .gguf = "llama",
     .window = FAMILY_WINDOW_EVERY_LAYER,
     .gguf_rope = ROPE_INTERLEAVED},
    {.name = "qwen2",
     .summary = "q/k/v biases",
     .hf_class = "Qwen2ForCausalLM",
     .hf_model_type = "qwen2",
     .gguf = "qwen2",
     .window = FAMILY_WINDOW_CAPS_CONTEXT,
     .gguf_rope = ROPE_HALVES,
     .qkv_bias = true,
     .llama_cpp_fields = ROPE_FIELDS " qkv_bias"},
    {.name = "qwen3",
     .summary = "q/k norms",
     .hf_class = "Qwen3ForCausalLM",
     .hf_model_type = "qwen3",
     .gguf = "qwen3",
     .gguf_rope = ROPE_HALVES,
     .qk_norm = true,
     .llama_cpp_fields = ROPE_FIELDS " qk_norm"},
    {.name = "gpt2",
     .summary = "LayerNorm, GELU MLP, learned positions, biases: GPT2LMHeadModel's Conv1D tensors",
     .hf_class = "GPT2LMHeadModel",
     .hf_model_type = "gpt2",
     .gguf = "gpt2",
     .norm = NORM_LAYER,
     .mlp = MLP_GELU,
     .position = POS_LEARNED,
     .gguf_rope = ROPE_HALVES,
     .qkv_bias = true,
     .proj_bias = true,
     .all_kv_heads = true,
     .llama_cpp_fields = "head_dim norm_eps qkv_bias proj_bias"},
    {.name = "phi3",
     .summary = "Llama's block, q/k/v and gate/up fused in the files",
     .hf_class = "Phi3ForCausalLM",
     .hf_model_type = "phi3",
     .gguf = "phi3",
     .window = FAMILY_WINDOW_EVERY_LAYER,
     .gguf_rope = ROPE_HALVES,
     .fused_files = true,
     .llama_cpp_fields = ROPE_FIELDS " fused_files"},
    /* Gemma 2's config class and llama.cpp both soft-cap at 50 and 30 */
    {.name = "gemma2",
     .hf_class = "Gemma2ForCausalLM",
     .hf_model_type = "gemma2",
     .gguf = "gemma2",
     .mlp = MLP_GEGLU,
     .window = FAMILY_WINDOW_PATTERN,
     .gguf_rope = ROPE_HALVES,
     .post_norms = true,
     .norm_plus_one = true,
     .embed_sqrt_dim = true,
     .tied = true,
     .gguf_scale_layers = 46,
     .defaults = {{"attn_softcap", 50, FAMILY_IN_ALL},
                  {"final_softcap", 30, FAMILY_IN_ALL},
                  {"sliding_pattern", 2, FAMILY_IN_ALL},
                  {"query_scale", 256, FAMILY_IN_HF},
                  {"sliding_window", 4096, FAMILY_IN_HF},
                  {"head_dim", 256, FAMILY_IN_HF},
                  {"norm_eps", 1e-6, FAMILY_IN_HF},
                  {"rope_theta", 1e4, FAMILY_IN_HF}},
     .llama_cpp_fields = GEMMA_FIELDS " attn_softcap"},
    /* Gemma 3: five sliding layers in six, turned at a base of their own */
    {.name = "gemma3",
     .hf_class = "Gemma3ForCausalLM",
     .hf_model_type = "gemma3_text",
     .gguf = "gemma3",
     .mlp = MLP_GEGLU,
     .window = FAMILY_WINDOW_PATTERN,
     .gguf_rope = ROPE_HALVES,
     .qk_norm = true,
     .post_norms = true,
     .norm_plus_one = true,
     .embed_sqrt_dim = true,
     .tied = true,
     .gguf_scale_layers = 62,
     .defaults = {{"sliding_pattern", 6, FAMILY_IN_ALL},
                  {"rope_local_theta", 1e4, FAMILY_IN_MAKE | FAMILY_IN_HF},
                  {"query_scale", 256, FAMILY_IN_HF},
                  {"sliding_window", 4096, FAMILY_IN_HF},
                  {"head_dim", 256, FAMILY_IN_HF},
                  {"norm_eps", 1e-6, FAMILY_IN_HF},
                  {"rope_theta", 1e6, FAMILY_IN_HF}},
     .llama_cpp_fields = GEMMA_FIELDS " qk_norm rope_local_theta"},
    {.name = "mixtral",
     .hf_class = "MixtralForCausalLM",
     .hf_model_type = "mixtral",
     .gguf = "llama",
     .routing = FAMILY_ROUTING_MIXTRAL,
     .expert_width = FAMILY_EXPERTS_HIDDEN,
     .window = FAMILY_WINDOW_EVERY_LAYER,
     .gguf_rope = ROPE_INTERLEAVED,
     .defaults = {{"n_experts_used", 2, FAMILY_IN_MAKE},
                  {"moe_step", 1, FAMILY_IN_MAKE | FAMILY_IN_HF},
                  {"expert_norm_topk", 1, FAMILY_IN_MAKE | FAMILY_IN_HF}}},
    {.name = "qwen3moe",
     .hf_class = "Qwen3MoeForCausalLM",
     .hf_model_type = "qwen3_moe",
     .gguf = "qwen3moe",
     .routing = FAMILY_ROUTING_QWEN3MOE,
     .expert_width = FAMILY_EXPERTS_HIDDEN_UNLESS_GIVEN,
     .gguf_rope = ROPE_HALVES,
     .qk_norm = true,
     .defaults = {{"n_experts_used", 2, FAMILY_IN_MAKE},
                  {"moe_step", 1, FAMILY_IN_MAKE | FAMILY_IN_HF},
                  {"expert_norm_topk", 1, FAMILY_IN_MAKE}},
     .llama_cpp_fields = ROPE_FIELDS " qk_norm " EXPERTS_FIELDS},
    /* DeepseekV2Config's defaults; moe_layer_freq 1: every layer past the dense ones */
    {.name = "deepseek2",
     .summary = "multi-head latent attention: --head-dim, --kv-lora-rank and --qk-rope-dim; "
                "experts optional",
     .hf_class = "DeepseekV2ForCausalLM",
     .hf_model_type = "deepseek_v2",
     .gguf = "deepseek2",
     .attention = FAMILY_ATTENTION_MLA,
     .routing = FAMILY_ROUTING_DEEPSEEK2,
     .gguf_rope = ROPE_INTERLEAVED,
     .defaults = {{"n_experts_used", 2, FAMILY_IN_MAKE},
                  {"moe_step", 1, FAMILY_IN_MAKE | FAMILY_IN_HF},
                  {"norm_eps", 1e-6, FAMILY_IN_HF},
                  {"kv_lora_rank", 512, FAMILY_IN_HF},
                  {"q_lora_rank", 1536, FAMILY_IN_HF},
                  {"qk_rope_head_dim", 64, FAMILY_IN_HF},
                  {"v_head_dim", 128, FAMILY_IN_HF},
                  {"expert_hidden_dim", 1407, FAMILY_IN_HF}},
     .llama_cpp_fields = ROPE_FIELDS
     " " EXPERTS_FIELDS " kv_lora_rank qk_rope_head_dim q_lora_rank v_head_dim n_shared_experts "
     "routed_scaling_factor"},
};

const int FAMILY_COUNT = (int)(sizeof FAMILY_LIST / sizeof FAMILY_LIST[0]);

const Family *family_find(const char *name) {
    for (int i = 0; name != NULL && i < FAMILY_COUNT; i++)
        if (strcmp(FAMILY_LIST[i].name, name) == 0) return &FAMILY_LIST[i];
    return NULL;
}

const Family *family_from_hf_class(const char *name) {
    for (int i = 0; name != NULL && i < FAMILY_COUNT; i++)
        if (strcmp(FAMILY_LIST[i].hf_class, name) == 0) return &FAMILY_LIST[i];
    return NULL;
}

const Family *family_from_gguf(const char *name) {
    for (int i = 0; name != NULL && i < FAMILY_COUNT; i++)
        if (strcmp(FAMILY_LIST[i].gguf, name) == 0) return &FAMILY_LIST[i];
    return NULL;
}

const Family *family_of_config(const Config *c) {
    return family_find(config_family(c));
}

/* Whether row i is the first to write its GGUF architecture name. */
static bool first_gguf(int i) {
    return family_from_gguf(FAMILY_LIST[i].gguf) == &FAMILY_LIST[i];
}

void family_names_text(char *buf, size_t size, bool summaries, const Family *marked) {
    size_t at = 0;
    buf[0] = '\0';
    for (int i = 0; i < FAMILY_COUNT && at < size; i++) {
        const Family *f = &FAMILY_LIST[i];
        const char *summary = !summaries ? NULL : f == marked ? "default" : f->summary;
        at += (size_t)snprintf(buf + at, size - at, "%s%s%s%s%s",
                               i == 0                  ? ""
                               : i == FAMILY_COUNT - 1 ? " or "
                                                       : ", ",
                               f->name, summary ? " (" : "", summary ? summary : "",
                               summary ? ")" : "");
    }
}

void family_classes_text(char *buf, size_t size) {
    size_t at = 0;
    buf[0] = '\0';
    for (int i = 0; i < FAMILY_COUNT && at < size; i++)
        at += (size_t)snprintf(buf + at, size - at, "%s%s", i == 0 ? "" : ", ",
                               FAMILY_LIST[i].hf_class);
}

void family_gguf_text(char *buf, size_t size) {
    size_t at = 0;
    buf[0] = '\0';
    for (int i = 0; i < FAMILY_COUNT && at < size; i++)
        if (first_gguf(i))
            at += (size_t)snprintf(buf + at, size - at, "%s%s", at == 0 ? "" : ", ",
                                   FAMILY_LIST[i].gguf);
}

void family_apply(const Family *f, Config *c) {
    c->qkv_bias = f->qkv_bias;
    c->qk_norm = f->qk_norm;
    c->norm = f->norm;
    c->mlp = f->mlp;
    c->post_norms = f->post_norms;
    c->norm_plus_one = f->norm_plus_one;
    if (f->embed_sqrt_dim && c->embed_scale == 0) c->embed_scale = sqrtf((float)c->dim);
    c->position = f->position;
    c->proj_bias = f->proj_bias;
    c->fused_files = f->fused_files;
    if (f->expert_width == FAMILY_EXPERTS_HIDDEN ||
        (f->expert_width == FAMILY_EXPERTS_HIDDEN_UNLESS_GIVEN && c->expert_hidden_dim <= 0))
        c->expert_hidden_dim = c->n_experts > 0 ? c->hidden_dim : 0;
}

void family_defaults_apply(const Family *f, int where, Config *c,
                           bool (*keep)(const Config *c, const ConfigField *field)) {
    for (const FamilyDefault *d = f->defaults; d->field != NULL; d++) {
        const ConfigField *field = config_field_find(d->field);
        if ((d->where & where) != 0 && (keep == NULL || !keep(c, field)))
            config_field_set(c, field, d->value);
    }
}

double family_default(const Family *f, const char *field) {
    for (const FamilyDefault *d = f->defaults; d->field != NULL; d++)
        if (strcmp(d->field, field) == 0) return d->value;
    return 0;
}

/* Whether the space-separated list names word. */
static bool lists(const char *list, const char *word) {
    size_t n = strlen(word);
    for (const char *p = list; p != NULL && *p != '\0';) {
        size_t len = strcspn(p, " ");
        if (len == n && strncmp(p, word, n) == 0) return true;
        p += len + (p[len] == ' ');
    }
    return false;
}

bool family_llama_cpp_reads(const Family *f, const char *field) {
    return lists(family_from_gguf(f->gguf)->llama_cpp_fields, field);
}

/* The fields that say how a run goes, not what the model is (the cache's
 * type and rounding, ggml's GELU table): no file holds them. */
static const char RUN_FIELDS[] = "kv_dtype kv_rounding_ggml gelu_f16_table";

const ConfigField *family_llama_cpp_ignored(const Family *f, const Config *c) {
    for (int i = 0; i < CONFIG_FIELD_COUNT; i++) {
        const ConfigField *field = &CONFIG_FIELD_LIST[i];
        if (field->group == CF_SHAPE || lists(RUN_FIELDS, field->name) ||
            config_field_get(c, field) == 0 || family_llama_cpp_reads(f, field->name))
            continue;
        return field;
    }
    return NULL;
}

bool family_block_matches(const Family *f, const Config *c) {
    return c->norm == f->norm && c->mlp == f->mlp && c->position == f->position &&
           config_mla(c) == (f->attention == FAMILY_ATTENTION_MLA) && c->qkv_bias == f->qkv_bias &&
           c->qk_norm == f->qk_norm && c->post_norms == f->post_norms &&
           c->norm_plus_one == f->norm_plus_one && c->proj_bias == f->proj_bias &&
           c->fused_files == f->fused_files && (!f->embed_sqrt_dim || c->embed_scale > 0) &&
           (!f->all_kv_heads || c->n_kv_heads == c->n_heads);
}
