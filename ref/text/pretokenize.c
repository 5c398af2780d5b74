/* pretokenize.c: added tokens, normalizers and pre-tokenizers of a
 * tokenizer.json, in the order the tokenizers library applies them. */
#include "ref/text/pretokenize.h"

#include "ref/util/text_buffer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <utf8proc.h>

/* ---- UTF-8 and the byte-level alphabet ---- */

bool utf8_valid(const char *text, size_t n) {
    const unsigned char *s = (const unsigned char *)text;
    for (size_t i = 0; i < n;) {
        unsigned c = s[i];
        size_t len = c < 0x80           ? 1
                     : (c >> 5) == 0x6  ? 2
                     : (c >> 4) == 0xE  ? 3
                     : (c >> 3) == 0x1E ? 4
                                        : 0;
        if (len == 0 || len > n - i) return false;
        uint32_t cp = len == 1 ? c : len == 2 ? c & 0x1F : len == 3 ? c & 0x0F : c & 0x07;
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xC0) != 0x80) return false;
            cp = (cp << 6) | (s[i + k] & 0x3F);
        }
        static const uint32_t least[5] = {0, 0, 0x80, 0x800, 0x10000}; /* no overlong forms */
        if (cp < least[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
        i += len;
    }
    return true;
}

/* Bytes 0..32, 127..160 and 173 are not printable; GPT-2 numbers them
 * 256, 257, ... in byte order: 0..32 -> 256..288, 127..160 -> 289..322,
 * 173 -> 323. */
static unsigned int byte_level_code_point(unsigned char b) {
    if (b <= 32) return 256u + b;
    if (b >= 127 && b <= 160) return 289u + (b - 127u);
    if (b == 173) return 323u;
    return b;
}

int byte_level_char(unsigned char byte, char out[2]) {
    unsigned int cp = byte_level_code_point(byte);
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    out[0] = (char)(0xC0 | (cp >> 6));
    out[1] = (char)(0x80 | (cp & 0x3F));
    return 2;
}

int byte_level_byte(unsigned int cp) {
    if (cp <= 255) return byte_level_code_point((unsigned char)cp) == cp ? (int)cp : -1;
    if (cp <= 288) return (int)(cp - 256);
    if (cp <= 322) return (int)(cp - 289 + 127);
    return cp == 323 ? 173 : -1;
}

/* ---- growable texts and piece lists ---- */

typedef struct {
    char **text; /* [n] owned copies */
    size_t *len;
    int n, cap;
} PieceList;

static bool pieces_push(PieceList *l, const char *s, size_t n) {
    if (l->n == l->cap) {
        int cap = l->cap ? l->cap * 2 : 16;
        char **t = realloc(l->text, (size_t)cap * sizeof *t);
        if (t != NULL) l->text = t;
        size_t *len = realloc(l->len, (size_t)cap * sizeof *len);
        if (len != NULL) l->len = len;
        if (t == NULL || len == NULL) return false;
        l->cap = cap;
    }
    char *copy = malloc(n + 1);
    if (copy == NULL) return false;
    memcpy(copy, s, n);
    copy[n] = '\0';
    l->text[l->n] = copy;
    l->len[l->n++] = n;
    return true;
}

static void pieces_free(PieceList *l) {
    for (int i = 0; i < l->n; i++) free(l->text[i]);
    free(l->text);
    free(l->len);
    *l = (PieceList){0};
}

/* Offset of the first `pat` in s[from..n), or n. */
static size_t find_bytes(const char *s, size_t n, size_t from, const char *pat, size_t m) {
    for (size_t i = from; m > 0 && i + m <= n; i++) {
        if (memcmp(s + i, pat, m) == 0) return i;
    }
    return n;
}

/* ---- regexes ---- */

bool hf_regex_compile(const char *pattern, bool literal, void **code, StepError *err) {
    int code_err;
    PCRE2_SIZE at;
    /* PCRE2_AUTO_CALLOUT: count_step counts a match's steps (see below). */
    uint32_t options = PCRE2_UTF | (literal ? PCRE2_LITERAL : PCRE2_UCP | PCRE2_AUTO_CALLOUT);
    pcre2_code *re =
        pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED, options, &code_err, &at, NULL);
    if (re == NULL) {
        PCRE2_UCHAR why[160];
        pcre2_get_error_message(code_err, why, sizeof why);
        return step_fail(err, "pattern at offset %zu: %s", (size_t)at, (const char *)why);
    }
    pcre2_jit_compile(re, PCRE2_JIT_COMPLETE); /* the interpreter runs when JIT cannot */
    *code = re;
    return true;
}

void hf_regex_free(void *code) {
    pcre2_code_free(code);
}

/* How long a pattern may work. PCRE2's match limit bounds one match, but a
 * pattern such as a*a*b|. stays under it at every one of a text's
 * thousands of matches and still takes minutes in all; and the match limit
 * does not count the backtracking inside a repeated character, where such a
 * pattern spends its time. So every pattern is compiled with an automatic
 * callout before each of its items (the callouts change no match), and
 * count_step counts them over the whole text: a step budget linear in the
 * text's length (deterministic: the same text and pattern are refused on
 * every machine), and, since even a step can hide a long inner loop, a
 * budget of CPU time, checked every REGEX_CLOCK_EVERY steps. Real
 * tokenizers' patterns (GPT-2's, Llama 3's, Qwen's) take about 4 steps and
 * well under a microsecond a byte: both budgets are two orders of
 * magnitude above them. */
#define REGEX_MATCH_LIMIT (10u * 1000 * 1000)
#ifndef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
#define REGEX_STEPS_PER_BYTE 400u
#define REGEX_STEPS_BASE     (10u * 1000 * 1000)
#define REGEX_SECONDS_BASE   1.0
#else
/* The fuzz build (libFuzzer's convention) trips the same budget a hundred
 * times sooner: the same paths run, and a fuzzer's pathological patterns
 * cost it milliseconds rather than seconds each. Real patterns' 4 steps a
 * byte still fit. */
#define REGEX_STEPS_PER_BYTE 40u
#define REGEX_STEPS_BASE     (100u * 1000)
#define REGEX_SECONDS_BASE   0.01
#endif
#define REGEX_SECONDS_PER_MB 10.0
#define REGEX_CLOCK_EVERY    4096u

typedef struct {
    uint64_t steps, max_steps;
    double start, max_seconds; /* thread CPU time */
    bool out_of_time;
} RegexBudget;

static double cpu_seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int count_step(pcre2_callout_block *block, void *data) {
    (void)block;
    RegexBudget *b = data;
    if (++b->steps > b->max_steps) return PCRE2_ERROR_CALLOUT;
    if (b->steps % REGEX_CLOCK_EVERY == 0 && cpu_seconds() - b->start > b->max_seconds) {
        b->out_of_time = true;
        return PCRE2_ERROR_CALLOUT;
    }
    return 0;
}

void *hf_match_context_create(void) {
    pcre2_match_context *c = pcre2_match_context_create(NULL);
    if (c != NULL) {
        pcre2_set_match_limit(c, REGEX_MATCH_LIMIT);
        pcre2_set_depth_limit(c, 100 * 1000);
    }
    return c;
}

void hf_match_context_free(void *ctx) {
    pcre2_match_context_free(ctx);
}

/* Split s[0..n) where re matches, keeping the matches as `how` says. The
 * pieces in between are kept too; empty pieces never are. */
static bool split_regex(const void *re, const void *mctx, SplitBehavior how, const char *s,
                        size_t n, PieceList *out, StepError *err) {
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(re, NULL);
    pcre2_match_context *limits = pcre2_match_context_copy((pcre2_match_context *)mctx);
    if (md == NULL || limits == NULL) {
        pcre2_match_data_free(md), pcre2_match_context_free(limits);
        return step_fail(err, "tokenizer: out of memory");
    }
    RegexBudget budget = {.max_steps = REGEX_STEPS_BASE + (uint64_t)REGEX_STEPS_PER_BYTE * n,
                          .start = cpu_seconds(),
                          .max_seconds = REGEX_SECONDS_BASE + REGEX_SECONDS_PER_MB * 1e-6 * n};
    pcre2_set_callout(limits, count_step, &budget);
    size_t from = 0, kept = 0; /* search from; text before `kept` is emitted */
    bool ok = true;
    while (ok && from <= n) {
        int rc = pcre2_match(re, (PCRE2_SPTR)s, n, from, PCRE2_NO_UTF_CHECK, md, limits);
        if (rc == PCRE2_ERROR_NOMATCH) break;
        if (rc == PCRE2_ERROR_CALLOUT || rc == PCRE2_ERROR_MATCHLIMIT) {
            ok = step_fail(err,
                           "tokenizer: the pre-tokenizer's pattern is pathological on this "
                           "text of %zu bytes: it needs more than %s (refused)",
                           n,
                           rc == PCRE2_ERROR_MATCHLIMIT ? "10 million steps for one match"
                           : budget.out_of_time         ? "its budget of CPU time"
                                                        : "its budget of match steps");
            break;
        }
        if (rc < 0) {
            PCRE2_UCHAR why[160];
            pcre2_get_error_message(rc, why, sizeof why);
            ok = step_fail(err, "tokenizer: the pre-tokenizer's pattern failed: %s",
                           (const char *)why);
            break;
        }
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        size_t start = ov[0], end = ov[1];
        if (end == start) { /* an empty match: step over one character */
            if (start >= n) break;
            from = start + 1;
            while (from < n && ((unsigned char)s[from] & 0xC0) == 0x80) from++;
            continue;
        }
        bool gap = start > kept;
        switch (how) {
            case SPLIT_ISOLATED:
                ok = (!gap || pieces_push(out, s + kept, start - kept)) &&
                     pieces_push(out, s + start, end - start);
                kept = end;
                break;
            case SPLIT_REMOVED:
                ok = !gap || pieces_push(out, s + kept, start - kept);
                kept = end;
                break;
            case SPLIT_MERGED_WITH_PREVIOUS: /* the match ends the text before it */
                ok = pieces_push(out, s + kept, end - kept);
                kept = end;
                break;
            case SPLIT_MERGED_WITH_NEXT: /* the match starts the text after it */
                ok = !gap || pieces_push(out, s + kept, start - kept);
                kept = start;
                break;
        }
        from = end;
    }
    pcre2_match_data_free(md);
    pcre2_match_context_free(limits);
    if (ok && kept < n && !pieces_push(out, s + kept, n - kept)) ok = false;
    if (!ok && err->message[0] == '\0') step_fail(err, "tokenizer: out of memory");
    return ok;
}

/* ---- normalizers ---- */

static bool unicode_normalize(NormKind kind, TextBuffer *b, StepError *err) {
    utf8proc_option_t opt = UTF8PROC_STABLE;
    opt |= kind == NORM_NFC || kind == NORM_NFKC ? UTF8PROC_COMPOSE : UTF8PROC_DECOMPOSE;
    if (kind == NORM_NFKC || kind == NORM_NFKD) opt |= UTF8PROC_COMPAT;
    utf8proc_uint8_t *out = NULL;
    utf8proc_ssize_t n =
        utf8proc_map((const utf8proc_uint8_t *)b->s, (utf8proc_ssize_t)b->n, &out, opt);
    if (n < 0) return step_fail(err, "tokenizer: normalizing the text: %s", utf8proc_errmsg(n));
    free(b->s);
    *b = (TextBuffer){.s = (char *)out, .n = (size_t)n, .cap = (size_t)n + 1, .ok = true};
    return true;
}

/* Every `from` in b replaced by `to`; false when out of memory or past
 * limit bytes. */
static bool replace_all(TextBuffer *b, const char *from, const char *to, size_t limit) {
    TextBuffer out = TEXT_BUFFER_INIT;
    size_t m = strlen(from), at = 0;
    for (;;) {
        size_t hit = find_bytes(b->s, b->n, at, from, m);
        text_buffer_add(&out, b->s + at, hit - at);
        if (hit == b->n || out.n > limit) break;
        text_buffer_add(&out, to, strlen(to));
        at = hit + m;
    }
    text_buffer_add(&out, "", 0);
    free(b->s);
    *b = out;
    return out.ok;
}

/* How far the normalizers may grow a text: NFKC spells a few characters in
 * up to 18 (U+FDFA, 3 bytes, becomes 33), and Replace and Prepend add what
 * they are given; a chain of Replace a -> aaaaaaaa would grow "a" to 8^16
 * bytes. Past NORM_GROWTH times the text plus NORM_SLACK bytes, refused. */
#define NORM_GROWTH 16
#define NORM_SLACK  4096

static bool normalize(const HfTokenizer *hf, TextBuffer *b, StepError *err) {
    size_t input = b->n, limit = NORM_GROWTH * input + NORM_SLACK;
    for (int i = 0; i < hf->n_norm && b->ok && b->n <= limit; i++) {
        const NormStep *st = &hf->norm[i];
        switch (st->kind) {
            case NORM_PREPEND:
                if (b->n > 0) {
                    TextBuffer out = TEXT_BUFFER_INIT;
                    text_buffer_add(&out, st->to, strlen(st->to));
                    text_buffer_add(&out, b->s, b->n);
                    free(b->s);
                    *b = out;
                }
                break;
            case NORM_REPLACE:
                if (!replace_all(b, st->from, st->to, limit)) b->ok = false;
                break;
            default:
                if (b->n > 0 && !unicode_normalize(st->kind, b, err)) return false;
        }
    }
    if (b->ok && b->n > limit)
        return step_fail(err,
                         "tokenizer: the normalizers grow a text of %zu bytes past %d times its "
                         "length and %d bytes (refused)",
                         input, NORM_GROWTH, NORM_SLACK);
    return b->ok || step_fail(err, "tokenizer: out of memory");
}

/* ---- pre-tokenizers ---- */

/* Metaspace: spaces become the replacement, one goes in front when the
 * scheme asks (for `first`, only at the very start of the text), and with
 * split each replacement starts a new piece. */
static bool metaspace(const PreStep *st, const char *s, size_t n, bool at_start, PieceList *out) {
    TextBuffer b = TEXT_BUFFER_INIT;
    size_t rn = strlen(st->replacement);
    bool prepend = st->prepend == PREPEND_ALWAYS || (st->prepend == PREPEND_FIRST && at_start);
    if (prepend && !(n >= rn && memcmp(s, st->replacement, rn) == 0))
        text_buffer_add(&b, st->replacement, rn);
    text_buffer_add(&b, s, n);
    bool ok = b.ok && replace_all(&b, " ", st->replacement, SIZE_MAX);
    if (ok && !st->split_on_metaspace) {
        ok = b.n == 0 || pieces_push(out, b.s, b.n);
    } else if (ok) {
        size_t kept = 0;
        for (size_t hit; (hit = find_bytes(b.s, b.n, kept + 1, st->replacement, rn)) < b.n;) {
            ok = ok && pieces_push(out, b.s + kept, hit - kept);
            kept = hit;
        }
        ok = ok && (b.n == kept || pieces_push(out, b.s + kept, b.n - kept));
    }
    free(b.s);
    return ok;
}

/* ByteLevel: an optional leading space, GPT-2's split when it has a
 * pattern, then every byte spelled in the byte-level alphabet. */
static bool byte_level(const HfTokenizer *hf, const PreStep *st, const char *s, size_t n,
                       PieceList *out, StepError *err) {
    TextBuffer b = TEXT_BUFFER_INIT;
    if (st->add_prefix_space && (n == 0 || s[0] != ' ')) text_buffer_add(&b, " ", 1);
    text_buffer_add(&b, s, n);
    PieceList parts = {0};
    bool ok = b.ok;
    if (ok && st->regex != NULL)
        ok = split_regex(st->regex, hf->match_context, SPLIT_ISOLATED, b.s, b.n, &parts, err);
    else if (ok)
        ok = b.n == 0 || pieces_push(&parts, b.s, b.n);
    for (int i = 0; ok && i < parts.n; i++) {
        TextBuffer mapped = TEXT_BUFFER_INIT;
        for (size_t k = 0; k < parts.len[i]; k++) {
            char c[2];
            text_buffer_add(&mapped, c,
                            (size_t)byte_level_char((unsigned char)parts.text[i][k], c));
        }
        ok = mapped.ok && pieces_push(out, mapped.s, mapped.n);
        free(mapped.s);
    }
    free(b.s);
    pieces_free(&parts);
    return ok || err->message[0] != '\0' || step_fail(err, "tokenizer: out of memory");
}

static bool pre_tokenize_step(const HfTokenizer *hf, const PreStep *st, const PieceList *in,
                              bool at_start, PieceList *out, StepError *err) {
    for (int i = 0; i < in->n; i++) {
        const char *s = in->text[i];
        size_t n = in->len[i];
        bool ok = st->kind == PRE_SPLIT
                      ? split_regex(st->regex, hf->match_context, st->behavior, s, n, out, err)
                  : st->kind == PRE_BYTE_LEVEL ? byte_level(hf, st, s, n, out, err)
                                               : metaspace(st, s, n, at_start && i == 0, out);
        if (!ok)
            return err->message[0] != '\0' ? false : step_fail(err, "tokenizer: out of memory");
    }
    return true;
}

/* One stretch of text between added tokens: normalised, pre-tokenized, and
 * each piece handed to fn. */
static bool encode_stretch(const HfTokenizer *hf, const char *s, size_t n, bool at_start,
                           PieceFn fn, void *ctx, StepError *err) {
    TextBuffer b = TEXT_BUFFER_INIT;
    text_buffer_add(&b, s, n);
    PieceList cur = {0};
    bool ok = normalize(hf, &b, err) && (b.n == 0 || pieces_push(&cur, b.s, b.n));
    free(b.s);
    for (int i = 0; ok && i < hf->n_pre; i++) {
        PieceList next = {0};
        ok = pre_tokenize_step(hf, &hf->pre[i], &cur, at_start, &next, err);
        pieces_free(&cur);
        cur = next;
    }
    for (int i = 0; ok && i < cur.n; i++) ok = fn(ctx, cur.text[i], cur.len[i], -1);
    pieces_free(&cur);
    return ok;
}

static bool is_space(char c) {
    return c == ' ' || (c >= '\t' && c <= '\r');
}
static bool is_word_byte(char c) {
    unsigned char u = (unsigned char)c;
    return u >= 0x80 || (u >= '0' && u <= '9') || (u >= 'a' && u <= 'z') ||
           (u >= 'A' && u <= 'Z') || u == '_';
}

/* The added token that starts at s[i], the longest first (of equal ones,
 * the lowest id), or NULL. */
static const AddedToken *added_at(const HfTokenizer *hf, const char *s, size_t n, size_t i) {
    int32_t found[ADDED_TOKEN_MAX_BYTES];
    int count = added_trie_prefixes(&hf->added_trie, s + i, n - i, found);
    for (int f = count - 1; f >= 0; f--) {
        const AddedToken *first = &hf->added[found[f]];
        for (const AddedToken *a = first; a < hf->added + hf->n_added && a->len == first->len &&
                                          memcmp(a->content, first->content, a->len) == 0;
             a++) {
            if (a->single_word && ((i > 0 && is_word_byte(s[i - 1])) ||
                                   (i + a->len < n && is_word_byte(s[i + a->len]))))
                continue;
            return a;
        }
    }
    return NULL;
}

bool hf_pretokenize(const HfTokenizer *hf, const char *text, size_t n, PieceFn fn, void *ctx,
                    StepError *err) {
    err->message[0] = '\0';
    size_t stretch = 0; /* where the text since the last added token starts */
    for (size_t i = 0; i < n; i++) {
        const AddedToken *a = hf->n_added > 0 ? added_at(hf, text, n, i) : NULL;
        if (a == NULL) continue;
        size_t start = i, end = i + a->len;
        if (a->lstrip)
            while (start > stretch && is_space(text[start - 1])) start--;
        if (a->rstrip)
            while (end < n && is_space(text[end])) end++;
        if (start > stretch &&
            !encode_stretch(hf, text + stretch, start - stretch, stretch == 0, fn, ctx, err))
            return false;
        if (!fn(ctx, a->content, a->len, a->id)) return false;
        stretch = end;
        i = end - 1;
    }
    return stretch >= n ||
           encode_stretch(hf, text + stretch, n - stretch, stretch == 0, fn, ctx, err);
}
