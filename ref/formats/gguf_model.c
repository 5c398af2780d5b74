/* gguf_model.c: see gguf_model.h. */
#include "ref/formats/gguf_model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ref/family.h"
#include "ref/formats/gguf.h"
#include "ref/formats/gguf_fields.h"
#include "ref/formats/gguf_mla.h"
#include "ref/kernels/gguf_dequant.h"
#include "ref/formats/gguf_tokenizer.h"
#include "ref/formats/hf_model.h"

bool gguf_is_model_path(const char *path) {
    size_t n = path ? strlen(path) : 0;
    return n > 5 && strcmp(path + n - 5, ".gguf") == 0;
}

/* <arch>.<name> as a whole number in [1, 2^30] into *out. */
static bool arch_uint(const GgufFile *f, const char *arch, const char *name, int *out,
                      StepError *err) {
    char key[128];
    uint64_t v;
    snprintf(key, sizeof key, "%s.%s", arch, name);
    if (!gguf_get_uint(f, key, 1u << 30, &v) || v == 0)
        return step_fail(err, "%s: needs %s, a whole number from 1", f->path, key);
    *out = (int)v;
    return true;
}

/* Gemma 2's and Gemma 3's block as llama.cpp runs it (hf_gemma.h): the
 * norms as the file holds them (1 + w, the converter's sum), the embedding
 * times √dim in float32, every layer but each pattern's last sliding
 * (llama.cpp's swa pattern: 2 for gemma2, 6 for gemma3), Gemma 3's
 * sliding layers at a RoPE base of 10000, and the scores divided by
 * √head_dim but for the 27B models' √(dim / heads), which llama.cpp tells
 * by their layer counts (46, 62). Gemma 2's soft-caps default to 50 and 30. */
static bool read_gemma(const GgufFile *f, const Family *family, Config *c, StepError *err) {
    char key[128];
    snprintf(key, sizeof key, "%s.attention.sliding_window", family->gguf);
    uint64_t window = 0;
    bool ok = true; /* the soft-caps are the table's keys (gguf_fields.h) */
    if (gguf_find_kv(f, key) != NULL && !gguf_get_uint(f, key, 1u << 30, &window))
        ok = step_fail(err, "%s: %s must be a whole number", f->path, key);
    c->sliding_window = (int)window;
    c->sliding_pattern = (int)family_default(family, "sliding_pattern");
    float local = (float)family_default(family, "rope_local_theta"); /* Gemma 3's 10000 */
    if (local > 0 && c->sliding_window > 0) c->rope_local_theta = local;
    if (c->n_layers == family->gguf_scale_layers) c->query_scale = (float)(c->dim / c->n_heads);
    c->embed_scale = sqrtf((float)c->dim);
    return ok;
}

/* deepseek2's beyond the table's keys: the rotary part of a head
 * (rope.dimension_count), a head's key and value widths (key_length_mla and
 * value_length_mla where the file splits kv_b, with head_count_kv 1; else
 * key_length and value_length), the leading dense layers, and whether the k weights are
 * renormalised (expert_weights_norm; then they must not be scaled too). */
static bool read_deepseek2(const GgufFile *f, Config *c, StepError *err) {
    int rope = 0, dense = 0, head = 0, value = 0;
    bool ok = arch_uint(f, "deepseek2", "rope.dimension_count", &rope, err) &&
              arch_uint(f, "deepseek2", "attention.value_length", &value, err);
    bool split = gguf_find_kv(f, "deepseek2.attention.key_length_mla") != NULL;
    if (ok && split)
        ok = arch_uint(f, "deepseek2", "attention.key_length_mla", &head, err) &&
             arch_uint(f, "deepseek2", "attention.value_length_mla", &value, err);
    if (ok && split) c->head_dim = head;
    /* the split form's head_count_kv is 1 (llama.cpp attends MQA-wise over
     * the latents); each head still rebuilds its own key and value */
    if (ok && split) c->n_kv_heads = c->n_heads;
    c->qk_rope_head_dim = rope, c->v_head_dim = value;
    uint64_t u = 0;
    if (ok && gguf_find_kv(f, "deepseek2.leading_dense_block_count") != NULL) {
        ok =
            (gguf_get_uint(f, "deepseek2.leading_dense_block_count", CONFIG_MAX_DENSE_LAYERS, &u) &&
             u <= (uint64_t)c->n_layers) ||
            step_fail(err, "%s: deepseek2.leading_dense_block_count must be in [0, %d]", f->path,
                      c->n_layers < CONFIG_MAX_DENSE_LAYERS ? c->n_layers
                                                            : CONFIG_MAX_DENSE_LAYERS);
        dense = (int)u;
    }
    for (int l = 0; l < dense; l++) c->dense_layers[c->n_dense_layers++] = l;
    if (ok && gguf_find_kv(f, "deepseek2.expert_weights_norm") != NULL) {
        ok = gguf_get_uint(f, "deepseek2.expert_weights_norm", 1, &u) ||
             step_fail(err, "%s: deepseek2.expert_weights_norm must be true or false", f->path);
        c->expert_norm_topk = u != 0;
    }
    if (ok && c->expert_norm_topk && c->routed_scaling_factor != 0 && c->routed_scaling_factor != 1)
        ok = step_fail(err,
                       "%s: deepseek2 renormalises the k weights and scales them by %g: "
                       "DeepSeek-V2 does one or the other",
                       f->path, (double)c->routed_scaling_factor);
    return ok;
}

static bool read_config(const GgufFile *f, const Family *family, Config *c, StepError *err) {
    const char *arch = family->gguf;
    memset(c, 0, sizeof *c);
    bool ok = arch_uint(f, arch, "embedding_length", &c->dim, err) &&
              arch_uint(f, arch, "feed_forward_length", &c->hidden_dim, err) &&
              arch_uint(f, arch, "block_count", &c->n_layers, err) &&
              arch_uint(f, arch, "attention.head_count", &c->n_heads, err) &&
              arch_uint(f, arch, "context_length", &c->seq_len, err);
    char key[128];
    snprintf(key, sizeof key, "%s.attention.head_count_kv", arch);
    c->n_kv_heads = c->n_heads;
    if (ok && gguf_find_kv(f, key) != NULL)
        ok = arch_uint(f, arch, "attention.head_count_kv", &c->n_kv_heads, err);
    snprintf(key, sizeof key, "%s.attention.key_length", arch);
    if (ok && gguf_find_kv(f, key) != NULL)
        ok = arch_uint(f, arch, "attention.key_length", &c->head_dim, err);
    double v;
    ok = ok && gguf_fields_read(f, arch, c, err); /* the table's keys (config_table.h) */
    ok = ok && gguf_fields_check_modes(f, arch, err);
    snprintf(key, sizeof key, "%s.attention.layer_norm_epsilon", arch); /* LayerNorm's (gpt2) */
    if (ok && gguf_find_kv(f, key) != NULL) {
        ok = (gguf_get_float(f, key, &v) && v > 0 && v < 1) ||
             step_fail(err, "%s: %s must be in (0, 1)", f->path, key);
        c->norm_eps = (float)v;
    }
    /* RoPE scaling: linear only (Llama 3's arrives as a rope_freqs.weight
     * tensor, refused in gguf_model_load) */
    snprintf(key, sizeof key, "%s.rope.scaling.type", arch);
    char *scaling = ok ? gguf_get_string(f, key) : NULL;
    if (ok && gguf_find_kv(f, key) != NULL && scaling == NULL)
        ok = step_fail(err, "%s: %s is not a string", f->path, key);
    if (ok && scaling != NULL && strcmp(scaling, "linear") == 0) {
        snprintf(key, sizeof key, "%s.rope.scaling.factor", arch);
        ok = (gguf_get_float(f, key, &v) && v >= 1 && v < 1e6) ||
             step_fail(err, "%s: %s must be a number in [1, 1e6)", f->path, key);
        c->rope_scaling = (RopeScaling){.type = ROPE_SCALING_LINEAR, .factor = (float)v};
    } else if (ok && scaling != NULL && strcmp(scaling, "none") != 0) {
        ok = step_fail(err, "%s: RoPE scaling %.40s is not supported (none, linear)", f->path,
                       scaling);
    }
    free(scaling);
    c->rope_layout = ROPE_INTERLEAVED; /* qwen's halves are interleaved as read (take_layer) */
    snprintf(key, sizeof key, "%s.rope.dimension_count", arch); /* llama.cpp's n_rot */
    uint64_t rot;
    bool mla = family->attention == FAMILY_ATTENTION_MLA;
    if (ok && mla) {
        ok = read_deepseek2(f, c, err);
    } else if (ok && gguf_find_kv(f, key) != NULL) {
        ok = (gguf_get_uint(f, key, 1u << 30, &rot) && rot >= 2 && rot % 2 == 0 &&
              rot <= (uint64_t)config_head_dim(c)) ||
             step_fail(err, "%s: %s must be even and in [2, head_dim %d]", f->path, key,
                       config_head_dim(c));
        if (ok && rot < (uint64_t)config_head_dim(c)) c->rope_dims = (int)rot; /* partial RoPE */
    }
    bool gemma = family->window == FAMILY_WINDOW_PATTERN;
    snprintf(key, sizeof key, "%s.attention.sliding_window", arch);
    uint64_t window;
    if (ok && gemma) {
        ok = read_gemma(f, family, c, err);
    } else if (ok && gguf_find_kv(f, key) != NULL) {
        /* a window as wide as the context masks nothing: cap the context at
         * it, as the Hugging Face loader does */
        ok = (gguf_get_uint(f, key, 1u << 30, &window) && window > 0) ||
             step_fail(err, "%s: %s must be a whole number from 1", f->path, key);
        if (ok && window < (uint64_t)c->seq_len) c->seq_len = (int)window;
    }
    snprintf(key, sizeof key, "%s.expert_count", arch); /* a mixture of experts */
    if (ok && gguf_find_kv(f, key) != NULL) {
        ok = arch_uint(f, arch, "expert_count", &c->n_experts, err) &&
             arch_uint(f, arch, "expert_used_count", &c->n_experts_used, err);
        if (family->expert_width == FAMILY_EXPERTS_HIDDEN) /* llama's (Mixtral's): ffn wide */
            c->expert_hidden_dim = c->hidden_dim;
        else if (ok && c->expert_hidden_dim == 0)
            ok = step_fail(err, "%s: needs %s.expert_feed_forward_length, a whole number from 1",
                           f->path, arch);
        if (!mla) c->expert_norm_topk = true; /* llama.cpp renormalises llama's and qwen3moe's */
        c->moe_step = 1;
    }
    if (ok && mla && (c->n_experts == 0 || c->n_shared_experts == 0)) /* as llama.cpp's */
        ok = step_fail(err,
                       "%s: deepseek2 needs routed experts (expert_count) and shared ones "
                       "(expert_shared_count)",
                       f->path);
    family_apply(family, c); /* the block's traits (norms, MLP, biases, q/k norms...) */
    return ok;
}

/* rope_freqs.weight: one factor for each pair of a head, each frequency
 * divided by its own (llama.cpp's form of Llama 3's RoPE scaling). */
static bool read_rope_factors(const GgufFile *f, Config *c, StepError *err) {
    GgufTensor *t = gguf_find_tensor(f, "rope_freqs.weight");
    int half = config_head_dim(c) / 2;
    if (c->rope_scaling.type != ROPE_SCALING_NONE)
        return step_fail(err, "%s: rope_freqs.weight and %s RoPE scaling together", f->path,
                         config_rope_scaling_name(c->rope_scaling.type));
    if (half > ROPE_MAX_FACTORS || t->n_dims != 1 || t->ne[0] != (uint64_t)half)
        return step_fail(err,
                         "%s: rope_freqs.weight must hold head_dim / 2 = %d factors (at most %d)",
                         f->path, half, ROPE_MAX_FACTORS);
    RopeScaling *s = &c->rope_scaling;
    *s = (RopeScaling){.type = ROPE_SCALING_FACTORS};
    gguf_to_f32(t, s->factors);
    for (int i = 0; i < half; i++)
        if (s->factors[i] > s->factor) s->factor = s->factors[i];
    t->used = 1;
    return true;
}

/* One of longrope's factor lists: the tensor called name, a float32 vector
 * of one factor a turned pair, each in (0, 1e6]. */
static bool longrope_factors(const GgufFile *f, const char *name, int pairs, float *out,
                             StepError *err) {
    GgufTensor *t = gguf_find_tensor(f, name);
    if (t == NULL || t->n_dims != 1 || t->ne[0] != (uint64_t)pairs || t->type != GGML_F32)
        return step_fail(err, "%s: %s must be %d float32 factors, one a pair of turned dims",
                         f->path, name, pairs);
    gguf_to_f32(t, out);
    for (int i = 0; i < pairs; i++)
        if (!(out[i] > 0 && out[i] <= 1e6))
            return step_fail(err, "%s: %s[%d] must be in (0, 1e6]", f->path, name, i);
    t->used = 1;
    return true;
}

/* Phi-3's longrope as llama.cpp's converter writes it: rope_factors_long
 * and rope_factors_short, <arch>.rope.scaling.original_context_length and
 * .attn_factor. stepwise picks the list per pass, as Hugging Face does
 * (config_rope_long); llama.cpp picks it by the context size it is given. */
static bool read_longrope(const GgufFile *f, const char *arch, Config *c, StepError *err) {
    RopeScaling *s = &c->rope_scaling;
    int pairs = config_rope_dims(c) / 2;
    if (s->type != ROPE_SCALING_NONE || pairs > ROPE_MAX_FACTORS)
        return step_fail(err, "%s: longrope's factors with %s scaling, or for more than %d pairs",
                         f->path, config_rope_scaling_name(s->type), ROPE_MAX_FACTORS);
    *s = (RopeScaling){.type = ROPE_SCALING_LONGROPE};
    double v = 0;
    char key[128];
    snprintf(key, sizeof key, "%s.rope.scaling.attn_factor", arch);
    bool ok = longrope_factors(f, "rope_factors_long.weight", pairs, s->long_factors, err) &&
              longrope_factors(f, "rope_factors_short.weight", pairs, s->factors, err) &&
              arch_uint(f, arch, "rope.scaling.original_context_length", &s->original_context, err);
    if (ok && !(gguf_get_float(f, key, &v) && v > 0 && v <= 1e3))
        ok = step_fail(err, "%s: %s must be a number in (0, 1000]", f->path, key);
    s->attention_factor = (float)v;
    s->factor = (float)c->seq_len / (float)s->original_context;
    return ok;
}

/* The tensor called name, [rows, cols] row-major (ne[0] = cols; rows 0: a
 * vector of cols); NULL (err set) when missing or of another shape. */
static GgufTensor *find_shaped(const GgufFile *f, const char *name, uint64_t rows, uint64_t cols,
                               StepError *err) {
    GgufTensor *t = gguf_find_tensor(f, name);
    if (t == NULL) {
        step_fail(err, "%s: tensor %s is missing", f->path, name);
        return NULL;
    }
    bool fits = rows == 0 ? t->n_dims == 1 && t->ne[0] == cols
                          : t->n_dims == 2 && t->ne[0] == cols && t->ne[1] == rows;
    if (!fits) {
        step_fail(err, "%s: tensor %s has the wrong shape for the metadata", f->path, name);
        return NULL;
    }
    return t;
}

/* Copy the tensor called name, [rows, cols], into dst as float32. */
static bool take(const GgufFile *f, const char *name, uint64_t rows, uint64_t cols, float *dst,
                 StepError *err) {
    GgufTensor *t = find_shaped(f, name, rows, cols, err);
    if (t == NULL) return false;
    gguf_to_f32(t, dst);
    t->used = 1;
    return true;
}

/* The matrix called name, [rows, cols], where the file stores it: float32,
 * float16 and bfloat16 elements, or quantized blocks (each row a whole
 * number of them: gguf.c checks the tensor, this the row); interleave_head_dim
 * as matrix.h says. Data not aligned to its element (general.alignment 1,
 * say) is copied, owned, to a place that is. */
static bool view_matrix(const GgufFile *f, const char *name, uint64_t rows, uint64_t cols,
                        int interleave_head_dim, Matrix *out, StepError *err) {
    GgufTensor *t = find_shaped(f, name, rows, cols, err);
    if (t == NULL) return false;
    uint64_t values;
    gguf_block_bytes(t->type, &values);
    if (values > 1 && cols % values != 0)
        return step_fail(err, "%s: tensor %s's rows are not whole blocks of %llu", f->path, name,
                         (unsigned long long)values);
    ElementType e = t->type == GGML_F32 ? ELEM_F32 : t->type == GGML_F16 ? ELEM_F16 : ELEM_BF16;
    *out = values > 1 ? matrix_blocks_view(t->type, t->data, (int)rows, (int)cols)
                      : matrix_view(e, t->data, (int)rows, (int)cols);
    out->interleave_head_dim = interleave_head_dim;
    if (!matrix_align(out, (size_t)t->bytes)) return step_fail(err, "%s: out of memory", f->path);
    t->used = 1;
    return true;
}

/* Every tensor of layer l, by its GGUF name (hf_layer_tensors' table).
 * llama.cpp keeps each architecture's own q/k layout: llama's interleaved
 * pairs, qwen's halves. Qwen's are interleaved here as the Hugging Face
 * loader does, so that one model gives the same bits from either file and
 * q·k sums in one order. */
/* llama.cpp's phi3 stores q, k and v as one attn_qkv [q_dim + 2 kv_dim,
 * dim] and gate and up as one ffn_up [2 hidden, dim], gate first: part p
 * of layer l from those rows, viewed where the file stores them or widened
 * into float32 storage (its q and k rows interleaved). */
static bool take_fused(Model *m, const GgufFile *f, int l, const HfLayerTensor *p, bool halves,
                       bool attn, int row0, int total, StepError *err) {
    char name[128];
    snprintf(name, sizeof name, "blk.%d.%s", l, attn ? "attn_qkv.weight" : "ffn_up.weight");
    GgufTensor *t = find_shaped(f, name, (uint64_t)total, p->cols, err);
    if (t == NULL) return false;
    uint64_t values, block = gguf_block_bytes(t->type, &values);
    if (p->cols % values != 0)
        return step_fail(err, "%s: tensor %s's rows are not whole blocks of %llu", f->path, name,
                         (unsigned long long)values);
    uint64_t row_bytes = p->cols / values * block;
    t->used = 1;
    /* its rows where the file stores them (q's and k's read interleaved) */
    ElementType e = t->type == GGML_F32 ? ELEM_F32 : t->type == GGML_F16 ? ELEM_F16 : ELEM_BF16;
    const unsigned char *at = t->data + (uint64_t)row0 * row_bytes;
    Matrix view = values > 1 ? matrix_blocks_view(t->type, at, (int)p->rows, (int)p->cols)
                             : matrix_view(e, at, (int)p->rows, (int)p->cols);
    view.interleave_head_dim = halves && p->heads > 0 ? config_head_dim(&m->config) : 0;
    return hf_layer_matrix_place(m, l, p, &view, (size_t)(p->rows * row_bytes), f->path, err);
}

/* MLA's kv_b p from the file's attn_k_b and attn_v_b (gguf_mla.h): into
 * float32 storage, or (held as stored) a float32 matrix of its own. */
static bool take_split_kv_b(Model *m, const GgufFile *f, int l, const HfLayerTensor *p,
                            StepError *err) {
    if (p->view != NULL) return gguf_mla_kv_b(f, l, &m->config, model_weight_slot(m, p->view), err);
    float *kv_b = malloc(p->rows * p->cols * sizeof(float));
    if (kv_b == NULL) return step_fail(err, "%s: out of memory", f->path);
    if (!gguf_mla_kv_b(f, l, &m->config, kv_b, err)) {
        free(kv_b);
        return false;
    }
    Matrix *x = &m->layers[l].m[MAT_KV_B];
    *x = matrix_view(ELEM_F32, kv_b, (int)p->rows, (int)p->cols);
    x->owned = kv_b;
    return true;
}

static bool take_layer(Model *m, const GgufFile *f, int l, bool halves, bool fused,
                       StepError *err) {
    HfLayerTensor parts[HF_LAYER_TENSORS];
    int count = hf_layer_tensors(m, l, parts), head_dim = config_head_dim(&m->config);
    for (int i = 0; i < count; i++) {
        char name[128];
        bool attn;
        int row0, total; /* where a part of Phi-3's fused tensors lies in them */
        if (fused && hf_fused_rows(&m->config, parts[i].kind, &attn, &row0, &total)) {
            if (!take_fused(m, f, l, &parts[i], halves, attn, row0, total, err)) return false;
            continue;
        }
        if (parts[i].kind == MAT_KV_B && !gguf_mla_one_form(f, l, err)) return false;
        if (parts[i].kind == MAT_KV_B && gguf_mla_split(f, l)) { /* llama.cpp's newer form */
            if (!take_split_kv_b(m, f, l, &parts[i], err)) return false;
            continue;
        }
        snprintf(name, sizeof name, "blk.%d.%s", l, parts[i].gguf_name);
        if (parts[i].view == NULL) { /* a matrix, as stored */
            int interleave = halves && parts[i].heads > 0 ? head_dim : 0;
            if (!view_matrix(f, name, parts[i].rows, parts[i].cols, interleave,
                             &m->layers[l].m[parts[i].kind], err))
                return false;
            continue;
        }
        float *dst = model_weight_slot(m, parts[i].view);
        if (!take(f, name, parts[i].rows, parts[i].cols, dst, err)) return false;
        size_t cols = parts[i].rows == 0 ? 1 : parts[i].cols; /* a vector: rows of one value */
        if (halves && parts[i].heads > 0 &&
            !hf_interleave_heads(dst, parts[i].heads, head_dim, cols))
            return step_fail(err, "%s: out of memory", f->path);
    }
    return true;
}

/* Expert e's [rows, cols] slice of a stacked expert tensor t, viewed
 * where the file stores it (its blocks or elements as they are). */
static bool view_expert(const GgufFile *f, GgufTensor *t, int e, uint64_t rows, uint64_t cols,
                        Matrix *out, StepError *err) {
    uint64_t values, block = gguf_block_bytes(t->type, &values);
    if (cols % values != 0)
        return step_fail(err, "%s: tensor %s's rows are not whole blocks of %llu", f->path, t->name,
                         (unsigned long long)values);
    uint64_t bytes = rows * (cols / values) * block; /* one expert's */
    const char *data = (const char *)t->data + (uint64_t)e * bytes;
    ElementType elem = t->type == GGML_F32 ? ELEM_F32 : t->type == GGML_F16 ? ELEM_F16 : ELEM_BF16;
    *out = values > 1 ? matrix_blocks_view(t->type, data, (int)rows, (int)cols)
                      : matrix_view(elem, data, (int)rows, (int)cols);
    return matrix_align(out, (size_t)bytes) || step_fail(err, "%s: out of memory", f->path);
}

/* Layer l's router and experts (an MoE layer), as llama.cpp holds them:
 * ffn_gate_inp [E, dim] and the stacked ffn_gate_exps, ffn_up_exps [E,
 * hidden, dim] and ffn_down_exps [E, dim, hidden] (ne reversed): the
 * router widened into float32 storage, the experts too, or (stored) each
 * expert's slice viewed where the file holds it. */
static bool take_experts(Model *m, const GgufFile *f, int l, bool stored, StepError *err) {
    const Config *c = &m->config;
    if (!config_layer_moe(c, l)) return true;
    uint64_t E = (uint64_t)c->n_experts, d = (uint64_t)c->dim;
    char name[128];
    snprintf(name, sizeof name, "blk.%d.ffn_gate_inp.weight", l);
    if (!take(f, name, E, d, model_vector_slot(m, VEC_ROUTER, config_moe_slot(c, l)), err))
        return false;
    static const char *const names[EXPERT_MATRICES] = {[EXPERT_GATE] = "ffn_gate_exps.weight",
                                                       [EXPERT_DOWN] = "ffn_down_exps.weight",
                                                       [EXPERT_UP] = "ffn_up_exps.weight"};
    for (int k = 0; k < EXPERT_MATRICES; k++) {
        int rows, cols;
        expert_matrix_shape(c, (ExpertKind)k, &rows, &cols);
        snprintf(name, sizeof name, "blk.%d.%s", l, names[k]);
        GgufTensor *t = gguf_find_tensor(f, name);
        if (t == NULL || t->n_dims != 3 || t->ne[0] != (uint64_t)cols ||
            t->ne[1] != (uint64_t)rows || t->ne[2] != E)
            return step_fail(err, "%s: tensor %s is missing or not [%llu experts, %d, %d]", f->path,
                             name, (unsigned long long)E, rows, cols);
        for (int e = 0; stored && e < c->n_experts; e++)
            if (!view_expert(f, t, e, (uint64_t)rows, (uint64_t)cols,
                             model_expert(m, l, e, (ExpertKind)k), err))
                return false;
        if (!stored) /* the layer's experts of this kind lie together (weight_layout.h) */
            gguf_to_f32(t, model_matrix_slot(m, model_expert(m, l, 0, (ExpertKind)k)));
        t->used = 1;
    }
    return true;
}

/* GPT-2's tensors as llama.cpp's converter writes them (Conv1D weights
 * already transposed to [out, in]; q, k and v one attn_qkv of [3 dim, dim]
 * rows), into float32 storage: q's, k's and v's rows and biases split. */
static bool take_gpt2(Model *m, const GgufFile *f, StepError *err) {
    const Config *c = &m->config;
    uint64_t d = (uint64_t)c->dim, h = (uint64_t)c->hidden_dim;
    float *qkv = malloc((size_t)(3 * d * d) * sizeof(float)),
          *bias = malloc((size_t)(3 * d) * sizeof(float));
    bool ok = (qkv != NULL && bias != NULL) || step_fail(err, "%s: out of memory", f->path);
    ok = ok &&
         take(f, "position_embd.weight", (uint64_t)c->seq_len, d,
              model_vector_slot(m, VEC_POSITIONS, 0), err) &&
         take(f, "output_norm.bias", 0, d, model_vector_slot(m, VEC_FINAL_NORM_BIAS, 0), err);
    for (int l = 0; ok && l < c->n_layers; l++) {
        char name[128];
        Matrix *mats = m->layers[l].m;
#define TAKE(suffix, rows, cols, dst)                                                              \
    (snprintf(name, sizeof name, "blk.%d.%s", l, (suffix)),                                        \
     take(f, name, (rows), (cols), (dst), err))
#define VEC(k) model_vector_slot(m, (k), l)
#define MAT(k) model_matrix_slot(m, &mats[(k)])
        ok = TAKE("attn_norm.weight", 0, d, VEC(VEC_ATT_NORM)) &&
             TAKE("attn_norm.bias", 0, d, VEC(VEC_ATT_NORM_BIAS)) &&
             (snprintf(name, sizeof name, "blk.%d.attn_qkv.weight", l),
              take(f, name, 3 * d, d, qkv, err)) &&
             (snprintf(name, sizeof name, "blk.%d.attn_qkv.bias", l),
              take(f, name, 0, 3 * d, bias, err));
        static const MatrixKind parts[3] = {MAT_WQ, MAT_WK, MAT_WV};
        static const VectorKind biases[3] = {VEC_Q_BIAS, VEC_K_BIAS, VEC_V_BIAS};
        for (int k = 0; ok && k < 3; k++) {
            memcpy(MAT(parts[k]), qkv + k * d * d, d * d * sizeof(float));
            memcpy(VEC(biases[k]), bias + k * d, d * sizeof(float));
        }
        ok = ok && TAKE("attn_output.weight", d, d, MAT(MAT_WO)) &&
             TAKE("attn_output.bias", 0, d, VEC(VEC_O_BIAS)) &&
             TAKE("ffn_norm.weight", 0, d, VEC(VEC_FFN_NORM)) &&
             TAKE("ffn_norm.bias", 0, d, VEC(VEC_FFN_NORM_BIAS)) &&
             TAKE("ffn_up.weight", h, d, MAT(MAT_GATE)) &&
             TAKE("ffn_up.bias", 0, h, VEC(VEC_GATE_BIAS)) &&
             TAKE("ffn_down.weight", d, h, MAT(MAT_DOWN)) &&
             TAKE("ffn_down.bias", 0, d, VEC(VEC_DOWN_BIAS));
#undef TAKE
#undef VEC
#undef MAT
        progress_report(m->progress, "reading the weights (layers)", (uint64_t)l + 1,
                        (uint64_t)c->n_layers);
    }
    free(qkv), free(bias);
    return ok;
}

bool gguf_model_load(Model *m, Tokenizer *tok, const char *path, WeightsMode mode,
                     const ProgressSink *progress, GgufLoadReport *report, StepError *err) {
    memset(m, 0, sizeof *m);
    m->progress = progress;
    if (tok != NULL) memset(tok, 0, sizeof *tok);
    GgufFile f;
    if (!gguf_open(&f, path, err)) return false;
    char *arch = gguf_get_string(&f, "general.architecture"), known[256];
    const Family *family = family_from_gguf(arch);
    bool ok = family != NULL;
    family_gguf_text(known, sizeof known);
    if (f.n_tensors == 0)
        ok = step_fail(err,
                       "%s: holds no tensors (a vocabulary-only file): it serves as a tokenizer "
                       "(tokenize --model, --tokenizer), not as a model",
                       path);
    else if (!ok)
        step_fail(err, "%s: general.architecture %.40s is not supported (%s)", path,
                  arch ? arch : "(none)", known);
    ok = ok && read_config(&f, family, &m->config, err);
    if (ok && gguf_find_tensor(&f, "rope_freqs.weight") != NULL)
        ok = read_rope_factors(&f, &m->config, err);
    if (ok && (gguf_find_tensor(&f, "rope_factors_long.weight") != NULL ||
               gguf_find_tensor(&f, "rope_factors_short.weight") != NULL))
        ok = read_longrope(&f, arch, &m->config, err);
    GgufTensor *emb = ok ? gguf_find_tensor(&f, "token_embd.weight") : NULL;
    if (ok && (emb == NULL || emb->n_dims != 2 || emb->ne[1] == 0 || emb->ne[1] > (1u << 24)))
        ok = step_fail(err, "%s: tensor token_embd.weight is missing or malformed", path);
    if (ok) {
        m->config.vocab_size = (int)emb->ne[1];
        m->config.shared_classifier = gguf_find_tensor(&f, "output.weight") == NULL;
        ok = config_validate(&m->config, path, err);
    }
    /* every weight must come from a stored value: check before allocating */
    uint64_t held = 0, needed = ok ? model_storage_floats(&m->config) : 0;
    for (uint64_t i = 0; i < f.n_tensors; i++) held += f.tensors[i].numel;
    bool any_q8_0 = false, all_q8_0 = true; /* the layers' matrices */
    for (uint64_t i = 0; i < f.n_tensors; i++) {
        const GgufTensor *t = &f.tensors[i];
        if (t->n_dims < 2 || strncmp(t->name, "blk.", 4) != 0) continue;
        any_q8_0 |= t->type == GGML_Q8_0, all_q8_0 &= t->type == GGML_Q8_0;
    }
    if (ok && needed > held)
        ok = step_fail(err, "%s: the metadata implies %llu weights, the file holds %llu", path,
                       (unsigned long long)needed, (unsigned long long)held);
    bool gpt2 = ok && family->position == POS_LEARNED; /* GPT-2's fused qkv */
    /* llama.cpp keeps qwen's and phi3's q and k in halves; with a partial
     * RoPE they stay so (the block turns halves within the turned dims),
     * otherwise they are interleaved as read */
    bool halves = ok && family->gguf_rope == ROPE_HALVES;
    if (halves && m->config.rope_dims > 0) m->config.rope_layout = ROPE_HALVES, halves = false;
    /* GPT-2's fused qkv is split into float32 */
    bool stored = mode == WEIGHTS_STORED && !gpt2;
    ok = ok && (stored ? model_alloc_vectors(m, err) : model_alloc_storage(m, path, err));
    if (ok) {
        const Config *c = &m->config;
        ok = stored ? view_matrix(&f, "token_embd.weight", (uint64_t)c->vocab_size,
                                  (uint64_t)c->dim, 0, &m->embedding, err)
                    : take(&f, "token_embd.weight", (uint64_t)c->vocab_size, (uint64_t)c->dim,
                           model_matrix_slot(m, &m->embedding), err);
        if (gpt2) ok = ok && take_gpt2(m, &f, err);
        for (int l = 0; ok && !gpt2 && l < c->n_layers; l++) {
            ok = take_layer(m, &f, l, halves, family->fused_files, err) &&
                 take_experts(m, &f, l, stored, err);
            progress_report(m->progress, "reading the weights (layers)", (uint64_t)l + 1,
                            (uint64_t)c->n_layers);
        }
        ok = ok && take(&f, "output_norm.weight", 0, (uint64_t)c->dim,
                        model_vector_slot(m, VEC_FINAL_NORM, 0), err);
        if (ok && !c->shared_classifier && stored)
            ok = view_matrix(&f, "output.weight", (uint64_t)c->vocab_size, (uint64_t)c->dim, 0,
                             &m->classifier, err);
        else if (ok && !c->shared_classifier)
            ok = take(&f, "output.weight", (uint64_t)c->vocab_size, (uint64_t)c->dim,
                      model_matrix_slot(m, &m->classifier), err);
        if (ok && stored && c->shared_classifier) /* the embedding's data, not a second owner */
            m->classifier = matrix_borrow(&m->embedding);
    }
    m->q8_0_file = any_q8_0 && all_q8_0;
    if (ok && tok != NULL) ok = gguf_read_tokenizer(&f, tok, m->config.vocab_size, err);
    if (ok)
        snprintf(m->source, sizeof m->source, "GGUF v%u, %s%s", f.version, arch,
                 stored ? ", weights as stored" : "");
    if (ok && report != NULL)
        report->unused = gguf_unused_tensors(&f, report->first_unused, sizeof report->first_unused);
    if (stored) { /* the matrices point into it: the model keeps the mapping */
        model_add_file(m, f.map, f.map_bytes, path);
        f.map = NULL;
    }
    free(arch);
    gguf_close(&f);
    ok = ok && model_rope_init(m, err);
    if (!ok) model_free(m);
    return ok;
}
