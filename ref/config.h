/* config.h: the architecture of a Llama-family transformer as data: its
 * shape, and the variations the block reads (RoPE layout, theta and
 * scaling, an explicit head size, q/k/v biases, per-head q/k norms, the
 * norm's epsilon, a tied classifier; GPT-2's LayerNorm, GELU MLP, learned
 * positions and biases; Gemma's scaled embedding, post-norms, GeGLU,
 * attention scale, soft-capping and sliding windows), with the facts that follow (head
 * size, KV width, parameter count, cache bytes). Loaders fill it in; the
 * block (forward.c) tests these fields, never a model's name. */
#ifndef STEPWISE_CONFIG_H
#define STEPWISE_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ref/config_table.h"
#include "ref/kernels/attention_spec.h"
#include "ref/kernels/rope_rows.h"
#include "ref/util/error.h"

/* How RoPE pairs a head's dimensions. */
typedef enum {
    ROPE_INTERLEAVED, /* (0,1), (2,3), ...: llama2.c and Meta's checkpoints */
    ROPE_HALVES,      /* (i, i + head_dim/2): rotate-half, Hugging Face and GPT-NeoX */
} RopeLayout;

/* RoPE frequency scaling for contexts longer than the training one. */
typedef enum {
    ROPE_SCALING_NONE,
    ROPE_SCALING_LINEAR,  /* every frequency divided by factor (positions / factor) */
    ROPE_SCALING_LLAMA3,  /* Llama 3.1's: low frequencies / factor, high kept, a smooth ramp between
                           */
    ROPE_SCALING_FACTORS, /* frequency i divided by factors[i]: a GGUF file's rope_freqs.weight,
                             the form llama.cpp gives Llama 3's scaling */
    ROPE_SCALING_YARN,    /* YaRN (DeepSeek-V2's): frequency i blended between itself and
                             itself / factor by a ramp over the pairs whose wavelength fits
                             original_context beta_slow..beta_fast times; cos and sin multiplied
                             by attention_factor, and the scores by mscale_all_dim's factor
                             squared (config_query_scale) */
    ROPE_SCALING_LONGROPE, /* Phi-3's: frequency i divided by factors[i] (short) or
                              long_factors[i], chosen by each pass as Hugging Face chooses (long
                              when the pass reaches past original_context), and cos and sin
                              multiplied by attention_factor */
} RopeScalingType;

/* How a block normalises: RMSNorm, x / rms(x) · w (Llama), or LayerNorm,
 * (x − mean) / sqrt(var + eps) · w + b (GPT-2). */
typedef enum { NORM_RMS, NORM_LAYER } BlockNorm;

/* The feed-forward layer: SwiGLU, down · (silu(gate · x) ⊙ (up · x))
 * (Llama); down · gelu(gate · x + b_gate) + b_down with GELU's tanh
 * approximation (GPT-2's "gelu_new"; its c_fc is held as the gate), which
 * has no up; or GeGLU, down · (gelu(gate · x) ⊙ (up · x))
 * with the same GELU (Gemma's "gelu_pytorch_tanh"). */
typedef enum { MLP_SWIGLU, MLP_GELU, MLP_GEGLU } MlpKind;

/* Where positions come from: RoPE, rotating q and k, or a learned
 * embedding [seq_len, dim] added to the token's (GPT-2). */
typedef enum { POS_ROPE, POS_LEARNED } PositionKind;

/* The most layers an MoE model may list as dense (mlp_only_layers). */
#define CONFIG_MAX_DENSE_LAYERS 64

/* The most per-frequency factors: one for each pair of a head of up to 512. */
#define ROPE_MAX_FACTORS 256

typedef struct {
    RopeScalingType type;
    float factor;                            /* factors: the largest, for display; longrope:
                                                the context over original_context */
    float low_freq_factor, high_freq_factor; /* llama3 */
    int original_context;                    /* llama3, longrope: the training context */
    float factors[ROPE_MAX_FACTORS];         /* factors, longrope's short: [rope_dims / 2] */
    float long_factors[ROPE_MAX_FACTORS];    /* longrope: [rope_dims / 2] */
    float attention_factor;                  /* longrope, yarn: cos and sin multiplied by it */
    float beta_fast, beta_slow;              /* yarn: the ramp's ends, in turns a context */
    float mscale, mscale_all_dim;            /* yarn: the factors' log multipliers (0: none) */
} RopeScaling;

/* The table's fields, grouped (config_table.h), then what is not one
 * number: the block's kinds, RoPE's scaling and the dense layers' list.
 * 0 (or false) everywhere but the shape is llama2.c's architecture, so a
 * loader of llama2.c checkpoints sets nothing else. */
#define CF_CTYPE_INT                          int
#define CF_CTYPE_FLOAT                        float
#define CF_CTYPE_BOOL                         bool
#define CONFIG_MEMBER(group, type, name, ...) CF_CTYPE_##type name;

typedef struct {
    CONFIG_FIELDS(CONFIG_MEMBER)
    RopeLayout rope_layout; /* which dimensions RoPE rotates together */
    RopeScaling rope_scaling;
    BlockNorm norm;
    MlpKind mlp;
    PositionKind position;
    int n_dense_layers; /* mlp_only_layers: layers whose MLP stays dense (hidden_dim) */
    int dense_layers[CONFIG_MAX_DENSE_LAYERS];
} Config;

/* The table's fields as data, for the code that walks them: the readers,
 * writers, run header, make-model and config_validate. */
typedef enum { CF_SHAPE, CF_ATTENTION, CF_ROPE, CF_NORM, CF_MLP, CF_MOE, CF_FILES } ConfigGroup;
typedef enum { CF_TYPE_INT, CF_TYPE_FLOAT, CF_TYPE_BOOL } ConfigFieldType;
typedef enum { CF_ALWAYS, CF_IF_SET, CF_WITH_PREV, CF_NEVER } ConfigShow;

typedef struct {
    ConfigGroup group;
    ConfigFieldType type;
    const char *name, *trace; /* the member's name; its name in the run header */
    double zero;              /* what a 0 stands for, or 0 */
    double min, max;          /* the range of a set value */
    ConfigShow show;
    const char *hf, *gguf, *option, *families, *help; /* "" for none (config_table.h) */
    size_t offset;                                    /* offsetof(Config, name) */
} ConfigField;

/* Every field, in the table's order, and how many. */
#define CONFIG_COUNT_ONE(...) +1
enum { CONFIG_FIELD_COUNT = 0 CONFIG_FIELDS(CONFIG_COUNT_ONE) };
extern const ConfigField CONFIG_FIELD_LIST[CONFIG_FIELD_COUNT];

/* The field called name (the member's), or NULL. */
const ConfigField *config_field_find(const char *name);
/* The value as held (a bool as 0 or 1), and with a 0 read as the field's
 * zero (rope_theta's 10000). */
double config_field_get(const Config *c, const ConfigField *f);
double config_field_effective(const Config *c, const ConfigField *f);
/* Store v (in the field's range, or 0) into the field. */
void config_field_set(Config *c, const ConfigField *f, double v);
/* Whether the run header (and inspect's fields line) shows f of c, as its
 * show says; prev_shown: whether the field before it was shown
 * (CF_WITH_PREV). */
bool config_field_shown(const Config *c, const ConfigField *f, bool prev_shown);
/* Whether family (make-model's --arch name) holds the field: its families
 * list names it, or the list is empty. */
bool config_field_in_family(const ConfigField *f, const char *family);
/* "a whole number in [1, 2^30]", "a positive number", "true or false":
 * what the field takes, for messages. */
void config_field_describe(const ConfigField *f, char *buf, size_t size);
/* Every field but the shape's either 0 or in its range (config_validate's
 * first check); and every one 0 or its zero, head_dim apart
 * (config_is_llama2c's). */
bool config_fields_valid(const Config *c, const char *what, StepError *err);
bool config_fields_llama2c(const Config *c);

/* "linear", "llama3", "factors", "yarn" or "longrope" ("none" for no scaling). */
const char *config_rope_scaling_name(RopeScalingType t);

/* The width of one attention head: head_dim, or dim / n_heads. */
int config_head_dim(const Config *c);
/* q_dim = n_heads * head_dim: the width of the queries and of attention's
 * output (dim, unless head_dim is given otherwise). */
int config_q_dim(const Config *c);
/* The dimensions of a head RoPE turns: rope_dims, or all of head_dim. */
int config_rope_dims(const Config *c);
/* Whether layer l's MLP is a mixture of experts (n_experts, moe_step,
 * dense_layers); the layers that are not keep a dense MLP of hidden_dim.
 * Their matrices are stored for those layers only: config_dense_slot and
 * config_moe_slot give a layer's place among its kind (l itself in a dense
 * model), and config_dense_layers how many there are. */
bool config_layer_moe(const Config *c, int l);
int config_dense_layers(const Config *c);
int config_dense_slot(const Config *c, int l);
int config_moe_slot(const Config *c, int l);
/* The layer whose place among the MoE layers is slot (n_layers: none). */
int config_moe_layer(const Config *c, int slot);

/* Layer l's AttentionSpec as c makes it, with the one window rule: its
 * window is sliding_window on a layer that slides (every layer, or all but
 * each sliding_pattern-th), else 0. */
AttentionSpec config_attention_spec(const Config *c, int l);

/* The number the scores are divided by the square root of: query_scale, or
 * head_dim (YaRN with mscale_all_dim: divided by that factor's fourth power,
 * so the scores grow by its square, as DeepSeek-V2's softmax_scale). */
float config_query_scale(const Config *c);
/* YaRN's attention factor for a context factor and a log multiplier:
 * 0.1 · m · ln(factor) + 1, or 1 for a factor of at most 1 (yarn_get_mscale). */
float config_yarn_mscale(float factor, float m);
/* Whether a pass of positions pos0 .. last turns q and k with longrope's
 * long factors: Hugging Face's rule, per forward call, long when the
 * pass's last position + 1 exceeds original_context. */
bool config_rope_long(const Config *c, int last);
/* The RoPE base (10000 unless given) and the RMSNorm epsilon (1e-5 unless given). */
float config_rope_theta(const Config *c);
float config_norm_eps(const Config *c);
/* Whether c is llama2.c's architecture (only the shape may differ): what a
 * checkpoint or a .q8 file can hold. */
bool config_is_llama2c(const Config *c);
/* kv_dim = n_kv_heads * head_dim: the width of one cached K (or V) row. */
int config_kv_dim(const Config *c);
/* The family the architecture's fields make, as a name: "qwen3moe"
 * (experts and q/k norms), "mixtral" (experts), "gpt2" (learned
 * positions), "gemma3" (post-norms and q/k norms), "gemma2" (post-norms),
 * "phi3" (fused files), "qwen3" (q/k norms), "qwen2" (q/k/v
 * biases) or "llama" (the rest: Llama, Mistral, llama2.c): a row of
 * family.h (family_of_config). For a reader's benefit: the block tests the
 * fields, never this. */
const char *config_family(const Config *c);

/* Whether c attends by multi-head latent attention (kv_lora_rank, DeepSeek-V2),
 * the width of a head's value (v_head_dim, or head_dim), the floats a
 * position caches in a layer (K and V, 2 x kv_dim; MLA's latent and rotary
 * key, kv_lora_rank + qk_rope_head_dim), and those of MLA's cache expanded
 * to every head's K and V (n_heads x (head_dim + v_head_dim)). */
bool config_mla(const Config *c);
int config_v_head_dim(const Config *c);
uint64_t config_cache_floats(const Config *c);
uint64_t config_expanded_cache_floats(const Config *c);

/* "MLA" (config_mla), "MHA" (n_kv_heads == n_heads), "MQA" (n_kv_heads ==
 * 1 < n_heads) or "GQA". */
const char *config_attention_kind(const Config *c);

/* Check every rule a usable shape obeys: positive sizes, dim divisible by
 * n_heads (unless head_dim is given), n_heads by n_kv_heads, an even head
 * size (RoPE rotates pairs), products that fit in memory arithmetic, and
 * sensible RoPE and norm numbers. `what` names the source in errors. */
bool config_validate(const Config *c, const char *what, StepError *err);

/* Number of float32 weights, classifier included once if tied. Only valid for
 * a validated config (no overflow then). */
uint64_t config_param_count(const Config *c);

/* The vectors a layer holds beside its matrices (norm weights and biases,
 * projection biases, Qwen3's q/k norms), in floats: config_param_count's
 * and a forward pass's bytes read (forward.c) both count them here. And
 * the final norm's (its weight, and LayerNorm's bias). */
uint64_t config_layer_vector_floats(const Config *c);
uint64_t config_final_vector_floats(const Config *c);

/* The weights one token runs through: config_param_count less the experts
 * it does not choose (n_experts - n_experts_used of each MoE layer). */
uint64_t config_active_param_count(const Config *c);

/* Bytes of one cached K (or V) row: one position of one layer. float32:
 * kv_dim × 4; int8: kv_dim one-byte codes and one float32 scale per KV head.
 * MLA's one row a position and layer: the latent and the rotary key (and a
 * scale for each in int8); the cache's sizes below count one row, not two. */
uint64_t kv_row_bytes(const Config *c, bool int8);

/* Bytes of KV cache for `tokens` positions of one request:
 * tokens × n_layers × kv_dim × 2 (K and V) × sizeof(float). */
uint64_t kv_cache_bytes(const Config *c, int tokens);

/* The same cache stored in int8: per position, layer and K or V, kv_dim
 * one-byte codes and one float32 scale per KV head:
 * tokens × n_layers × 2 × (kv_dim + n_kv_heads × 4). */
uint64_t kv_cache_bytes_q8(const Config *c, int tokens);

#endif
