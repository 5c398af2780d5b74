/* cli/inspect.c: `stepwise inspect`, what a model costs: its weights, and
 * the KV cache it needs per token, per context and per request, with the
 * formula written out, and the same for every possible KV-head count. */
#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "ref/cli/commands.h"
#include "ref/cli/common.h"
#include "ref/cli/options.h"
#include "ref/cli/presets.h"
#include "trace/float_format.h"
#include "ref/formats/gguf.h"
#include "ref/formats/gguf_model.h"
#include "ref/serve/prefix_cache.h"
#include "ref/cli/identity.h"
#include "ref/nonfinite.h"
#include "ref/kernels/quant_model.h"
#include "trace/trace_events.h"

/* The help's usage lines and what the command does. */
static const char INSPECT_USAGE[] =
    "usage: stepwise inspect [--model FILE | --preset P] [--context N] [--requests R] "
    "[--json]\n"
    "                        [--kv-dtype D] [--weight-dtype D] [--no-hash] "
    "[--check-weights]\n"
    "\n"
    "Print a model's shape and attention kind, its parameters and weight bytes,\n"
    "and its KV cache: bytes per token, at N tokens, for R concurrent requests,\n"
    "the context at which the cache outgrows the weights, and the same for every\n"
    "KV-head count that divides the query heads (what if it were MQA/GQA/MHA).\n";

/* How the bill stores a value: a what-if for bytes only (stepwise computes
 * in float32 whatever the bill says). */
typedef enum { DTYPE_F32, DTYPE_BF16, DTYPE_F16, DTYPE_INT8 } BillDtype;
static const char *const DTYPE_NAMES[] = {"f32", "bf16", "f16", "int8"};

typedef struct {
    BillDtype kv, weights;
    int group; /* int8 weights' group */
} Bill;

static bool parse_dtype(const char *text, const char *option, BillDtype *out, StepError *err) {
    for (int i = 0; i < 4; i++) {
        if (strcmp(text, DTYPE_NAMES[i]) == 0) {
            *out = (BillDtype)i;
            return true;
        }
    }
    return step_fail(err, "%s must be f32, bf16, f16 or int8, got '%s'", option, text);
}

/* The files a model came from, with their SHA-256 (cli/identity.h). */
static void print_files(const cJSON *files) {
    const cJSON *list = cJSON_GetObjectItem(files, "files"), *f;
    printf("\nfiles (sha256):\n");
    if (list == NULL)
        printf("  %s  %s\n", cJSON_GetObjectItem(files, "sha256")->valuestring,
               cJSON_GetObjectItem(files, "file")->valuestring);
    cJSON_ArrayForEach(f, list) {
        printf("  %s  %s\n", cJSON_GetObjectItem(f, "sha256")->valuestring,
               cJSON_GetObjectItem(f, "file")->valuestring);
    }
}

/* The cache facts of one shape at a context and request count. */
typedef struct {
    uint64_t weight_bytes, per_token, at_context, total;
    uint64_t outgrows_at; /* smallest context whose caches exceed the weights */
} CacheFacts;

/* Bytes of the weights and of one position's K and V rows as b stores them. */
static uint64_t bill_weight_bytes(const Config *c, const Bill *b) {
    if (b->weights == DTYPE_INT8) return quant_weight_bytes(c, b->group);
    return config_param_count(c) * (b->weights == DTYPE_F32 ? 4u : 2u);
}

/* A mixture of experts: the weights one decode step reads, each layer's
 * router and only its k chosen experts, the classifier whole and one
 * embedding row (all of it when tied: the classifier), in the bill's type:
 * in int8, every held byte (quant_weight_bytes) but the experts not chosen
 * and the embedding's other rows. */
static uint64_t decode_weight_bytes(const Config *c, const Bill *b) {
    if (b->weights == DTYPE_INT8) {
        int g = b->group, rows, cols;
        uint64_t bytes = quant_weight_bytes(c, g), row = quant_matrix_bytes(1, c->dim, g);
        uint64_t unchosen = (uint64_t)(c->n_layers - config_dense_layers(c)) *
                            (uint64_t)(c->n_experts - c->n_experts_used);
        for (int k = 0; k < EXPERT_MATRICES; k++) {
            expert_matrix_shape(c, (ExpertKind)k, &rows, &cols);
            bytes -= unchosen * quant_matrix_bytes(rows, cols, g);
        }
        return c->shared_classifier ? bytes + row : bytes - (uint64_t)(c->vocab_size - 1) * row;
    }
    uint64_t d = (uint64_t)c->dim, params = config_active_param_count(c);
    /* the classifier whole and one embedding row: tied, the row besides the shared matrix */
    params = c->shared_classifier ? params + d : params - (uint64_t)(c->vocab_size - 1) * d;
    return params * (b->weights == DTYPE_F32 ? 4u : 2u);
}

static uint64_t bill_kv_bytes_per_token(const Config *c, const Bill *b) {
    if (b->kv == DTYPE_INT8) return kv_cache_bytes_q8(c, 1);
    return kv_cache_bytes(c, 1) / (b->kv == DTYPE_F32 ? 1u : 2u);
}

static CacheFacts cache_facts(const Config *c, int context, int requests, const Bill *b) {
    CacheFacts f;
    f.weight_bytes = bill_weight_bytes(c, b);
    f.per_token = bill_kv_bytes_per_token(c, b);
    f.at_context = f.per_token * (uint64_t)context;
    f.total = f.at_context * (uint64_t)requests;
    f.outgrows_at = f.weight_bytes / (f.per_token * (uint64_t)requests) + 1;
    return f;
}

static double mib(uint64_t bytes) {
    return (double)bytes / (1024.0 * 1024.0);
}

/* Every field of the table (config_table.h) the run header shows, by the
 * name it has there, but the shape's: what a trace or a diff calls it. */
static void print_fields(const Config *c) {
    printf("  fields:");
    int shown = 0;
    bool prev = false;
    for (int i = 0; i < CONFIG_N_FIELDS; i++) {
        const ConfigField *f = &CONFIG_FIELD_LIST[i];
        double v = config_field_effective(c, f);
        prev = f->show == CF_ALWAYS || (f->show == CF_IF_SET && config_field_get(c, f) != 0) ||
               (f->show == CF_WITH_PREV && prev);
        if (!prev || f->group == CF_SHAPE) continue;
        const char *sep = shown == 0 ? " " : shown % 4 == 0 ? ",\n         " : ", ";
        shown++;
        printf("%s%s%s ", sep, f->group == CF_MOE ? "moe." : "", f->trace);
        char number[24];
        if (f->type == CF_TYPE_FLOAT) format_float9((float)v, number); /* the trace's form */
        printf("%s", f->type == CF_TYPE_BOOL ? (v != 0 ? "true" : "false")
                     : f->type == CF_TYPE_INT
                         ? (snprintf(number, sizeof number, "%d", (int)v), number)
                         : number);
    }
    printf("\n");
}

/* The architecture's variations, when not llama2.c's, on one line. */
static void print_arch(const Config *c) {
    if (config_is_llama2c(c)) return;
    if (c->position == POS_LEARNED)
        printf("  architecture: learned positions (no RoPE)");
    else
        printf("  architecture: RoPE %s, theta %g",
               c->rope_layout == ROPE_HALVES ? "halves" : "pairs", (double)config_rope_theta(c));
    if (c->rope_dims > 0)
        printf(", on the first %d of each head's %d dimensions", c->rope_dims, config_head_dim(c));
    if (c->rope_scaling.type == ROPE_SCALING_FACTORS)
        printf(", a scaling factor per frequency (at most x%g)", (double)c->rope_scaling.factor);
    else if (c->rope_scaling.type != ROPE_SCALING_NONE)
        printf(", %s scaling x%g", config_rope_scaling_name(c->rope_scaling.type),
               (double)c->rope_scaling.factor);
    printf("%s%s%s%s%s, %s eps %g\n",
           c->fused_files ? ", q/k/v and gate/up fused in its files" : "",
           c->qkv_bias ? ", q/k/v biases" : "", c->proj_bias ? ", output and MLP biases" : "",
           c->qk_norm ? ", q/k norms" : "",
           c->mlp == MLP_GELU    ? ", GELU MLP (tanh)"
           : c->mlp == MLP_GEGLU ? ", GeGLU MLP (tanh)"
                                 : "",
           c->norm == NORM_LAYER ? "LayerNorm" : "norm", (double)config_norm_eps(c));
    if (c->post_norms || c->embed_scale > 0) /* Gemma's */
        printf("  gemma: embedding x %.9g, norms x (1 + w)%s, scores / sqrt(%g)\n",
               (double)c->embed_scale,
               c->post_norms ? " before and after attention and the MLP" : "",
               (double)config_query_scale(c));
    if (c->attn_softcap > 0 || c->final_softcap > 0)
        printf("  soft-capping: scores %g, logits %g (0: none)\n", (double)c->attn_softcap,
               (double)c->final_softcap);
    if (c->sliding_window > 0) {
        int sliding = 0;
        for (int l = 0; l < c->n_layers; l++) sliding += config_layer_slides(c, l);
        printf("  sliding window: %d positions on %d of %d layers%s", c->sliding_window, sliding,
               c->n_layers,
               c->sliding_window >= c->seq_len ? " (as wide as the context: it masks nothing)"
                                               : "");
        if (c->rope_local_theta > 0)
            printf(", which turn at a RoPE base of %g, unscaled", (double)c->rope_local_theta);
        printf(" (the cache still holds every position)\n");
    }
    print_fields(c);
}

/* batch --prefix-cache with a budget of `budget` bytes: the positions it
 * holds (float32 rows, or int8 ones with --kv-dtype int8, as batch keeps
 * them: prefix_cache_position_bytes), and the whole memory bill. */
typedef struct {
    uint64_t budget, positions, prompts, total;
} PrefixFacts;

static PrefixFacts prefix_facts(const Config *c, int context, int requests, uint64_t budget,
                                const Bill *b) {
    CacheFacts f = cache_facts(c, context, requests, b);
    PrefixFacts p = {.budget = budget,
                     .positions = budget / prefix_cache_position_bytes(c, b->kv == DTYPE_INT8)};
    p.prompts = p.positions / (uint64_t)context;
    p.total = f.weight_bytes + f.total + budget;
    return p;
}

static void print_prefix_text(const Config *c, int context, int requests, uint64_t budget,
                              const Bill *b) {
    CacheFacts f = cache_facts(c, context, requests, b);
    PrefixFacts p = prefix_facts(c, context, requests, budget, b);
    printf("\nprefix cache (batch --prefix-cache: prompts' rows, shared by every request):\n");
    printf("  a budget of %llu bytes holds %llu / %llu (%s rows, and a 4-byte token id) = "
           "%llu positions: %llu prompt%s of %d tokens\n",
           (unsigned long long)budget, (unsigned long long)budget,
           (unsigned long long)prefix_cache_position_bytes(c, b->kv == DTYPE_INT8),
           b->kv == DTYPE_INT8 ? "int8" : "float32", (unsigned long long)p.positions,
           (unsigned long long)p.prompts, p.prompts == 1 ? "" : "s", context);
    printf("  weights + %d request cache%s + prefix cache = %llu + %llu + %llu = %llu bytes "
           "(%.2f MiB) at most\n",
           requests, requests == 1 ? "" : "s", (unsigned long long)f.weight_bytes,
           (unsigned long long)f.total, (unsigned long long)budget, (unsigned long long)p.total,
           mib(p.total));
}

/* Where a loaded model's weights live (NULL for a preset: nothing loaded). */
static void print_memory_text(const WeightMemory *w) {
    if (w == NULL) return;
    printf("  held: %llu bytes mapped from the files (%.2f MiB: page cache, shared and "
           "evictable), %llu anonymous (%.2f MiB)\n",
           (unsigned long long)w->mapped, mib(w->mapped), (unsigned long long)w->anonymous,
           mib(w->anonymous));
    printf("  the fast kernels pack the matrices into %llu anonymous bytes (%.2f MiB) as they "
           "let the mapped pages go; the plain kernels read them where they are\n",
           (unsigned long long)w->packed, mib(w->packed));
}

static void print_text(const char *name, const char *source, const Config *c, int context,
                       int requests, const Bill *b, bool is_q8, const WeightMemory *held) {
    int group = b->group;
    CacheFacts f = cache_facts(c, context, requests, b);
    int head_dim = config_head_dim(c), sharing = c->n_heads / c->n_kv_heads;
    printf("model %s\n", name);
    if (source[0] != '\0') printf("  from: %s\n", source);
    print_arch(c);
    printf("  dim %d, hidden_dim %d, %d layers, vocab %d, seq_len %d, %s classifier\n", c->dim,
           c->hidden_dim, c->n_layers, c->vocab_size, c->seq_len,
           c->shared_classifier ? "tied" : "untied");
    printf("  attention: %s, %d query heads, %d KV heads: %d query head%s share each KV head; "
           "head_dim %d, kv_dim %d\n",
           config_attention_kind(c), c->n_heads, c->n_kv_heads, sharing, sharing == 1 ? "" : "s",
           head_dim, config_kv_dim(c));
    printf("  parameters: %llu, weights %llu bytes (%.2f MiB of %s)\n",
           (unsigned long long)config_param_count(c), (unsigned long long)f.weight_bytes,
           mib(f.weight_bytes), DTYPE_NAMES[b->weights]);
    if (c->n_experts > 0) {
        int moe = c->n_layers - config_dense_layers(c);
        uint64_t active = config_active_param_count(c);
        printf("  a mixture of experts: %d experts, %d a token, in %d of %d layers (each %d wide); "
               "%llu parameters active a token (%.1f%% of them); a decode step reads %llu bytes of "
               "weights (%.2f MiB of %s): the router and the chosen experts\n",
               c->n_experts, c->n_experts_used, moe, c->n_layers, c->expert_hidden_dim,
               (unsigned long long)active, 100.0 * (double)active / (double)config_param_count(c),
               (unsigned long long)decode_weight_bytes(c, b), mib(decode_weight_bytes(c, b)),
               DTYPE_NAMES[b->weights]);
    }
    uint64_t q8 = quant_weight_bytes(c, group);
    uint64_t f32_weights = config_param_count(c) * sizeof(float);
    printf("  in int8 (group %d): %llu bytes (%.2f MiB, %.2fx smaller)%s\n", group,
           (unsigned long long)q8, mib(q8), (double)f32_weights / (double)q8,
           is_q8 ? ": this file" : "");
    print_memory_text(held);
    printf("\nKV cache (the K and V of every position, in every layer; Q is not cached):\n");
    if (b->kv == DTYPE_INT8)
        printf(
            "  per token, int8: %d layers x %d KV heads x (%d head_dim x 1 byte + a 4-byte scale) "
            "x 2 (K and V) = %llu bytes\n",
            c->n_layers, c->n_kv_heads, head_dim, (unsigned long long)f.per_token);
    else
        printf("  per token: %d layers x %d KV heads x %d head_dim x 2 (K and V) x %d bytes%s = "
               "%llu bytes\n",
               c->n_layers, c->n_kv_heads, head_dim, b->kv == DTYPE_F32 ? 4 : 2,
               b->kv == DTYPE_F32    ? ""
               : b->kv == DTYPE_BF16 ? " (bf16)"
                                     : " (f16)",
               (unsigned long long)f.per_token);
    printf("  at %d tokens: %d x %llu = %llu bytes (%.2f MiB)%s\n", context, context,
           (unsigned long long)f.per_token, (unsigned long long)f.at_context, mib(f.at_context),
           context > c->seq_len ? ", beyond the model's seq_len" : "");
    printf("  for %d request%s: %d x %llu = %llu bytes (%.2f MiB), %.2fx the weights\n", requests,
           requests == 1 ? "" : "s", requests, (unsigned long long)f.at_context,
           (unsigned long long)f.total, mib(f.total), (double)f.total / (double)f.weight_bytes);
    printf("  the cache outgrows the weights at %llu tokens per request\n",
           (unsigned long long)f.outgrows_at);
    uint64_t kv8 = kv_cache_bytes_q8(c, 1), kv32 = kv_cache_bytes(c, 1);
    if (b->kv != DTYPE_INT8)
        printf("  in int8 (one scale per position and KV head): %llu bytes per token, %llu at %d "
               "tokens x %d (%.2fx smaller)\n",
               (unsigned long long)kv8, (unsigned long long)(kv8 * (uint64_t)context * requests),
               context, requests, (double)kv32 / (double)kv8);
    printf("\nwhat if this model had another number of KV heads (same %d query heads):\n\n",
           c->n_heads);
    printf("| KV heads | kind | query heads per KV head | weight bytes | KV bytes per token "
           "| KV bytes, %d tokens x %d | outgrows weights at |\n",
           context, requests);
    printf("|---|---|---|---|---|---|---|\n");
    for (int kv = 1; kv <= c->n_heads; kv++) {
        if (c->n_heads % kv != 0) continue;
        Config v = *c;
        v.n_kv_heads = kv;
        CacheFacts g = cache_facts(&v, context, requests, b);
        printf("| %d%s | %s | %d | %llu | %llu | %llu | %llu |\n", kv,
               kv == c->n_kv_heads ? " (this model)" : "", config_attention_kind(&v),
               c->n_heads / kv, (unsigned long long)g.weight_bytes, (unsigned long long)g.per_token,
               (unsigned long long)g.total, (unsigned long long)g.outgrows_at);
    }
}

static cJSON *facts_json(const Config *c, int context, int requests, const Bill *b) {
    CacheFacts f = cache_facts(c, context, requests, b);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "n_kv_heads", c->n_kv_heads);
    cJSON_AddStringToObject(o, "attention", config_attention_kind(c));
    cJSON_AddNumberToObject(o, "queries_per_kv_head", c->n_heads / c->n_kv_heads);
    cJSON_AddNumberToObject(o, "params", (double)config_param_count(c));
    cJSON_AddNumberToObject(o, "weight_bytes", (double)f.weight_bytes);
    if (c->n_experts > 0) { /* a mixture of experts: what one token runs and a decode step reads */
        cJSON_AddNumberToObject(o, "active_params", (double)config_active_param_count(c));
        cJSON_AddNumberToObject(o, "decode_weight_bytes", (double)decode_weight_bytes(c, b));
    }
    cJSON_AddNumberToObject(o, "kv_bytes_per_token", (double)f.per_token);
    cJSON_AddNumberToObject(o, "kv_bytes_at_context", (double)f.at_context);
    cJSON_AddNumberToObject(o, "kv_bytes_total", (double)f.total);
    cJSON_AddNumberToObject(o, "outgrows_weights_at", (double)f.outgrows_at);
    return o;
}

/* A GGUF file's tensors: name, type, shape (fastest dimension first, as
 * stored), bytes on disk and as float32 in memory. */
static cJSON *gguf_tensor_list(const char *path, StepError *err) {
    GgufFile f;
    if (!gguf_open(&f, path, err)) return NULL;
    cJSON *list = cJSON_CreateArray();
    for (uint64_t i = 0; i < f.n_tensors; i++) {
        const GgufTensor *t = &f.tensors[i];
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "name", t->name);
        cJSON_AddStringToObject(e, "type", gguf_type_name(t->type));
        cJSON *shape = cJSON_AddArrayToObject(e, "shape");
        for (int d = 0; d < t->n_dims; d++)
            cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)t->ne[d]));
        cJSON_AddNumberToObject(e, "bytes", (double)t->bytes);
        cJSON_AddNumberToObject(e, "float32_bytes", (double)(t->numel * 4));
        cJSON_AddItemToArray(list, e);
    }
    gguf_close(&f);
    return list;
}

static void print_gguf_tensors(const cJSON *list) {
    double disk = 0, mem = 0;
    const cJSON *e;
    printf("\nGGUF tensors (type, shape fastest first, bytes in the file -> as float32):\n");
    cJSON_ArrayForEach(e, list) {
        const cJSON *shape = cJSON_GetObjectItem(e, "shape"), *d;
        char dims[96] = "";
        cJSON_ArrayForEach(d, shape) {
            snprintf(dims + strlen(dims), sizeof dims - strlen(dims), "%s%.0f",
                     dims[0] ? " x " : "", d->valuedouble);
        }
        double b = cJSON_GetObjectItem(e, "bytes")->valuedouble;
        double f = cJSON_GetObjectItem(e, "float32_bytes")->valuedouble;
        printf("  %-28s %-5s %-16s %12.0f -> %12.0f\n", cJSON_GetObjectItem(e, "name")->valuestring,
               cJSON_GetObjectItem(e, "type")->valuestring, dims, b, f);
        disk += b, mem += f;
    }
    printf("  all: %.0f bytes in the file, %.0f as float32 (%.2fx)\n", disk, mem,
           disk > 0 ? mem / disk : 0);
}

static void print_json(const char *name, const char *source, const cJSON *files, const Config *c,
                       int context, int requests, uint64_t prefix_bytes, const Bill *b, bool is_q8,
                       const cJSON *tensors, const WeightMemory *held) {
    int group = b->group;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "model_path", name);
    if (source[0] != '\0') cJSON_AddStringToObject(o, "source", source);
    if (files != NULL) cJSON_AddItemToObject(o, "files", cJSON_Duplicate(files, true));
    if (tensors != NULL) cJSON_AddItemToObject(o, "gguf_tensors", cJSON_Duplicate(tensors, true));
    cJSON_AddItemToObject(o, "model", trace_config_json(c));
    cJSON_AddNumberToObject(o, "context", context);
    cJSON_AddNumberToObject(o, "requests", requests);
    cJSON_AddStringToObject(o, "kv_dtype", DTYPE_NAMES[b->kv]);
    cJSON_AddStringToObject(o, "weight_dtype", DTYPE_NAMES[b->weights]);
    char formula[256];
    if (b->kv == DTYPE_INT8)
        snprintf(
            formula, sizeof formula,
            "%d tokens x %d layers x %d KV heads x (%d head_dim x 1 byte + 4) x 2 x %d requests",
            context, c->n_layers, c->n_kv_heads, config_head_dim(c), requests);
    else
        snprintf(formula, sizeof formula,
                 "%d tokens x %d layers x %d KV heads x %d head_dim x 2 x %d bytes x %d requests",
                 context, c->n_layers, c->n_kv_heads, config_head_dim(c),
                 b->kv == DTYPE_F32 ? 4 : 2, requests);
    cJSON_AddStringToObject(o, "formula", formula);
    cJSON_AddItemToObject(o, "this_model", facts_json(c, context, requests, b));
    if (held != NULL) {
        cJSON *h = cJSON_AddObjectToObject(o, "weights_held");
        cJSON_AddNumberToObject(h, "mapped_bytes", (double)held->mapped);
        cJSON_AddNumberToObject(h, "anonymous_bytes", (double)held->anonymous);
        cJSON_AddNumberToObject(h, "packed_bytes", (double)held->packed);
    }
    cJSON *q = cJSON_AddObjectToObject(o, "int8");
    cJSON_AddBoolToObject(q, "this_file", is_q8);
    cJSON_AddNumberToObject(q, "group", group);
    cJSON_AddNumberToObject(q, "weight_bytes", (double)quant_weight_bytes(c, group));
    cJSON_AddNumberToObject(q, "kv_bytes_per_token", (double)kv_cache_bytes_q8(c, 1));
    cJSON_AddNumberToObject(q, "kv_bytes_total",
                            (double)(kv_cache_bytes_q8(c, context) * (uint64_t)requests));
    if (prefix_bytes > 0) {
        PrefixFacts p = prefix_facts(c, context, requests, prefix_bytes, b);
        cJSON *pc = cJSON_AddObjectToObject(o, "prefix_cache");
        cJSON_AddNumberToObject(pc, "budget_bytes", (double)p.budget);
        cJSON_AddNumberToObject(pc, "positions", (double)p.positions);
        cJSON_AddNumberToObject(pc, "prompts_at_context", (double)p.prompts);
        cJSON_AddNumberToObject(pc, "total_bytes_at_most", (double)p.total);
    }
    cJSON *variants = cJSON_AddArrayToObject(o, "variants");
    for (int kv = 1; kv <= c->n_heads; kv++) {
        if (c->n_heads % kv != 0) continue;
        Config v = *c;
        v.n_kv_heads = kv;
        cJSON_AddItemToArray(variants, facts_json(&v, context, requests, b));
    }
    char *s = cJSON_Print(o);
    puts(s);
    cJSON_free(s);
    cJSON_Delete(o);
}

typedef struct {
    const char *model;
    const ModelPreset *preset;
    int context, requests;
    long long prefix_bytes;
    bool json, no_hash, check_weights;
    BillDtype kv, weights;
} InspectArgs;

static bool parse_preset(const CliOption *o, const char *value, void *dest, StepError *err) {
    (void)o;
    return (*(const ModelPreset **)dest = model_preset_find(value, err)) != NULL;
}
static bool parse_prefix_bytes(const CliOption *o, const char *value, void *dest, StepError *err) {
    (void)o;
    return cli_parse_bytes(value, "--prefix-cache-bytes", dest, err);
}
/* --kv-dtype D or --weight-dtype D. */
static bool parse_bill_dtype(const CliOption *o, const char *value, void *dest, StepError *err) {
    char name[24];
    snprintf(name, sizeof name, "--%s", o->name);
    return parse_dtype(value, name, dest, err);
}

static const CliOption INSPECT_OPTIONS[] = {
    {"model", "FILE", OPTION_TEXT, offsetof(InspectArgs, model),
     .help = "checkpoint (.bin or .q8), JSON model, GGUF file or Hugging Face\n"
             "folder (default: the built-in tiny model)"},
    {"preset", "P", OPTION_CUSTOM, offsetof(InspectArgs, preset), .parse = parse_preset,
     .help = "a real model's published shape, without its weights:\n"
             "smollm2-135m, qwen3-0.6b, llama-3.2-1b, llama-3-8b,\n"
             "tinyllama-1.1b, gpt2, gpt2-medium, phi-3-mini-4k, gemma-2-2b,\n"
             "gemma-3-1b, mixtral-8x7b or qwen3-30b-a3b"},
    {"context", "N", OPTION_INT, offsetof(InspectArgs, context), 1, 1 << 30,
     .help = "tokens per request (default: the model's seq_len; may exceed\n"
             "it, as a what-if)"},
    {"requests", "R", OPTION_INT, offsetof(InspectArgs, requests), 1, 1 << 20,
     .help = "concurrent requests, each with its own cache (default 1)"},
    {"kv-dtype", "D", OPTION_CUSTOM, offsetof(InspectArgs, kv), .parse = parse_bill_dtype,
     .help = "bill the KV cache as f32 (what stepwise holds; the default),\n"
             "bf16 or f16 (2 bytes a value, as production engines hold it),\n"
             "or int8 (a byte a value and a float32 scale per position and\n"
             "KV head)"},
    {"weight-dtype", "D", OPTION_CUSTOM, offsetof(InspectArgs, weights), .parse = parse_bill_dtype,
     .help = "bill the weights as f32 (the default), bf16 or f16 (as Hugging\n"
             "Face files store them), or int8 (groups of 32 with a float32\n"
             "scale)"},
    {"prefix-cache-bytes", "N", OPTION_CUSTOM, offsetof(InspectArgs, prefix_bytes),
     .parse = parse_prefix_bytes,
     .help = "also account for batch's prefix cache of N bytes,\n"
             "shared by the requests (docs/batching.md)"},
    {"json", NULL, OPTION_FLAG, offsetof(InspectArgs, json),
     .help = "print one JSON object (docs/kv-cache.md)"},
    {"check-weights", NULL, OPTION_FLAG, offsetof(InspectArgs, check_weights),
     .help = "scan every weight for NaN and infinity: exit 2 naming the\n"
             "first tensor and index that holds one"},
    {"no-hash", NULL, OPTION_FLAG, offsetof(InspectArgs, no_hash),
     .help = "leave out the SHA-256 of the model's files (a big model's take\n"
             "a while: hashing reads every byte)"},
    CLI_OPTIONS_END};

static const CliCommandOptions INSPECT_COMMAND = {
    .command = "inspect", .options = INSPECT_OPTIONS, .usage = INSPECT_USAGE};

int cli_inspect(int argc, char **argv) {
    InspectArgs args = {.requests = 1, .kv = DTYPE_F32, .weights = DTYPE_F32};
    StepError err;
    int parsed = cli_options_parse(&INSPECT_COMMAND, argc, argv, &args, NULL, &err);
    if (parsed == 0) return 0;
    bool ok = parsed > 0;
    Bill bill = {.kv = args.kv, .weights = args.weights, .group = 32};
    if (ok && args.preset != NULL && args.model != NULL)
        ok = step_fail(&err, "inspect: give --model or --preset, not both");
    Model m = {0};
    cJSON *files = NULL;
    if (ok && args.preset != NULL) { /* the shape alone: no weights to load */
        bool untied = false;
        model_fields_mark(&m.config); /* every field the preset's */
        model_preset_apply(args.preset, &m.config, &untied);
        model_fields_settle(&m.config);
        hf_architecture_apply(args.preset->arch, &m.config);
        m.config.shared_classifier = !untied;
        snprintf(m.source, sizeof m.source, "preset %s: %s's published config.json",
                 args.preset->name, args.preset->source);
        args.model = NULL;
    } else if (ok) {
        ok = cli_load_model_only(args.model, WEIGHTS_STORED, &m, NULL, &err);
    }
    if (ok && args.check_weights && args.preset != NULL)
        ok = step_fail(&err, "inspect: --check-weights needs --model (a preset has no weights)");
    if (ok && args.check_weights && !model_check_finite(&m, &err)) model_free(&m), ok = false;
    if (ok && args.check_weights)
        fprintf(stderr, "--check-weights: every weight is a finite number\n");
    if (ok && !cli_model_files(args.model, args.no_hash, &files, &err)) {
        model_free(&m);
        ok = false;
    }
    cJSON *tensors = NULL;
    if (ok && args.model != NULL && gguf_is_model_path(args.model) &&
        (tensors = gguf_tensor_list(args.model, &err)) == NULL) {
        model_free(&m);
        cJSON_Delete(files);
        ok = false;
    }
    if (!ok) {
        cli_print_error(&err);
        return EXIT_BAD_INPUT;
    }
    if (args.context == 0) args.context = m.config.seq_len;
    const char *name = args.preset  ? args.preset->name
                       : args.model ? args.model
                                    : "(built-in tiny model)";
    bool is_q8 = m.weight_group > 0;
    bill.group = is_q8 ? m.weight_group : 32;
    WeightMemory held = model_weight_memory(&m); /* int8 matrices are owned: anonymous */
    const WeightMemory *loaded = args.preset != NULL ? NULL : &held;
    if (args.json)
        print_json(name, m.source, files, &m.config, args.context, args.requests,
                   (uint64_t)args.prefix_bytes, &bill, is_q8, tensors, loaded);
    else
        print_text(name, m.source, &m.config, args.context, args.requests, &bill, is_q8, loaded);
    if (!args.json && args.prefix_bytes > 0)
        print_prefix_text(&m.config, args.context, args.requests, (uint64_t)args.prefix_bytes,
                          &bill);
    if (!args.json && files != NULL) print_files(files);
    if (!args.json && tensors != NULL) print_gguf_tensors(tensors);
    cJSON_Delete(files);
    cJSON_Delete(tensors);
    model_free(&m);
    return 0;
}
