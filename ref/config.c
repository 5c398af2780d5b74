/* config.c: validation and derived sizes of a transformer shape. */
#include "ref/config.h"

#include <stdio.h>
#include <string.h>

#include <math.h>

int config_head_dim(const Config *c) {
    return c->head_dim > 0 ? c->head_dim : c->dim / c->n_heads;
}

int config_q_dim(const Config *c) {
    return c->n_heads * config_head_dim(c);
}

int config_rope_dims(const Config *c) {
    if (config_mla(c)) return c->qk_rope_head_dim; /* the last ones of each head (mla.h) */
    return c->rope_dims > 0 ? c->rope_dims : config_head_dim(c);
}

bool config_layer_moe(const Config *c, int l) {
    if (c->n_experts == 0) return false;
    for (int i = 0; i < c->n_dense_layers; i++)
        if (c->dense_layers[i] == l) return false;
    return c->moe_step <= 1 || (l + 1) % c->moe_step == 0;
}

int config_moe_slot(const Config *c, int l) {
    int slot = 0;
    for (int i = 0; i < l; i++) slot += config_layer_moe(c, i);
    return slot;
}

int config_moe_layer(const Config *c, int slot) {
    int l = 0;
    for (int seen = 0; l < c->n_layers; l++) {
        if (!config_layer_moe(c, l)) continue;
        if (seen++ == slot) break;
    }
    return l;
}

int config_dense_slot(const Config *c, int l) {
    return l - config_moe_slot(c, l);
}

int config_dense_layers(const Config *c) {
    return config_dense_slot(c, c->n_layers);
}

bool config_rope_long(const Config *c, int last) {
    return c->rope_scaling.type == ROPE_SCALING_LONGROPE &&
           last + 1 > c->rope_scaling.original_context;
}

AttentionSpec config_attention_spec(const Config *c, int l) {
    /* the window rule: every layer slides, or all but each
     * sliding_pattern-th (Gemma 2's 2, Gemma 3's 6) */
    bool slides =
        c->sliding_window > 0 && (c->sliding_pattern == 0 || (l + 1) % c->sliding_pattern != 0);
    return (AttentionSpec){.n_heads = c->n_heads,
                           .n_kv_heads = c->n_kv_heads,
                           .head_dim = config_head_dim(c),
                           .v_head_dim = config_v_head_dim(c),
                           .query_scale = config_query_scale(c),
                           .softcap = c->attn_softcap,
                           .window = slides ? c->sliding_window : 0};
}

float config_query_scale(const Config *c) {
    float scale = c->query_scale > 0 ? c->query_scale : (float)config_head_dim(c);
    const RopeScaling *s = &c->rope_scaling;
    if (s->type == ROPE_SCALING_YARN && s->mscale_all_dim > 0) {
        float m = config_yarn_mscale(s->factor, s->mscale_all_dim);
        scale /= m * m * m * m; /* sqrt(scale) then shrinks by m²: the scores grow by it */
    }
    return scale;
}

float config_yarn_mscale(float factor, float m) {
    return factor <= 1.0f ? 1.0f : 0.1f * m * logf(factor) + 1.0f;
}

float config_rope_theta(const Config *c) {
    return c->rope_theta > 0 ? c->rope_theta : 10000.0f;
}

float config_norm_eps(const Config *c) {
    return c->norm_eps > 0 ? c->norm_eps : 1e-5f;
}

bool config_is_llama2c(const Config *c) {
    return config_head_dim(c) == c->dim / c->n_heads && c->dim % c->n_heads == 0 &&
           c->rope_layout == ROPE_INTERLEAVED && c->rope_scaling.type == ROPE_SCALING_NONE &&
           c->norm == NORM_RMS && c->mlp == MLP_SWIGLU && c->position == POS_ROPE &&
           config_fields_llama2c(c);
}

const char *config_rope_scaling_name(RopeScalingType t) {
    switch (t) {
        case ROPE_SCALING_NONE:
            return "none";
        case ROPE_SCALING_LINEAR:
            return "linear";
        case ROPE_SCALING_LLAMA3:
            return "llama3";
        case ROPE_SCALING_FACTORS:
            return "factors";
        case ROPE_SCALING_YARN:
            return "yarn";
        case ROPE_SCALING_LONGROPE:
            return "longrope";
    }
    return "none";
}

/* MLA's numbers: a rotary part of an even width inside the head (whose size
 * is given), one KV head a query head (each rebuilds its own from the
 * latent), RoPE's positions; the query's path and the value's width only
 * with a latent; shared experts and a scale only with routed ones. */
static bool mla_valid(const Config *c, const char *what, StepError *err) {
    if (!config_mla(c) && (c->qk_rope_head_dim > 0 || c->q_lora_rank > 0 || c->v_head_dim > 0))
        return step_fail(err,
                         "%s: qk_rope_head_dim, q_lora_rank and v_head_dim are MLA's: they "
                         "need kv_lora_rank",
                         what);
    if (config_mla(c) && (c->qk_rope_head_dim <= 0 || c->qk_rope_head_dim % 2 != 0 ||
                          c->qk_rope_head_dim >= c->head_dim || c->n_kv_heads != c->n_heads ||
                          c->position != POS_ROPE))
        return step_fail(err,
                         "%s: MLA needs an even qk_rope_head_dim below head_dim (%d, given), as "
                         "many KV heads as query heads and RoPE",
                         what, c->head_dim);
    if (c->n_experts == 0 && (c->n_shared_experts > 0 || c->routed_scaling_factor != 0))
        return step_fail(err, "%s: n_shared_experts and routed_scaling_factor need experts", what);
    /* routing within groups: whole groups, and enough experts in the used ones */
    int groups = c->expert_groups, used = c->expert_groups_used;
    if ((groups > 0) != (used > 0) ||
        (groups > 0 && (c->n_experts % groups != 0 || used > groups ||
                        c->n_experts_used > used * (c->n_experts / groups))))
        return step_fail(err,
                         "%s: expert_groups (%d) must divide n_experts (%d) and come with "
                         "expert_groups_used (%d) of at most as many groups, holding at least "
                         "n_experts_used (%d) experts",
                         what, groups, c->n_experts, used, c->n_experts_used);
    if (config_mla(c) && (c->qkv_bias || c->qk_norm || c->rope_dims > 0 || c->sliding_window > 0 ||
                          c->norm != NORM_RMS || c->mlp != MLP_SWIGLU))
        return step_fail(err,
                         "%s: MLA's block has no q/k/v biases, q/k norms, partial RoPE, window, "
                         "LayerNorm or GELU",
                         what);
    return true;
}

static bool arch_numbers_valid(const Config *c, const char *what, StepError *err) {
    if (c->head_dim >= 0 && c->rope_dims != 0 &&
        (c->rope_dims < 2 || c->rope_dims % 2 != 0 || c->rope_dims > config_head_dim(c)))
        return step_fail(
            err, "%s: rope_dims, RoPE's dimensions (%d), must be even and in [2, head_dim %d]",
            what, c->rope_dims, config_head_dim(c));
    if (!config_fields_valid(c, what, err)) return false;
    if (!mla_valid(c, what, err)) return false;
    if ((c->n_experts > 0 &&
         (c->n_experts_used < 1 || c->n_experts_used > c->n_experts || c->expert_hidden_dim < 1 ||
          c->moe_step < 0 || c->n_dense_layers < 0 || c->n_dense_layers > CONFIG_MAX_DENSE_LAYERS)))
        return step_fail(
            err,
            "%s: experts %d, used %d, expert hidden %d: an MoE layer needs 1 <= k <= E "
            "<= 4096 experts of a positive width",
            what, c->n_experts, c->n_experts_used, c->expert_hidden_dim);
    for (int i = 0; c->n_experts > 0 && i < c->n_dense_layers; i++)
        if (c->dense_layers[i] < 0 || c->dense_layers[i] >= c->n_layers)
            return step_fail(err, "%s: dense layer %d is not one of the %d layers", what,
                             c->dense_layers[i], c->n_layers);
    const RopeScaling *s = &c->rope_scaling;
    if ((s->type == ROPE_SCALING_LINEAR || s->type == ROPE_SCALING_LLAMA3) &&
        !(s->factor >= 1 && s->factor <= 1e6))
        return step_fail(err, "%s: rope_scaling.factor must be in [1, 1e6]", what);
    if (s->type == ROPE_SCALING_FACTORS && config_head_dim(c) / 2 > ROPE_MAX_FACTORS)
        return step_fail(err, "%s: per-frequency RoPE factors need head_dim <= %d", what,
                         2 * ROPE_MAX_FACTORS);
    for (int i = 0; s->type == ROPE_SCALING_FACTORS && i < config_head_dim(c) / 2; i++) {
        if (!(s->factors[i] > 0 && s->factors[i] <= 1e6))
            return step_fail(err, "%s: RoPE factor %d must be in (0, 1e6]", what, i);
    }
    if (s->type == ROPE_SCALING_LONGROPE && config_rope_dims(c) / 2 > ROPE_MAX_FACTORS)
        return step_fail(err, "%s: longrope's factors need rope dimensions <= %d", what,
                         2 * ROPE_MAX_FACTORS);
    for (int i = 0; s->type == ROPE_SCALING_LONGROPE && i < config_rope_dims(c) / 2; i++)
        if (!(s->factors[i] > 0 && s->factors[i] <= 1e6 && s->long_factors[i] > 0 &&
              s->long_factors[i] <= 1e6))
            return step_fail(err, "%s: longrope's short and long factors %d must be in (0, 1e6]",
                             what, i);
    if (s->type == ROPE_SCALING_LONGROPE &&
        !(s->original_context > 0 && s->attention_factor > 0 && s->attention_factor <= 1e3))
        return step_fail(err,
                         "%s: longrope needs original_max_position_embeddings > 0 and an "
                         "attention factor in (0, 1000]",
                         what);
    if (s->type == ROPE_SCALING_YARN &&
        !(s->factor >= 1 && s->factor <= 1e6 && s->original_context > 0 && s->beta_fast > 0 &&
          s->beta_slow > 0 && s->beta_fast <= 1e6 && s->beta_slow <= 1e6 &&
          s->attention_factor > 0 && s->attention_factor <= 1e3 && s->mscale >= 0 &&
          s->mscale <= 1e3 && s->mscale_all_dim >= 0 && s->mscale_all_dim <= 1e3))
        return step_fail(err,
                         "%s: yarn rope_scaling needs factor in [1, 1e6], "
                         "original_max_position_embeddings > 0, beta_fast and beta_slow > 0, "
                         "mscale and mscale_all_dim in [0, 1000]",
                         what);
    if (s->type == ROPE_SCALING_LLAMA3 &&
        !(s->low_freq_factor > 0 && s->high_freq_factor > s->low_freq_factor &&
          s->high_freq_factor < 1e6 && s->original_context > 0))
        return step_fail(err,
                         "%s: llama3 rope_scaling needs 0 < low_freq_factor < high_freq_factor "
                         "and original_max_position_embeddings > 0",
                         what);
    return true;
}

const char *config_family(const Config *c) {
    return config_mla(c)                    ? "deepseek2"
           : c->n_experts > 0 && c->qk_norm ? "qwen3moe"
           : c->n_experts > 0               ? "mixtral"
           : c->position == POS_LEARNED     ? "gpt2"
           : c->post_norms && c->qk_norm    ? "gemma3"
           : c->post_norms                  ? "gemma2"
           : c->fused_files                 ? "phi3"
           : c->qk_norm                     ? "qwen3"
           : c->qkv_bias                    ? "qwen2"
                                            : "llama";
}

int config_kv_dim(const Config *c) {
    return c->n_kv_heads * config_head_dim(c);
}

bool config_mla(const Config *c) {
    return c->kv_lora_rank > 0;
}

int config_v_head_dim(const Config *c) {
    return c->v_head_dim > 0 ? c->v_head_dim : config_head_dim(c);
}

uint64_t config_cache_floats(const Config *c) {
    if (config_mla(c)) return (uint64_t)c->kv_lora_rank + (uint64_t)c->qk_rope_head_dim;
    return 2u * (uint64_t)config_kv_dim(c);
}

uint64_t config_expanded_cache_floats(const Config *c) {
    return (uint64_t)c->n_kv_heads * (uint64_t)(config_head_dim(c) + config_v_head_dim(c));
}

const char *config_attention_kind(const Config *c) {
    if (config_mla(c)) return "MLA";
    if (c->n_kv_heads == c->n_heads) return "MHA";
    if (c->n_kv_heads == 1) return "MQA";
    return "GQA";
}

/* Largest float count we accept for any one computation: 2^40 floats (4 TiB)
 * is far beyond this machine, and leaves uint64 products below overflow. */
#define MAX_FLOATS ((uint64_t)1 << 40)

bool config_validate(const Config *c, const char *what, StepError *err) {
    const struct {
        const char *name;
        int value;
    } sizes[] = {
        {"dim", c->dim},         {"hidden_dim", c->hidden_dim}, {"n_layers", c->n_layers},
        {"n_heads", c->n_heads}, {"n_kv_heads", c->n_kv_heads}, {"vocab_size", c->vocab_size},
        {"seq_len", c->seq_len}};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        if (sizes[i].value <= 0)
            return step_fail(err, "%s: %s must be positive, got %d", what, sizes[i].name,
                             sizes[i].value);
    }
    if (!arch_numbers_valid(c, what, err)) return false;
    if (c->head_dim == 0 && c->dim % c->n_heads != 0)
        return step_fail(err, "%s: dim %d is not divisible by n_heads %d", what, c->dim,
                         c->n_heads);
    if ((uint64_t)c->n_heads * (uint64_t)config_head_dim(c) > (uint64_t)1 << 24)
        return step_fail(err, "%s: n_heads x head_dim is too large (the product overflows)", what);
    if (c->n_kv_heads > c->n_heads || c->n_heads % c->n_kv_heads != 0)
        return step_fail(err, "%s: n_heads %d is not a multiple of n_kv_heads %d", what, c->n_heads,
                         c->n_kv_heads);
    if (c->position == POS_ROPE && config_head_dim(c) % 2 != 0)
        return step_fail(err, "%s: head size %d is odd; RoPE rotates pairs of dimensions", what,
                         config_head_dim(c));
    /* Every product below is of factors < 2^31, checked pairwise against MAX_FLOATS. */
    uint64_t dim = (uint64_t)c->dim, layers = (uint64_t)c->n_layers;
    uint64_t q_dim = (uint64_t)config_q_dim(c);
    uint64_t products[] = {dim * (uint64_t)c->hidden_dim,
                           dim * (uint64_t)c->vocab_size,
                           dim * dim,
                           dim * (uint64_t)c->seq_len,
                           dim * q_dim,
                           (uint64_t)config_head_dim(c) * (uint64_t)c->seq_len};
    for (size_t i = 0; i < sizeof products / sizeof products[0]; i++) {
        if (products[i] > MAX_FLOATS / layers / 4)
            return step_fail(err, "%s: sizes are too large (their product overflows)", what);
    }
    return true;
}

uint64_t config_layer_vector_floats(const Config *c) {
    uint64_t dim = (uint64_t)c->dim, hidden = (uint64_t)c->hidden_dim;
    uint64_t kv_dim = (uint64_t)config_kv_dim(c), q_dim = (uint64_t)config_q_dim(c);
    uint64_t n = 2 * dim;                                  /* rms_att, rms_ffn */
    if (c->post_norms) n += 2 * dim;                       /* post_att_norm, post_ffn_norm */
    if (c->qkv_bias) n += q_dim + 2 * kv_dim;              /* bq, bk, bv */
    if (c->qk_norm) n += 2 * (uint64_t)config_head_dim(c); /* q_norm, k_norm */
    if (c->norm == NORM_LAYER) n += 2 * dim;               /* the norms' biases */
    if (c->proj_bias) n += dim + hidden + dim;             /* bo, b_gate, b_down */
    if (config_mla(c)) n += (uint64_t)c->kv_lora_rank + (uint64_t)c->q_lora_rank; /* their norms */
    return n;
}

uint64_t config_final_vector_floats(const Config *c) {
    return (c->norm == NORM_LAYER ? 2u : 1u) * (uint64_t)c->dim; /* rms_final (, its bias) */
}

/* One layer's attention matrices, in floats: wq, wk, wv and wo; or MLA's
 * query (wq, or q_a [q_lora_rank, dim] and q_b [n_heads x head_dim,
 * q_lora_rank]), kv_a [kv_lora_rank + qk_rope_head_dim, dim] (the latent
 * and the shared rotary key), kv_b [n_heads x (head_dim - qk_rope_head_dim
 * + v_head_dim), kv_lora_rank] (each head's key and value from the latent)
 * and wo [dim, n_heads x v_head_dim]. */
static uint64_t attention_matrix_floats(const Config *c) {
    uint64_t dim = (uint64_t)c->dim, q_dim = (uint64_t)config_q_dim(c);
    if (!config_mla(c)) return q_dim * dim + 2 * (uint64_t)config_kv_dim(c) * dim + dim * q_dim;
    uint64_t heads = (uint64_t)c->n_heads, rank = (uint64_t)c->kv_lora_rank;
    uint64_t rope = (uint64_t)c->qk_rope_head_dim, v = (uint64_t)config_v_head_dim(c);
    uint64_t nope = (uint64_t)config_head_dim(c) - rope, q_rank = (uint64_t)c->q_lora_rank;
    uint64_t query = q_rank > 0 ? q_rank * dim + q_dim * q_rank : q_dim * dim;
    return query + (rank + rope) * dim + heads * (nope + v) * rank + dim * heads * v;
}

uint64_t config_param_count(const Config *c) {
    uint64_t dim = (uint64_t)c->dim, hidden = (uint64_t)c->hidden_dim;
    uint64_t vocab = (uint64_t)c->vocab_size;
    uint64_t per_layer = attention_matrix_floats(c)                     /* wq, wk, wv, wo */
                         + (c->mlp == MLP_GELU ? 2 : 3) * hidden * dim; /* gate, down (, up) */
    per_layer += config_layer_vector_floats(c);
    uint64_t total =
        vocab * dim + (uint64_t)c->n_layers * per_layer + config_final_vector_floats(c);
    if (c->n_experts > 0) { /* MoE layers: a router and E experts instead of the dense MLP */
        uint64_t moe = (uint64_t)(c->n_layers - config_dense_layers(c));
        uint64_t E = (uint64_t)c->n_experts, eh = (uint64_t)c->expert_hidden_dim;
        total -= moe * (c->mlp == MLP_GELU ? 2 : 3) * hidden * dim;
        total += moe * (E * dim + E * 3 * eh * dim);
        total += moe * (uint64_t)c->n_shared_experts * 3 * eh * dim; /* DeepSeek's shared ones */
    }
    if (c->position == POS_LEARNED) total += (uint64_t)c->seq_len * dim;
    if (!c->shared_classifier) total += vocab * dim;
    return total;
}

uint64_t config_active_param_count(const Config *c) {
    uint64_t moe = c->n_experts > 0 ? (uint64_t)(c->n_layers - config_dense_layers(c)) : 0;
    uint64_t idle = (uint64_t)(c->n_experts - c->n_experts_used) * 3u *
                    (uint64_t)c->expert_hidden_dim * (uint64_t)c->dim;
    return config_param_count(c) - moe * idle;
}

uint64_t kv_row_bytes(const Config *c, bool int8) {
    /* MLA's row is the latent and the rotary key, each with a scale in int8 */
    uint64_t floats = config_mla(c) ? config_cache_floats(c) : (uint64_t)config_kv_dim(c);
    uint64_t scales = config_mla(c) ? 2u : (uint64_t)c->n_kv_heads;
    return int8 ? floats + scales * sizeof(float) : floats * sizeof(float);
}

/* Rows a position caches in a layer: K and V, or MLA's one. */
static uint64_t cache_rows(const Config *c) {
    return config_mla(c) ? 1u : 2u;
}

uint64_t kv_cache_bytes(const Config *c, int tokens) {
    return (uint64_t)tokens * (uint64_t)c->n_layers * cache_rows(c) * kv_row_bytes(c, false);
}

uint64_t kv_cache_bytes_q8(const Config *c, int tokens) {
    return (uint64_t)tokens * (uint64_t)c->n_layers * cache_rows(c) * kv_row_bytes(c, true);
}

/* The table of config_table.h as data. */
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

const ConfigField CONFIG_FIELD_LIST[CONFIG_FIELD_COUNT] = {CONFIG_FIELDS(CONFIG_FIELD_ENTRY)};

const ConfigField *config_field_find(const char *name) {
    for (int i = 0; i < CONFIG_FIELD_COUNT; i++)
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

bool config_field_shown(const Config *c, const ConfigField *f, bool prev_shown) {
    return f->show == CF_ALWAYS || (f->show == CF_IF_SET && config_field_get(c, f) != 0) ||
           (f->show == CF_WITH_PREV && prev_shown);
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
    for (int i = 0; i < CONFIG_FIELD_COUNT; i++) {
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
    for (int i = 0; i < CONFIG_FIELD_COUNT; i++) {
        const ConfigField *f = &CONFIG_FIELD_LIST[i];
        double v = config_field_get(c, f);
        /* the shape is the checkpoint's; a value equal to what 0 stands for is 0 */
        if (f->group != CF_SHAPE && f->offset != offsetof(Config, head_dim) && v != 0 &&
            (float)v != (float)f->zero)
            return false;
    }
    return true;
}
