/* hf_write.c: see hf_write.h. */
#include "ref/formats/hf_write.h"

#include "ref/util/file_util.h"
#include "ref/util/float16.h"
#include "ref/formats/hf_gemma.h"
#include "ref/formats/hf_gpt2.h"
#include "ref/formats/hf_model.h"
#include "ref/formats/hf_moe.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* One tensor to write: its name, its float32 values and shape, and
 * whether its rows are a rotated projection's (heads > 0: back to halves).
 * A tensor of a random model (random) has no values: they are drawn as it
 * is written, from rng (the stream's state at its first value) and scale
 * (0: ones), exactly as model_init_random would have drawn them. */
typedef struct {
    char name[128];
    const float *values;
    int64_t rows, cols; /* rows 0: a vector of cols */
    int heads;
    bool random;
    XorshiftRng rng;
    float scale;
    float minus; /* taken off every value as written: Gemma's norms' 1 */
} OutTensor;

/* Rows written at a time: a head's (RoPE pairs rows inside one head), or 64. */
#define CHUNK_ROWS 64

static bool write_values(FILE *f, OutTensor *t, SafetensorsDtype dtype, int head_dim) {
    int64_t rows = t->rows == 0 ? t->cols : t->rows, cols = t->rows == 0 ? 1 : t->cols;
    int64_t chunk = t->heads > 0 ? head_dim : CHUNK_ROWS;
    int size = dtype == ST_F32 ? 4 : 2;
    float *values = t->random ? malloc((size_t)(chunk * cols) * sizeof(float)) : NULL;
    unsigned char *bytes = malloc((size_t)(chunk * cols * size));
    bool ok = bytes != NULL && (values != NULL || !t->random);
    for (int64_t r0 = 0; ok && r0 < rows; r0 += chunk) {
        int64_t n = rows - r0 < chunk ? rows - r0 : chunk;
        const float *src = t->values + r0 * cols;
        if (t->random) { /* rows r0.., drawn in order */
            model_random_fill(values, (uint64_t)(n * cols), t->scale, &t->rng);
            src = values;
        }
        unsigned char *b = bytes;
        for (int64_t r = r0; r < r0 + n; r++) {
            uint64_t from = rope_source_row((uint64_t)r, head_dim,
                                            t->heads > 0 ? ROWS_TO_HALVES : ROWS_AS_HELD);
            const float *row = src + ((int64_t)from - r0) * cols;
            for (int64_t c = 0; c < cols; c++) {
                uint32_t bits;
                float v = row[c] - t->minus; /* exact for a norm's 1 + w >= 0.5 (Sterbenz) */
                if (dtype == ST_F32)
                    memcpy(&bits, &v, 4);
                else
                    bits = dtype == ST_F16 ? float_to_half(v) : float_to_bf16(v);
                for (int i = 0; i < size; i++) *b++ = (unsigned char)(bits >> (8 * i));
            }
        }
        ok = fwrite(bytes, 1, (size_t)(b - bytes), f) == (size_t)(b - bytes);
    }
    free(values), free(bytes);
    return ok;
}

static int64_t numel(const OutTensor *t) {
    return t->rows == 0 ? t->cols : t->rows * t->cols;
}

/* One safetensors file of tensors[0..n). */
static bool write_file(const char *path, OutTensor *const *tensors, int n, SafetensorsDtype dtype,
                       int head_dim, StepError *err) {
    cJSON *h = cJSON_CreateObject();
    int64_t offset = 0, size = dtype == ST_F32 ? 4 : 2;
    for (int i = 0; i < n; i++) {
        const OutTensor *t = tensors[i];
        cJSON *e = cJSON_AddObjectToObject(h, t->name);
        cJSON_AddStringToObject(e, "dtype", safetensors_dtype_name(dtype));
        cJSON *shape = cJSON_AddArrayToObject(e, "shape");
        if (t->rows > 0) cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)t->rows));
        cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)t->cols));
        cJSON *off = cJSON_AddArrayToObject(e, "data_offsets");
        cJSON_AddItemToArray(off, cJSON_CreateNumber((double)offset));
        offset += numel(t) * size;
        cJSON_AddItemToArray(off, cJSON_CreateNumber((double)offset));
    }
    cJSON_AddItemToObject(h, "__metadata__", cJSON_CreateObject());
    cJSON_AddStringToObject(cJSON_GetObjectItem(h, "__metadata__"), "format", "pt");
    char *text = cJSON_PrintUnformatted(h);
    cJSON_Delete(h);
    FILE *f = text ? fopen(path, "wb") : NULL;
    size_t len = text ? strlen(text) : 0, padded = (len + 7) / 8 * 8;
    unsigned char head[8];
    for (int i = 0; i < 8; i++) head[i] = (unsigned char)((uint64_t)padded >> (8 * i));
    bool ok = f != NULL && fwrite(head, 1, 8, f) == 8 && fwrite(text, 1, len, f) == len;
    for (size_t i = len; ok && i < padded; i++) ok = fputc(' ', f) != EOF;
    for (int i = 0; ok && i < n; i++) ok = write_values(f, tensors[i], dtype, head_dim);
    if (f != NULL && fclose(f) != 0) ok = false;
    free(text);
    return ok || step_fail(err, "%s: write failed: %s", path, strerror(errno));
}

/* Layer l's router and experts under their Hugging Face names (an MoE
 * layer: hf_moe.h), into out; returns how many. */
static int list_experts(const Model *m, int l, OutTensor *out) {
    const Config *c = &m->config;
    if (!config_layer_moe(c, l)) return 0;
    int n = 0;
    for (int e = -1; e < c->n_experts; e++)
        for (int part = 0; part < (e < 0 ? 1 : 3); part++) {
            int rows, cols;
            OutTensor *t = &out[n++];
            *t = (OutTensor){0};
            hf_moe_tensor_name(!hf_moe_mixtral(c), l, e, (ExpertKind)part, t->name, sizeof t->name);
            t->values = hf_moe_tensor_view(m, l, e, (ExpertKind)part, &rows, &cols);
            t->rows = rows, t->cols = cols;
        }
    return n;
}

/* Every tensor of m under its Hugging Face name; fused (not NULL: Phi-3's,
 * [n_layers, q_dim + 2 kv_dim + 2 hidden, dim], the caller's room) holds q,
 * k, v, gate and up fused (hf_fuse_layer, q's and k's rows in halves),
 * written as qkv_proj and gate_up_proj instead. Returns how many. */
static int list_tensors(const Model *m, float *fused, OutTensor *out) {
    const Config *c = &m->config;
    int64_t d = c->dim, vocab = c->vocab_size;
    int64_t qkv_rows = config_q_dim(c) + 2 * (int64_t)config_kv_dim(c), up_rows = 2 * c->hidden_dim;
    size_t per_layer = hf_fused_layer_floats(c);
    int n = 0;
    out[n++] = (OutTensor){.name = "model.embed_tokens.weight",
                           .values = model_matrix_floats(m, &m->embedding),
                           .rows = vocab,
                           .cols = d};
    float minus = c->norm_plus_one ? 1.0f : 0.0f; /* Gemma's files hold w, the model 1 + w */
    out[n++] = (OutTensor){.name = "model.norm.weight",
                           .values = model_vector(m, VEC_FINAL_NORM, 0),
                           .cols = d,
                           .minus = minus};
    if (!c->shared_classifier)
        out[n++] = (OutTensor){.name = "lm_head.weight",
                               .values = model_matrix_floats(m, &m->classifier),
                               .rows = vocab,
                               .cols = d};
    for (int l = 0; l < c->n_layers; l++) {
        HfLayerTensor parts[HF_LAYER_TENSORS];
        int count = hf_layer_tensors(m, l, parts);
        for (int i = 0; i < count; i++) {
            bool attn;
            int row0, total;
            if (fused != NULL && hf_fused_rows(c, parts[i].kind, &attn, &row0, &total))
                continue; /* in qkv_proj and gate_up_proj, below */
            OutTensor *t = &out[n++];
            snprintf(t->name, sizeof t->name, "model.layers.%d.%s", l, parts[i].name);
            t->values = parts[i].view, t->rows = (int64_t)parts[i].rows;
            t->cols = (int64_t)parts[i].cols, t->heads = parts[i].heads;
            if (hf_is_norm_weight(parts[i].name)) t->minus = minus;
        }
        n += list_experts(m, l, out + n);
        if (fused == NULL) continue;
        float *buf = fused + (size_t)l * per_layer;
        hf_fuse_layer(m, l, ROWS_TO_HALVES, buf);
        OutTensor *t = &out[n++];
        *t = (OutTensor){.values = buf, .rows = qkv_rows, .cols = d};
        snprintf(t->name, sizeof t->name, "model.layers.%d.self_attn.qkv_proj.weight", l);
        t = &out[n++];
        *t = (OutTensor){.values = buf + qkv_rows * d, .rows = up_rows, .cols = d};
        snprintf(t->name, sizeof t->name, "model.layers.%d.mlp.gate_up_proj.weight", l);
    }
    return n;
}

static int by_name(const void *a, const void *b) {
    return strcmp((*(const OutTensor *const *)a)->name, (*(const OutTensor *const *)b)->name);
}

/* Gemma's keys beyond the table's (hf_gemma.h): its activation, the
 * attention scale and local RoPE base as used (null would mean none to
 * Hugging Face), the window (one as wide as the context when none), and
 * which layers slide (layer_types, and Gemma 3's older
 * sliding_window_pattern when one number says it). */
static void gemma_config_json(cJSON *o, const Config *c, const Family *a) {
    cJSON_AddStringToObject(o, "hidden_activation", "gelu_pytorch_tanh");
    cJSON_AddNumberToObject(o, "query_pre_attn_scalar", config_query_scale(c));
    /* no window: one as wide as the context, which masks nothing */
    cJSON_AddNumberToObject(o, "sliding_window",
                            c->sliding_window > 0 ? c->sliding_window : c->seq_len);
    /* with no window the family's own pattern (layer l slides unless (l + 1)
     * % N == 0), so that the folder is the family's shape, which llama.cpp
     * assumes (convert's gemma_fits): the same maths, as a window as wide as
     * the context masks nothing */
    int pattern =
        c->sliding_pattern > 0 ? c->sliding_pattern : (int)family_default(a, "sliding_pattern");
    cJSON *types = cJSON_AddArrayToObject(o, "layer_types");
    for (int l = 0; l < c->n_layers; l++) {
        bool slides =
            c->sliding_window > 0 ? config_attention_spec(c, l).window > 0 : (l + 1) % pattern != 0;
        cJSON_AddItemToArray(types,
                             cJSON_CreateString(slides ? "sliding_attention" : "full_attention"));
    }
    if (family_default(a, "rope_local_theta") > 0) { /* a local base of its own (Gemma 3's) */
        cJSON_AddNumberToObject(o, "rope_local_base_freq",
                                c->rope_local_theta > 0 ? c->rope_local_theta
                                                        : config_rope_theta(c));
        if (c->sliding_pattern > 0)
            cJSON_AddNumberToObject(o, "sliding_window_pattern", c->sliding_pattern);
    }
}

/* A mixture of experts' keys beyond the table's (hf_moe.h): the experts'
 * count, the experts a token runs, Mixtral's width (intermediate_size)
 * and Qwen3-MoE's dense layers. */
static void moe_config_json(cJSON *o, const Config *c, bool qwen) {
    cJSON_AddNumberToObject(o, qwen ? "num_experts" : "num_local_experts", c->n_experts);
    cJSON_AddNumberToObject(o, "num_experts_per_tok", c->n_experts_used);
    if (!qwen) {
        cJSON_ReplaceItemInObject(o, "intermediate_size", cJSON_CreateNumber(c->expert_hidden_dim));
        return;
    }
    cJSON *dense = cJSON_AddArrayToObject(o, "mlp_only_layers");
    for (int i = 0; i < c->n_dense_layers; i++)
        cJSON_AddItemToArray(dense, cJSON_CreateNumber(c->dense_layers[i]));
}

/* DeepSeek-V2's keys beyond the table's (hf_deepseek2_config reads them):
 * the query's unturned width, the routed experts, greedy softmax routing,
 * and its dense layers as the first k (false when they are not). */
static bool deepseek2_config_json(cJSON *o, const Config *c) {
    cJSON_AddNumberToObject(o, "qk_nope_head_dim", config_head_dim(c) - c->qk_rope_head_dim);
    cJSON_AddStringToObject(o, "hidden_act", "silu");
    cJSON_AddBoolToObject(o, "attention_bias", false);
    if (c->n_experts == 0) {
        cJSON_AddNullToObject(o, "n_routed_experts");
        return true;
    }
    cJSON_AddNumberToObject(o, "n_routed_experts", c->n_experts);
    cJSON_AddNumberToObject(o, "num_experts_per_tok", c->n_experts_used);
    cJSON_AddNumberToObject(o, "first_k_dense_replace", c->n_dense_layers);
    cJSON_AddNumberToObject(o, "moe_layer_freq", 1);
    cJSON_AddStringToObject(o, "topk_method",
                            c->expert_groups > 0 ? "group_limited_greedy" : "greedy");
    cJSON_AddStringToObject(o, "scoring_func", "softmax");
    for (int l = 0; l < c->n_layers; l++)
        if (config_layer_moe(c, l) != (l >= c->n_dense_layers)) return false;
    return true;
}

static cJSON *config_json(const Config *c, const Family *a, SafetensorsDtype dtype) {
    cJSON *o = cJSON_CreateObject();
    cJSON *archs = cJSON_AddArrayToObject(o, "architectures");
    cJSON_AddItemToArray(archs, cJSON_CreateString(a->hf_class));
    cJSON_AddStringToObject(o, "model_type", a->hf_model_type);
    cJSON_AddNumberToObject(o, "hidden_size", c->dim);
    cJSON_AddNumberToObject(o, "intermediate_size", c->hidden_dim);
    cJSON_AddNumberToObject(o, "num_hidden_layers", c->n_layers);
    cJSON_AddNumberToObject(o, "num_attention_heads", c->n_heads);
    cJSON_AddNumberToObject(o, "num_key_value_heads", c->n_kv_heads);
    cJSON_AddNumberToObject(o, "head_dim", config_head_dim(c));
    cJSON_AddNumberToObject(o, "vocab_size", c->vocab_size);
    cJSON_AddNumberToObject(o, "max_position_embeddings", c->seq_len);
    cJSON_AddBoolToObject(o, "tie_word_embeddings", c->shared_classifier);
    const RopeScaling *rs = &c->rope_scaling;
    if (rs->type == ROPE_SCALING_LINEAR || rs->type == ROPE_SCALING_LLAMA3) {
        cJSON *scaling = cJSON_AddObjectToObject(o, "rope_scaling");
        bool llama3 = rs->type == ROPE_SCALING_LLAMA3;
        cJSON_AddStringToObject(scaling, "rope_type", llama3 ? "llama3" : "linear");
        cJSON_AddNumberToObject(scaling, "factor", rs->factor);
        if (llama3) {
            cJSON_AddNumberToObject(scaling, "low_freq_factor", rs->low_freq_factor);
            cJSON_AddNumberToObject(scaling, "high_freq_factor", rs->high_freq_factor);
            cJSON_AddNumberToObject(scaling, "original_max_position_embeddings",
                                    rs->original_context);
        }
    } else if (rs->type == ROPE_SCALING_LONGROPE) { /* Phi-3's, as read_longrope reads it */
        cJSON *scaling = cJSON_AddObjectToObject(o, "rope_scaling");
        cJSON_AddStringToObject(scaling, "type", "longrope");
        cJSON *sf = cJSON_AddArrayToObject(scaling, "short_factor");
        cJSON *lf = cJSON_AddArrayToObject(scaling, "long_factor");
        for (int i = 0; i < config_rope_dims(c) / 2; i++) {
            cJSON_AddItemToArray(sf, cJSON_CreateNumber(rs->factors[i]));
            cJSON_AddItemToArray(lf, cJSON_CreateNumber(rs->long_factors[i]));
        }
        cJSON_AddNumberToObject(scaling, "attention_factor", rs->attention_factor);
        cJSON_AddNumberToObject(o, "original_max_position_embeddings", rs->original_context);
    } else if (rs->type == ROPE_SCALING_YARN) { /* as read_yarn reads it */
        cJSON *scaling = cJSON_AddObjectToObject(o, "rope_scaling");
        cJSON_AddStringToObject(scaling, "type", "yarn");
        cJSON_AddNumberToObject(scaling, "factor", rs->factor);
        cJSON_AddNumberToObject(scaling, "original_max_position_embeddings", rs->original_context);
        cJSON_AddNumberToObject(scaling, "beta_fast", rs->beta_fast);
        cJSON_AddNumberToObject(scaling, "beta_slow", rs->beta_slow);
        cJSON_AddNumberToObject(scaling, "mscale", rs->mscale);
        cJSON_AddNumberToObject(scaling, "mscale_all_dim", rs->mscale_all_dim);
    }
    bool mla = a->attention == FAMILY_ATTENTION_MLA;
    if (a->routing == FAMILY_ROUTING_MIXTRAL || a->routing == FAMILY_ROUTING_QWEN3MOE)
        moe_config_json(o, c, a->routing == FAMILY_ROUTING_QWEN3MOE);
    if (a->window == FAMILY_WINDOW_PATTERN)
        gemma_config_json(o, c, a);
    else if (mla && !deepseek2_config_json(o, c))
        return cJSON_Delete(o), NULL; /* dense layers DeepSeek-V2 cannot say */
    else if (!mla)
        cJSON_AddStringToObject(o, "hidden_act", "silu");
    cJSON_AddStringToObject(o, "torch_dtype",
                            dtype == ST_F32   ? "float32"
                            : dtype == ST_F16 ? "float16"
                                              : "bfloat16");
    hf_config_fields_write(o, c, a); /* the table's keys (config_table.h) */
    return o;
}

/* Remove the files this call wrote into dir, then dir. */
static void remove_written(const char *dir, char names[][64], int n) {
    char path[4096];
    for (int i = 0; i < n; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        unlink(path);
    }
    rmdir(dir);
}

/* Copy the file src to dst whole (dst is new: inside the folder being made). */
static bool copy_file(const char *src, const char *dst, StepError *err) {
    char *bytes;
    size_t n;
    if (!file_read_bytes(src, "tokenizer", &bytes, &n, err)) return false;
    FILE *f = fopen(dst, "wb");
    bool ok = f != NULL && fwrite(bytes, 1, n, f) == n;
    if (f != NULL && fclose(f) != 0) ok = false;
    free(bytes);
    return ok || step_fail(err, "%s: write failed: %s", dst, strerror(errno));
}

/* tokenizer.json, and tokenizer_config.json when there is one, from the
 * folder src into dir; their names go into names[*written..]. */
static bool copy_tokenizer(const char *src, const char *dir, char (*names)[64], int *written,
                           StepError *err) {
    static const char *const files[] = {"tokenizer.json", "tokenizer_config.json"};
    for (int i = 0; i < 2; i++) {
        char from[4096], to[4096];
        snprintf(from, sizeof from, "%s/%s", src, files[i]);
        snprintf(to, sizeof to, "%s/%s", dir, files[i]);
        if (i == 1 && access(from, F_OK) != 0) break;
        snprintf(names[(*written)++], sizeof names[0], "%s", files[i]);
        if (!copy_file(from, to, err)) return false;
    }
    return true;
}

/* The random stream's state at each tensor's first value: each tensor lies
 * in one of the layout's parts, at a known count of draws from the start;
 * one pass over the stream, in that order, stops at each. */
static bool seed_tensors(const Model *layout, uint64_t seed, OutTensor *all, int n) {
    RandomPart parts[MODEL_RANDOM_PARTS];
    int np = model_random_parts(layout, parts);
    uint64_t *draws = malloc((size_t)n * sizeof *draws);
    int *order = malloc((size_t)n * sizeof *order);
    if (draws == NULL || order == NULL) {
        free(draws), free(order);
        return false;
    }
    for (int i = 0; i < n; i++) {
        uint64_t before = 0; /* draws before the part */
        all[i].random = true;
        for (int p = 0; p < np; p++) {
            if (all[i].values >= parts[p].view && all[i].values < parts[p].view + parts[p].n) {
                all[i].scale = parts[p].scale;
                draws[i] =
                    before + (parts[p].scale != 0 ? (uint64_t)(all[i].values - parts[p].view) : 0);
                break;
            }
            if (parts[p].scale != 0) before += parts[p].n;
        }
        order[i] = i;
    }
    for (int i = 1; i < n; i++) /* by draws: insertion sort (a few hundred tensors) */
        for (int j = i; j > 0 && draws[order[j - 1]] > draws[order[j]]; j--) {
            int t = order[j];
            order[j] = order[j - 1], order[j - 1] = t;
        }
    XorshiftRng rng = {seed};
    uint64_t at = 0;
    for (int k = 0; k < n; k++) {
        for (; at < draws[order[k]]; at++) xorshift_f32(&rng);
        all[order[k]].rng = rng;
    }
    free(draws), free(order);
    return true;
}

/* A GPT-2 folder of m: its Conv1D and fused tensors (hf_gpt2.h), as
 * OutTensors into all (the values owned by *held). */
static int list_gpt2(const Model *m, OutTensor *all, Gpt2Tensor **held) {
    int n = hf_gpt2_tensors(m, held);
    for (int i = 0; i < n; i++) {
        const Gpt2Tensor *t = &(*held)[i];
        all[i] = (OutTensor){.values = t->values, .rows = t->rows, .cols = t->cols};
        snprintf(all[i].name, sizeof all[i].name, "%s", t->name);
    }
    return n;
}

/* hf_model_save's work; seed != 0: m is a layout (model_reserve_layout)
 * whose values are drawn from the seed as they are written. */
static bool save_folder(const Model *m, uint64_t seed, const Family *a, const char *dir,
                        SafetensorsDtype dtype, int shards, const char *tokenizer_dir,
                        StepError *err) {
    const Config *c = &m->config;
    if (!model_in_storage(m) || c->rope_layout != ROPE_INTERLEAVED)
        return step_fail(err, "%s: only a float32 model as loaded can be written", dir);
    Config want = *c;
    family_apply(a, &want);
    if (memcmp(&want, c, sizeof want) != 0)
        return step_fail(err, "%s: the model's biases, norms, MLP or positions are not %s's", dir,
                         a->hf_class);
    bool gpt2 = a->position == POS_LEARNED; /* GPT2LMHeadModel's Conv1D tensors */
    if (gpt2 && (seed != 0 || c->n_kv_heads != c->n_heads))
        return step_fail(err,
                         "%s: a GPT-2 folder is written from a model in memory, with as "
                         "many KV heads as heads",
                         dir);
    size_t max_tensors =
        5 + (size_t)c->n_layers *
                ((HF_LAYER_TENSORS > 12 ? HF_LAYER_TENSORS : 12) + 1 + 3 * (size_t)c->n_experts);
    OutTensor *all = calloc(max_tensors, sizeof *all);
    OutTensor **order = malloc(max_tensors * sizeof *order);
    char(*names)[64] = calloc((size_t)shards + 4, sizeof *names);
    if (all == NULL || order == NULL || names == NULL) {
        free(all), free(order), free(names);
        return step_fail(err, "%s: out of memory", dir);
    }
    Gpt2Tensor *gpt2_parts = NULL;
    float *fused = NULL;
    if (a->fused_files) /* room for its fused tensors */
        fused = malloc((size_t)c->n_layers * hf_fused_layer_floats(c) * sizeof(float));
    int n = gpt2                              ? list_gpt2(m, all, &gpt2_parts)
            : a->fused_files && fused == NULL ? -1
                                              : list_tensors(m, fused, all),
        written = 0;
    int head_dim = config_head_dim(c);
    if (n < 0 || (seed != 0 && !seed_tensors(m, seed, all, n))) {
        free(all), free(order), free(names);
        return step_fail(err, "%s: out of memory", dir);
    }
    for (int i = 0; i < n; i++) order[i] = &all[i];
    qsort(order, (size_t)n, sizeof *order, by_name);
    bool made = mkdir(dir, 0755) == 0;
    bool ok = made || step_fail(err, "%s: cannot create: %s", dir, strerror(errno));
    const char *torch_dtype = dtype == ST_F32   ? "float32"
                              : dtype == ST_F16 ? "float16"
                                                : "bfloat16";
    cJSON *cfg = gpt2 ? hf_gpt2_config_json(c, torch_dtype) : config_json(c, a, dtype);
    if (ok && cfg == NULL)
        ok = step_fail(err, "%s: DeepSeek-V2's dense layers must be its first ones", dir);
    cJSON *index = cJSON_CreateObject();
    cJSON *map = cJSON_AddObjectToObject(index, "weight_map");
    OutTensor **part = malloc((size_t)n * sizeof *part);
    ok = ok && part != NULL;
    for (int s = 0; ok && s < shards; s++) { /* shard s takes tensors s, s + shards, ... */
        int k = 0;
        for (int i = s; i < n; i += shards) part[k++] = order[i];
        if (shards == 1)
            snprintf(names[written], sizeof names[0], "model.safetensors");
        else
            snprintf(names[written], sizeof names[0], "model-%05d-of-%05d.safetensors", s + 1,
                     shards);
        for (int i = 0; i < k; i++) cJSON_AddStringToObject(map, part[i]->name, names[written]);
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, names[written]);
        ok = write_file(path, part, k, dtype, head_dim, err);
        written++;
    }
    const char *json_files[] = {"config.json", "model.safetensors.index.json"};
    cJSON *json_docs[] = {cfg, index};
    for (int i = 0; ok && i < (shards > 1 ? 2 : 1); i++) {
        char path[4096], *text = cJSON_Print(json_docs[i]);
        snprintf(path, sizeof path, "%s/%s", dir, json_files[i]);
        snprintf(names[written++], sizeof names[0], "%s", json_files[i]);
        FILE *f = text ? fopen(path, "w") : NULL;
        ok = f != NULL && fputs(text, f) >= 0 && fputc('\n', f) != EOF;
        if (f != NULL && fclose(f) != 0) ok = false;
        if (!ok) step_fail(err, "%s: write failed: %s", path, strerror(errno));
        free(text);
    }
    if (ok && tokenizer_dir != NULL) ok = copy_tokenizer(tokenizer_dir, dir, names, &written, err);
    if (!ok && made) remove_written(dir, names, written);
    cJSON_Delete(cfg), cJSON_Delete(index);
    hf_gpt2_tensors_free(gpt2_parts, n);
    free(fused);
    free(all), free(order), free(part), free(names);
    return ok;
}

bool hf_model_save(const Model *m, const Family *a, const char *dir, SafetensorsDtype dtype,
                   int shards, const char *tokenizer_dir, StepError *err) {
    return save_folder(m, 0, a, dir, dtype, shards, tokenizer_dir, err);
}

bool hf_model_save_random(const Model *layout, uint64_t seed, const Family *a, const char *dir,
                          SafetensorsDtype dtype, int shards, const char *tokenizer_dir,
                          StepError *err) {
    if (seed == 0) return step_fail(err, "make-model: seed must not be 0");
    if (a->position == POS_LEARNED ||
        a->fused_files) { /* fused (and transposed): from the weights in memory */
        Model m;
        bool ok = model_init_random(&m, &layout->config, seed, err) &&
                  save_folder(&m, 0, a, dir, dtype, shards, tokenizer_dir, err);
        model_free(&m);
        return ok;
    }
    return save_folder(layout, seed, a, dir, dtype, shards, tokenizer_dir, err);
}
