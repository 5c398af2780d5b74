/* family.h: the model families stepwise reads and writes, one row each:
 * its names (make-model's --arch, Hugging Face's architectures class and
 * model_type, llama.cpp's general.architecture), its block's traits, its
 * defaults, and the fields llama.cpp's architecture reads.
 *
 * The readers, writers, make-model, the presets, inspect and convert look a
 * family up here and read its row: no family's name is compared outside
 * family.c. The block (forward.c) reads the Config the row's traits are
 * applied to (family_apply), never the row. docs/families.md says how to
 * add a family (a row). */
#ifndef STEPWISE_FAMILY_H
#define STEPWISE_FAMILY_H

#include <stdbool.h>
#include <stddef.h>

#include "ref/config.h"

/* How attention holds keys and values: a head's own (MHA, GQA, MQA) or
 * multi-head latent attention (DeepSeek-V2's latents, config_mla). */
typedef enum { FAMILY_ATTENTION_HEADS, FAMILY_ATTENTION_MLA } FamilyAttention;

/* How a mixture of experts is configured and named: none; Mixtral's
 * (num_local_experts, block_sparse_moe.experts.E.w1..w3, experts
 * intermediate_size wide); Qwen3-MoE's (num_experts, mlp.experts.E.*_proj,
 * moe_intermediate_size, mlp_only_layers); DeepSeek-V2's (shared experts
 * beside the routed ones, the experts optional). */
typedef enum {
    FAMILY_ROUTING_NONE,
    FAMILY_ROUTING_MIXTRAL,
    FAMILY_ROUTING_QWEN3MOE,
    FAMILY_ROUTING_DEEPSEEK2
} FamilyRouting;

/* How wide a model's experts are: as the file says, hidden_dim (Mixtral's,
 * and llama.cpp's llama with experts), or hidden_dim unless given
 * (Qwen3-MoE's Hugging Face class). */
typedef enum {
    FAMILY_EXPERTS_GIVEN,
    FAMILY_EXPERTS_HIDDEN,
    FAMILY_EXPERTS_HIDDEN_UNLESS_GIVEN
} FamilyExpertWidth;

/* Which layers a window slides on: none; every layer (Mistral's and
 * Phi-3's, unless use_sliding_window is false); past max_window_layers,
 * which stepwise does not run, so the context is capped at the window
 * (Qwen2's); or all but each sliding_pattern-th (Gemma's). */
typedef enum {
    FAMILY_WINDOW_NONE,
    FAMILY_WINDOW_EVERY_LAYER,
    FAMILY_WINDOW_CAPS_CONTEXT,
    FAMILY_WINDOW_PATTERN
} FamilyWindow;

/* Where a default holds: make-model and the presets, a Hugging Face config
 * class (a key config.json leaves out), llama.cpp (a key a GGUF file leaves
 * out). */
enum { FAMILY_IN_MAKE = 1, FAMILY_IN_HF = 2, FAMILY_IN_GGUF = 4, FAMILY_IN_ALL = 7 };

/* A default a family gives a field (config_table.h's member name) where
 * nothing says otherwise, and where (FAMILY_IN_*). */
typedef struct {
    const char *field;
    double value;
    int where;
} FamilyDefault;

#define FAMILY_MAX_DEFAULTS 12

typedef struct {
    const char *name;          /* make-model's --arch; config_table.h's families column */
    const char *hf_class;      /* config.json's architectures[0] */
    const char *hf_model_type; /* config.json's model_type */
    const char *gguf;          /* llama.cpp's general.architecture (Mixtral's: llama) */
    const char *summary;       /* what sets it apart, for make-model's --arch help ("q/k/v
                                  biases"), or NULL */
    /* the block */
    BlockNorm norm;
    MlpKind mlp;
    PositionKind position;
    FamilyAttention attention;
    FamilyRouting routing;
    FamilyExpertWidth expert_width;
    FamilyWindow window;
    RopeLayout gguf_rope; /* how llama.cpp's file holds q's and k's rows */
    bool qkv_bias, qk_norm, post_norms, norm_plus_one, proj_bias;
    bool fused_files;      /* q, k, v and gate, up fused in the files (Phi-3) */
    bool embed_sqrt_dim;   /* the embedding times √dim unless given (Gemma) */
    bool tied;             /* the config class ties the classifier unless told (Gemma) */
    bool all_kv_heads;     /* no grouped KV heads (GPT-2) */
    int gguf_scale_layers; /* llama.cpp scales the scores by √(dim / heads) at this
                              layer count (Gemma's 27B models), else by √head_dim */
    FamilyDefault defaults[FAMILY_MAX_DEFAULTS]; /* ended by a NULL field */
    /* the Config fields (config_table.h's names) llama.cpp's architecture
     * reads, space-separated: on the row whose name is its gguf name (the
     * others share that row's); convert refuses a model that sets another */
    const char *llama_cpp_fields;
} Family;

/* Every family, in the table's order, and how many. */
extern const Family FAMILY_LIST[];
extern const int FAMILY_COUNT;

/* The family called name (make-model's --arch), of Hugging Face class
 * name, or of llama.cpp's architecture name (the first row that writes it:
 * "llama" is Llama's); NULL for none. */
const Family *family_find(const char *name);
const Family *family_from_hf_class(const char *name);
const Family *family_from_gguf(const char *name);
/* The family of c's fields (config_family's name). */
const Family *family_of_config(const Config *c);

/* "llama, mistral, ... or deepseek2" (make-model's names), "LlamaForCausalLM,
 * ..., DeepseekV2ForCausalLM" (the classes), "llama, qwen2, ..." (the GGUF
 * architectures, each once): for messages. With `summaries`, each name
 * followed by its row's summary, and `marked` (may be NULL) by "default":
 * make-model's --arch help, "llama (default), ..., qwen2 (q/k/v biases)". */
void family_names_text(char *buf, size_t size, bool summaries, const Family *marked);
void family_classes_text(char *buf, size_t size);
void family_gguf_text(char *buf, size_t size);

/* The row's traits into c (its norm, MLP, positions, biases, q/k norms,
 * post-norms, 1 + w norms, fused files, √dim embedding unless given, and
 * its experts' width rule), before a model of it is made. The numbers are
 * the defaults' (family_defaults_apply) and the files'. */
void family_apply(const Family *f, Config *c);

/* Set in c each of f's defaults that hold `where`, but where keep (may be
 * NULL) says the field holds what it should keep. */
void family_defaults_apply(const Family *f, int where, Config *c,
                           bool (*keep)(const Config *c, const ConfigField *field));
/* f's default for field (a member's name), wherever it holds; 0 for none. */
double family_default(const Family *f, const char *field);

/* Whether llama.cpp's architecture of f reads the field (its gguf row's
 * llama_cpp_fields); and the first field c sets that it does not (NULL for
 * none): the block's flags and numbers, not the shape, nor the run's
 * choices (the cache's type, ggml's GELU table). */
bool family_llama_cpp_reads(const Family *f, const char *field);
const ConfigField *family_llama_cpp_ignored(const Family *f, const Config *c);

/* Whether c's block is f's: its norm, MLP, positions and flags (a
 * Gemma's √dim embedding set, no grouped KV heads for GPT-2). */
bool family_block_matches(const Family *f, const Config *c);

#endif
