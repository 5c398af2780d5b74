/* gguf_convert.c: see gguf_convert.h. */
#include "ref/formats/gguf_convert.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ref/family.h"
#include "ref/formats/gguf.h"
#include "ref/formats/gguf_tokenizer.h"
#include "ref/formats/gguf_fields.h"
#include "ref/formats/gguf_write.h"
#include "ref/nonfinite.h"
#include "ref/formats/hf_model.h"

bool gguf_out_type_parse(const char *name, GgufOutType *t) {
    static const char *const names[] = {"f32", "f16", "q8_0", "bf16"};
    for (int i = 0; i < 4; i++) {
        if (strcmp(name, names[i]) == 0) {
            *t = (GgufOutType)i;
            return true;
        }
    }
    return false;
}

/* <arch>.<name> = v, an unsigned 32-bit number. */
static void arch_u32(GgufMetadata *meta, const char *arch, const char *name, int v) {
    char key[128];
    snprintf(key, sizeof key, "%s.%s", arch, name);
    gguf_meta_u32(meta, key, (uint32_t)v);
}

static void arch_f32(GgufMetadata *meta, const char *arch, const char *name, float v) {
    char key[128];
    snprintf(key, sizeof key, "%s.%s", arch, name);
    gguf_meta_f32(meta, key, v);
}

/* GPT-2's hyperparameters, as llama.cpp's converter writes them. */
static void write_gpt2_config(GgufMetadata *meta, const Config *c) {
    arch_u32(meta, "gpt2", "context_length", c->seq_len);
    arch_u32(meta, "gpt2", "embedding_length", c->dim);
    arch_u32(meta, "gpt2", "feed_forward_length", c->hidden_dim);
    arch_u32(meta, "gpt2", "block_count", c->n_layers);
    arch_u32(meta, "gpt2", "attention.head_count", c->n_heads);
    arch_f32(meta, "gpt2", "attention.layer_norm_epsilon", config_norm_eps(c));
}

/* The hyperparameters as llama.cpp's converter names them. */
static void write_config(GgufMetadata *meta, const Config *c, const Family *family) {
    const char *arch = family->gguf;
    if (family->position == POS_LEARNED) { /* GPT-2's keys */
        write_gpt2_config(meta, c);
        return;
    }
    int head_dim = config_head_dim(c);
    /* llama.cpp's llama and phi3 run no sliding window: a model whose every
     * layer slides is written with its context capped at the window, where
     * the two agree on every sequence */
    bool capped = !c->post_norms && c->sliding_window > 0 && c->sliding_window < c->seq_len;
    arch_u32(meta, arch, "context_length", capped ? c->sliding_window : c->seq_len);
    arch_u32(meta, arch, "embedding_length", c->dim);
    arch_u32(meta, arch, "block_count", c->n_layers);
    arch_u32(meta, arch, "feed_forward_length", c->hidden_dim);
    arch_u32(meta, arch, "rope.dimension_count", config_rope_dims(c));
    arch_u32(meta, arch, "attention.head_count", c->n_heads);
    arch_u32(meta, arch, "attention.head_count_kv", c->n_kv_heads);
    arch_u32(meta, arch, "attention.key_length", head_dim);
    arch_u32(meta, arch, "attention.value_length", config_v_head_dim(c));
    arch_u32(meta, arch, "vocab_size", c->vocab_size);
    gguf_fields_write(meta, c, arch); /* the table's keys (config_table.h) */
    if (c->rope_scaling.type == ROPE_SCALING_LINEAR) {
        char key[128];
        snprintf(key, sizeof key, "%s.rope.scaling.type", arch);
        gguf_meta_string(meta, key, "linear");
        arch_f32(meta, arch, "rope.scaling.factor", c->rope_scaling.factor);
    }
    if (c->n_experts > 0) { /* a mixture of experts, as llama.cpp's converter names it */
        arch_u32(meta, arch, "expert_count", c->n_experts);
        arch_u32(meta, arch, "expert_used_count", c->n_experts_used);
    }
    if (c->rope_scaling.type == ROPE_SCALING_LONGROPE) { /* Phi-3's, as llama.cpp's converter */
        arch_u32(meta, arch, "rope.scaling.original_context_length",
                 c->rope_scaling.original_context);
        arch_f32(meta, arch, "rope.scaling.attn_factor", c->rope_scaling.attention_factor);
    }
    if (config_mla(c)) { /* deepseek2's beyond the table's (deepseek2_fits checked them) */
        if (c->q_lora_rank == 0) arch_u32(meta, arch, "attention.q_lora_rank", 0); /* required */
        arch_u32(meta, arch, "leading_dense_block_count", c->n_dense_layers);
        char key[128];
        snprintf(key, sizeof key, "%s.expert_weights_norm", arch);
        gguf_meta_bool(meta, key, c->expert_norm_topk);
    }
    if (c->post_norms) { /* Gemma's (gemma_fits checked them) */
        /* no window: one as wide as the context, which masks nothing */
        arch_u32(meta, arch, "attention.sliding_window",
                 c->sliding_window > 0 ? c->sliding_window : c->seq_len);
    }
}

/* Whether llama.cpp's gemma2 or gemma3 runs c as the engine does: it fixes
 * what the file cannot say (gguf_model.c's read_gemma): which layers
 * slide, Gemma 3's local RoPE base, the attention scale, Gemma 2's
 * soft-caps (always on) and Gemma 3's (no attention cap). */
static bool gemma_fits(const Config *c, const Family *family, const char *path, StepError *err) {
    int pattern = (int)family_default(family, "sliding_pattern");
    float local = (float)family_default(family, "rope_local_theta");
    bool caps = family_default(family, "attn_softcap") > 0; /* llama.cpp's gemma2 always */
    for (int l = 0; c->sliding_window > 0 && l < c->n_layers; l++)
        if ((config_attention_spec(c, l).window > 0) != ((l + 1) % pattern != 0))
            return step_fail(
                err,
                "%s: llama.cpp's %s slides every layer but each %dth, and this model's "
                "layer %d does not",
                path, family->gguf, pattern, l);
    bool big = c->n_layers == family->gguf_scale_layers;
    float scale = big ? (float)(c->dim / c->n_heads) : (float)config_head_dim(c);
    if (config_query_scale(c) != scale)
        return step_fail(err,
                         "%s: llama.cpp derives query_pre_attn_scalar %g for this shape, and the "
                         "model's is %g",
                         path, (double)scale, (double)config_query_scale(c));
    if (local > 0 && c->sliding_window > 0 && c->rope_local_theta != local)
        return step_fail(err,
                         "%s: llama.cpp's %s turns its sliding layers at a RoPE base of "
                         "%g, and the model's is %g",
                         path, family->gguf, (double)local, (double)c->rope_local_theta);
    if (caps ? (c->attn_softcap == 0 || c->final_softcap == 0) : c->attn_softcap > 0)
        return step_fail(err, "%s: llama.cpp's %s %s", path, family->gguf,
                         caps ? "always soft-caps the scores and the logits"
                              : "has no attention soft-cap");
    if (local == 0 && c->rope_local_theta > 0)
        return step_fail(err,
                         "%s: llama.cpp's %s has no RoPE base of its own for the "
                         "sliding layers",
                         path, family->gguf);
    return true;
}

/* Whether llama.cpp's deepseek2 runs c as the engine does: the legacy
 * form (attn_kv_b, key_length and value_length as a head's; llama.cpp then
 * attends MHA-wise) with experts in every layer past the first dense ones,
 * shared experts beside them, the k weights scaled only when not
 * renormalised (llama.cpp would scale renormalised ones too), no YaRN and
 * no routing within groups yet. */
static bool deepseek2_fits(const Config *c, const char *path, StepError *err) {
    const char *why =
        c->n_experts == 0                           ? "has no routed experts"
        : c->n_shared_experts == 0                  ? "has no shared experts"
        : c->rope_scaling.type != ROPE_SCALING_NONE ? "scales RoPE (YaRN)"
        : c->expert_groups > 0 ? "routes within expert groups (group_limited_greedy, not written)"
        : c->expert_norm_topk && c->routed_scaling_factor > 0 && c->routed_scaling_factor != 1.0f
            ? "renormalises the k weights and scales them"
            : NULL;
    for (int l = 0; why == NULL && l < c->n_layers; l++)
        if (config_layer_moe(c, l) != (l >= c->n_dense_layers))
            why = "has dense layers past MoE ones";
    return why == NULL ||
           step_fail(err, "%s: llama.cpp's deepseek2 cannot run this model, which %s", path, why);
}

/* The per-frequency factors a GGUF file holds as rope_freqs.weight: the
 * model's own, or Llama 3's rule worked out per frequency as llama.cpp's
 * convert_hf_to_gguf.py does (in float32): 1 for a wavelength below
 * original_context / high_freq_factor, factor above original_context /
 * low_freq_factor, and 1 / ((1 - smooth) / factor + smooth) between.
 * Returns how many (0: the model needs none). */
static int rope_factors(const Config *c, float *out) {
    const RopeScaling *s = &c->rope_scaling;
    int head_dim = config_head_dim(c), half = head_dim / 2;
    if (s->type == ROPE_SCALING_FACTORS) {
        memcpy(out, s->factors, (size_t)half * sizeof *out);
        return half;
    }
    if (s->type != ROPE_SCALING_LLAMA3) return 0;
    const float two_pi = 6.28318530717958647692f, old = (float)s->original_context;
    for (int i = 0; i < half; i++) {
        float freq = 1.0f / powf(config_rope_theta(c), (float)(2 * i) / (float)head_dim);
        float wavelen = two_pi / freq;
        float smooth =
            (old / wavelen - s->low_freq_factor) / (s->high_freq_factor - s->low_freq_factor);
        out[i] = wavelen < old / s->high_freq_factor ? 1.0f
                 : wavelen > old / s->low_freq_factor
                     ? s->factor
                     : 1.0f / ((1.0f - smooth) / s->factor + smooth);
    }
    return half;
}

/* A tensor of m to write: a vector stays F32; a matrix takes `type`, with
 * Q8_0 falling back to F16 when its rows are not whole blocks. */
static GgufOutTensor out_tensor(const char *name, const float *values, size_t rows, size_t cols,
                                GgufOutType type, GgufSaveReport *r) {
    GgufOutTensor t = {.values = values, .rows = rows, .cols = cols, .type = GGML_F32};
    snprintf(t.name, sizeof t.name, "%s", name);
    if (rows > 0 && type == GGUF_OUT_F16) t.type = GGML_F16;
    if (rows > 0 && type == GGUF_OUT_BF16) t.type = GGML_BF16;
    if (rows > 0 && type == GGUF_OUT_Q8_0) {
        t.type = cols % 32 == 0 ? GGML_Q8_0 : GGML_F16;
        r->q8_0_fallbacks += cols % 32 != 0;
    }
    r->tensors++;
    r->f32 += t.type == GGML_F32, r->f16 += t.type == GGML_F16, r->q8_0 += t.type == GGML_Q8_0;
    r->bf16 += t.type == GGML_BF16;
    return t;
}

/* Layer l's router and experts as llama.cpp holds them (an MoE layer):
 * ffn_gate_inp [E, dim], and the experts stacked, ffn_gate_exps and
 * ffn_up_exps [E, hidden, dim], ffn_down_exps [E, dim, hidden]. Returns
 * how many. */
static int list_experts(const Model *m, int l, GgufOutType type, GgufOutTensor *out,
                        GgufSaveReport *r) {
    const Config *c = &m->config;
    if (!config_layer_moe(c, l)) return 0;
    size_t E = (size_t)c->n_experts, d = (size_t)c->dim, eh = (size_t)c->expert_hidden_dim;
    /* a layer's experts of one kind lie together in storage (weight_layout.h) */
#define EXPERTS(k) model_matrix_floats(m, model_expert(m, l, 0, k))
    const struct {
        const char *name;
        const float *values;
        size_t rows, cols;
    } parts[] = {{"ffn_gate_inp.weight", model_vector(m, VEC_ROUTER, config_moe_slot(c, l)), E, d},
                 {"ffn_gate_exps.weight", EXPERTS(EXPERT_GATE), eh, d},
                 {"ffn_down_exps.weight", EXPERTS(EXPERT_DOWN), d, eh},
                 {"ffn_up_exps.weight", EXPERTS(EXPERT_UP), eh, d}};
#undef EXPERTS
    for (int i = 0; i < 4; i++) {
        char name[64];
        snprintf(name, sizeof name, "blk.%d.%s", l, parts[i].name);
        out[i] = out_tensor(name, parts[i].values, parts[i].rows, parts[i].cols,
                            i == 0 ? GGUF_OUT_F32 : type, r);
        out[i].planes = i == 0 ? 0 : E; /* the experts: one plane each */
    }
    return 4;
}

bool gguf_save_streams(const Config *c) {
    return !c->fused_files && c->mlp != MLP_GELU && c->n_experts == 0;
}

/* Whether every matrix of m can be read a row at a time as it is held:
 * row-major or GGUF blocks, not int8 or packed. */
static bool readable_as_stored(const Model *m) {
    if (m->weight_group > 0 || m->fast_kernels) return false;
    const Matrix *all[2] = {&m->embedding, &m->classifier};
    for (int i = 0; i < 2; i++)
        if (all[i]->layout != MATRIX_ROWS && all[i]->layout != MATRIX_BLOCKS) return false;
    for (int i = 0; i < model_matrix_count(m); i++) {
        const Matrix *x = model_matrix_at(m, i);
        if (x->rows > 0 && x->layout != MATRIX_ROWS && x->layout != MATRIX_BLOCKS) return false;
    }
    return true;
}

/* t with its values read from x, a row at a time, when storage does not
 * hold them as float32 (the model loaded as the file stores it). */
static GgufOutTensor with_source(GgufOutTensor t, const Model *m, const Matrix *x) {
    if (t.values == NULL && model_matrix_floats(m, x) == NULL) t.source = x, t.owner = m;
    return t;
}

/* Every tensor of m under its GGUF name; returns how many. */

/* fused (not NULL: Phi-3's, [n_layers, q_dim + 2 kv_dim + 2 hidden, dim],
 * the caller's room) holds q, k, v, gate and up fused (hf_fuse_layer, as
 * llama.cpp's phi3 holds them), written as attn_qkv and ffn_up instead. */
static int list_tensors(const Model *m, GgufOutType type, RowOrder rotated, const float *factors,
                        int n_factors, float *fused, GgufOutTensor *out, GgufSaveReport *r) {
    const Config *c = &m->config;
    size_t d = (size_t)c->dim, vocab = (size_t)c->vocab_size;
    int n = 0;
    out[n++] = with_source(
        out_tensor("token_embd.weight", model_matrix_floats(m, &m->embedding), vocab, d, type, r),
        m, &m->embedding);
    out[n++] = out_tensor("output_norm.weight", model_vector(m, VEC_FINAL_NORM, 0), 0, d, type, r);
    if (!c->shared_classifier)
        out[n++] = with_source(
            out_tensor("output.weight", model_matrix_floats(m, &m->classifier), vocab, d, type, r),
            m, &m->classifier);
    if (n_factors > 0)
        out[n++] = out_tensor("rope_freqs.weight", factors, 0, (size_t)n_factors, type, r);
    if (c->rope_scaling.type == ROPE_SCALING_LONGROPE) { /* one factor a turned pair, each list */
        size_t pairs = (size_t)config_rope_dims(c) / 2;
        out[n++] =
            out_tensor("rope_factors_long.weight", c->rope_scaling.long_factors, 0, pairs, type, r);
        out[n++] =
            out_tensor("rope_factors_short.weight", c->rope_scaling.factors, 0, pairs, type, r);
    }
    size_t qkv_rows = (size_t)config_q_dim(c) + 2 * (size_t)config_kv_dim(c);
    size_t up_rows = 2 * (size_t)c->hidden_dim, per_layer = hf_fused_layer_floats(c);
    for (int l = 0; l < c->n_layers; l++) {
        HfLayerTensor parts[HF_LAYER_TENSORS];
        int count = hf_layer_tensors(m, l, parts);
        for (int i = 0; i < count; i++) {
            char name[64];
            bool attn;
            int row0, total;
            if (fused != NULL && hf_fused_rows(c, parts[i].kind, &attn, &row0, &total))
                continue; /* in attn_qkv and ffn_up, below */
            snprintf(name, sizeof name, "blk.%d.%s", l, parts[i].gguf_name);
            GgufOutTensor *t = &out[n++];
            *t = out_tensor(name, parts[i].view, parts[i].rows, parts[i].cols, type, r);
            if (parts[i].kind >= 0) *t = with_source(*t, m, &m->layers[l].m[parts[i].kind]);
            if (parts[i].heads > 0) t->order = rotated, t->head_dim = config_head_dim(c);
        }
        n += list_experts(m, l, type, out + n, r);
        if (fused == NULL) continue;
        float *buf = fused + (size_t)l * per_layer;
        hf_fuse_layer(m, l, rotated, buf);
        char name[64];
        snprintf(name, sizeof name, "blk.%d.attn_qkv.weight", l);
        out[n++] = out_tensor(name, buf, qkv_rows, d, type, r);
        snprintf(name, sizeof name, "blk.%d.ffn_up.weight", l);
        out[n++] = out_tensor(name, buf + qkv_rows * d, up_rows, d, type, r);
    }
    return n;
}

/* GPT-2's tensors under llama.cpp's names (Conv1D weights [out, in], as
 * stepwise holds them); q, k and v fused into one attn_qkv per layer, its
 * rows and bias in *fused (malloc'd [n_layers, 3 dim, dim + 1], the
 * caller's). Returns how many, or -1 when out of memory. */
static int list_gpt2_tensors(const Model *m, GgufOutType type, GgufOutTensor *out, float **fused,
                             GgufSaveReport *r) {
    const Config *c = &m->config;
    size_t d = (size_t)c->dim, h = (size_t)c->hidden_dim, vocab = (size_t)c->vocab_size;
    size_t per_layer = 3 * d * d + 3 * d;
    *fused = malloc((size_t)c->n_layers * per_layer * sizeof(float));
    if (*fused == NULL) return -1;
    int n = 0;
    out[n++] =
        out_tensor("token_embd.weight", model_matrix_floats(m, &m->embedding), vocab, d, type, r);
    out[n++] = out_tensor("position_embd.weight", model_vector(m, VEC_POSITIONS, 0),
                          (size_t)c->seq_len, d, type, r);
    out[n++] = out_tensor("output_norm.weight", model_vector(m, VEC_FINAL_NORM, 0), 0, d, type, r);
    out[n++] =
        out_tensor("output_norm.bias", model_vector(m, VEC_FINAL_NORM_BIAS, 0), 0, d, type, r);
    if (!c->shared_classifier)
        out[n++] =
            out_tensor("output.weight", model_matrix_floats(m, &m->classifier), vocab, d, type, r);
    for (int l = 0; l < c->n_layers; l++) {
        float *qkv = *fused + (size_t)l * per_layer, *bias = qkv + 3 * d * d;
        const Matrix *mats = m->layers[l].m;
        static const MatrixKind qkv_kinds[3] = {MAT_WQ, MAT_WK, MAT_WV};
        static const VectorKind qkv_biases[3] = {VEC_Q_BIAS, VEC_K_BIAS, VEC_V_BIAS};
        for (int k = 0; k < 3; k++) {
            memcpy(qkv + k * d * d, model_matrix_floats(m, &mats[qkv_kinds[k]]),
                   d * d * sizeof(float));
            memcpy(bias + k * d, model_vector(m, qkv_biases[k], l), d * sizeof(float));
        }
        const struct {
            const char *name;
            const float *values;
            size_t rows, cols;
        } layer[] = {{"attn_norm.weight", model_vector(m, VEC_ATT_NORM, l), 0, d},
                     {"attn_norm.bias", model_vector(m, VEC_ATT_NORM_BIAS, l), 0, d},
                     {"attn_qkv.weight", qkv, 3 * d, d},
                     {"attn_qkv.bias", bias, 0, 3 * d},
                     {"attn_output.weight", model_matrix_floats(m, &mats[MAT_WO]), d, d},
                     {"attn_output.bias", model_vector(m, VEC_O_BIAS, l), 0, d},
                     {"ffn_norm.weight", model_vector(m, VEC_FFN_NORM, l), 0, d},
                     {"ffn_norm.bias", model_vector(m, VEC_FFN_NORM_BIAS, l), 0, d},
                     {"ffn_up.weight", model_matrix_floats(m, &mats[MAT_GATE]), h, d},
                     {"ffn_up.bias", model_vector(m, VEC_GATE_BIAS, l), 0, h},
                     {"ffn_down.weight", model_matrix_floats(m, &mats[MAT_DOWN]), d, h},
                     {"ffn_down.bias", model_vector(m, VEC_DOWN_BIAS, l), 0, d}};
        for (size_t i = 0; i < sizeof layer / sizeof layer[0]; i++) {
            char name[64];
            snprintf(name, sizeof name, "blk.%d.%s", l, layer[i].name);
            out[n++] = out_tensor(name, layer[i].values, layer[i].rows, layer[i].cols, type, r);
        }
    }
    return n;
}

bool gguf_model_save(const Model *m, const Tokenizer *tok, GgufOutType type, const char *name,
                     const char *path, GgufSaveReport *report, StepError *err) {
    const Config *c = &m->config;
    *report = (GgufSaveReport){0};
    if (!model_in_storage(m) && !(gguf_save_streams(c) && readable_as_stored(m)))
        return step_fail(err, "%s: only a float32 model as loaded can be converted", path);
    if (c->qkv_bias && c->qk_norm)
        return step_fail(err, "%s: no GGUF architecture has both q/k/v biases and q/k norms", path);
    /* the family the fields make (config_family), written as llama.cpp's
     * architecture of it (Mixtral's as llama): its block must be the
     * family's, and every field it sets one llama.cpp's architecture reads
     * (family.h's llama_cpp_fields), or llama.cpp would run another model */
    const Family *family = family_of_config(c);
    bool fits = family_block_matches(family, c);
    if (fits && family->window == FAMILY_WINDOW_PATTERN && !gemma_fits(c, family, path, err))
        return false;
    if (config_mla(c) && !deepseek2_fits(c, path, err)) return false;
    if (!fits)
        return step_fail(err,
                         "%s: no GGUF architecture has this model's mix of norms, MLP, "
                         "positions and biases",
                         path);
    const ConfigField *ignored = family_llama_cpp_ignored(family, c);
    if (ignored != NULL)
        return step_fail(err, "%s: llama.cpp's %s ignores %s (this model's is %g)", path,
                         family->gguf, ignored->name, config_field_get(c, ignored));
    StepError why;
    if (!model_check_finite(m, &why)) /* Q8_0 of a NaN is undefined, and F32 would copy it */
        return step_fail(err, "%s: not written: the model's %s", path, why.message);
    const char *arch = family->gguf; /* Mixtral's: llama.cpp's llama with experts */
    if (c->n_experts > 0 && family->routing == FAMILY_ROUTING_QWEN3MOE &&
        (!c->expert_norm_topk || config_dense_layers(c) > 0))
        return step_fail(err,
                         "%s: llama.cpp's qwen3moe renormalises the k weights and has no dense "
                         "layers; this model %s",
                         path, !c->expert_norm_topk ? "does not renormalise" : "has dense layers");
    report->arch = arch;
    /* llama.cpp's llama and deepseek2 keep interleaved pairs; its qwen, Hugging Face's halves */
    RopeLayout wanted = family->gguf_rope;
    RowOrder rotated = c->rope_layout == wanted ? ROWS_AS_HELD
                       : wanted == ROPE_HALVES  ? ROWS_TO_HALVES
                                                : ROWS_TO_INTERLEAVED;
    GgufMetadata meta = GGUF_METADATA_INIT;
    gguf_meta_string(&meta, "general.architecture", arch);
    gguf_meta_string(&meta, "general.name", name);
    gguf_meta_u32(&meta, "general.file_type",
                  type == GGUF_OUT_F32    ? 0
                  : type == GGUF_OUT_F16  ? 1
                  : type == GGUF_OUT_BF16 ? 32
                                          : 7);
    write_config(&meta, c, family);
    bool ok = tok == NULL || gguf_write_tokenizer(&meta, tok, err);
    float factors[ROPE_MAX_FACTORS];
    int n_factors = rope_factors(c, factors);
    size_t max_tensors = 6 + (size_t)c->n_layers * (HF_LAYER_TENSORS + 4);
    GgufOutTensor *tensors = ok ? malloc(max_tensors * sizeof *tensors) : NULL;
    float *fused = NULL;
    if (ok && tensors == NULL) ok = step_fail(err, "%s: out of memory", path);
    if (ok) {
        if (c->fused_files)
            fused = malloc((size_t)c->n_layers * hf_fused_layer_floats(c) * sizeof(float));
        int n = family->position == POS_LEARNED
                    ? list_gpt2_tensors(m, type, tensors, &fused, report)
                : c->fused_files && fused == NULL
                    ? -1
                    : list_tensors(m, type, rotated, factors, n_factors, fused, tensors, report);
        ok = n >= 0 ? gguf_write_file(path, &meta, tensors, n, m->progress, err)
                    : step_fail(err, "%s: out of memory", path);
    }
    free(tensors), free(fused);
    gguf_meta_free(&meta);
    return ok;
}
