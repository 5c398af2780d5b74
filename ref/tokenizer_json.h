/* tokenizer_json.h: Hugging Face's tokenizer.json (and tokenizer_config.json
 * beside it) read into a Tokenizer.
 *
 * The BPE model in both of its common forms:
 * - byte-level (Llama 3, Qwen2/3, GPT-2): a Split pre-tokenizer with its
 *   regex, then ByteLevel (every byte spelled as one printable character),
 *   then merges by rank;
 * - SentencePiece-style (Llama 2, Mistral): Prepend/Replace normalizers or
 *   a Metaspace pre-tokenizer turn spaces into "▁", merges by rank, and
 *   byte_fallback spells an unknown character as <0xXX> tokens.
 * Normalizers NFC/NFD/NFKC/NFKD (utf8proc), Prepend, Replace (a string);
 * pre-tokenizers Split (a PCRE2 regex or string), ByteLevel, Digits,
 * Metaspace;
 * added tokens matched in the raw text first, as Hugging Face does. Anything
 * else is refused by name. The encoder itself is tokenizer.c's merge loop,
 * with pair ranks where sentencepiece has piece scores. */
#ifndef STEPWISE_TOKENIZER_JSON_H
#define STEPWISE_TOKENIZER_JSON_H

#include <stddef.h>

#include "tokenizer.h"

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
    void *regex; /* pcre2_code: Split's pattern; ByteLevel's GPT-2 pattern when use_regex */
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
    AddedToken *added; /* [n_added] sorted by first byte, longest first */
    int n_added;
    int added_first[257]; /* added tokens starting with byte b: [added_first[b], added_first[b+1])
                           */
    NormStep *norm;
    int n_norm;
    PreStep *pre;
    int n_pre;
    void *match_context; /* pcre2_match_context: the backtracking limits */
    bool byte_fallback, fuse_unk, ignore_merges;
    int unk_id; /* -1: an unknown character is dropped, as Hugging Face does */
    /* What each id decodes to: bytes, and whether a leading space is the
     * sentencepiece dummy prefix to drop after BOS. */
    char **bytes; /* [n_ids] */
    int *byte_lens;
    bool strip_leading_space;
    char *chat_template; /* tokenizer_config.json's template text, or NULL */
} HfTokenizer;

/* The largest tokenizer.json read (64 MiB: Qwen's is 11 MiB). */
#define TOKENIZER_JSON_MAX_BYTES (64 << 20)

/* Read `path` (a tokenizer.json, or a directory holding one) and the
 * tokenizer_config.json beside it, if any: BOS, EOS, whether BOS is added,
 * the chat template. With vocab_size > 0 every id must be below it (the
 * model's embedding may be larger: the rest are padding no text encodes to). */
bool tokenizer_load_json(Tokenizer *t, const char *path, int vocab_size, StepError *err);

/* The same from texts (config_text may be NULL); `what` names them in errors.
 * For the fuzz target and tests. */
bool tokenizer_parse_json(Tokenizer *t, const char *json_text, const char *config_text,
                          const char *what, int vocab_size, StepError *err);

/* Whether dir has a tokenizer.json. */
bool tokenizer_json_in_dir(const char *dir);

void hf_tokenizer_free(HfTokenizer *hf);

/* The merge rule for the pair (left, right), or NULL. */
const MergeRule *hf_merge_find(const HfTokenizer *hf, int left, int right);

#endif
