/* model_json.c: load the JSON model format with cJSON. */
#include "ref/formats/model_json.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ref/util/file_util.h"
#include "ref/util/json_util.h"

static bool read_int_field(const cJSON *obj, const char *key, int *out, const char *what,
                           StepError *err) {
    if (!json_int_field(obj, key, INT_MIN, INT_MAX, out))
        return step_fail(err, "%s: config.%s must be an integer", what, key);
    return true;
}

/* Copy a JSON array of `n` numbers into dst. */
static bool read_vector(const cJSON *arr, int n, float *dst, const char *name, const char *what,
                        StepError *err) {
    if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) != n)
        return step_fail(err, "%s: %s must be an array of %d numbers", what, name, n);
    int i = 0;
    const cJSON *v;
    cJSON_ArrayForEach(v, arr) {
        if (!cJSON_IsNumber(v) || !isfinite(json_float(v->valuedouble)))
            return step_fail(err, "%s: %s[%d] is not a finite float32 number", what, name, i);
        dst[i++] = (float)v->valuedouble;
    }
    return true;
}

/* Copy a JSON array of `rows` arrays of `cols` numbers into dst [rows, cols]. */
static bool read_matrix(const cJSON *arr, int rows, int cols, float *dst, const char *name,
                        const char *what, StepError *err) {
    if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) != rows)
        return step_fail(err, "%s: %s must have %d rows of %d numbers", what, name, rows, cols);
    int r = 0;
    const cJSON *row;
    cJSON_ArrayForEach(row, arr) {
        char row_name[64];
        snprintf(row_name, sizeof row_name, "%s[%d]", name, r);
        if (!read_vector(row, cols, dst + (size_t)r * cols, row_name, what, err)) return false;
        r++;
    }
    return true;
}

/* An optional number field into *out (left alone when absent). */
static bool read_optional_float(const cJSON *obj, const char *key, float *out, const char *what,
                                StepError *err) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (v == NULL) return true;
    double d;
    if (!json_number_field(obj, key, 0, 1e30, &d))
        return step_fail(err, "%s: %s must be a number >= 0", what, key);
    *out = (float)d;
    return true;
}

static bool read_optional_bool(const cJSON *obj, const char *key, bool *out, const char *what,
                               StepError *err) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (v == NULL) return true;
    if (!cJSON_IsBool(v)) return step_fail(err, "%s: config.%s must be true or false", what, key);
    *out = cJSON_IsTrue(v);
    return true;
}

/* config.rope_scaling: {"type": "linear"|"llama3", "factor", and for llama3
 * "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"}. */
static bool read_rope_scaling(const cJSON *cfg, RopeScaling *s, const char *what, StepError *err) {
    const cJSON *o = cJSON_GetObjectItemCaseSensitive(cfg, "rope_scaling");
    if (o == NULL || cJSON_IsNull(o)) return true;
    const char *type = json_string_field(o, "type");
    if (type != NULL && strcmp(type, "linear") == 0)
        s->type = ROPE_SCALING_LINEAR;
    else if (type != NULL && strcmp(type, "llama3") == 0)
        s->type = ROPE_SCALING_LLAMA3;
    else
        return step_fail(err, "%s: config.rope_scaling.type must be \"linear\" or \"llama3\"",
                         what);
    return read_optional_float(o, "factor", &s->factor, what, err) &&
           read_optional_float(o, "low_freq_factor", &s->low_freq_factor, what, err) &&
           read_optional_float(o, "high_freq_factor", &s->high_freq_factor, what, err) &&
           (cJSON_GetObjectItemCaseSensitive(o, "original_max_position_embeddings") == NULL ||
            read_int_field(o, "original_max_position_embeddings", &s->original_context, what, err));
}

/* The architecture's optional fields (docs/model-json.md); absent, each is
 * llama2.c's. */
static bool read_arch(const cJSON *cfg, Config *c, const char *what, StepError *err) {
    const char *layout = json_string_field(cfg, "rope_layout");
    if (layout != NULL && strcmp(layout, "halves") == 0)
        c->rope_layout = ROPE_HALVES;
    else if (layout != NULL && strcmp(layout, "interleaved") != 0)
        return step_fail(err, "%s: config.rope_layout must be \"interleaved\" or \"halves\"", what);
    else if (layout == NULL && cJSON_HasObjectItem(cfg, "rope_layout"))
        return step_fail(err, "%s: config.rope_layout must be a string", what);
    return (!cJSON_HasObjectItem(cfg, "head_dim") ||
            read_int_field(cfg, "head_dim", &c->head_dim, what, err)) &&
           read_optional_float(cfg, "rope_theta", &c->rope_theta, what, err) &&
           read_optional_float(cfg, "norm_eps", &c->norm_eps, what, err) &&
           read_optional_bool(cfg, "qkv_bias", &c->qkv_bias, what, err) &&
           read_optional_bool(cfg, "qk_norm", &c->qk_norm, what, err) &&
           read_rope_scaling(cfg, &c->rope_scaling, what, err);
}

static bool read_config(const cJSON *root, Config *c, const char *what, StepError *err) {
    const cJSON *cfg = cJSON_GetObjectItemCaseSensitive(root, "config");
    if (!cJSON_IsObject(cfg)) return step_fail(err, "%s: missing \"config\" object", what);
    return read_arch(cfg, c, what, err) && read_int_field(cfg, "dim", &c->dim, what, err) &&
           read_int_field(cfg, "hidden_dim", &c->hidden_dim, what, err) &&
           read_int_field(cfg, "n_layers", &c->n_layers, what, err) &&
           read_int_field(cfg, "n_heads", &c->n_heads, what, err) &&
           read_int_field(cfg, "n_kv_heads", &c->n_kv_heads, what, err) &&
           read_int_field(cfg, "vocab_size", &c->vocab_size, what, err) &&
           read_int_field(cfg, "seq_len", &c->seq_len, what, err) && config_validate(c, what, err);
}

static bool read_tokenizer(const cJSON *root, Tokenizer *tok, int vocab_size, const char *what,
                           StepError *err) {
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(root, "tokenizer");
    if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) != vocab_size)
        return step_fail(err, "%s: \"tokenizer\" must list %d [piece, score] pairs", what,
                         vocab_size);
    const char **pieces = malloc((size_t)vocab_size * sizeof *pieces);
    float *scores = malloc((size_t)vocab_size * sizeof *scores);
    bool ok = pieces != NULL && scores != NULL;
    if (!ok) step_fail(err, "%s: out of memory", what);
    int i = 0;
    const cJSON *pair;
    cJSON_ArrayForEach(pair, arr) {
        if (!ok) break;
        const cJSON *piece = cJSON_GetArrayItem(pair, 0), *score = cJSON_GetArrayItem(pair, 1);
        if (cJSON_GetArraySize(pair) != 2 || !cJSON_IsString(piece) || !cJSON_IsNumber(score)) {
            ok = step_fail(err, "%s: tokenizer[%d] must be [piece, score]", what, i);
            break;
        }
        pieces[i] = piece->valuestring;
        scores[i++] = json_float(score->valuedouble);
    }
    if (ok) ok = tokenizer_init(tok, vocab_size, pieces, scores, err);
    free(pieces);
    free(scores);
    return ok;
}

static bool read_layers(const cJSON *layers, Model *m, const char *what, StepError *err) {
    const Config *c = &m->config;
    int kv = config_kv_dim(c), qd = config_q_dim(c), hd = config_head_dim(c);
    if (!cJSON_IsArray(layers) || cJSON_GetArraySize(layers) != c->n_layers)
        return step_fail(err, "%s: weights.layers must list %d layers", what, c->n_layers);
    for (int l = 0; l < c->n_layers; l++) {
        const cJSON *L = cJSON_GetArrayItem(layers, l);
        Matrix *mats = m->layers[l].m;
        /* the file's keys are llama2.c's names (w1, w2, w3: gate, down, up) */
        struct {
            const char *key;
            float *dst;     /* NULL: the architecture has no such weight */
            int rows, cols; /* rows 0: a vector */
        } parts[] = {
            {"rms_att", model_vector_slot(m, VEC_ATT_NORM, l), 0, c->dim},
            {"wq", model_matrix_slot(m, &mats[MAT_WQ]), qd, c->dim},
            {"wk", model_matrix_slot(m, &mats[MAT_WK]), kv, c->dim},
            {"wv", model_matrix_slot(m, &mats[MAT_WV]), kv, c->dim},
            {"wo", model_matrix_slot(m, &mats[MAT_WO]), c->dim, qd},
            {"rms_ffn", model_vector_slot(m, VEC_FFN_NORM, l), 0, c->dim},
            {"w1", model_matrix_slot(m, &mats[MAT_GATE]), c->hidden_dim, c->dim},
            {"w2", model_matrix_slot(m, &mats[MAT_DOWN]), c->dim, c->hidden_dim},
            {"w3", model_matrix_slot(m, &mats[MAT_UP]), c->hidden_dim, c->dim},
            {"bq", model_vector_slot(m, VEC_Q_BIAS, l), 0, qd},
            {"bk", model_vector_slot(m, VEC_K_BIAS, l), 0, kv},
            {"bv", model_vector_slot(m, VEC_V_BIAS, l), 0, kv},
            {"q_norm", model_vector_slot(m, VEC_Q_NORM, l), 0, hd},
            {"k_norm", model_vector_slot(m, VEC_K_NORM, l), 0, hd},
        };
        for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
            if (parts[i].dst == NULL) {
                if (cJSON_HasObjectItem(L, parts[i].key))
                    return step_fail(err,
                                     "%s: layers[%d].%s is not part of this architecture "
                                     "(see config.qkv_bias and config.qk_norm)",
                                     what, l, parts[i].key);
                continue;
            }
            char name[64];
            snprintf(name, sizeof name, "layers[%d].%s", l, parts[i].key);
            const cJSON *arr = cJSON_GetObjectItemCaseSensitive(L, parts[i].key);
            float *dst = parts[i].dst;
            bool ok = parts[i].rows == 0
                          ? read_vector(arr, parts[i].cols, dst, name, what, err)
                          : read_matrix(arr, parts[i].rows, parts[i].cols, dst, name, what, err);
            if (!ok) return false;
        }
    }
    return true;
}

static bool read_weights(const cJSON *root, Model *m, const char *what, StepError *err) {
    const Config *c = &m->config;
    const cJSON *w = cJSON_GetObjectItemCaseSensitive(root, "weights");
    if (!cJSON_IsObject(w)) return step_fail(err, "%s: missing \"weights\" object", what);
    const cJSON *cls = cJSON_GetObjectItemCaseSensitive(w, "classifier");
    return read_matrix(cJSON_GetObjectItemCaseSensitive(w, "token_embedding"), c->vocab_size,
                       c->dim, model_matrix_slot(m, &m->embedding), "token_embedding", what, err) &&
           read_layers(cJSON_GetObjectItemCaseSensitive(w, "layers"), m, what, err) &&
           read_vector(cJSON_GetObjectItemCaseSensitive(w, "rms_final"), c->dim,
                       model_vector_slot(m, VEC_FINAL_NORM, 0), "rms_final", what, err) &&
           (cls == NULL ||
            read_matrix(cls, c->vocab_size, c->dim, model_matrix_slot(m, &m->classifier),
                        "classifier", what, err));
}

bool model_load_json_text(Model *m, Tokenizer *tok, const char *text, const char *what,
                          StepError *err) {
    memset(m, 0, sizeof *m);
    memset(tok, 0, sizeof *tok);
    cJSON *root = json_parse_whole(text);
    if (root == NULL) return step_fail(err, "%s: not valid JSON", what);
    bool ok = cJSON_IsObject(root) && cJSON_IsNumber(cJSON_GetObjectItem(root, "stepwise_model"));
    if (!ok) step_fail(err, "%s: not a stepwise JSON model (no \"stepwise_model\" version)", what);
    if (ok) ok = read_config(root, &m->config, what, err);
    if (ok) {
        const cJSON *w = cJSON_GetObjectItemCaseSensitive(root, "weights");
        m->config.shared_classifier = !cJSON_HasObjectItem(w, "classifier");
        /* every weight is written as at least two characters ("0,"): a
         * config that claims more than the text holds is refused before
         * its storage is allocated */
        uint64_t needed = model_storage_floats(&m->config);
        if (needed > strlen(text) / 2)
            ok = step_fail(err, "%s: the config implies %llu weights, more than the file holds",
                           what, (unsigned long long)needed);
        ok = ok && model_alloc_storage(m, what, err);
    }
    if (ok) {
        snprintf(m->source, sizeof m->source, "stepwise JSON model");
        ok = read_weights(root, m, what, err) &&
             read_tokenizer(root, tok, m->config.vocab_size, what, err);
    }
    cJSON_Delete(root);
    ok = ok && model_rope_init(m, err);
    if (!ok) model_free(m);
    return ok;
}

bool model_load_json_file(Model *m, Tokenizer *tok, const char *path, StepError *err) {
    char *text = NULL;
    if (!file_read_text(path, "model", &text, err)) return false;
    bool ok = model_load_json_text(m, tok, text, path, err);
    free(text);
    return ok;
}
