/* tokenizer.c: sentencepiece-compatible BPE encoding and run.c's decoding. */
#include "ref/text/tokenizer.h"

#include "ref/util/file_util.h"
#include "ref/text/hf_tokenizer.h"
#include "ref/text/pretokenize.h"
#include "ref/util/text_buffer.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A piece spelled exactly <0xXX> (upper-case hex) stands for one raw byte. */
int tokenizer_byte_of_piece(const char *piece) {
    unsigned int byte;
    char tail;
    if (strlen(piece) != 6 || strncmp(piece, "<0x", 3) != 0 || piece[5] != '>') return -1;
    if (sscanf(piece + 3, "%2X%c", &byte, &tail) != 2 || tail != '>') return -1;
    return (int)byte;
}

/* Compare two byte strings given as (pointer, length), as memcmp then length. */
static int compare_bytes(const char *a, size_t na, const char *b, size_t nb) {
    int c = memcmp(a, b, na < nb ? na : nb);
    if (c != 0) return c;
    return (na > nb) - (na < nb);
}

/* qsort_r is not C11; the sort key is the piece text, so sort (text, id)
 * records instead and copy the ids out. */
typedef struct {
    const char *text;
    int id;
} PieceRef;

static int compare_piece_refs(const void *a, const void *b) {
    const PieceRef *pa = a, *pb = b;
    int c = strcmp(pa->text, pb->text);
    return c != 0 ? c : (pa->id > pb->id) - (pa->id < pb->id);
}

static bool is_space_run(const char *s) {
    size_t n = strlen(s);
    return n >= 2 && strspn(s, " ") == n;
}

bool tokenizer_init(Tokenizer *t, int vocab_size, const char *const *pieces, const float *scores,
                    StepError *err) {
    memset(t, 0, sizeof *t);
    if (vocab_size < 3) return step_fail(err, "tokenizer: needs at least <unk>, BOS and EOS");
    t->vocab_size = vocab_size;
    t->pieces = calloc((size_t)vocab_size, sizeof *t->pieces);
    t->scores = malloc((size_t)vocab_size * sizeof *t->scores);
    t->sorted_ids = malloc((size_t)vocab_size * sizeof *t->sorted_ids);
    PieceRef *refs = malloc((size_t)vocab_size * sizeof *refs);
    if (t->pieces == NULL || t->scores == NULL || t->sorted_ids == NULL || refs == NULL) {
        free(refs);
        tokenizer_free(t);
        return step_fail(err, "tokenizer: out of memory");
    }
    for (int b = 0; b < 256; b++) t->byte_ids[b] = -1;
    t->collapse_spaces = true;
    t->unk_id = TOKEN_UNK, t->bos_id = TOKEN_BOS, t->eos_id = TOKEN_EOS, t->add_bos = true;
    for (int id = 0; id < vocab_size; id++) {
        t->pieces[id] = strdup(pieces[id]);
        if (t->pieces[id] == NULL) {
            free(refs);
            tokenizer_free(t);
            return step_fail(err, "tokenizer: out of memory");
        }
        if (isnan(scores[id])) {
            free(refs);
            tokenizer_free(t);
            return step_fail(err, "tokenizer: token %d has a score that is not a number", id);
        }
        t->scores[id] = scores[id];
        size_t bytes = strlen(pieces[id]);
        if (bytes > (size_t)t->max_piece_bytes)
            t->max_piece_bytes = bytes > INT32_MAX ? INT32_MAX : (int)bytes;
        int byte = tokenizer_byte_of_piece(pieces[id]);
        if (byte >= 0 && t->byte_ids[byte] < 0) t->byte_ids[byte] = id;
        if (id <= TOKEN_EOS || byte >= 0) continue; /* control and byte pieces never merge */
        if (is_space_run(pieces[id])) t->collapse_spaces = false;
        refs[t->n_mergeable++] = (PieceRef){t->pieces[id], id};
    }
    qsort(refs, (size_t)t->n_mergeable, sizeof *refs, compare_piece_refs);
    for (int i = 0; i < t->n_mergeable; i++) t->sorted_ids[i] = refs[i].id;
    free(refs);
    return true;
}

bool tokenizer_init_empty(Tokenizer *t, int vocab_size, StepError *err) {
    memset(t, 0, sizeof *t);
    t->vocab_size = vocab_size;
    t->pieces = calloc((size_t)vocab_size, sizeof *t->pieces);
    t->scores = calloc((size_t)vocab_size, sizeof *t->scores);
    t->sorted_ids = malloc((size_t)vocab_size * sizeof *t->sorted_ids);
    bool ok = t->pieces != NULL && t->scores != NULL && t->sorted_ids != NULL;
    for (int id = 0; ok && id < vocab_size; id++) ok = (t->pieces[id] = strdup("")) != NULL;
    for (int b = 0; b < 256; b++) t->byte_ids[b] = -1;
    t->unk_id = t->bos_id = t->eos_id = -1;
    if (!ok) tokenizer_free(t);
    return ok || step_fail(err, "tokenizer: out of memory");
}

/* The texts lookups search: a tokenizer.json's own spellings, else the pieces. */
static const char *const *lookup_texts(const Tokenizer *t) {
    return t->hf != NULL ? (const char *const *)t->hf->vocab : (const char *const *)t->pieces;
}

bool tokenizer_index_pieces(Tokenizer *t) {
    const char *const *texts = lookup_texts(t);
    int n_ids = t->hf != NULL ? t->hf->n_ids : t->vocab_size;
    PieceRef *refs = malloc(((size_t)n_ids + 1) * sizeof *refs);
    if (refs == NULL) return false;
    t->n_mergeable = 0;
    for (int id = 0; id < n_ids; id++)
        if (texts[id] != NULL) refs[t->n_mergeable++] = (PieceRef){texts[id], id};
    qsort(refs, (size_t)t->n_mergeable, sizeof *refs, compare_piece_refs);
    for (int i = 0; i < t->n_mergeable; i++) t->sorted_ids[i] = refs[i].id;
    free(refs);
    return true;
}

/* Id of the normal piece spelled s[0..n), or -1. Binary search; on duplicate
 * spellings the lowest id sorts first and wins. */
int tokenizer_find_piece(const Tokenizer *t, const char *s, size_t n) {
    const char *const *texts = lookup_texts(t);
    int lo = 0, hi = t->n_mergeable;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        const char *p = texts[t->sorted_ids[mid]];
        if (compare_bytes(p, strlen(p), s, n) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < t->n_mergeable) {
        const char *p = texts[t->sorted_ids[lo]];
        if (compare_bytes(p, strlen(p), s, n) == 0) return t->sorted_ids[lo];
    }
    return -1;
}

/* Read one token record (score, length, bytes) into *piece (malloc'd).
 * Returns 1 on success, 0 at a clean end of file, -1 on error (in err). */
static int read_token_record(FILE *f, int32_t max_len, float *score, char **piece, int index,
                             const char *path, StepError *err) {
    int32_t len;
    size_t got = fread(score, sizeof(float), 1, f);
    if (got == 0 && feof(f)) return 0;
    if (got != 1 || fread(&len, sizeof len, 1, f) != 1) {
        step_fail(err, "tokenizer %s: truncated in token %d", path, index);
        return -1;
    }
    if (len < 0 || len > max_len) {
        step_fail(err, "tokenizer %s: token %d has length %d outside [0, %d]", path, index, len,
                  max_len);
        return -1;
    }
    *piece = malloc((size_t)len + 1);
    if (*piece == NULL || fread(*piece, 1, (size_t)len, f) != (size_t)len) {
        free(*piece);
        *piece = NULL;
        step_fail(err, "tokenizer %s: truncated in token %d", path, index);
        return -1;
    }
    (*piece)[len] = '\0';
    return 1;
}

bool tokenizer_load_bin(Tokenizer *t, const char *path, int vocab_size, StepError *err) {
    memset(t, 0, sizeof *t);
    FILE *f = file_open_input(path, "tokenizer", err);
    if (f == NULL) return false;
    int32_t max_len;
    bool ok = true;
    if (fread(&max_len, sizeof max_len, 1, f) != 1 || max_len <= 0 || max_len > 65536)
        ok = step_fail(err, "tokenizer %s: missing or bad max_token_length header", path);
    int n = 0, cap = 0;
    char **pieces = NULL;
    float *scores = NULL;
    while (ok) {
        if (n == cap) { /* grow both arrays together */
            cap = cap ? cap * 2 : 1024;
            char **p = realloc(pieces, (size_t)cap * sizeof *pieces);
            if (p != NULL) pieces = p;
            float *s = realloc(scores, (size_t)cap * sizeof *scores);
            if (s != NULL) scores = s;
            if (p == NULL || s == NULL) {
                ok = step_fail(err, "tokenizer %s: out of memory", path);
                break;
            }
        }
        int got = read_token_record(f, max_len, &scores[n], &pieces[n], n, path, err);
        if (got < 0) ok = false;
        if (got <= 0) break;
        n++;
    }
    fclose(f);
    if (ok && vocab_size > 0 && n != vocab_size)
        ok = step_fail(err, "tokenizer %s: has %d tokens but the model's vocabulary has %d", path,
                       n, vocab_size);
    if (ok) ok = tokenizer_init(t, n, (const char *const *)pieces, scores, err);
    for (int i = 0; i < n; i++) free(pieces[i]);
    free(pieces);
    free(scores);
    return ok;
}

/* Length of the UTF-8 character starting at s (1 for an invalid byte, which
 * then stands alone and falls back to its byte piece). */
static size_t utf8_char_len(const unsigned char *s, size_t avail) {
    size_t n = s[0] < 0x80           ? 1
               : (s[0] >> 5) == 0x6  ? 2
               : (s[0] >> 4) == 0xE  ? 3
               : (s[0] >> 3) == 0x1E ? 4
                                     : 1;
    if (n > avail) return 1;
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80) return 1;
    }
    return n;
}

/* sentencepiece's normalisation for these models: with collapse_spaces,
 * drop leading and trailing spaces and squeeze runs to one; then prefix one
 * space (the dummy prefix) unless nothing is left. Returns a malloc'd string. */
static char *normalize_text(const Tokenizer *t, const char *text) {
    size_t n = strlen(text);
    char *out = malloc(n + 2);
    if (out == NULL) return NULL;
    size_t o = 1;
    out[0] = ' ';
    bool pending_space = false;
    for (size_t i = 0; i < n; i++) {
        if (t->collapse_spaces && text[i] == ' ') {
            pending_space = o > 1;
            continue;
        }
        if (pending_space) out[o++] = ' ', pending_space = false;
        out[o++] = text[i];
    }
    out[o] = '\0';
    if (o == 1) out[0] = '\0'; /* nothing to encode: no dummy prefix either */
    return out;
}

/* The working sequence of the BPE merge loop: symbols as byte ranges of the
 * normalised text in a doubly linked list (len 0: merged away), with the id
 * each spells (a tokenizer.json merges pairs of ids). */
typedef struct {
    size_t *start, *len;
    int *prev, *next, *id;
} Symbols;

/* A candidate merge: the pair (left, next[left]) as it was when pushed.
 * It is stale once either symbol has changed, which the lengths show:
 * a symbol only ever grows, and one merged away has length 0. */
typedef struct {
    float score;
    int left, right, id;
    size_t left_len, right_len;
} PairCandidate;

/* A binary max-heap of candidates: highest score first, then leftmost (the
 * lowest symbol index is the leftmost: the list keeps the text's order).
 * This is the order of the plain loop that rescans every pair for the
 * best, at O(log n) a merge instead of O(n): a long prompt encodes in
 * O(n log n), as in sentencepiece and tiktoken. */
typedef struct {
    PairCandidate *items;
    int n;
} PairHeap;

static bool comes_first(const PairCandidate *a, const PairCandidate *b) {
    return a->score > b->score || (a->score == b->score && a->left < b->left);
}

static void heap_push(PairHeap *h, PairCandidate c) {
    int i = h->n++;
    while (i > 0 && comes_first(&c, &h->items[(i - 1) / 2])) {
        h->items[i] = h->items[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h->items[i] = c;
}

static PairCandidate heap_pop(PairHeap *h) {
    PairCandidate top = h->items[0], last = h->items[--h->n];
    int i = 0;
    for (;;) {
        int child = 2 * i + 1;
        if (child >= h->n) break;
        if (child + 1 < h->n && comes_first(&h->items[child + 1], &h->items[child])) child++;
        if (!comes_first(&h->items[child], &last)) break;
        h->items[i] = h->items[child];
        i = child;
    }
    if (h->n > 0) h->items[i] = last;
    return top;
}

/* Push the pair (i, next[i]) if it spells a mergeable piece: for
 * sentencepiece, a piece spelled by both (its score first); for a
 * tokenizer.json, a merge rule of the two ids (the lowest rank first). */
static void push_pair(const Tokenizer *t, const char *text, const Symbols *s, PairHeap *h, int i) {
    if (i < 0 || s->next[i] < 0) return;
    int j = s->next[i];
    if (t->hf != NULL) {
        const MergeRule *r = hf_merge_find(t->hf, s->id[i], s->id[j]);
        if (r != NULL)
            heap_push(h, (PairCandidate){.score = -(float)r->rank,
                                         .left = i,
                                         .right = j,
                                         .id = r->result,
                                         .left_len = s->len[i],
                                         .right_len = s->len[j]});
        return;
    }
    int id = tokenizer_find_piece(t, text + s->start[i], s->len[i] + s->len[j]);
    if (id >= 0)
        heap_push(h, (PairCandidate){.score = t->scores[id],
                                     .left = i,
                                     .right = j,
                                     .id = id,
                                     .left_len = s->len[i],
                                     .right_len = s->len[j]});
}

static bool is_current(const Symbols *s, const PairCandidate *c) {
    return s->next[c->left] == c->right && s->len[c->left] == c->left_len &&
           s->len[c->right] == c->right_len;
}

/* Show the merge just made, with the whole sequence after it. */
static void report_merge(const BpeObserver *obs, const char *text, const Symbols *s, int head,
                         int at, int left_len, int id, float score, int step, const char **symbols,
                         int *lens) {
    int n = 0;
    for (int i = head; i >= 0; i = s->next[i])
        symbols[n] = text + s->start[i], lens[n++] = (int)s->len[i];
    BpeMerge m = {.step = step,
                  .id = id,
                  .score = score,
                  .left = text + s->start[at],
                  .right = text + s->start[at] + left_len,
                  .left_len = left_len,
                  .right_len = (int)s->len[at] - left_len,
                  .n_symbols = n,
                  .symbols = symbols,
                  .symbol_lens = lens};
    obs->on_merge(obs->ctx, &m);
}

bool tokenizer_encode(const Tokenizer *t, const char *text, bool add_bos, int **out, int *n_out,
                      StepError *err) {
    return tokenizer_encode_observed(t, text, add_bos, NULL, out, n_out, err);
}

bool tokenizer_may_fit(const Tokenizer *t, const char *text, int max_tokens) {
    if (strlen(text) > TOKENIZER_MAX_TEXT_BYTES) return false;
    if (t->hf != NULL) return true; /* normalizers may lengthen the text: no bound here */
    char *norm = normalize_text(t, text);
    size_t n = norm != NULL ? strlen(norm) : strlen(text);
    free(norm);
    return n <= (size_t)max_tokens * (size_t)(t->max_piece_bytes > 0 ? t->max_piece_bytes : 1);
}

/* The merge loop over the symbols from head: merge the best pair until
 * none is left. Returns false (err set) when out of memory, or when
 * watched on a piece of more than TOKENIZER_TRACE_MAX_SYMBOLS symbols: each
 * merge reports the whole sequence, so n symbols cost n^2 / 2 in a trace
 * (a 300 KB piece, 45 billion). */
static bool merge_pairs(const Tokenizer *t, const char *norm, size_t n, Symbols *s, int count,
                        const BpeObserver *obs, StepError *err) {
    bool watched = obs != NULL && obs->on_merge != NULL;
    if (watched && count > TOKENIZER_TRACE_MAX_SYMBOLS)
        return step_fail(err,
                         "--trace-bpe: a piece of %d symbols is more than the %d whose merges "
                         "are traced (each merge event lists every symbol); trace it without "
                         "--trace-bpe, or split the text",
                         count, TOKENIZER_TRACE_MAX_SYMBOLS);
    /* Each merge pushes at most two pairs: 3 per symbol is room for all. */
    PairHeap h = {malloc((3 * (size_t)count + 1) * sizeof(PairCandidate)), 0};
    const char **view = watched ? malloc((n + 1) * sizeof(char *)) : NULL;
    int *view_lens = watched ? malloc((n + 1) * sizeof(int)) : NULL;
    bool ok = h.items != NULL && (!watched || (view != NULL && view_lens != NULL));
    for (int i = 0; ok && i < count; i++) push_pair(t, norm, s, &h, i);
    for (int step = 1; ok && h.n > 0;) {
        PairCandidate c = heap_pop(&h);
        if (!is_current(s, &c)) continue;
        int best = c.left, gone = c.right, left_len = (int)s->len[best];
        s->len[best] += s->len[gone];
        s->len[gone] = 0;
        s->id[best] = c.id;
        s->next[best] = s->next[gone];
        if (s->next[gone] >= 0) s->prev[s->next[gone]] = best;
        push_pair(t, norm, s, &h, s->prev[best]);
        push_pair(t, norm, s, &h, best);
        if (watched)
            report_merge(obs, norm, s, 0, best, left_len, c.id, c.score, step, view, view_lens);
        step++;
    }
    free(h.items), free(view), free(view_lens);
    return ok || step_fail(err, "tokenizer: out of memory encoding %zu bytes", n);
}

/* Room for n symbols (one a byte at most). */
static bool symbols_alloc(Symbols *s, size_t n) {
    *s = (Symbols){.start = malloc((n + 1) * sizeof(size_t)),
                   .len = malloc((n + 1) * sizeof(size_t)),
                   .prev = malloc((n + 1) * sizeof(int)),
                   .next = malloc((n + 1) * sizeof(int)),
                   .id = malloc((n + 1) * sizeof(int))};
    return s->start && s->len && s->prev && s->next && s->id;
}

static void symbols_free(Symbols *s) {
    free(s->start), free(s->len), free(s->prev), free(s->next), free(s->id);
}

/* Append symbol text[start, start + len) spelling id, linked after the last. */
static void symbol_add(Symbols *s, int *count, size_t start, size_t len, int id) {
    int k = (*count)++;
    s->start[k] = start, s->len[k] = len, s->id[k] = id;
    s->prev[k] = k - 1, s->next[k] = -1;
    if (k > 0) s->next[k - 1] = k;
}

/* ---- a tokenizer.json's encoder: pieces from pretokenize.c, then BPE ---- */

typedef struct {
    const Tokenizer *t;
    const BpeObserver *obs;
    StepError *err;
    int *ids;
    size_t n, cap;
} JsonEncode;

static bool push_id(JsonEncode *e, int id) {
    if (e->n == e->cap) {
        size_t cap = e->cap ? e->cap * 2 : 64;
        int *grown = realloc(e->ids, cap * sizeof *grown);
        if (grown == NULL) return false;
        e->ids = grown, e->cap = cap;
    }
    e->ids[e->n++] = id;
    return true;
}

/* One pre-tokenized word, as the tokenizers library's BPE does it: each
 * character its token, else its <0xXX> tokens (byte_fallback), else unk
 * (one for a run with fuse_unk, none without an unk token); then merges by
 * rank. With ignore_merges a word that is itself a token is that token. */
static bool encode_word(JsonEncode *e, const char *w, size_t n) {
    const Tokenizer *t = e->t;
    const HfTokenizer *hf = t->hf;
    int whole = hf->ignore_merges ? tokenizer_find_piece(t, w, n) : -1;
    if (whole >= 0) return push_id(e, whole);
    Symbols s;
    bool ok = symbols_alloc(&s, n);
    int count = 0;
    for (size_t i = 0, len; ok && i < n; i += len) {
        len = utf8_char_len((const unsigned char *)w + i, n - i);
        int id = tokenizer_find_piece(t, w + i, len);
        bool bytes_known = id < 0 && hf->byte_fallback; /* only an unknown character needs them */
        for (size_t k = 0; bytes_known && k < len; k++)
            bytes_known = t->byte_ids[(unsigned char)w[i + k]] >= 0;
        if (id >= 0) {
            symbol_add(&s, &count, i, len, id);
        } else if (bytes_known) {
            for (size_t k = 0; k < len; k++)
                symbol_add(&s, &count, i + k, 1, t->byte_ids[(unsigned char)w[i + k]]);
        } else if (t->unk_id >= 0 && hf->fuse_unk && count > 0 && s.id[count - 1] == t->unk_id) {
            s.len[count - 1] += len;
        } else if (t->unk_id >= 0) {
            symbol_add(&s, &count, i, len, t->unk_id);
        }
    }
    ok = ok && merge_pairs(t, w, n, &s, count, e->obs, e->err);
    for (int i = ok && count > 0 ? 0 : -1; ok && i >= 0; i = s.next[i]) ok = push_id(e, s.id[i]);
    symbols_free(&s);
    return ok;
}

static bool encode_piece(void *ctx, const char *piece, size_t len, int added_id) {
    JsonEncode *e = ctx;
    if (e->obs != NULL && e->obs->on_piece != NULL)
        e->obs->on_piece(e->obs->ctx, piece, (int)len, added_id);
    return added_id >= 0 ? push_id(e, added_id) : encode_word(e, piece, len);
}

static bool encode_json(const Tokenizer *t, const char *text, bool add_bos, const BpeObserver *obs,
                        int **out, int *n_out, StepError *err) {
    size_t n = strlen(text);
    if (!utf8_valid(text, n)) return step_fail(err, "tokenizer: the text is not valid UTF-8");
    JsonEncode e = {.t = t, .obs = obs, .err = err};
    bool ok = !(add_bos && t->add_bos) || push_id(&e, t->bos_id);
    err->message[0] = '\0';
    if (ok) ok = hf_pretokenize(t->hf, text, n, encode_piece, &e, err);
    if (ok && e.n > INT32_MAX / 2) ok = step_fail(err, "tokenizer: too many tokens");
    if (!ok) {
        free(e.ids);
        if (err->message[0] == '\0')
            step_fail(err, "tokenizer: out of memory encoding %zu bytes", n);
        return false;
    }
    *out = e.ids != NULL ? e.ids : malloc(sizeof(int));
    *n_out = (int)e.n;
    return *out != NULL || step_fail(err, "tokenizer: out of memory");
}

bool tokenizer_encode_observed(const Tokenizer *t, const char *text, bool add_bos,
                               const BpeObserver *obs, int **out, int *n_out, StepError *err) {
    if (strlen(text) > TOKENIZER_MAX_TEXT_BYTES)
        return step_fail(err, "tokenizer: a text of %zu bytes is longer than the %d bytes allowed",
                         strlen(text), TOKENIZER_MAX_TEXT_BYTES);
    if (t->hf != NULL) return encode_json(t, text, add_bos, obs, out, n_out, err);
    char *norm = normalize_text(t, text);
    size_t n = norm ? strlen(norm) : 0;
    Symbols s;
    bool ok = symbols_alloc(&s, n);
    /* Every byte becomes at most one token, plus BOS. */
    int *ids = malloc((n + 1) * sizeof(int));
    ok = ok && norm && ids;
    int count = 0;
    for (size_t i = 0, len; ok && i < n; i += len) {
        len = utf8_char_len((const unsigned char *)norm + i, n - i);
        symbol_add(&s, &count, i, len, -1);
    }
    /* The first symbol is never merged away (only a right symbol is), so
     * the list always starts at 0. */
    err->message[0] = '\0';
    ok = ok && merge_pairs(t, norm, n, &s, count, obs, err);
    int n_ids = 0;
    if (ok && add_bos && t->add_bos) ids[n_ids++] = t->bos_id;
    for (int i = count > 0 && ok ? 0 : -1; i >= 0; i = s.next[i]) {
        int id = tokenizer_find_piece(t, norm + s.start[i], s.len[i]);
        if (id >= 0) {
            ids[n_ids++] = id;
            continue;
        }
        for (size_t b = 0; b < s.len[i]; b++) { /* byte fallback, else <unk> */
            int byte_id = t->byte_ids[(unsigned char)norm[s.start[i] + b]];
            ids[n_ids++] = byte_id >= 0 ? byte_id : TOKEN_UNK;
            if (byte_id < 0) break; /* one <unk> per unknown character */
        }
    }
    free(norm);
    symbols_free(&s);
    if (!ok) {
        free(ids);
        if (err->message[0] == '\0')
            step_fail(err, "tokenizer: out of memory encoding %zu bytes", strlen(text));
        return false;
    }
    *out = ids;
    *n_out = n_ids;
    return true;
}

const char *tokenizer_decode(const Tokenizer *t, int prev, int token, char buf[8], int *len) {
    if (token < 0 || token >= t->vocab_size || (t->hf != NULL && token >= t->hf->n_ids)) {
        *len = 0;
        return "";
    }
    if (t->hf != NULL) {
        const char *bytes = t->hf->bytes[token];
        *len = t->hf->byte_lens[token];
        if (t->hf->strip_leading_space && prev == t->bos_id && *len > 0 && bytes[0] == ' ')
            bytes++, (*len)--;
        return bytes;
    }
    const char *piece = t->pieces[token];
    if (prev == t->bos_id && piece[0] == ' ') piece++;
    int byte = tokenizer_byte_of_piece(piece);
    if (byte >= 0) {
        buf[0] = (char)byte;
        buf[1] = '\0';
        *len = 1;
        return buf;
    }
    *len = (int)strlen(piece);
    return piece;
}

char *tokenizer_decode_tokens(const Tokenizer *t, const int *tokens, int n, int prev) {
    TextBuffer text = TEXT_BUFFER_INIT;
    text_buffer_add(&text, "", 0); /* "" for no tokens */
    for (int i = 0; text.ok && i < n; prev = tokens[i++]) {
        if (tokens[i] == t->bos_id || tokens[i] == t->eos_id) continue;
        char buf[8];
        int piece_len;
        const char *piece = tokenizer_decode(t, prev, tokens[i], buf, &piece_len);
        text_buffer_add(&text, piece, (size_t)piece_len);
    }
    if (!text.ok) free(text.s);
    return text.ok ? text.s : NULL;
}

void tokenizer_free(Tokenizer *t) {
    if (t->pieces != NULL) {
        for (int i = 0; i < t->vocab_size; i++) free(t->pieces[i]);
    }
    free(t->pieces);
    free(t->scores);
    free(t->sorted_ids);
    if (t->hf != NULL) hf_tokenizer_free(t->hf);
    free(t->hf);
    memset(t, 0, sizeof *t);
}
