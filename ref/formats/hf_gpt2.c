/* hf_gpt2.c: see hf_gpt2.h. */
#include "ref/formats/hf_gpt2.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ref/util/json_util.h"

/* ---- config.json ---- */

static bool need(const cJSON *root, const char *key, int *out, const char *what, StepError *err) {
    return json_int_field(root, key, 1, 1 << 30, out) ||
           step_fail(err, "%s: config.json needs %s, a whole number from 1", what, key);
}

bool hf_gpt2_config(const cJSON *root, Config *c, const char *what, StepError *err) {
    memset(c, 0, sizeof *c);
    bool ok = need(root, "n_embd", &c->dim, what, err) &&
              need(root, "n_layer", &c->n_layers, what, err) &&
              need(root, "n_head", &c->n_heads, what, err) &&
              need(root, "n_positions", &c->seq_len, what, err) &&
              need(root, "vocab_size", &c->vocab_size, what, err);
    if (!ok) return false;
    c->n_kv_heads = c->n_heads;
    const cJSON *inner = cJSON_GetObjectItemCaseSensitive(root, "n_inner");
    if (inner == NULL || cJSON_IsNull(inner)) {
        c->hidden_dim = c->dim <= (1 << 28) ? 4 * c->dim : 0;
    } else if (!need(root, "n_inner", &c->hidden_dim, what, err)) {
        return false;
    }
    const cJSON *eps = cJSON_GetObjectItemCaseSensitive(root, "layer_norm_epsilon");
    double e = 1e-5;
    if (eps != NULL && !json_number_field(root, "layer_norm_epsilon", 1e-30, 0.5, &e))
        return step_fail(err, "%s: layer_norm_epsilon must be a number in (0, 0.5]", what);
    c->norm_eps = (float)e;
    const char *act = json_string_field(root, "activation_function");
    if (act != NULL && strcmp(act, "gelu_new") != 0 && strcmp(act, "gelu_pytorch_tanh") != 0)
        return step_fail(err,
                         "%s: activation_function %.40s is not supported (gelu_new, "
                         "gelu_pytorch_tanh: GELU's tanh approximation)",
                         what, act);
    /* Options that change the maths and that GPT-2 itself leaves off. */
    static const struct {
        const char *key;
        bool want;
    } flags[] = {{"scale_attn_weights", true}, {"scale_attn_by_inverse_layer_idx", false}};
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, flags[i].key);
        if (v != NULL && !cJSON_IsNull(v) && (!cJSON_IsBool(v) || cJSON_IsTrue(v) != flags[i].want))
            return step_fail(err, "%s: %s other than %s is not supported", what, flags[i].key,
                             flags[i].want ? "true" : "false");
    }
    const cJSON *tie = cJSON_GetObjectItemCaseSensitive(root, "tie_word_embeddings");
    if (tie != NULL && !cJSON_IsNull(tie) && !cJSON_IsBool(tie))
        return step_fail(err, "%s: config.json's tie_word_embeddings must be true or false", what);
    c->shared_classifier = tie == NULL || cJSON_IsNull(tie) || cJSON_IsTrue(tie);
    c->norm = NORM_LAYER, c->mlp = MLP_GELU, c->position = POS_LEARNED;
    c->qkv_bias = true, c->proj_bias = true;
    return config_validate(c, what, err);
}

/* ---- reading the tensors ---- */

/* The tensor called name in any of files, of the shape given (rows 0: a
 * vector of cols); NULL (err set) when missing or of another shape. */
static SafetensorsTensor *find_shaped(SafetensorsFile *files, int n, const char *name, int64_t rows,
                                      int64_t cols, const char *dir, StepError *err) {
    for (int i = 0; i < n; i++) {
        SafetensorsTensor *t = safetensors_find(&files[i], name);
        if (t == NULL) continue;
        bool fits = rows == 0 ? t->ndim == 1 && t->shape[0] == cols
                              : t->ndim == 2 && t->shape[0] == rows && t->shape[1] == cols;
        if (!fits) {
            step_fail(err, "%s: tensor %s has the wrong shape (config.json implies [%lld%s%lld])",
                      files[i].path, name, (long long)(rows == 0 ? cols : rows),
                      rows == 0 ? "" : ", ", (long long)(rows == 0 ? 0 : cols));
            return NULL;
        }
        t->used = 1;
        return t;
    }
    step_fail(err, "%s: tensor %s is missing", dir, name);
    return NULL;
}

/* Where the tensors of a GPT-2 folder read from: the files and the names'
 * prefix ("transformer." or ""). */
typedef struct {
    SafetensorsFile *files;
    int n;
    const char *prefix, *dir;
    float *scratch; /* [widest Conv1D] */
} Gpt2Source;

/* A vector (or the embeddings, [rows, cols] as stored) into dst. */
static bool take_as_stored(Gpt2Source *s, const char *name, int64_t rows, int64_t cols, float *dst,
                           StepError *err) {
    char full[160];
    snprintf(full, sizeof full, "%s%s", s->prefix, name);
    SafetensorsTensor *t = find_shaped(s->files, s->n, full, rows, cols, s->dir, err);
    if (t == NULL) return false;
    safetensors_to_f32(t, dst);
    return true;
}

/* Columns [col0, col0 + out) of a Conv1D weight w [in, width] as stored,
 * into dst as stepwise's [out, in]: dst[o][i] = w[i][col0 + o]. */
static void transpose_cols(const float *w, int64_t in, int64_t width, int64_t col0, int64_t out,
                           float *dst) {
    for (int64_t o = 0; o < out; o++)
        for (int64_t i = 0; i < in; i++) dst[o * in + i] = w[i * width + col0 + o];
}

/* The Conv1D weight called name, [in, out] as stored, into dst [out, in]. */
static bool take_conv1d(Gpt2Source *s, const char *name, int64_t in, int64_t out, float *dst,
                        StepError *err) {
    if (!take_as_stored(s, name, in, out, s->scratch, err)) return false;
    transpose_cols(s->scratch, in, out, 0, out, dst);
    return true;
}

static bool take_layer(Model *m, Gpt2Source *s, int l, StepError *err) {
    const Config *c = &m->config;
    int64_t d = c->dim, h = c->hidden_dim;
    char name[96];
    Matrix *mats = m->layers[l].m;
#define VEC(k)       model_vector_slot(m, (k), l)
#define MAT(k)       model_matrix_slot(m, &mats[(k)])
#define NAME(suffix) (snprintf(name, sizeof name, "h.%d.%s", l, (suffix)), name)
    bool ok = take_as_stored(s, NAME("ln_1.weight"), 0, d, VEC(VEC_ATT_NORM), err) &&
              take_as_stored(s, NAME("ln_1.bias"), 0, d, VEC(VEC_ATT_NORM_BIAS), err);
    /* c_attn: q, k and v side by side, [d, 3d] and its bias [3d] */
    static const MatrixKind qkv[3] = {MAT_WQ, MAT_WK, MAT_WV};
    static const VectorKind qkv_bias[3] = {VEC_Q_BIAS, VEC_K_BIAS, VEC_V_BIAS};
    ok = ok && take_as_stored(s, NAME("attn.c_attn.weight"), d, 3 * d, s->scratch, err);
    for (int k = 0; ok && k < 3; k++) /* read once, then each third transposed */
        transpose_cols(s->scratch, d, 3 * d, k * d, d, MAT(qkv[k]));
    float *bias = ok ? malloc((size_t)(3 * d) * sizeof(float)) : NULL;
    if (ok && bias == NULL) ok = step_fail(err, "model %s: out of memory", s->dir);
    ok = ok && take_as_stored(s, NAME("attn.c_attn.bias"), 0, 3 * d, bias, err);
    for (int k = 0; ok && k < 3; k++)
        memcpy(VEC(qkv_bias[k]), bias + k * d, (size_t)d * sizeof(float));
    free(bias);
    ok = ok && take_conv1d(s, NAME("attn.c_proj.weight"), d, d, MAT(MAT_WO), err) &&
         take_as_stored(s, NAME("attn.c_proj.bias"), 0, d, VEC(VEC_O_BIAS), err) &&
         take_as_stored(s, NAME("ln_2.weight"), 0, d, VEC(VEC_FFN_NORM), err) &&
         take_as_stored(s, NAME("ln_2.bias"), 0, d, VEC(VEC_FFN_NORM_BIAS), err) &&
         take_conv1d(s, NAME("mlp.c_fc.weight"), d, h, MAT(MAT_GATE), err) &&
         take_as_stored(s, NAME("mlp.c_fc.bias"), 0, h, VEC(VEC_GATE_BIAS), err) &&
         take_conv1d(s, NAME("mlp.c_proj.weight"), h, d, MAT(MAT_DOWN), err) &&
         take_as_stored(s, NAME("mlp.c_proj.bias"), 0, d, VEC(VEC_DOWN_BIAS), err);
#undef NAME
#undef MAT
#undef VEC
    return ok;
}

bool hf_gpt2_take(Model *m, SafetensorsFile *files, int n, const char *dir, StepError *err) {
    const Config *c = &m->config;
    int64_t d = c->dim, h = c->hidden_dim;
    bool prefixed = false;
    for (int i = 0; i < n; i++)
        prefixed |= safetensors_find(&files[i], "transformer.wte.weight") != NULL;
    Gpt2Source s = {.files = files,
                    .n = n,
                    .prefix = prefixed ? "transformer." : "",
                    .dir = dir,
                    .scratch = malloc((size_t)(d * (3 * d > h ? 3 * d : h)) * sizeof(float))};
    if (s.scratch == NULL) return step_fail(err, "model %s: out of memory", dir);
    bool ok = take_as_stored(&s, "wte.weight", c->vocab_size, d,
                             model_matrix_slot(m, &m->embedding), err) &&
              take_as_stored(&s, "wpe.weight", c->seq_len, d,
                             model_vector_slot(m, VEC_POSITIONS, 0), err);
    for (int l = 0; ok && l < c->n_layers; l++) {
        ok = take_layer(m, &s, l, err);
        progress_report(m->progress, "reading the weights (layers)", (uint64_t)l + 1,
                        (uint64_t)c->n_layers);
    }
    ok = ok &&
         take_as_stored(&s, "ln_f.weight", 0, d, model_vector_slot(m, VEC_FINAL_NORM, 0), err) &&
         take_as_stored(&s, "ln_f.bias", 0, d, model_vector_slot(m, VEC_FINAL_NORM_BIAS, 0), err);
    if (ok && !c->shared_classifier) { /* lm_head is the model's own, never prefixed */
        SafetensorsTensor *t = find_shaped(files, n, "lm_head.weight", c->vocab_size, d, dir, err);
        ok = t != NULL;
        if (ok) safetensors_to_f32(t, model_matrix_slot(m, &m->classifier));
    }
    free(s.scratch);
    return ok;
}

/* ---- writing ---- */

/* dst [in, width] columns [col0, col0 + out) = src [out, in] transposed. */
static void put_conv1d(float *dst, int64_t in, int64_t width, int64_t col0, int64_t out,
                       const float *src) {
    for (int64_t o = 0; o < out; o++)
        for (int64_t i = 0; i < in; i++) dst[i * width + col0 + o] = src[o * in + i];
}

static bool add(Gpt2Tensor *t, int *n, const char *name, int64_t rows, int64_t cols,
                const float *copy_from) {
    Gpt2Tensor *x = &t[(*n)++];
    snprintf(x->name, sizeof x->name, "%s", name);
    x->rows = rows, x->cols = cols;
    size_t count = (size_t)(rows == 0 ? cols : rows * cols);
    x->values = malloc(count * sizeof(float));
    if (x->values != NULL && copy_from != NULL) memcpy(x->values, copy_from, count * sizeof(float));
    return x->values != NULL;
}

int hf_gpt2_tensors(const Model *m, Gpt2Tensor **out) {
    const Config *c = &m->config;
    int64_t d = c->dim, h = c->hidden_dim;
    int cap = 5 + 12 * c->n_layers, n = 0;
    Gpt2Tensor *t = calloc((size_t)cap, sizeof *t);
    if (t == NULL) return -1;
    bool ok =
        add(t, &n, "transformer.wte.weight", c->vocab_size, d,
            model_matrix_floats(m, &m->embedding)) &&
        add(t, &n, "transformer.wpe.weight", c->seq_len, d, model_vector(m, VEC_POSITIONS, 0)) &&
        add(t, &n, "transformer.ln_f.weight", 0, d, model_vector(m, VEC_FINAL_NORM, 0)) &&
        add(t, &n, "transformer.ln_f.bias", 0, d, model_vector(m, VEC_FINAL_NORM_BIAS, 0));
    if (ok && !c->shared_classifier)
        ok = add(t, &n, "lm_head.weight", c->vocab_size, d, model_matrix_floats(m, &m->classifier));
    for (int l = 0; ok && l < c->n_layers; l++) {
        char name[96];
        const Matrix *mats = m->layers[l].m;
#define NAME(suffix) (snprintf(name, sizeof name, "transformer.h.%d.%s", l, (suffix)), name)
#define VEC(k)       model_vector(m, (k), l)
#define MAT(k)       model_matrix_floats(m, &mats[(k)])
        ok = add(t, &n, NAME("ln_1.weight"), 0, d, VEC(VEC_ATT_NORM)) &&
             add(t, &n, NAME("ln_1.bias"), 0, d, VEC(VEC_ATT_NORM_BIAS)) &&
             add(t, &n, NAME("attn.c_attn.weight"), d, 3 * d, NULL);
        static const MatrixKind qkv[3] = {MAT_WQ, MAT_WK, MAT_WV};
        static const VectorKind qkv_bias[3] = {VEC_Q_BIAS, VEC_K_BIAS, VEC_V_BIAS};
        for (int k = 0; ok && k < 3; k++)
            put_conv1d(t[n - 1].values, d, 3 * d, k * d, d, MAT(qkv[k]));
        ok = ok && add(t, &n, NAME("attn.c_attn.bias"), 0, 3 * d, NULL);
        for (int k = 0; ok && k < 3; k++)
            memcpy(t[n - 1].values + k * d, VEC(qkv_bias[k]), (size_t)d * sizeof(float));
        ok = ok && add(t, &n, NAME("attn.c_proj.weight"), d, d, NULL);
        if (ok) put_conv1d(t[n - 1].values, d, d, 0, d, MAT(MAT_WO));
        ok = ok && add(t, &n, NAME("attn.c_proj.bias"), 0, d, VEC(VEC_O_BIAS)) &&
             add(t, &n, NAME("ln_2.weight"), 0, d, VEC(VEC_FFN_NORM)) &&
             add(t, &n, NAME("ln_2.bias"), 0, d, VEC(VEC_FFN_NORM_BIAS)) &&
             add(t, &n, NAME("mlp.c_fc.weight"), d, h, NULL);
        if (ok) put_conv1d(t[n - 1].values, d, h, 0, h, MAT(MAT_GATE));
        ok = ok && add(t, &n, NAME("mlp.c_fc.bias"), 0, h, VEC(VEC_GATE_BIAS)) &&
             add(t, &n, NAME("mlp.c_proj.weight"), h, d, NULL);
        if (ok) put_conv1d(t[n - 1].values, h, d, 0, d, MAT(MAT_DOWN));
        ok = ok && add(t, &n, NAME("mlp.c_proj.bias"), 0, d, VEC(VEC_DOWN_BIAS));
#undef NAME
#undef VEC
#undef MAT
    }
    if (!ok) {
        hf_gpt2_tensors_free(t, n);
        return -1;
    }
    *out = t;
    return n;
}

void hf_gpt2_tensors_free(Gpt2Tensor *t, int n) {
    for (int i = 0; t != NULL && i < n; i++) free(t[i].values);
    free(t);
}

cJSON *hf_gpt2_config_json(const Config *c, const char *torch_dtype) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToArray(cJSON_AddArrayToObject(o, "architectures"),
                         cJSON_CreateString("GPT2LMHeadModel"));
    cJSON_AddStringToObject(o, "model_type", "gpt2");
    cJSON_AddNumberToObject(o, "n_embd", c->dim);
    cJSON_AddNumberToObject(o, "n_layer", c->n_layers);
    cJSON_AddNumberToObject(o, "n_head", c->n_heads);
    cJSON_AddNumberToObject(o, "n_inner", c->hidden_dim);
    cJSON_AddNumberToObject(o, "n_positions", c->seq_len);
    cJSON_AddNumberToObject(o, "n_ctx", c->seq_len);
    cJSON_AddNumberToObject(o, "vocab_size", c->vocab_size);
    cJSON_AddNumberToObject(o, "layer_norm_epsilon", config_norm_eps(c));
    cJSON_AddStringToObject(o, "activation_function", "gelu_new");
    cJSON_AddBoolToObject(o, "scale_attn_weights", true);
    cJSON_AddBoolToObject(o, "tie_word_embeddings", c->shared_classifier);
    cJSON_AddNumberToObject(o, "bos_token_id", c->vocab_size - 1);
    cJSON_AddNumberToObject(o, "eos_token_id", c->vocab_size - 1);
    cJSON_AddStringToObject(o, "torch_dtype", torch_dtype);
    return o;
}
