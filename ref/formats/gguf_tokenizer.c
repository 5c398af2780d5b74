/* gguf_tokenizer.c: see gguf_tokenizer.h. */
#include "ref/formats/gguf_tokenizer.h"

#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ref/text/hf_tokenizer.h"
#include "ref/text/tokenizer_json.h"

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

/* ---- writing ---- */

/* llama.cpp's token types (llama_token_type). */
enum {
    TYPE_NORMAL = 1,
    TYPE_UNKNOWN = 2,
    TYPE_CONTROL = 3,
    TYPE_USER = 4,
    TYPE_UNUSED = 5,
    TYPE_BYTE = 6
};

/* The tokenizer.ggml.pre whose pipeline hf's is (PRE_PATTERNS' index), or
 * -1: the same normalizer (none, or NFC), the same split and byte-level
 * steps, the same ignore_merges, and no byte fallback. */
static int pre_of(const HfTokenizer *hf) {
    bool nfc = hf->n_norm == 1 && hf->norm[0].kind == NORM_NFC;
    if ((hf->n_norm > 0 && !nfc) || hf->byte_fallback || hf->strip_leading_space) return -1;
    const PreStep *a = &hf->pre[0], *b = &hf->pre[1];
    int n_pre = (int)(sizeof PRE_PATTERNS / sizeof PRE_PATTERNS[0]);
    for (int k = 0; k < n_pre; k++) {
        if (nfc != PRE_PATTERNS[k].nfc || hf->ignore_merges != PRE_PATTERNS[k].ignore_merges)
            continue;
        if (PRE_PATTERNS[k].pattern == NULL && hf->n_pre == 1 && a->kind == PRE_BYTE_LEVEL &&
            a->regex != NULL && !a->add_prefix_space)
            return k;
        if (PRE_PATTERNS[k].pattern != NULL && hf->n_pre == 2 && a->kind == PRE_SPLIT &&
            a->pattern != NULL && strcmp(a->pattern, PRE_PATTERNS[k].pattern) == 0 &&
            a->behavior == SPLIT_ISOLATED && b->kind == PRE_BYTE_LEVEL && b->regex == NULL &&
            !b->add_prefix_space)
            return k;
    }
    return -1;
}

static int by_rank(const void *x, const void *y) {
    const MergeRule *a = x, *b = y;
    return (a->rank > b->rank) - (a->rank < b->rank);
}

/* "left right", as tokenizer.ggml.merges spells a rule, for every merge by rank. */
static char **merge_strings(const HfTokenizer *hf) {
    MergeRule *order = malloc(((size_t)hf->n_merges + 1) * sizeof *order);
    char **out = calloc((size_t)hf->n_merges + 1, sizeof *out);
    bool ok = order != NULL && out != NULL;
    if (ok) memcpy(order, hf->merges, (size_t)hf->n_merges * sizeof *order);
    if (ok) qsort(order, (size_t)hf->n_merges, sizeof *order, by_rank);
    for (int i = 0; ok && i < hf->n_merges; i++) {
        const char *l = hf->vocab[order[i].left], *r = hf->vocab[order[i].right];
        size_t n = strlen(l) + strlen(r) + 2;
        ok = (out[i] = malloc(n)) != NULL;
        if (ok) snprintf(out[i], n, "%s %s", l, r);
    }
    free(order);
    if (ok) return out;
    for (int i = 0; out != NULL && i < hf->n_merges; i++) free(out[i]);
    free(out);
    return NULL;
}

/* Each id's token text (malloc'd) and type, for a tokenizer.json. */
static bool gpt2_tokens(const Tokenizer *tok, char **tokens, int32_t *types) {
    const HfTokenizer *hf = tok->hf;
    for (int i = 0; i < tok->vocab_size; i++) {
        if (i < hf->n_ids && hf->vocab[i] != NULL) {
            tokens[i] = strdup(hf->vocab[i]), types[i] = TYPE_NORMAL;
        } else {
            char pad[32];
            snprintf(pad, sizeof pad, "[PAD%d]", i);
            tokens[i] = strdup(pad), types[i] = TYPE_UNUSED;
        }
        if (tokens[i] == NULL) return false;
    }
    for (int k = 0; k < hf->n_added; k++) { /* an added token wins over the vocabulary's */
        const AddedToken *a = &hf->added[k];
        if (a->id >= tok->vocab_size || memchr(a->content, '\0', a->len) != NULL) continue;
        char *text = malloc(a->len + 1);
        if (text == NULL) return false;
        memcpy(text, a->content, a->len), text[a->len] = '\0';
        free(tokens[a->id]);
        tokens[a->id] = text, types[a->id] = a->special ? TYPE_CONTROL : TYPE_USER;
    }
    return true;
}

/* Each id's piece with spaces as U+2581 (malloc'd) and its type, for a
 * sentencepiece vocabulary. */
static bool llama_tokens(const Tokenizer *tok, char **tokens, int32_t *types) {
    for (int i = 0; i < tok->vocab_size; i++) {
        const char *p = tok->pieces[i];
        size_t spaces = 0, n = strlen(p);
        for (size_t j = 0; j < n; j++) spaces += p[j] == ' ';
        char *out = tokens[i] = malloc(n + 2 * spaces + 1);
        if (out == NULL) return false;
        for (size_t j = 0; j < n; j++) {
            if (p[j] == ' ')
                memcpy(out, "\xE2\x96\x81", 3), out += 3;
            else
                *out++ = p[j];
        }
        *out = '\0';
        /* llama2.c's tokenizer.bin spells BOS and EOS "\n<s>\n" and
         * "\n</s>\n", so that they print apart; the vocabulary's own
         * pieces, which GGUF holds, are "<s>" and "</s>" */
        size_t len = strlen(tokens[i]);
        if ((i == tok->bos_id || i == tok->eos_id) && len > 2 && tokens[i][0] == '\n' &&
            tokens[i][len - 1] == '\n') {
            memmove(tokens[i], tokens[i] + 1, len - 2);
            tokens[i][len - 2] = '\0';
        }
        types[i] = i == tok->unk_id                       ? TYPE_UNKNOWN
                   : i == tok->bos_id || i == tok->eos_id ? TYPE_CONTROL
                   : tokenizer_byte_of_piece(p) >= 0      ? TYPE_BYTE
                                                          : TYPE_NORMAL;
    }
    return true;
}

bool gguf_write_tokenizer(GgufMetadata *meta, const Tokenizer *tok, StepError *err) {
    int pre = tok->hf != NULL ? pre_of(tok->hf) : 0;
    if (pre < 0)
        return step_fail(err, "the tokenizer.json's pipeline is none that tokenizer.ggml.pre names "
                              "(byte-level BPE split as llama-bpe, qwen2 or gpt-2); give "
                              "--no-tokenizer to write the model alone");
    size_t n = (size_t)tok->vocab_size;
    char **tokens = calloc(n, sizeof *tokens), **merges = NULL;
    int32_t *types = malloc(n * sizeof *types);
    bool ok =
        tokens != NULL && types != NULL &&
        (tok->hf != NULL ? gpt2_tokens(tok, tokens, types) : llama_tokens(tok, tokens, types));
    if (ok && tok->hf != NULL) ok = (merges = merge_strings(tok->hf)) != NULL;
    if (ok) {
        gguf_meta_string(meta, "tokenizer.ggml.model", tok->hf != NULL ? "gpt2" : "llama");
        if (tok->hf != NULL) gguf_meta_string(meta, "tokenizer.ggml.pre", PRE_PATTERNS[pre].pre);
        gguf_meta_strings(meta, "tokenizer.ggml.tokens", (const char *const *)tokens, n);
        if (tok->hf == NULL) gguf_meta_f32s(meta, "tokenizer.ggml.scores", tok->scores, n);
        gguf_meta_i32s(meta, "tokenizer.ggml.token_type", types, n);
        if (tok->hf != NULL)
            gguf_meta_strings(meta, "tokenizer.ggml.merges", (const char *const *)merges,
                              (uint64_t)tok->hf->n_merges);
        if (tok->bos_id >= 0)
            gguf_meta_u32(meta, "tokenizer.ggml.bos_token_id", (uint32_t)tok->bos_id);
        if (tok->eos_id >= 0)
            gguf_meta_u32(meta, "tokenizer.ggml.eos_token_id", (uint32_t)tok->eos_id);
        if (tok->unk_id >= 0)
            gguf_meta_u32(meta, "tokenizer.ggml.unknown_token_id", (uint32_t)tok->unk_id);
        gguf_meta_bool(meta, "tokenizer.ggml.add_bos_token", tok->add_bos);
        gguf_meta_bool(meta, "tokenizer.ggml.add_eos_token", false);
        if (tok->hf != NULL && tok->hf->chat_template != NULL)
            gguf_meta_string(meta, "tokenizer.chat_template", tok->hf->chat_template);
    }
    for (size_t i = 0; tokens != NULL && i < n; i++) free(tokens[i]);
    for (int i = 0; merges != NULL && i < tok->hf->n_merges; i++) free(merges[i]);
    free(tokens), free(types), free(merges);
    return ok || step_fail(err, "out of memory writing the tokenizer");
}

bool gguf_tokenizer_load(Tokenizer *tok, const char *path, int vocab, StepError *err) {
    memset(tok, 0, sizeof *tok);
    GgufFile f;
    if (!gguf_open(&f, path, err)) return false;
    const GgufKv *tokens = gguf_find_kv(&f, "tokenizer.ggml.tokens");
    bool ok = (tokens != NULL && tokens->type == GGUF_ARRAY && tokens->array_n > 0 &&
               tokens->array_n <= INT32_MAX) ||
              step_fail(err, "%s: has no tokenizer (tokenizer.ggml.tokens)", path);
    /* a model's file: its tokenizer must fit the embedding, as when the
     * model is loaded (the embedding's rows, read from its info alone) */
    const GgufTensor *emb = gguf_find_tensor(&f, "token_embd.weight");
    if (vocab <= 0 && emb != NULL && emb->n_dims == 2 && emb->ne[1] <= INT32_MAX)
        vocab = (int)emb->ne[1];
    ok = ok && gguf_read_tokenizer(&f, tok, vocab > 0 ? vocab : (int)tokens->array_n, err);
    gguf_close(&f);
    return ok;
}
