/* hf_tokenizer.h: the parts of a tokenizer.json as the encoder uses them
 * (tokenizer_json.c fills them in, pretokenize.c and tokenizer.c read them):
 * normalizer and pre-tokenizer steps, added tokens, merge rules, and what
 * each id decodes to. */
#ifndef STEPWISE_HF_TOKENIZER_H
#define STEPWISE_HF_TOKENIZER_H

#include <stdbool.h>
#include <stddef.h>

#include "ref/text/added_trie.h"

typedef enum { NORM_NFC, NORM_NFD, NORM_NFKC, NORM_NFKD, NORM_PREPEND, NORM_REPLACE } NormKind;

typedef struct {
    NormKind kind;
    char *from, *to; /* Prepend: to; Replace: every `from` becomes `to` */
} NormStep;

typedef enum { PRE_SPLIT, PRE_BYTE_LEVEL, PRE_METASPACE } PreKind;

/* How Split keeps what its pattern matched: the matches alone, dropped, or
 * joined to the text before or after them. */
typedef enum {
    SPLIT_ISOLATED,
    SPLIT_REMOVED,
    SPLIT_MERGED_WITH_PREVIOUS,
    SPLIT_MERGED_WITH_NEXT
} SplitBehavior;

typedef enum { PREPEND_ALWAYS, PREPEND_FIRST, PREPEND_NEVER } PrependScheme;

typedef struct {
    PreKind kind;
    void *regex;   /* pcre2_code: Split's pattern; ByteLevel's GPT-2 pattern when use_regex */
    char *pattern; /* Split: the Regex pattern as written (NULL: a String or Digits) */
    SplitBehavior behavior;
    bool add_prefix_space;   /* ByteLevel: a space before a piece that lacks one */
    char *replacement;       /* Metaspace: what a space becomes ("▁") */
    PrependScheme prepend;   /* Metaspace: when to put one in front */
    bool split_on_metaspace; /* Metaspace: each "▁" starts a new piece */
} PreStep;

typedef struct {
    char *content;
    size_t len;
    int id;
    bool lstrip, rstrip, single_word, special;
} AddedToken;

/* A merge rule: the adjacent pair (left, right) becomes `result`; lower
 * ranks merge first. Sorted by (left, right) for lookup. */
typedef struct {
    int left, right, result, rank;
} MergeRule;

typedef struct HfTokenizer {
    char **vocab; /* [n_ids] a token as tokenizer.json spells it ("Ġthe"), NULL for none */
    int n_ids;
    MergeRule *merges; /* [n_merges] */
    int n_merges;
    AddedToken *added; /* [n_added] sorted by content (added_trie_compare), then id */
    int n_added;
    AddedTrie added_trie; /* over added[].content, numbered as added is */
    NormStep *norm;
    int n_norm;
    PreStep *pre;
    int n_pre;
    void *match_context;                         /* pcre2_match_context: the backtracking limits */
    bool byte_fallback, fuse_unk, ignore_merges; /* unk: the Tokenizer's unk_id (-1: dropped) */
    /* What each id decodes to: bytes, and whether a leading space is the
     * sentencepiece dummy prefix to drop after BOS. */
    char **bytes; /* [n_ids] */
    int *byte_lens;
    bool strip_leading_space;
    char *chat_template; /* tokenizer_config.json's template text, or NULL */
} HfTokenizer;

/* The merge rule for the pair (left, right), or NULL. */
const MergeRule *hf_merge_find(const HfTokenizer *hf, int left, int right);

/* Free what hf holds (not hf itself). */
void hf_tokenizer_free(HfTokenizer *hf);

#endif
