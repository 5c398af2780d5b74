/* model_open.c: see model_open.h. */
#include "ref/formats/model_open.h"
#include "ref/formats/checkpoint.h"
#include "ref/formats/q8_file.h"

#include <string.h>

#include "ref/formats/gguf_model.h"
#include "ref/formats/gguf_tokenizer.h"
#include "ref/formats/hf_model.h"
#include "ref/formats/model_json.h"
#include "ref/model/model_quant.h"
#include "ref/text/tokenizer_json.h"

extern const char stepwise_tiny_model_json[]; /* data/tiny-model.json, built in */

static bool ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

bool path_is_tokenizer_json(const char *path) {
    return ends_with(path, "tokenizer.json") ||
           (hf_is_model_dir(path) && tokenizer_json_in_dir(path));
}

/* The tokenizer of a stepwise JSON model (data/tiny-model.json, say), for a
 * checkpoint of the same vocabulary: a generated model can then be run and
 * traced without a tokenizer.bin. */
static bool load_json_tokenizer(Tokenizer *tok, const char *path, int vocab_size, StepError *err) {
    Model donor;
    StepError why;
    if (!model_load_json_file(&donor, tok, path, &why))
        return step_fail(err, "--tokenizer: %s", why.message);
    model_free(&donor);
    int has = tok->vocab_size;
    if (vocab_size == 0 || has == vocab_size) return true;
    tokenizer_free(tok);
    return step_fail(err, "tokenizer %s has %d tokens but the model's vocabulary has %d", path, has,
                     vocab_size);
}

/* A GGUF file, its unused tensors noted. */
static bool load_gguf(const char *path, Model *m, Tokenizer *tok, WeightsMode mode,
                      const ProgressSink *progress, ModelOpenNotes *notes, StepError *err) {
    GgufLoadReport report;
    if (!gguf_model_load(m, tok, path, mode, progress, &report, err)) return false;
    notes->unused_tensors = report.unused;
    memcpy(notes->first_unused, report.first_unused, sizeof notes->first_unused);
    return true;
}

/* A Hugging Face model directory, its unused tensors noted. */
static bool load_hf(const char *dir, Model *m, WeightsMode mode, const ProgressSink *progress,
                    ModelOpenNotes *notes, StepError *err) {
    HfLoadReport report;
    if (!hf_model_load(m, dir, mode, progress, &report, err)) return false;
    notes->unused_tensors = report.unused;
    memcpy(notes->first_unused, report.first_unused, sizeof notes->first_unused);
    return true;
}

bool model_open(const char *model_path, const char *tokenizer_path, Model *m, Tokenizer *tok,
                WeightsMode mode, const ProgressSink *progress, ModelOpenNotes *notes,
                StepError *err) {
    ModelOpenNotes ignored;
    if (notes == NULL) notes = &ignored;
    *notes = (ModelOpenNotes){0};
    bool ok;
    if (gguf_is_model_path(model_path)) {
        /* its own tokenizer, unless --tokenizer says otherwise */
        ok = load_gguf(model_path, m, tokenizer_path == NULL ? tok : NULL, mode, progress, notes,
                       err);
        if (tokenizer_path == NULL) return ok;
        memset(tok, 0, sizeof *tok);
    } else if (hf_is_model_dir(model_path)) {
        /* its own tokenizer.json, unless --tokenizer says otherwise: looked
         * for before the weights are read */
        bool own = tok != NULL && tokenizer_path == NULL;
        if (own && !tokenizer_json_in_dir(model_path))
            return step_fail(err,
                             "model %s has no tokenizer.json: give --tokenizer (a "
                             "tokenizer.json, a tokenizer.bin or a JSON model of the same "
                             "vocabulary)",
                             model_path);
        if (tok != NULL) memset(tok, 0, sizeof *tok);
        ok = load_hf(model_path, m, mode, progress, notes, err);
        if (ok && own) {
            ok = tokenizer_load_json(tok, model_path, m->config.vocab_size, err);
            if (!ok) model_free(m);
            return ok;
        }
    } else if (model_path == NULL || ends_with(model_path, ".json")) {
        Tokenizer unused; /* a JSON model holds its tokenizer: read even when not wanted */
        Tokenizer *into = tok != NULL ? tok : &unused;
        ok = model_path == NULL ? model_load_json_text(m, into, stepwise_tiny_model_json,
                                                       "built-in tiny model", err)
                                : model_load_json_file(m, into, model_path, err);
        if (ok && tok == NULL) tokenizer_free(&unused);
    } else {
        if (tokenizer_path == NULL && tok != NULL)
            return step_fail(err, "model %s is a checkpoint: --tokenizer is required", model_path);
        if (tok != NULL) memset(tok, 0, sizeof *tok);
        ok = model_file_is_q8(model_path) ? model_load_q8(m, model_path, err)
                                          : model_load_checkpoint(m, model_path, err);
    }
    if (!ok || tokenizer_path == NULL || tok == NULL) return ok;
    tokenizer_free(tok);
    ok = tokenizer_open(tokenizer_path, m->config.vocab_size, tok, err);
    if (!ok) model_free(m);
    return ok;
}

bool tokenizer_open(const char *path, int vocab_size, Tokenizer *tok, StepError *err) {
    if (path_is_tokenizer_json(path)) return tokenizer_load_json(tok, path, vocab_size, err);
    if (gguf_is_model_path(path)) return gguf_tokenizer_load(tok, path, vocab_size, err);
    if (ends_with(path, ".json")) return load_json_tokenizer(tok, path, vocab_size, err);
    return tokenizer_load_bin(tok, path, vocab_size, err);
}

bool model_open_weights(const char *model_path, WeightsMode mode, Model *m,
                        const ProgressSink *progress, ModelOpenNotes *notes, StepError *err) {
    ModelOpenNotes ignored;
    if (notes == NULL) notes = &ignored;
    *notes = (ModelOpenNotes){0};
    if (gguf_is_model_path(model_path))
        return load_gguf(model_path, m, NULL, mode, progress, notes, err);
    if (hf_is_model_dir(model_path)) return load_hf(model_path, m, mode, progress, notes, err);
    if (model_path != NULL && model_file_is_q8(model_path))
        return model_load_q8(m, model_path, err);
    if (model_path != NULL && !ends_with(model_path, ".json"))
        return model_load_checkpoint(m, model_path, err);
    Tokenizer unused; /* a JSON model holds its tokenizer: read, and let go */
    if (!model_open(model_path, NULL, m, &unused, mode, progress, notes, err)) return false;
    tokenizer_free(&unused);
    return true;
}

bool model_path_has_tokenizer(const char *path) {
    if (path == NULL || ends_with(path, ".json") || gguf_is_model_path(path)) return true;
    return hf_is_model_dir(path) && tokenizer_json_in_dir(path);
}
