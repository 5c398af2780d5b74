/* cli/inspect.c: `stepwise inspect`, what a model costs: its weights, and
 * the KV cache it needs per token, per context and per request, with the
 * formula written out, and the same for every possible KV-head count. */
#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "ref/cli/commands.h"
#include "ref/cli/inspect.h"
#include "ref/cli/common.h"
#include "ref/cli/options.h"
#include "ref/cli/presets.h"
#include "ref/formats/gguf.h"
#include "ref/formats/gguf_model.h"
#include "ref/cli/identity.h"
#include "ref/nonfinite.h"
#include "ref/model/model_quant.h"
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

static bool parse_dtype(const char *text, const char *option, BillDtype *out, StepError *err) {
    for (int i = 0; i < 4; i++) {
        if (strcmp(text, BILL_DTYPE_NAMES[i]) == 0) {
            *out = (BillDtype)i;
            return true;
        }
    }
    return step_fail(err, "%s must be f32, bf16, f16 or int8, got '%s'", option, text);
}

static cJSON *facts_json(const Config *c, int context, int requests, const Bill *b) {
    CacheFacts f = inspect_cache_facts(c, context, requests, b);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "n_kv_heads", c->n_kv_heads);
    cJSON_AddStringToObject(o, "attention", config_attention_kind(c));
    cJSON_AddNumberToObject(o, "queries_per_kv_head", c->n_heads / c->n_kv_heads);
    cJSON_AddNumberToObject(o, "params", (double)config_param_count(c));
    cJSON_AddNumberToObject(o, "weight_bytes", (double)f.weight_bytes);
    if (c->n_experts > 0) { /* a mixture of experts: what one token runs and a decode step reads */
        cJSON_AddNumberToObject(o, "active_params", (double)config_active_param_count(c));
        cJSON_AddNumberToObject(o, "decode_weight_bytes",
                                (double)inspect_decode_weight_bytes(c, b));
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

static cJSON *report_json(const char *name, const char *source, const cJSON *files, const Config *c,
                          int context, int requests, uint64_t prefix_bytes, const Bill *b,
                          bool is_q8, const cJSON *tensors, const WeightMemory *held) {
    int group = b->group;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "model_path", name);
    if (source[0] != '\0') cJSON_AddStringToObject(o, "source", source);
    if (files != NULL) cJSON_AddItemToObject(o, "files", cJSON_Duplicate(files, true));
    if (tensors != NULL) cJSON_AddItemToObject(o, "gguf_tensors", cJSON_Duplicate(tensors, true));
    cJSON_AddItemToObject(o, "model", trace_config_json(c));
    cJSON_AddNumberToObject(o, "context", context);
    cJSON_AddNumberToObject(o, "requests", requests);
    cJSON_AddStringToObject(o, "kv_dtype", BILL_DTYPE_NAMES[b->kv]);
    cJSON_AddStringToObject(o, "weight_dtype", BILL_DTYPE_NAMES[b->weights]);
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
    if (config_mla(c)) /* one row a position and layer: the latent and the rotary key */
        snprintf(formula, sizeof formula,
                 "%d tokens x %d layers x (%d latent + %d rotary key) x %d bytes x %d requests",
                 context, c->n_layers, c->kv_lora_rank, c->qk_rope_head_dim,
                 b->kv == DTYPE_F32 ? 4 : 2, requests);
    cJSON_AddStringToObject(o, "formula", formula);
    if (config_mla(c)) {
        uint64_t bytes = b->kv == DTYPE_F32 ? 4u : 2u;
        cJSON *mla = cJSON_AddObjectToObject(o, "mla");
        cJSON_AddNumberToObject(mla, "latent_values", (double)config_cache_floats(c));
        cJSON_AddNumberToObject(mla, "expanded_values", (double)config_expanded_cache_floats(c));
        cJSON_AddNumberToObject(mla, "latent_bytes_per_token",
                                (double)kv_cache_bytes(c, 1) / (b->kv == DTYPE_F32 ? 1 : 2));
        cJSON_AddNumberToObject(
            mla, "expanded_bytes_per_token",
            (double)((uint64_t)c->n_layers * config_expanded_cache_floats(c) * bytes));
    }
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
    if (!kv_type_exists(c, KV_INT8)) { /* no int8 cache of latents yet */
        cJSON_AddNullToObject(q, "kv_bytes_per_token");
        cJSON_AddNullToObject(q, "kv_bytes_total");
    } else {
        cJSON_AddNumberToObject(q, "kv_bytes_per_token", (double)kv_cache_bytes_q8(c, 1));
        cJSON_AddNumberToObject(q, "kv_bytes_total",
                                (double)(kv_cache_bytes_q8(c, context) * (uint64_t)requests));
    }
    if (prefix_bytes > 0) {
        PrefixFacts p = inspect_prefix_facts(c, context, requests, prefix_bytes, b);
        cJSON *pc = cJSON_AddObjectToObject(o, "prefix_cache");
        cJSON_AddNumberToObject(pc, "budget_bytes", (double)p.budget);
        cJSON_AddNumberToObject(pc, "positions", (double)p.positions);
        cJSON_AddNumberToObject(pc, "prompts_at_context", (double)p.prompts);
        cJSON_AddNumberToObject(pc, "total_bytes_at_most", (double)p.total);
    }
    cJSON *variants = cJSON_AddArrayToObject(o, "variants"); /* none for MLA: no KV heads */
    for (int kv = 1; !config_mla(c) && kv <= c->n_heads; kv++) {
        if (c->n_heads % kv != 0) continue;
        Config v = *c;
        v.n_kv_heads = kv;
        cJSON_AddItemToArray(variants, facts_json(&v, context, requests, b));
    }
    return o;
}

/* The capacity table as JSON: the memory, the weights' bytes, and one row
 * for each KV-head count (MLA: the model) with each cache type's requests. */
static cJSON *capacity_json(const Config *c, int context, uint64_t memory, const Bill *b) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "memory_bytes", (double)memory);
    cJSON_AddNumberToObject(o, "context", context);
    cJSON_AddNumberToObject(
        o, "weight_bytes", (double)inspect_capacity(c, context, memory, DTYPE_F32, b).weight_bytes);
    cJSON *rows = cJSON_AddArrayToObject(o, "rows");
    for (int kv = 1; kv <= c->n_heads; kv++) {
        if (config_mla(c) ? kv != c->n_kv_heads : c->n_heads % kv != 0) continue;
        Config v = *c;
        v.n_kv_heads = kv;
        cJSON *row = cJSON_CreateObject();
        cJSON_AddNumberToObject(row, "n_kv_heads", kv);
        cJSON_AddStringToObject(row, "attention", config_attention_kind(&v));
        cJSON_AddNumberToObject(
            row, "weight_bytes", /* its own k and v projections */
            (double)inspect_capacity(&v, context, memory, DTYPE_F32, b).weight_bytes);
        for (int k = 0; k < CAPACITY_KINDS; k++) {
            char key[40];
            snprintf(key, sizeof key, "requests_%s", BILL_DTYPE_NAMES[CAPACITY_DTYPES[k]]);
            if (CAPACITY_DTYPES[k] == DTYPE_INT8 && !kv_type_exists(c, KV_INT8)) {
                cJSON_AddNullToObject(row, key);
                continue;
            }
            CapacityFacts f = inspect_capacity(&v, context, memory, CAPACITY_DTYPES[k], b);
            cJSON_AddNumberToObject(row, key, (double)f.requests);
            snprintf(key, sizeof key, "bytes_per_request_%s", BILL_DTYPE_NAMES[CAPACITY_DTYPES[k]]);
            cJSON_AddNumberToObject(row, key, (double)f.per_request);
        }
        cJSON_AddItemToArray(rows, row);
    }
    return o;
}

typedef struct {
    const char *model;
    const ModelPreset *preset;
    int context, requests;
    long long prefix_bytes, memory;
    float bandwidth_gb, peak_gmacs;
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
static bool parse_memory(const CliOption *o, const char *value, void *dest, StepError *err) {
    (void)o;
    return cli_parse_bytes(value, "--memory", dest, err);
}
/* --kv-dtype D or --weight-dtype D. */
static bool parse_bill_dtype(const CliOption *o, const char *value, void *dest, StepError *err) {
    char name[24];
    snprintf(name, sizeof name, "--%s", o->name);
    return parse_dtype(value, name, dest, err);
}

static const CliOption INSPECT_OPTIONS[] = {
    {"model", "FILE", OPTION_TEXT, offsetof(InspectArgs, model), .path = PATH_IN,
     .help = "checkpoint (.bin or .q8), JSON model, GGUF file or Hugging Face\n"
             "folder (default: the built-in tiny model)"},
    {"preset", "P", OPTION_CUSTOM, offsetof(InspectArgs, preset), .parse = parse_preset,
     .help =
         "a real model's published shape, without its weights:\n"
         "smollm2-135m, qwen3-0.6b, llama-3.2-1b, llama-3-8b,\n"
         "llama-2-7b, llama-2-13b, tinyllama-1.1b, gpt2, gpt2-medium, phi-3-mini-4k, gemma-2-2b,\n"
         "gemma-3-1b, mixtral-8x7b, qwen3-30b-a3b or deepseek-v2-lite\n"
         "(deepseek-ai/DeepSeek-V2-Lite: multi-head latent attention)"},
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
    {"memory", "BYTES", OPTION_CUSTOM, offsetof(InspectArgs, memory), .parse = parse_memory,
     .help = "also say how many requests of --context tokens fit in BYTES\n"
             "(a unit allowed: 80GB, 24GiB) beside the weights, for a f32,\n"
             "f16 and int8 cache and every KV-head count (docs/kv-cache.md)"},
    {"bandwidth", "GB/S", OPTION_FLOAT, offsetof(InspectArgs, bandwidth_gb), 0, 1000000,
     .help = "also print the roofline: each step's multiply-adds a byte and\n"
             "the tokens/s this memory bandwidth allows (a spec sheet's, or\n"
             "make bench's read rate; docs/roofline.md); 0: none (default)"},
    {"peak", "GMAC/S", OPTION_FLOAT, offsetof(InspectArgs, peak_gmacs), 0, 1000000000,
     .help = "with --bandwidth: the machine's peak in G multiply-adds a second,\n"
             "for the compute roof and the balance; 0: none (default)"},
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
        family_apply(family_find(args.preset->family), &m.config);
        m.config.shared_classifier = !untied;
        snprintf(m.source, sizeof m.source, "preset %s: %s's published config.json",
                 args.preset->name, args.preset->source);
        args.model = NULL;
    } else if (ok) {
        ok = cli_load_model_only(args.model, WEIGHTS_STORED, &m, NULL, &err);
    }
    if (ok && args.kv == DTYPE_INT8 && !kv_type_exists(&m.config, KV_INT8))
        ok = step_fail(&err,
                       "inspect: MLA (%s) has no int8 form of its cache of latents yet: "
                       "--kv-dtype takes f32, bf16 or f16",
                       config_family(&m.config));
    if (ok && args.peak_gmacs > 0 && args.bandwidth_gb <= 0)
        ok = step_fail(&err, "inspect: --peak goes with --bandwidth (the roofline's two roofs)");
    if (ok && args.check_weights && args.preset != NULL)
        ok = step_fail(&err, "inspect: --check-weights needs --model (a preset has no weights)");
    if (ok && args.check_weights && !model_check_finite(&m, &err)) ok = false;
    if (ok && args.check_weights)
        fprintf(stderr, "--check-weights: every weight is a finite number\n");
    if (ok && !cli_model_files(args.model, args.no_hash, &files, &err)) ok = false;
    cJSON *tensors = NULL;
    if (ok && args.model != NULL && gguf_is_model_path(args.model) &&
        (tensors = gguf_tensor_list(args.model, &err)) == NULL)
        ok = false;
    if (!ok) { /* one cleanup for every refusal: the refusals after the load leaked the model */
        model_free(&m);
        cJSON_Delete(files);
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
    if (args.json) {
        cJSON *o = report_json(name, m.source, files, &m.config, args.context, args.requests,
                               (uint64_t)args.prefix_bytes, &bill, is_q8, tensors, loaded);
        if (args.bandwidth_gb > 0)
            cJSON_AddItemToObject(o, "roofline",
                                  inspect_roofline_json(&m.config, args.context,
                                                        args.bandwidth_gb * 1e9,
                                                        args.peak_gmacs * 1e9, &bill));
        if (args.memory > 0)
            cJSON_AddItemToObject(
                o, "capacity",
                capacity_json(&m.config, args.context, (uint64_t)args.memory, &bill));
        char *text = cJSON_Print(o);
        puts(text);
        cJSON_free(text);
        cJSON_Delete(o);
    } else
        inspect_print_text(name, m.source, &m.config, args.context, args.requests, &bill, is_q8,
                           loaded);
    if (!args.json && args.bandwidth_gb > 0)
        inspect_print_roofline(&m.config, args.context, args.bandwidth_gb * 1e9,
                               args.peak_gmacs * 1e9, &bill);
    if (!args.json && args.memory > 0)
        inspect_print_capacity(&m.config, args.context, (uint64_t)args.memory, &bill);
    if (!args.json && args.prefix_bytes > 0)
        inspect_print_prefix(&m.config, args.context, args.requests, (uint64_t)args.prefix_bytes,
                             &bill);
    if (!args.json && files != NULL) inspect_print_files(files);
    if (!args.json && tensors != NULL) inspect_print_gguf_tensors(tensors);
    cJSON_Delete(files);
    cJSON_Delete(tensors);
    model_free(&m);
    return 0;
}
