/* hf_model.c: see hf_model.h. */

#include "ref/formats/hf_model.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ref/family.h"
#include "ref/util/file_util.h"
#include "ref/formats/hf_gemma.h"
#include "ref/formats/hf_gpt2.h"
#include "ref/formats/hf_moe.h"
#include "ref/util/json_util.h"
#include "ref/formats/safetensors.h"

#define MAX_SHARDS MODEL_MAX_FILES

bool hf_is_model_dir(const char *path) {
    struct stat st;
    return path != NULL && stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The weight files of dir: model.safetensors, or the distinct shards that
 * the index's weight_map names (each a plain file name in dir). */
static bool open_files(const char *dir, SafetensorsFile *files, int *n, StepError *err) {
    char path[4096], *text = NULL;
    *n = 0;
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
    struct stat st;
    if (stat(path, &st) != 0) {
        snprintf(path, sizeof path, "%s/model.safetensors", dir);
        if (!safetensors_open(&files[0], path, err)) return false;
        *n = 1;
        return true;
    }
    if (!file_read_text(path, "index", &text, err)) return false;
    cJSON *index = json_parse_whole(text);
    free(text);
    const cJSON *map = cJSON_GetObjectItemCaseSensitive(index, "weight_map"), *e;
    bool ok = cJSON_IsObject(map) ||
              step_fail(err, "%s: model.safetensors.index.json needs a weight_map", dir);
    char names[MAX_SHARDS][256];
    const cJSON *entries = ok ? map : NULL;
    cJSON_ArrayForEach(e, entries) {
        const char *shard = cJSON_IsString(e) ? e->valuestring : "";
        if (shard[0] == '\0' || shard[0] == '.' || strchr(shard, '/') != NULL ||
            strlen(shard) > 200) {
            ok = step_fail(err,
                           "%s: the index names shard '%.60s' (a file name in the folder "
                           "expected)",
                           dir, shard);
            break;
        }
        bool known = false;
        for (int i = 0; i < *n; i++) known |= strcmp(names[i], shard) == 0;
        if (known) continue;
        if (*n == MAX_SHARDS) {
            ok = step_fail(err, "%s: more than %d shards", dir, MAX_SHARDS);
            break;
        }
        snprintf(names[*n], sizeof names[*n], "%s", shard);
        snprintf(path, sizeof path, "%s/%s", dir, shard);
        if (!(ok = safetensors_open(&files[*n], path, err))) break;
        (*n)++;
    }
    cJSON_Delete(index);
    return ok;
}

/* The tensor called name in any of the files, or NULL. */
static SafetensorsTensor *find(SafetensorsFile *files, int n, const char *name,
                               const SafetensorsFile **in) {
    for (int i = 0; i < n; i++) {
        SafetensorsTensor *t = safetensors_find(&files[i], name);
        if (t != NULL) {
            *in = &files[i];
            return t;
        }
    }
    return NULL;
}

/* Hugging Face's checkpoints keep each head's q and k dimensions as two
 * halves, (i, i + head_dim/2) rotated together (convert_llama_weights_to_hf
 * permutes Meta's rows so). Put them back as interleaved pairs (2i, 2i+1),
 * as llama.cpp's converter does: q·k is the same sum, in llama2.c's order,
 * so a converted llama2.c model gives run.c's logits to the bit. x holds
 * `heads` blocks of head_dim rows of `cols` values; row j·half + i of a
 * block moves to row 2i + j. */
bool hf_interleave_heads(float *x, int heads, int head_dim, size_t cols) {
    size_t block = (size_t)head_dim * cols;
    float *tmp = malloc(block * sizeof(float));
    if (tmp == NULL) return false;
    for (int h = 0; h < heads; h++) {
        float *b = x + (size_t)h * block;
        memcpy(tmp, b, block * sizeof(float));
        for (int r = 0; r < head_dim; r++)
            memcpy(b + (size_t)r * cols,
                   tmp + rope_source_row((uint64_t)r, head_dim, ROWS_TO_INTERLEAVED) * cols,
                   cols * sizeof(float));
    }
    free(tmp);
    return true;
}

/* The tensor called name, of `rows` × `cols` (rows 0: a vector of cols),
 * and the file it is in; NULL (err set) when missing or of another shape. */
static SafetensorsTensor *find_shaped(SafetensorsFile *files, int n, const char *name, int rows,
                                      int cols, const SafetensorsFile **in, const char *dir,
                                      StepError *err) {
    SafetensorsTensor *t = find(files, n, name, in);
    if (t == NULL) {
        step_fail(err, "%s: tensor %s is missing", dir, name);
        return NULL;
    }
    bool fits = rows == 0 ? t->ndim == 1 && t->shape[0] == cols
                          : t->ndim == 2 && t->shape[0] == rows && t->shape[1] == cols;
    if (!fits) {
        step_fail(err, "%s: tensor %s has the wrong shape (config.json implies [%d%s%d])",
                  (*in)->path, name, rows == 0 ? cols : rows, rows == 0 ? "" : ", ",
                  rows == 0 ? 0 : cols);
        return NULL;
    }
    return t;
}

/* Copy the tensor called name, of `rows` × `cols` (rows 0: a vector of
 * cols), into dst as float32. */
static bool take(SafetensorsFile *files, int n, const char *name, int rows, int cols, float *dst,
                 const char *dir, StepError *err) {
    const SafetensorsFile *in = NULL;
    SafetensorsTensor *t = find_shaped(files, n, name, rows, cols, &in, dir, err);
    if (t == NULL) return false;
    safetensors_to_f32(t, dst);
    safetensors_release(in, t);
    t->used = 1;
    return true;
}

int hf_layer_tensors(const Model *m, int l, HfLayerTensor out[HF_LAYER_TENSORS]) {
    const Config *c = &m->config;
    size_t d = (size_t)c->dim, kv = (size_t)config_kv_dim(c);
    size_t qd = (size_t)config_q_dim(c), hd = (size_t)config_head_dim(c);
    size_t q_rank = (size_t)c->q_lora_rank, kv_rank = (size_t)c->kv_lora_rank;
    /* the heads whose q and k rows RoPE pairs; none for MLA, whose files
     * turn interleaved pairs already (DeepSeek-V2's apply_rotary_pos_emb) */
    int nh = config_mla(c) ? 0 : c->n_heads, nkv = c->n_kv_heads;
#define AT(k) model_vector(m, (k), l) /* NULL: the architecture has none */
    bool post = c->post_norms;        /* Gemma's post_attention_layernorm is its post-norm */
    /* a matrix's place and shape are model_matrix_place's (kind >= 0) */
    const HfLayerTensor all[HF_LAYER_TENSORS] = {
        {"input_layernorm.weight", "attn_norm.weight", AT(VEC_ATT_NORM), 0, d, 0, -1},
        {"self_attn.q_proj.weight", "attn_q.weight", NULL, 0, 0, nh, MAT_WQ},
        {"self_attn.q_a_proj.weight", "attn_q_a.weight", NULL, 0, 0, 0, MAT_Q_A},
        {"self_attn.q_a_layernorm.weight", "attn_q_a_norm.weight", AT(VEC_Q_A_NORM), 0, q_rank, 0,
         -1},
        {"self_attn.q_b_proj.weight", "attn_q_b.weight", NULL, 0, 0, 0, MAT_Q_B},
        {"self_attn.k_proj.weight", "attn_k.weight", NULL, 0, 0, nkv, MAT_WK},
        {"self_attn.v_proj.weight", "attn_v.weight", NULL, 0, 0, 0, MAT_WV},
        {"self_attn.kv_a_proj_with_mqa.weight", "attn_kv_a_mqa.weight", NULL, 0, 0, 0, MAT_KV_A},
        {"self_attn.kv_a_layernorm.weight", "attn_kv_a_norm.weight", AT(VEC_KV_A_NORM), 0, kv_rank,
         0, -1},
        {"self_attn.kv_b_proj.weight", "attn_kv_b.weight", NULL, 0, 0, 0, MAT_KV_B},
        {"self_attn.o_proj.weight", "attn_output.weight", NULL, 0, 0, 0, MAT_WO},
        {"self_attn.q_proj.bias", "attn_q.bias", AT(VEC_Q_BIAS), 0, qd, nh, -1},
        {"self_attn.k_proj.bias", "attn_k.bias", AT(VEC_K_BIAS), 0, kv, nkv, -1},
        {"self_attn.v_proj.bias", "attn_v.bias", AT(VEC_V_BIAS), 0, kv, 0, -1},
        {"self_attn.q_norm.weight", "attn_q_norm.weight", AT(VEC_Q_NORM), 0, hd, 1, -1},
        {"self_attn.k_norm.weight", "attn_k_norm.weight", AT(VEC_K_NORM), 0, hd, 1, -1},
        {post ? "pre_feedforward_layernorm.weight" : "post_attention_layernorm.weight",
         "ffn_norm.weight", AT(VEC_FFN_NORM), 0, d, 0, -1},
        {"mlp.gate_proj.weight", "ffn_gate.weight", NULL, 0, 0, 0, MAT_GATE},
        {"mlp.down_proj.weight", "ffn_down.weight", NULL, 0, 0, 0, MAT_DOWN},
        {"mlp.up_proj.weight", "ffn_up.weight", NULL, 0, 0, 0, MAT_UP},
        {"mlp.shared_experts.gate_proj.weight", "ffn_gate_shexp.weight", NULL, 0, 0, 0,
         MAT_SHARED_GATE},
        {"mlp.shared_experts.down_proj.weight", "ffn_down_shexp.weight", NULL, 0, 0, 0,
         MAT_SHARED_DOWN},
        {"mlp.shared_experts.up_proj.weight", "ffn_up_shexp.weight", NULL, 0, 0, 0, MAT_SHARED_UP},
        {"post_attention_layernorm.weight", "post_attention_norm.weight", AT(VEC_POST_ATT_NORM), 0,
         d, 0, -1},
        {"post_feedforward_layernorm.weight", "post_ffw_norm.weight", AT(VEC_POST_FFN_NORM), 0, d,
         0, -1},
    };
#undef AT
    int n = 0;
    for (int i = 0; i < HF_LAYER_TENSORS; i++) {
        HfLayerTensor t = all[i];
        if (t.kind >= 0) { /* a matrix the layer holds: rows 0 for one it has none of */
            MatrixPlace p = model_matrix_place(m, l * LAYER_MATRICES + t.kind);
            if (p.rows == 0) continue;
            t.view = model_matrix_floats(m, &m->layers[l].m[t.kind]); /* NULL: held otherwise */
            t.rows = (size_t)p.rows, t.cols = (size_t)p.cols;
        } else if (t.view == NULL) {
            continue;
        }
        out[n++] = t;
    }
    return n;
}

static ElementType element_of(SafetensorsDtype d) {
    return d == ST_F32 ? ELEM_F32 : d == ST_F16 ? ELEM_F16 : ELEM_BF16;
}

/* The matrix called name, of rows × cols, where its file stores it: a view
 * into the mapping (interleave_head_dim: q's and k's rows read in
 * interleaved order). A tensor whose data is not aligned to its element
 * (a header of odd length) is copied, owned, to a place that is. */
static bool view_matrix(SafetensorsFile *files, int n, const char *name, int rows, int cols,
                        int interleave_head_dim, Matrix *out, const char *dir, StepError *err) {
    const SafetensorsFile *in = NULL;
    SafetensorsTensor *t = find_shaped(files, n, name, rows, cols, &in, dir, err);
    if (t == NULL) return false;
    ElementType e = element_of(t->dtype);
    *out = matrix_view(e, t->data, rows, cols);
    out->interleave_head_dim = interleave_head_dim;
    if (!matrix_align(out, (size_t)t->bytes)) return step_fail(err, "%s: out of memory", dir);
    t->used = 1;
    return true;
}

/* Every tensor of layer l, q's and k's rows interleaved: widened into
 * float32 storage, or (a matrix held as stored) viewed in place. */
bool hf_fused_rows(const Config *c, int kind, bool *attn, int *row0, int *total) {
    int qd = config_q_dim(c), kv = config_kv_dim(c), h = c->hidden_dim;
    *attn = kind == MAT_WQ || kind == MAT_WK || kind == MAT_WV;
    if (!*attn && kind != MAT_GATE && kind != MAT_UP) return false;
    *total = *attn ? qd + 2 * kv : 2 * h;
    *row0 = kind == MAT_WK ? qd : kind == MAT_WV ? qd + kv : kind == MAT_UP ? h : 0;
    return true;
}

size_t hf_fused_layer_floats(const Config *c) {
    return ((size_t)config_q_dim(c) + 2 * (size_t)config_kv_dim(c) + 2 * (size_t)c->hidden_dim) *
           (size_t)c->dim;
}

void hf_fuse_layer(const Model *m, int l, RowOrder rotated, float *buf) {
    const Config *c = &m->config;
    static const MatrixKind kinds[5] = {MAT_WQ, MAT_WK, MAT_WV, MAT_GATE, MAT_UP};
    size_t at = 0;
    for (int k = 0; k < 5; k++) {
        int rows, cols;
        layer_matrix_shape(c, kinds[k], &rows, &cols);
        const float *src = model_matrix_floats(m, &m->layers[l].m[kinds[k]]);
        RowOrder order = kinds[k] == MAT_WQ || kinds[k] == MAT_WK ? rotated : ROWS_AS_HELD;
        for (size_t r = 0; r < (size_t)rows; r++)
            memcpy(buf + (at + r) * cols,
                   src + rope_source_row(r, config_head_dim(c), order) * cols,
                   (size_t)cols * sizeof(float));
        at += (size_t)rows;
    }
}

/* Part p of layer l from its fused tensor (rows row0.. of total): a view of
 * its rows where the file stores them, or (into float32 storage) those rows
 * widened through the view. */
static bool take_fused(Model *m, SafetensorsFile *files, int n, int l, const HfLayerTensor *p,
                       bool attn, int row0, int total, const char *dir, StepError *err) {
    int head_dim = config_head_dim(&m->config);
    char name[160];
    snprintf(name, sizeof name, "model.layers.%d.%s", l,
             attn ? "self_attn.qkv_proj.weight" : "mlp.gate_up_proj.weight");
    const SafetensorsFile *in = NULL;
    SafetensorsTensor *t = find_shaped(files, n, name, total, (int)p->cols, &in, dir, err);
    if (t == NULL) return false;
    t->used = 1;
    /* its rows where the file stores them (q's and k's read interleaved) */
    size_t size = t->dtype == ST_F32 ? 4 : 2, at = (size_t)row0 * p->cols * size;
    Matrix view = matrix_view(element_of(t->dtype), t->data + at, (int)p->rows, (int)p->cols);
    bool turn = p->heads > 0 && m->config.rope_layout == ROPE_INTERLEAVED;
    view.interleave_head_dim = turn ? head_dim : 0;
    return hf_layer_matrix_place(m, l, p, &view, p->rows * p->cols * size, dir, err);
}

bool hf_layer_matrix_place(Model *m, int l, const HfLayerTensor *p, Matrix *view, size_t bytes,
                           const char *path, StepError *err) {
    if (!matrix_align(view, bytes)) return step_fail(err, "%s: out of memory", path);
    if (p->view == NULL) { /* held as stored */
        m->layers[l].m[p->kind] = *view;
        return true;
    }
    float *dst = model_weight_slot(m, p->view); /* widened, a row at a time */
    for (size_t r = 0; r < p->rows; r++) matrix_row(view, (int)r, dst + r * p->cols);
    matrix_free(view);
    return true;
}

/* Gemma's norms multiply by 1 + w: the sum, in float32 as Hugging Face
 * forms it, is what the model holds. */
static void add_one(float *w, size_t n) {
    for (size_t i = 0; i < n; i++) w[i] = 1.0f + w[i];
}

/* Every tensor of layer l, q's and k's rows interleaved: widened into
 * float32 storage, or (a matrix held as stored) viewed in place; fused:
 * Phi-3's qkv_proj and gate_up_proj hold some of them (hf_fused_rows). */
static bool take_layer(Model *m, SafetensorsFile *files, int n, int l, bool fused, const char *dir,
                       StepError *err) {
    HfLayerTensor parts[HF_LAYER_TENSORS];
    int count = hf_layer_tensors(m, l, parts), head_dim = config_head_dim(&m->config);
    bool turn = m->config.rope_layout == ROPE_INTERLEAVED; /* q and k to pairs (else as stored) */
    for (int i = 0; i < count; i++) {
        char name[160];
        bool attn;
        int row0, total;
        if (fused && hf_fused_rows(&m->config, parts[i].kind, &attn, &row0, &total)) {
            if (!take_fused(m, files, n, l, &parts[i], attn, row0, total, dir, err)) return false;
            continue;
        }
        snprintf(name, sizeof name, "model.layers.%d.%s", l, parts[i].name);
        if (parts[i].view == NULL) { /* a matrix, as stored */
            if (!view_matrix(files, n, name, (int)parts[i].rows, (int)parts[i].cols,
                             parts[i].heads > 0 && turn ? head_dim : 0,
                             &m->layers[l].m[parts[i].kind], dir, err))
                return false;
            continue;
        }
        float *dst = model_weight_slot(m, parts[i].view);
        if (!take(files, n, name, (int)parts[i].rows, (int)parts[i].cols, dst, dir, err))
            return false;
        if (m->config.norm_plus_one && hf_is_norm_weight(name)) add_one(dst, parts[i].cols);
        size_t cols = parts[i].rows == 0 ? 1 : parts[i].cols; /* a vector: rows of one value */
        if (parts[i].heads > 0 && turn && !hf_interleave_heads(dst, parts[i].heads, head_dim, cols))
            return step_fail(err, "model %s: out of memory", dir);
    }
    return true;
}

/* Layer l's router and experts (an MoE layer; hf_moe.h): the router into
 * float32 storage, each expert's matrices widened there too or (stored)
 * viewed where the files hold them. */
static bool take_experts(Model *m, SafetensorsFile *files, int n, int l, bool stored,
                         const char *dir, StepError *err) {
    const Config *c = &m->config;
    if (!config_layer_moe(c, l)) return true;
    bool qwen = !hf_moe_mixtral(c); /* Qwen3-MoE's (and DeepSeek-V2's) names, else Mixtral's */
    for (int e = -1; e < c->n_experts; e++)
        for (int part = 0; part < (e < 0 ? 1 : EXPERT_MATRICES); part++) {
            char name[160];
            int rows, cols;
            hf_moe_tensor_name(qwen, l, e, (ExpertKind)part, name, sizeof name);
            bool ok;
            if (stored && e >= 0) {
                expert_matrix_shape(c, (ExpertKind)part, &rows, &cols);
                ok = view_matrix(files, n, name, rows, cols, 0,
                                 model_expert(m, l, e, (ExpertKind)part), dir, err);
            } else {
                const float *view = hf_moe_tensor_view(m, l, e, (ExpertKind)part, &rows, &cols);
                ok = take(files, n, name, rows, cols, model_weight_slot(m, view), dir, err);
            }
            if (!ok) return false;
        }
    return true;
}

static bool take_all(Model *m, SafetensorsFile *files, int n, bool stored, bool fused,
                     const char *dir, StepError *err) {
    const Config *c = &m->config;
    bool ok = stored ? view_matrix(files, n, "model.embed_tokens.weight", c->vocab_size, c->dim, 0,
                                   &m->embedding, dir, err)
                     : take(files, n, "model.embed_tokens.weight", c->vocab_size, c->dim,
                            model_matrix_slot(m, &m->embedding), dir, err);
    for (int l = 0; ok && l < c->n_layers; l++) {
        ok = take_layer(m, files, n, l, fused, dir, err) &&
             take_experts(m, files, n, l, stored, dir, err);
        progress_report(m->progress, "reading the weights (layers)", (uint64_t)l + 1,
                        (uint64_t)c->n_layers);
    }
    ok = ok && take(files, n, "model.norm.weight", 0, c->dim,
                    model_vector_slot(m, VEC_FINAL_NORM, 0), dir, err);
    if (ok && c->norm_plus_one) add_one(model_vector_slot(m, VEC_FINAL_NORM, 0), (size_t)c->dim);
    if (ok && !c->shared_classifier && stored)
        ok = view_matrix(files, n, "lm_head.weight", c->vocab_size, c->dim, 0, &m->classifier, dir,
                         err);
    else if (ok && !c->shared_classifier)
        ok = take(files, n, "lm_head.weight", c->vocab_size, c->dim,
                  model_matrix_slot(m, &m->classifier), dir, err);
    if (ok && stored && c->shared_classifier) /* the embedding's data, not a second owner */
        m->classifier = matrix_borrow(&m->embedding);
    return ok;
}

/* The report: each file's dtypes, and the tensors nothing read. */
static void fill_report(HfLoadReport *r, const SafetensorsFile *files, int n) {
    memset(r, 0, sizeof *r);
    r->files = n;
    size_t len = 0;
    for (int i = 0; i < n; i++) {
        const char *base = strrchr(files[i].path, '/');
        bool seen[3] = {false, false, false};
        for (int k = 0; k < files[i].n; k++) {
            const SafetensorsTensor *t = &files[i].tensors[k];
            seen[t->dtype] = true;
            if (!t->used && r->unused++ == 0)
                snprintf(r->first_unused, sizeof r->first_unused, "%s", t->name);
        }
        for (int d = 0; d < 3 && len < sizeof r->dtypes - 1; d++) {
            if (!seen[d]) continue;
            len += (size_t)snprintf(r->dtypes + len, sizeof r->dtypes - len, "%s%s: %s",
                                    len ? ", " : "", base ? base + 1 : files[i].path,
                                    safetensors_dtype_name((SafetensorsDtype)d));
            if (len >= sizeof r->dtypes) len = sizeof r->dtypes - 1;
        }
    }
}

bool hf_model_load(Model *m, const char *dir, WeightsMode mode, const ProgressSink *progress,
                   HfLoadReport *report, StepError *err) {
    memset(m, 0, sizeof *m);
    m->progress = progress;
    char path[4096], *text = NULL, arch[64];
    snprintf(path, sizeof path, "%s/config.json", dir);
    struct stat st;
    if (stat(path, &st) != 0)
        return step_fail(err, "model %s: a folder without config.json (not a Hugging Face model)",
                         dir);
    if (!file_read_text(path, "config", &text, err)) return false;
    bool ok = hf_config_parse(text, path, &m->config, arch, sizeof arch, err);
    free(text);
    if (!ok) return false;
    SafetensorsFile files[MAX_SHARDS];
    int n = 0;
    if (!open_files(dir, files, &n, err)) {
        for (int i = 0; i < n; i++) safetensors_close(&files[i]);
        return false;
    }
    /* Every weight the config implies must come from a stored value: a
     * config that claims more than the files hold is refused before its
     * storage is allocated. */
    uint64_t stored = 0, needed = model_storage_floats(&m->config);
    for (int i = 0; i < n; i++)
        for (int k = 0; k < files[i].n; k++) stored += files[i].tensors[k].numel;
    ok = needed <= stored || step_fail(err,
                                       "model %s: config.json implies %llu weights, the "
                                       "safetensors files hold %llu values",
                                       dir, (unsigned long long)needed, (unsigned long long)stored);
    const Family *family = family_from_hf_class(arch); /* hf_config_parse knew it */
    bool gpt2 = family->position == POS_LEARNED;       /* GPT-2's Conv1D tensors */
    const SafetensorsFile *in = NULL;
    SafetensorsTensor *emb = find(files, n, "model.embed_tokens.weight", &in);
    if (ok && m->config.embed_scale > 0 && emb != NULL) /* Gemma's √dim, in the weights' type */
        m->config.embed_scale = hf_gemma_embed_scale(m->config.dim, emb->dtype);
    if (gpt2) /* Conv1D's weights are transposed into float32 */
        mode = WEIGHTS_F32;
    if (ok) {
        char what[4200];
        snprintf(what, sizeof what, "model %s", dir);
        ok = (mode == WEIGHTS_STORED ? model_alloc_vectors(m, err)
                                     : model_alloc_storage(m, what, err)) &&
             (gpt2 ? hf_gpt2_take(m, files, n, dir, err)
                   : take_all(m, files, n, mode == WEIGHTS_STORED, family->fused_files, dir, err));
    }
    if (ok) {
        fill_report(report, files, n);
        snprintf(m->source, sizeof m->source, "Hugging Face folder, %s (%s)%s", arch,
                 report->dtypes, mode == WEIGHTS_STORED ? ", weights as stored" : "");
    }
    for (int i = 0; mode == WEIGHTS_STORED && i < n; i++) { /* the matrices point into them */
        model_add_file(m, files[i].map, files[i].map_bytes, files[i].path); /* n <= its room */
        files[i].map = NULL;
    }
    for (int i = 0; i < n; i++) safetensors_close(&files[i]);
    ok = ok && model_rope_init(m, err);
    if (!ok) model_free(m);
    return ok;
}
