/* cli/inspect_text.c: inspect's report as text (inspect.h). */
#include "ref/cli/inspect.h"

#include <stdio.h>
#include <string.h>

#include "ref/model/model_quant.h"
#include "ref/serve/prefix_cache.h"
#include "trace/float_format.h"

/* The files a model came from, with their SHA-256 (cli/identity.h). */
void inspect_print_files(const cJSON *files) {
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

/* Every field of the table (config_table.h) the run header shows, by the
 * name it has there, but the shape's: what a trace or a diff calls it. */
static void print_fields(const Config *c) {
    printf("  fields:");
    int shown = 0;
    bool prev = false;
    for (int i = 0; i < CONFIG_FIELD_COUNT; i++) {
        const ConfigField *f = &CONFIG_FIELD_LIST[i];
        double v = config_field_effective(c, f);
        prev = config_field_shown(c, f, prev);
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
        for (int l = 0; l < c->n_layers; l++) sliding += config_attention_spec(c, l).window > 0;
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

void inspect_print_prefix(const Config *c, int context, int requests, uint64_t budget,
                          const Bill *b) {
    CacheFacts f = inspect_cache_facts(c, context, requests, b);
    PrefixFacts p = inspect_prefix_facts(c, context, requests, budget, b);
    printf("\nprefix cache (batch --prefix-cache: prompts' rows, shared by every request):\n");
    printf(
        "  a budget of %llu bytes holds %llu / %llu (%s rows, and a 4-byte token id) = "
        "%llu positions: %llu prompt%s of %d tokens\n",
        (unsigned long long)budget, (unsigned long long)budget,
        (unsigned long long)prefix_cache_position_bytes(c, b->kv == DTYPE_INT8 ? KV_INT8 : KV_F32),
        b->kv == DTYPE_INT8 ? "int8" : "float32", (unsigned long long)p.positions,
        (unsigned long long)p.prompts, p.prompts == 1 ? "" : "s", context);
    printf("  weights + %d request cache%s + prefix cache = %llu + %llu + %llu = %llu bytes "
           "(%.2f MiB) at most\n",
           requests, requests == 1 ? "" : "s", (unsigned long long)f.weight_bytes,
           (unsigned long long)f.total, (unsigned long long)budget, (unsigned long long)p.total,
           inspect_mib(p.total));
}

/* Where a loaded model's weights live (NULL for a preset: nothing loaded). */
static void print_memory_text(const WeightMemory *w) {
    if (w == NULL) return;
    printf("  held: %llu bytes mapped from the files (%.2f MiB: page cache, shared and "
           "evictable), %llu anonymous (%.2f MiB)\n",
           (unsigned long long)w->mapped, inspect_mib(w->mapped), (unsigned long long)w->anonymous,
           inspect_mib(w->anonymous));
    printf("  the fast kernels pack the matrices into %llu anonymous bytes (%.2f MiB) as they "
           "let the mapped pages go; the plain kernels read them where they are\n",
           (unsigned long long)w->packed, inspect_mib(w->packed));
}

/* The run of a cache bill's last lines: the tokens, the requests, and where
 * the cache outgrows the weights. */
static void print_cache_totals(const Config *c, const CacheFacts *f, int context, int requests) {
    printf("  at %d tokens: %d x %llu = %llu bytes (%.2f MiB)%s\n", context, context,
           (unsigned long long)f->per_token, (unsigned long long)f->at_context,
           inspect_mib(f->at_context), context > c->seq_len ? ", beyond the model's seq_len" : "");
    printf("  for %d request%s: %d x %llu = %llu bytes (%.2f MiB), %.2fx the weights\n", requests,
           requests == 1 ? "" : "s", requests, (unsigned long long)f->at_context,
           (unsigned long long)f->total, inspect_mib(f->total),
           (double)f->total / (double)f->weight_bytes);
    printf("  the cache outgrows the weights at %llu tokens per request\n",
           (unsigned long long)f->outgrows_at);
}

/* MLA's cache (DeepSeek-V2): the latent and the rotary key a position and
 * layer, against the same attention's K and V of every head, expanded. */
static void print_mla_cache_text(const Config *c, int context, int requests, const Bill *b) {
    CacheFacts f = inspect_cache_facts(c, context, requests, b);
    int bytes = b->kv == DTYPE_F32 ? 4 : 2, head_dim = config_head_dim(c);
    uint64_t expanded = (uint64_t)c->n_layers * config_expanded_cache_floats(c) * (uint64_t)bytes;
    printf("\nKV cache (multi-head latent attention: a position caches one latent and one "
           "rotary key in every layer; each head's K and V are rebuilt from them):\n");
    printf("  per token, latent: %d layers x (%d latent + %d rotary key) x %d bytes%s = %llu "
           "bytes\n",
           c->n_layers, c->kv_lora_rank, c->qk_rope_head_dim, bytes,
           b->kv == DTYPE_F32    ? ""
           : b->kv == DTYPE_BF16 ? " (bf16)"
                                 : " (f16)",
           (unsigned long long)f.per_token);
    printf("  per token, expanded to each head's K and V: %d layers x %d heads x (%d + %d) x %d "
           "bytes = %llu bytes, %.2fx the latent\n",
           c->n_layers, c->n_heads, head_dim, config_v_head_dim(c), bytes,
           (unsigned long long)expanded, (double)expanded / (double)f.per_token);
    print_cache_totals(c, &f, context, requests);
}

void inspect_print_text(const char *name, const char *source, const Config *c, int context,
                        int requests, const Bill *b, bool is_q8, const WeightMemory *held) {
    int group = b->group;
    CacheFacts f = inspect_cache_facts(c, context, requests, b);
    int head_dim = config_head_dim(c), sharing = c->n_heads / c->n_kv_heads;
    printf("model %s\n", name);
    if (source[0] != '\0') printf("  from: %s\n", source);
    print_arch(c);
    printf("  dim %d, hidden_dim %d, %d layers, vocab %d, seq_len %d, %s classifier\n", c->dim,
           c->hidden_dim, c->n_layers, c->vocab_size, c->seq_len,
           c->shared_classifier ? "tied" : "untied");
    if (config_mla(c))
        printf("  attention: MLA, %d query heads, each rebuilding its key and value from one "
               "latent of %d and a rotary key of %d shared by the heads; head_dim %d (%d + %d "
               "turned by RoPE), values %d\n",
               c->n_heads, c->kv_lora_rank, c->qk_rope_head_dim, head_dim,
               head_dim - c->qk_rope_head_dim, c->qk_rope_head_dim, config_v_head_dim(c));
    else
        printf("  attention: %s, %d query heads, %d KV heads: %d query head%s per KV head; "
               "head_dim %d, kv_dim %d\n",
               config_attention_kind(c), c->n_heads, c->n_kv_heads, sharing,
               sharing == 1 ? "" : "s", head_dim, config_kv_dim(c));
    printf("  parameters: %llu, weights %llu bytes (%.2f MiB of %s)\n",
           (unsigned long long)config_param_count(c), (unsigned long long)f.weight_bytes,
           inspect_mib(f.weight_bytes), BILL_DTYPE_NAMES[b->weights]);
    if (c->n_experts > 0) {
        int moe = c->n_layers - config_dense_layers(c);
        uint64_t active = config_active_param_count(c);
        printf("  a mixture of experts: %d experts, %d a token, in %d of %d layers (each %d wide); "
               "%llu parameters active a token (%.1f%% of them); a decode step reads %llu bytes of "
               "weights (%.2f MiB of %s): the router and the chosen experts\n",
               c->n_experts, c->n_experts_used, moe, c->n_layers, c->expert_hidden_dim,
               (unsigned long long)active, 100.0 * (double)active / (double)config_param_count(c),
               (unsigned long long)inspect_decode_weight_bytes(c, b),
               inspect_mib(inspect_decode_weight_bytes(c, b)), BILL_DTYPE_NAMES[b->weights]);
    }
    uint64_t q8 = quant_weight_bytes(c, group);
    uint64_t f32_weights = config_param_count(c) * sizeof(float);
    printf("  in int8 (group %d): %llu bytes (%.2f MiB, %.2fx smaller)%s\n", group,
           (unsigned long long)q8, inspect_mib(q8), (double)f32_weights / (double)q8,
           is_q8 ? ": this file" : "");
    print_memory_text(held);
    if (config_mla(c)) {
        print_mla_cache_text(c, context, requests, b);
        return;
    }
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
    print_cache_totals(c, &f, context, requests);
    /* against the cache just shown (its dtype's bytes), not float32's */
    uint64_t kv8 = kv_cache_bytes_q8(c, 1);
    if (b->kv != DTYPE_INT8)
        printf("  in int8 (one scale per position and KV head): %llu bytes per token, %llu at %d "
               "tokens x %d (%.2fx smaller than the %s cache above)\n",
               (unsigned long long)kv8, (unsigned long long)(kv8 * (uint64_t)context * requests),
               context, requests, (double)f.per_token / (double)kv8,
               b->kv == DTYPE_F32    ? "f32"
               : b->kv == DTYPE_BF16 ? "bf16"
                                     : "f16");
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
        CacheFacts g = inspect_cache_facts(&v, context, requests, b);
        printf("| %d%s | %s | %d | %llu | %llu | %llu | %llu |\n", kv,
               kv == c->n_kv_heads ? " (this model)" : "", config_attention_kind(&v),
               c->n_heads / kv, (unsigned long long)g.weight_bytes, (unsigned long long)g.per_token,
               (unsigned long long)g.total, (unsigned long long)g.outgrows_at);
    }
}

/* One row of the capacity table: this shape's requests for each cache type
 * ("-" where the type has no form: MLA's latents in int8). */
static void print_capacity_row(const Config *c, const char *label, int context, uint64_t memory,
                               const Bill *b) {
    printf("| %s | %s |", label, config_attention_kind(c));
    for (int k = 0; k < CAPACITY_KINDS; k++) {
        if (CAPACITY_DTYPES[k] == DTYPE_INT8 && !kv_type_exists(c, KV_INT8)) {
            printf(" - |");
            continue;
        }
        CapacityFacts f = inspect_capacity(c, context, memory, CAPACITY_DTYPES[k], b);
        printf(" %llu (%.2f MiB each) |", (unsigned long long)f.requests,
               inspect_mib(f.per_request));
    }
    printf("\n");
}

void inspect_print_capacity(const Config *c, int context, uint64_t memory, const Bill *b) {
    CapacityFacts w = inspect_capacity(c, context, memory, DTYPE_F32, b);
    printf(
        "\nrequests of %d tokens that fit in %llu bytes (%.2f GiB) beside the weights (%llu bytes "
        "of %s):\n",
        context, (unsigned long long)memory, (double)memory / (1024.0 * 1024.0 * 1024.0),
        (unsigned long long)w.weight_bytes, BILL_DTYPE_NAMES[b->weights]);
    if (memory < w.weight_bytes) {
        printf("  none: the weights alone need %llu bytes more\n",
               (unsigned long long)(w.weight_bytes - memory));
        return;
    }
    if (memory == w.weight_bytes) { /* not "need 0 bytes more": they fit, and nothing else */
        printf("  none: the weights alone fill every byte\n");
        return;
    }
    printf("(each other KV-head count beside its own weights: its k and v projections differ)\n");
    printf("\n| KV heads | kind | f32 cache | f16 or bf16 cache | int8 cache |\n");
    printf("|---|---|---|---|---|\n");
    if (config_mla(c)) { /* one cache of latents: no KV heads to vary */
        print_capacity_row(c, "(latents)", context, memory, b);
        return;
    }
    for (int kv = 1; kv <= c->n_heads; kv++) {
        if (c->n_heads % kv != 0) continue;
        Config v = *c;
        v.n_kv_heads = kv;
        char label[32];
        snprintf(label, sizeof label, "%d%s", kv, kv == c->n_kv_heads ? " (this model)" : "");
        print_capacity_row(&v, label, context, memory, b);
    }
}

void inspect_print_gguf_tensors(const cJSON *list) {
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
