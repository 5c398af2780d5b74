/* tokenizer_json.c: reading tokenizer.json and tokenizer_config.json. */
#include "ref/text/tokenizer_json.h"

#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ref/util/file_util.h"
#include "ref/util/json_util.h"
#include "ref/text/pretokenize.h"
#include "ref/text/tokenizer_json_parse.h"

/* Ids and ranks stay below 2^24, where a float (a merge's score is its
 * negated rank) still counts every integer. */
#define HF_MAX_IDS (1 << 24)
/* How many ids a tokenizer may leave unused: every id costs memory. */
#define HF_ID_SLACK 65536

/* GPT-2's pattern, which ByteLevel applies itself when use_regex is true. */
static const char GPT2_PATTERN[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

bool fail_json(Parse *p, const char *where, const char *why) {
    return step_fail(p->err, "%s: %s: %s", p->what, where, why);
}

bool strdup_into(char **dst, const char *src) {
    *dst = strdup(src);
    return *dst != NULL;
}

/* ---- the model: vocab, merges, flags ---- */

static bool parse_vocab(Parse *p, const cJSON *vocab, int *max_id) {
    if (!cJSON_IsObject(vocab)) return fail_json(p, "model.vocab", "not an object");
    int n = cJSON_GetArraySize(vocab);
    if (n < 1 || n > HF_MAX_IDS) return fail_json(p, "model.vocab", "no tokens, or too many");
    *max_id = -1;
    for (const cJSON *v = vocab->child; v != NULL; v = v->next) {
        long long id;
        if (!json_whole_number(v, 0, HF_MAX_IDS - 1, &id))
            return step_fail(p->err, "%s: model.vocab: token '%.40s' has no id in [0, 2^24)",
                             p->what, v->string);
        if (id > *max_id) *max_id = (int)id;
    }
    if (*max_id >= n + HF_ID_SLACK) /* the ids index an array: no holes of millions */
        return step_fail(p->err,
                         "%s: model.vocab: ids reach %d but it holds %d tokens (ids must be "
                         "0 to the count, with at most %d missing)",
                         p->what, *max_id, n, HF_ID_SLACK);
    HfTokenizer *hf = p->hf;
    hf->n_ids = *max_id + 1;
    hf->vocab = calloc((size_t)hf->n_ids, sizeof *hf->vocab);
    if (hf->vocab == NULL) return fail_json(p, "model.vocab", "out of memory");
    for (const cJSON *v = vocab->child; v != NULL; v = v->next) {
        int id = (int)v->valuedouble;
        if (hf->vocab[id] != NULL)
            return step_fail(p->err, "%s: model.vocab: id %d is given to '%.40s' and '%.40s'",
                             p->what, id, hf->vocab[id], v->string);
        if (v->string[0] == '\0')
            return step_fail(p->err, "%s: model.vocab: id %d is the empty string", p->what, id);
        if (!strdup_into(&hf->vocab[id], v->string))
            return fail_json(p, "model.vocab", "out of memory");
    }
    return true;
}

static int compare_merges(const void *a, const void *b) {
    const MergeRule *x = a, *y = b;
    if (x->left != y->left) return x->left < y->left ? -1 : 1;
    if (x->right != y->right) return x->right < y->right ? -1 : 1;
    return (x->rank > y->rank) - (x->rank < y->rank);
}

/* The two sides of merge i: "a b" (one space) or ["a", "b"]. */
static bool merge_sides(Parse *p, const cJSON *m, int i, char *buf, size_t cap, const char **a,
                        const char **b) {
    if (cJSON_IsString(m)) {
        const char *s = m->valuestring, *space = strchr(s, ' ');
        if (space == NULL || strchr(space + 1, ' ') != NULL || strlen(s) >= cap)
            return step_fail(p->err, "%s: model.merges[%d]: '%.40s' is not two tokens and a space",
                             p->what, i, s);
        memcpy(buf, s, strlen(s) + 1);
        buf[space - s] = '\0';
        *a = buf, *b = buf + (space - s) + 1;
        return true;
    }
    if (cJSON_GetArraySize(m) == 2 && cJSON_IsString(m->child) && cJSON_IsString(m->child->next)) {
        *a = m->child->valuestring, *b = m->child->next->valuestring;
        return true;
    }
    return step_fail(p->err, "%s: model.merges[%d]: not \"a b\" nor [\"a\", \"b\"]", p->what, i);
}

static bool parse_merges(Parse *p, Tokenizer *t, const cJSON *merges) {
    HfTokenizer *hf = p->hf;
    if (merges != NULL && !cJSON_IsArray(merges))
        return fail_json(p, "model.merges", "not an array");
    int n = cJSON_GetArraySize(merges);
    if (n > HF_MAX_IDS) return fail_json(p, "model.merges", "too many");
    hf->merges = malloc(((size_t)n + 1) * sizeof *hf->merges);
    char *buf = malloc(4096), *joined = malloc(8192);
    bool ok = hf->merges != NULL && buf != NULL && joined != NULL;
    if (!ok) fail_json(p, "model.merges", "out of memory");
    int i = 0;
    for (const cJSON *m = merges != NULL ? merges->child : NULL; ok && m != NULL;
         m = m->next, i++) {
        const char *a = "", *b = "";
        ok = merge_sides(p, m, i, buf, 4096, &a, &b);
        if (!ok) break;
        size_t na = strlen(a), nb = strlen(b);
        int left = tokenizer_find_piece(t, a, na), right = tokenizer_find_piece(t, b, nb);
        int result = -1;
        if (na + nb < 8192) {
            memcpy(joined, a, na);
            memcpy(joined + na, b, nb);
            result = tokenizer_find_piece(t, joined, na + nb);
        }
        if (left < 0 || right < 0 || result < 0) {
            ok = step_fail(p->err,
                           "%s: model.merges[%d]: '%.40s', '%.40s' or their join is not "
                           "in the vocabulary",
                           p->what, i, a, b);
            break;
        }
        hf->merges[i] = (MergeRule){.left = left, .right = right, .result = result, .rank = i};
        if (t->scores[result] == 0.0f) t->scores[result] = -(float)i;
    }
    free(buf), free(joined);
    if (!ok) return false;
    qsort(hf->merges, (size_t)n, sizeof *hf->merges, compare_merges);
    /* A pair listed twice keeps its last rank, as the tokenizers library's
     * map of merges does (each insertion replaces the one before). */
    int kept = 0;
    for (int k = 0; k < n; k++) {
        if (kept > 0 && hf->merges[kept - 1].left == hf->merges[k].left &&
            hf->merges[kept - 1].right == hf->merges[k].right)
            kept--;
        hf->merges[kept++] = hf->merges[k];
    }
    hf->n_merges = kept;
    return true;
}

bool optional_bool(Parse *p, const cJSON *obj, const char *key, bool *out) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (v == NULL || cJSON_IsNull(v)) return true;
    if (!cJSON_IsBool(v)) return step_fail(p->err, "%s: %s is not true or false", p->what, key);
    *out = cJSON_IsTrue(v);
    return true;
}

/* A string field that must be absent, null or "" (the features stepwise
 * does not have). */
static bool absent_or_empty(Parse *p, const cJSON *obj, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (v == NULL || cJSON_IsNull(v) || (cJSON_IsString(v) && v->valuestring[0] == '\0'))
        return true;
    return step_fail(p->err, "%s: model.%s is not supported", p->what, key);
}

/* ---- added tokens ---- */

static int compare_added(const void *a, const void *b) {
    const AddedToken *x = a, *y = b;
    int order = added_trie_compare(x->content, x->len, y->content, y->len);
    return order != 0 ? order : (x->id > y->id) - (x->id < y->id);
}

/* The trie the text is scanned with (added_trie.h). */
static bool index_added(Parse *p) {
    HfTokenizer *hf = p->hf;
    const char **contents = malloc((size_t)(hf->n_added + 1) * sizeof *contents);
    size_t *lens = malloc((size_t)(hf->n_added + 1) * sizeof *lens);
    bool ok = contents != NULL && lens != NULL;
    for (int k = 0; ok && k < hf->n_added; k++)
        contents[k] = hf->added[k].content, lens[k] = hf->added[k].len;
    ok = ok && added_trie_build(&hf->added_trie, contents, lens, hf->n_added);
    free(contents), free(lens);
    return ok || fail_json(p, "added_tokens", "out of memory");
}

static bool parse_added(Parse *p, const cJSON *added, int *max_id) {
    HfTokenizer *hf = p->hf;
    if (added != NULL && !cJSON_IsNull(added) && !cJSON_IsArray(added))
        return fail_json(p, "added_tokens", "not an array");
    int n = cJSON_GetArraySize(added);
    hf->added = calloc((size_t)n + 1, sizeof *hf->added);
    if (hf->added == NULL) return fail_json(p, "added_tokens", "out of memory");
    for (const cJSON *a = added != NULL ? added->child : NULL; a != NULL; a = a->next) {
        const char *content = json_string_field(a, "content");
        int id;
        AddedToken *at = &hf->added[hf->n_added];
        if (content == NULL || content[0] == '\0' || strlen(content) > ADDED_TOKEN_MAX_BYTES ||
            !json_int_field(a, "id", 0, HF_MAX_IDS - 1, &id))
            return step_fail(p->err,
                             "%s: added_tokens[%d]: needs a content of 1 to %d bytes and an id "
                             "in [0, 2^24)",
                             p->what, hf->n_added, ADDED_TOKEN_MAX_BYTES);
        if (!strdup_into(&at->content, content))
            return fail_json(p, "added_tokens", "out of memory");
        at->len = strlen(content), at->id = id;
        hf->n_added++;
        if (!optional_bool(p, a, "lstrip", &at->lstrip) ||
            !optional_bool(p, a, "rstrip", &at->rstrip) ||
            !optional_bool(p, a, "single_word", &at->single_word) ||
            !optional_bool(p, a, "special", &at->special))
            return false;
        if (id > *max_id) *max_id = id;
    }
    if (*max_id >= hf->n_ids + n + HF_ID_SLACK)
        return step_fail(p->err,
                         "%s: added_tokens: ids reach %d but the vocabulary and added tokens "
                         "hold %d (ids must be 0 to the count, with at most %d missing)",
                         p->what, *max_id, hf->n_ids + n, HF_ID_SLACK);
    qsort(hf->added, (size_t)hf->n_added, sizeof *hf->added, compare_added);
    return index_added(p);
}

/* ---- normalizers, pre-tokenizers, decoder ---- */

/* A {"String": s} or {"Regex": r} pattern; *literal says which. */
const char *pattern_of(const cJSON *step, bool *literal) {
    const cJSON *pat = cJSON_GetObjectItemCaseSensitive(step, "pattern");
    const char *s = json_string_field(pat, "String");
    *literal = s != NULL;
    return s != NULL ? s : json_string_field(pat, "Regex");
}

bool parse_step_type(Parse *p, const cJSON *node, const char *what, const char *list_key,
                     StepParser parse, int depth, const char **type) {
    *type = NULL;
    if (node == NULL || cJSON_IsNull(node)) return true;
    const char *t = json_string_field(node, "type");
    if (t == NULL || depth > 4) return fail_json(p, what, "has no type");
    if (strcmp(t, "Sequence") != 0) return *type = t, true;
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(node, list_key);
    if (!cJSON_IsArray(list)) return fail_json(p, what, "a Sequence without a list");
    for (const cJSON *c = list->child; c != NULL; c = c->next)
        if (!parse(p, c, depth + 1)) return false;
    return true;
}

static bool parse_normalizer(Parse *p, const cJSON *n, int depth) {
    HfTokenizer *hf = p->hf;
    const char *type;
    if (!parse_step_type(p, n, "normalizer", "normalizers", parse_normalizer, depth, &type))
        return false;
    if (type == NULL) return true;
    static const struct {
        const char *name;
        NormKind kind;
    } kinds[] = {{"NFC", NORM_NFC},   {"NFD", NORM_NFD},         {"NFKC", NORM_NFKC},
                 {"NFKD", NORM_NFKD}, {"Prepend", NORM_PREPEND}, {"Replace", NORM_REPLACE}};
    int k = 0;
    while (k < 6 && strcmp(type, kinds[k].name) != 0) k++;
    if (k == 6)
        return step_fail(p->err,
                         "%s: normalizer %.40s is not supported (NFC, NFD, NFKC, NFKD, "
                         "Prepend, Replace, Sequence)",
                         p->what, type);
    if (hf->n_norm >= 16) return fail_json(p, "normalizer", "more than 16 steps");
    NormStep *st = &hf->norm[hf->n_norm];
    *st = (NormStep){.kind = kinds[k].kind};
    hf->n_norm++;
    bool literal = true;
    const char *from = kinds[k].kind == NORM_REPLACE ? pattern_of(n, &literal) : "";
    const char *to = json_string_field(n, kinds[k].kind == NORM_PREPEND ? "prepend" : "content");
    if (kinds[k].kind == NORM_PREPEND || kinds[k].kind == NORM_REPLACE) {
        if (to == NULL || from == NULL || (kinds[k].kind == NORM_REPLACE && from[0] == '\0'))
            return step_fail(p->err, "%s: normalizer %s lacks its strings", p->what, type);
        if (!literal) return fail_json(p, "normalizer", "Replace with a Regex is not supported");
        if (!strdup_into(&st->from, from) || !strdup_into(&st->to, to))
            return fail_json(p, "normalizer", "out of memory");
    }
    return true;
}

static bool parse_split_behavior(Parse *p, const cJSON *n, SplitBehavior *how) {
    static const char *const names[] = {"Isolated", "Removed", "MergedWithPrevious",
                                        "MergedWithNext"};
    const char *b = json_string_field(n, "behavior");
    for (int k = 0; b != NULL && k < 4; k++)
        if (strcmp(b, names[k]) == 0) return *how = (SplitBehavior)k, true;
    return fail_json(p, "pre_tokenizer Split",
                     "behavior is not Isolated, Removed, MergedWithPrevious or MergedWithNext");
}

static bool parse_metaspace(Parse *p, const cJSON *n, PreStep *st) {
    const char *rep = json_string_field(n, "replacement");
    if (rep == NULL || rep[0] == '\0' || !strdup_into(&st->replacement, rep))
        return fail_json(p, "pre_tokenizer Metaspace", "needs a replacement");
    const char *scheme = json_string_field(n, "prepend_scheme");
    bool add_prefix = true; /* files older than prepend_scheme have add_prefix_space */
    if (!optional_bool(p, n, "add_prefix_space", &add_prefix)) return false;
    st->prepend = !add_prefix ? PREPEND_NEVER : PREPEND_ALWAYS;
    if (scheme != NULL) {
        if (strcmp(scheme, "always") == 0)
            st->prepend = PREPEND_ALWAYS;
        else if (strcmp(scheme, "first") == 0)
            st->prepend = PREPEND_FIRST;
        else if (strcmp(scheme, "never") == 0)
            st->prepend = PREPEND_NEVER;
        else
            return fail_json(p, "pre_tokenizer Metaspace",
                             "prepend_scheme is not always, first or never");
    }
    st->split_on_metaspace = true;
    return optional_bool(p, n, "split", &st->split_on_metaspace);
}

static bool parse_pre_tokenizer(Parse *p, const cJSON *n, int depth) {
    HfTokenizer *hf = p->hf;
    const char *type;
    if (!parse_step_type(p, n, "pre_tokenizer", "pretokenizers", parse_pre_tokenizer, depth, &type))
        return false;
    if (type == NULL) return true;
    if (hf->n_pre >= 16) return fail_json(p, "pre_tokenizer", "more than 16 steps");
    PreStep *st = &hf->pre[hf->n_pre];
    *st = (PreStep){0};
    StepError why;
    if (strcmp(type, "Split") == 0) {
        bool literal, invert = false;
        const char *pattern = pattern_of(n, &literal);
        if (pattern == NULL) return fail_json(p, "pre_tokenizer Split", "has no pattern");
        if (!optional_bool(p, n, "invert", &invert) || !parse_split_behavior(p, n, &st->behavior))
            return false;
        if (invert) return fail_json(p, "pre_tokenizer Split", "invert is not supported");
        if (!hf_regex_compile(pattern, literal, &st->regex, &why))
            return step_fail(p->err, "%s: pre_tokenizer Split: %s", p->what, why.message);
        st->kind = PRE_SPLIT;
        hf->n_pre++; /* owns the regex from here on, for hf_tokenizer_free */
        return literal || strdup_into(&st->pattern, pattern) ||
               fail_json(p, "pre_tokenizer Split", "out of memory");
    } else if (strcmp(type, "ByteLevel") == 0) {
        bool use_regex = true;
        if (!optional_bool(p, n, "add_prefix_space", &st->add_prefix_space) ||
            !optional_bool(p, n, "use_regex", &use_regex))
            return false;
        if (use_regex && !hf_regex_compile(GPT2_PATTERN, false, &st->regex, &why))
            return step_fail(p->err, "%s: ByteLevel: %s", p->what, why.message);
        st->kind = PRE_BYTE_LEVEL;
    } else if (strcmp(type, "Digits") == 0) { /* ASCII digits apart, one by one or in runs */
        bool each = false;
        if (!optional_bool(p, n, "individual_digits", &each)) return false;
        if (!hf_regex_compile(each ? "[0-9]" : "[0-9]+", false, &st->regex, &why))
            return step_fail(p->err, "%s: Digits: %s", p->what, why.message);
        st->kind = PRE_SPLIT, st->behavior = SPLIT_ISOLATED;
    } else if (strcmp(type, "Metaspace") == 0) {
        st->kind = PRE_METASPACE;
        hf->n_pre++;
        return parse_metaspace(p, n, st);
    } else {
        return step_fail(p->err,
                         "%s: pre_tokenizer %.40s is not supported (Split, ByteLevel, "
                         "Metaspace, Sequence)",
                         p->what, type);
    }
    hf->n_pre++;
    return true;
}

/* ---- putting it together ---- */

static bool parse_model(Parse *p, Tokenizer *t, const cJSON *root, int vocab_size) {
    HfTokenizer *hf = p->hf;
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
    const char *type = json_string_field(model, "type");
    if (!cJSON_IsObject(model)) return fail_json(p, "model", "missing");
    if (type != NULL && strcmp(type, "BPE") != 0)
        return step_fail(p->err, "%s: model type %.40s is not supported (BPE only)", p->what, type);
    if (type == NULL && cJSON_GetObjectItemCaseSensitive(model, "merges") == NULL)
        return fail_json(p, "model", "has no type and no merges (not BPE)");
    int max_id = -1;
    if (!parse_vocab(p, cJSON_GetObjectItemCaseSensitive(model, "vocab"), &max_id) ||
        !parse_added(p, cJSON_GetObjectItemCaseSensitive(root, "added_tokens"), &max_id))
        return false;
    if (max_id + 1 > hf->n_ids) { /* added tokens past the vocabulary */
        char **grown = realloc(hf->vocab, ((size_t)max_id + 1) * sizeof *grown);
        if (grown == NULL) return fail_json(p, "model.vocab", "out of memory");
        memset(grown + hf->n_ids, 0, ((size_t)max_id + 1 - (size_t)hf->n_ids) * sizeof *grown);
        hf->vocab = grown, hf->n_ids = max_id + 1;
    }
    if (vocab_size > 0 && hf->n_ids > vocab_size)
        return step_fail(p->err, "%s: has token ids up to %d but the model's vocabulary has %d",
                         p->what, hf->n_ids - 1, vocab_size);
    if (!tokenizer_init_empty(t, vocab_size > 0 ? vocab_size : hf->n_ids, p->err)) return false;
    t->hf = hf;
    if (!tokenizer_index_pieces(t)) return fail_json(p, "model.vocab", "out of memory");
    const char *unk = json_string_field(model, "unk_token");
    t->unk_id = unk != NULL ? tokenizer_find_piece(t, unk, strlen(unk)) : -1;
    if (unk != NULL && t->unk_id < 0)
        return fail_json(p, "model.unk_token", "is not in the vocabulary");
    double dropout = 0;
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(model, "dropout");
    if (d != NULL && !cJSON_IsNull(d) &&
        (!json_number_field(model, "dropout", 0, 1, &dropout) || dropout != 0))
        return fail_json(p, "model.dropout", "is not supported");
    return absent_or_empty(p, model, "continuing_subword_prefix") &&
           absent_or_empty(p, model, "end_of_word_suffix") &&
           optional_bool(p, model, "byte_fallback", &hf->byte_fallback) &&
           optional_bool(p, model, "fuse_unk", &hf->fuse_unk) &&
           optional_bool(p, model, "ignore_merges", &hf->ignore_merges) &&
           parse_merges(p, t, cJSON_GetObjectItemCaseSensitive(model, "merges"));
}

bool tokenizer_parse_json(Tokenizer *t, const char *json_text, const char *config_text,
                          const char *what, int vocab_size, StepError *err) {
    memset(t, 0, sizeof *t);
    HfTokenizer *hf = calloc(1, sizeof *hf);
    Parse p = {.what = what, .err = err, .hf = hf};
    cJSON *root = json_parse_whole(json_text);
    bool ok = hf != NULL;
    if (!ok) step_fail(err, "%s: out of memory", what);
    if (ok && !cJSON_IsObject(root)) ok = step_fail(err, "%s: not a JSON object", what);
    if (ok) {
        hf->norm = calloc(16, sizeof *hf->norm);
        hf->pre = calloc(16, sizeof *hf->pre);
        hf->match_context = hf_match_context_create();
        if (hf->norm == NULL || hf->pre == NULL || hf->match_context == NULL)
            ok = step_fail(err, "%s: out of memory", what);
    }
    ok = ok && parse_model(&p, t, root, vocab_size) &&
         parse_normalizer(&p, cJSON_GetObjectItemCaseSensitive(root, "normalizer"), 0) &&
         parse_pre_tokenizer(&p, cJSON_GetObjectItemCaseSensitive(root, "pre_tokenizer"), 0) &&
         parse_decoder(&p, cJSON_GetObjectItemCaseSensitive(root, "decoder"), 0);
    if (ok)
        parse_post_processor(&p, cJSON_GetObjectItemCaseSensitive(root, "post_processor"), t, 0);
    ok = ok && build_pieces(&p, t) && (config_text == NULL || parse_config(&p, t, config_text));
    cJSON_Delete(root);
    if (!ok) {
        if (t->hf == NULL) hf_tokenizer_free(hf), free(hf);
        tokenizer_free(t);
        return false;
    }
    t->add_bos = t->add_bos && t->bos_id >= 0;
    return true;
}

static bool is_directory(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

bool tokenizer_json_in_dir(const char *dir) {
    char path[4096];
    struct stat st;
    return snprintf(path, sizeof path, "%s/tokenizer.json", dir) < (int)sizeof path &&
           stat(path, &st) == 0;
}

bool tokenizer_load_json(Tokenizer *t, const char *path, int vocab_size, StepError *err) {
    memset(t, 0, sizeof *t);
    char json_path[4096], config_path[4096];
    bool dir = is_directory(path);
    int n = snprintf(json_path, sizeof json_path, dir ? "%s/tokenizer.json" : "%s", path);
    if (n < 0 || n >= (int)sizeof json_path)
        return step_fail(err, "tokenizer %s: path too long", path);
    /* tokenizer_config.json lives beside tokenizer.json */
    const char *slash = strrchr(json_path, '/');
    int dir_len = slash != NULL ? (int)(slash - json_path) : 1;
    snprintf(config_path, sizeof config_path, "%.*s/tokenizer_config.json", dir_len,
             slash != NULL ? json_path : ".");
    char *text = NULL, *config = NULL;
    struct stat st;
    bool ok = file_read_text(json_path, "tokenizer", &text, err);
    if (ok && strlen(text) > TOKENIZER_JSON_MAX_BYTES)
        ok = step_fail(err, "tokenizer %s: larger than %d MiB", json_path,
                       TOKENIZER_JSON_MAX_BYTES >> 20);
    if (ok && stat(config_path, &st) == 0)
        ok = file_read_text(config_path, "tokenizer config", &config, err);
    if (ok) ok = tokenizer_parse_json(t, text, config, json_path, vocab_size, err);
    free(text), free(config);
    return ok;
}
