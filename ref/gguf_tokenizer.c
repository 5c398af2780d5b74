/* gguf_tokenizer.c: see gguf_tokenizer.h. */
#include "gguf_tokenizer.h"

#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hf_tokenizer.h"
#include "tokenizer_json.h"

/* The BOS and EOS ids the metadata names (defaults: llama2.c's 1 and 2 for
 * a llama tokenizer, none for gpt2) and whether BOS is added. */
typedef struct {
    int bos, eos;
    bool add_bos;
} SpecialIds;

static bool read_special_ids(const GgufFile *f, bool llama, int vocab, SpecialIds *ids,
                             StepError *err) {
    *ids = (SpecialIds){.bos = llama ? 1 : -1, .eos = llama ? 2 : -1, .add_bos = llama};
    const char *keys[] = {"tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id"};
    int *slots[] = {&ids->bos, &ids->eos};
    for (int k = 0; k < 2; k++) {
        uint64_t v;
        if (gguf_find_kv(f, keys[k]) == NULL) continue;
        if (!gguf_get_uint(f, keys[k], (uint64_t)vocab - 1, &v))
            return step_fail(err, "%s: %s is not a token id below %d", f->path, keys[k], vocab);
        *slots[k] = (int)v;
    }
    uint64_t add;
    if (gguf_find_kv(f, "tokenizer.ggml.add_bos_token") != NULL) {
        if (!gguf_get_uint(f, "tokenizer.ggml.add_bos_token", 1, &add))
            return step_fail(err, "%s: tokenizer.ggml.add_bos_token is not a bool", f->path);
        ids->add_bos = add != 0;
    }
    if (ids->bos < 0) ids->add_bos = false;
    return true;
}

/* "llama": SentencePiece-style tokens and scores, spaces written as U+2581. */
static bool read_llama(const GgufFile *f, Tokenizer *tok, int vocab, const SpecialIds *ids,
                       StepError *err) {
    uint64_t n = 0, n_scores = 0;
    char **pieces = gguf_string_array(f, "tokenizer.ggml.tokens", &n);
    const unsigned char *scores = gguf_f32_array(f, "tokenizer.ggml.scores", &n_scores);
    float *s = pieces && scores && n == n_scores && n == (uint64_t)vocab
                   ? malloc((size_t)n * sizeof *s)
                   : NULL;
    bool ok = s != NULL || step_fail(err, "%s: the tokenizer needs %d tokens and as many scores",
                                     f->path, vocab);
    for (uint64_t i = 0; ok && i < n; i++) {
        uint32_t bits = (uint32_t)scores[4 * i] | (uint32_t)scores[4 * i + 1] << 8 |
                        (uint32_t)scores[4 * i + 2] << 16 | (uint32_t)scores[4 * i + 3] << 24;
        memcpy(&s[i], &bits, sizeof bits);
        /* U+2581 (E2 96 81), SentencePiece's space, is a space in stepwise's pieces */
        char *p = pieces[i], *out = pieces[i];
        while (*p) {
            if ((unsigned char)p[0] == 0xE2 && (unsigned char)p[1] == 0x96 &&
                (unsigned char)p[2] == 0x81)
                *out++ = ' ', p += 3;
            else
                *out++ = *p++;
        }
        *out = '\0';
    }
    if (ok) ok = tokenizer_init(tok, vocab, (const char *const *)pieces, s, err);
    if (ok) tok->bos_id = ids->bos, tok->eos_id = ids->eos, tok->add_bos = ids->add_bos;
    for (uint64_t i = 0; pieces != NULL && i < n; i++) free(pieces[i]);
    free(pieces), free(s);
    return ok;
}

/* The split patterns of tokenizer.ggml.pre, as llama.cpp names them: the
 * same regexes as the models' tokenizer.json files. */
static const struct {
    const char *pre, *pattern;
    bool nfc, ignore_merges;
} PRE_PATTERNS[] = {
    {"llama-bpe",
     "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+"
     "[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
     false, true},
    {"qwen2",
     "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+"
     "[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
     true, false},
    {"gpt-2", NULL, false, false},
    {"default", NULL, false, false},
};

/* The int32 array at key, of n elements (unaligned, little-endian), or NULL. */
static const unsigned char *i32_array(const GgufFile *f, const char *key, uint64_t n) {
    const GgufKv *kv = gguf_find_kv(f, key);
    if (kv == NULL || kv->type != GGUF_ARRAY || kv->array_type != GGUF_I32 || kv->array_n != n)
        return NULL;
    return kv->value;
}

/* The tokenizer.json that says what the metadata says. */
static cJSON *gpt2_as_json(char **tokens, uint64_t n, char **merges, uint64_t n_merges,
                           const unsigned char *types, int k) {
    cJSON *root = cJSON_CreateObject(), *model = cJSON_AddObjectToObject(root, "model");
    cJSON_AddStringToObject(model, "type", "BPE");
    cJSON_AddBoolToObject(model, "ignore_merges", PRE_PATTERNS[k].ignore_merges);
    cJSON *vocab = cJSON_AddObjectToObject(model, "vocab");
    cJSON *added = cJSON_AddArrayToObject(root, "added_tokens");
    for (uint64_t i = 0; i < n; i++) {
        int32_t type = 1;
        if (types != NULL) memcpy(&type, types + 4 * i, 4); /* little-endian hosts only */
        if (type == 3 || type == 4) { /* control and user-defined: matched whole */
            cJSON *a = cJSON_CreateObject();
            cJSON_AddNumberToObject(a, "id", (double)i);
            cJSON_AddStringToObject(a, "content", tokens[i]);
            cJSON_AddBoolToObject(a, "special", type == 3);
            cJSON_AddItemToArray(added, a);
        } else {
            cJSON_AddNumberToObject(vocab, tokens[i], (double)i);
        }
    }
    cJSON *list = cJSON_AddArrayToObject(model, "merges");
    for (uint64_t i = 0; i < n_merges; i++)
        cJSON_AddItemToArray(list, cJSON_CreateString(merges[i]));
    if (PRE_PATTERNS[k].nfc)
        cJSON_AddItemToObject(root, "normalizer", cJSON_Parse("{\"type\":\"NFC\"}"));
    cJSON *byte_level = cJSON_CreateObject();
    cJSON_AddStringToObject(byte_level, "type", "ByteLevel");
    cJSON_AddBoolToObject(byte_level, "add_prefix_space", false);
    cJSON_AddBoolToObject(byte_level, "use_regex", PRE_PATTERNS[k].pattern == NULL);
    if (PRE_PATTERNS[k].pattern != NULL) {
        cJSON *seq = cJSON_AddObjectToObject(root, "pre_tokenizer");
        cJSON_AddStringToObject(seq, "type", "Sequence");
        cJSON *steps = cJSON_AddArrayToObject(seq, "pretokenizers");
        cJSON *split = cJSON_CreateObject();
        cJSON_AddStringToObject(split, "type", "Split");
        cJSON_AddStringToObject(cJSON_AddObjectToObject(split, "pattern"), "Regex",
                                PRE_PATTERNS[k].pattern);
        cJSON_AddStringToObject(split, "behavior", "Isolated");
        cJSON_AddItemToArray(steps, split);
        cJSON_AddItemToArray(steps, byte_level);
    } else {
        cJSON_AddItemToObject(root, "pre_tokenizer", byte_level);
    }
    cJSON_AddItemToObject(root, "decoder", cJSON_Parse("{\"type\":\"ByteLevel\"}"));
    return root;
}

/* "gpt2": byte-level BPE from tokens, merges, token types and the pre name. */
static bool read_gpt2(const GgufFile *f, Tokenizer *tok, int vocab, const SpecialIds *ids,
                      StepError *err) {
    uint64_t n = 0, n_merges = 0;
    char **tokens = gguf_string_array(f, "tokenizer.ggml.tokens", &n);
    char **merges = gguf_find_kv(f, "tokenizer.ggml.merges") != NULL
                        ? gguf_string_array(f, "tokenizer.ggml.merges", &n_merges)
                        : NULL;
    char *pre = gguf_get_string(f, "tokenizer.ggml.pre");
    int k = 0, n_pre = (int)(sizeof PRE_PATTERNS / sizeof PRE_PATTERNS[0]);
    while (k < n_pre && strcmp(pre != NULL ? pre : "default", PRE_PATTERNS[k].pre) != 0) k++;
    bool ok = true;
    if (tokens == NULL || n == 0 || n > (uint64_t)vocab)
        ok = step_fail(err, "%s: tokenizer.ggml.tokens is missing or has more than %d tokens",
                       f->path, vocab);
    else if (gguf_find_kv(f, "tokenizer.ggml.merges") != NULL && merges == NULL)
        ok = step_fail(err, "%s: tokenizer.ggml.merges is not an array of strings", f->path);
    else if (k == n_pre)
        ok = step_fail(err,
                       "%s: tokenizer.ggml.pre %.40s is not supported (llama-bpe, qwen2, "
                       "gpt-2, default)",
                       f->path, pre);
    char *text = NULL;
    if (ok) {
        cJSON *json = gpt2_as_json(tokens, n, merges, n_merges,
                                   i32_array(f, "tokenizer.ggml.token_type", n), k);
        text = cJSON_PrintUnformatted(json);
        cJSON_Delete(json);
        ok = text != NULL || step_fail(err, "%s: out of memory", f->path);
    }
    if (ok) ok = tokenizer_parse_json(tok, text, NULL, f->path, vocab, err);
    if (ok) tok->bos_id = ids->bos, tok->eos_id = ids->eos, tok->add_bos = ids->add_bos;
    /* a chat template, recognised as a tokenizer_config.json's is (chat.h) */
    if (ok) tok->hf->chat_template = gguf_get_string(f, "tokenizer.chat_template");
    cJSON_free(text);
    for (uint64_t i = 0; tokens != NULL && i < n; i++) free(tokens[i]);
    for (uint64_t i = 0; merges != NULL && i < n_merges; i++) free(merges[i]);
    free(tokens), free(merges), free(pre);
    return ok;
}

bool gguf_read_tokenizer(const GgufFile *f, Tokenizer *tok, int vocab, StepError *err) {
    char *model = gguf_get_string(f, "tokenizer.ggml.model");
    bool llama = model != NULL && strcmp(model, "llama") == 0;
    bool gpt2 = model != NULL && strcmp(model, "gpt2") == 0;
    SpecialIds ids;
    bool ok = llama || gpt2 ||
              step_fail(err,
                        "%s: embedded tokenizer %.40s is not supported (llama, gpt2); give "
                        "--tokenizer",
                        f->path, model ? model : "(none)");
    free(model);
    ok = ok && read_special_ids(f, llama, vocab, &ids, err);
    return ok &&
           (llama ? read_llama(f, tok, vocab, &ids, err) : read_gpt2(f, tok, vocab, &ids, err));
}
