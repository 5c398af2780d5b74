/* tokenizer.h: text <-> token ids, the way sentencepiece's BPE does it.
 *
 * Encoding: collapse runs of spaces (unless the vocabulary keeps them), add a
 * dummy-prefix space, split into UTF-8 characters, then repeatedly merge the
 * adjacent pair whose concatenation is the highest-scoring vocabulary piece
 * (leftmost on ties). A character left unknown falls back to its bytes
 * (<0xXX> pieces), or to <unk> when the vocabulary has no byte pieces. */
#ifndef STEPWISE_TOKENIZER_H
#define STEPWISE_TOKENIZER_H

#include <stdbool.h>
#include <stddef.h>

#include "ref/util/error.h"

/* The ids of llama2.c's vocabularies; a tokenizer.json names its own. */
enum { TOKEN_UNK = 0, TOKEN_BOS = 1, TOKEN_EOS = 2 };

struct HfTokenizer; /* tokenizer_json.h */

typedef struct {
    int vocab_size;
    char **pieces;   /* [vocab_size] NUL-terminated piece text; spaces as ' ' */
    float *scores;   /* [vocab_size] merge priority: higher merges first */
    int *sorted_ids; /* [n_mergeable] ids of normal pieces, sorted by text */
    int n_mergeable;
    int byte_ids[256]; /* id of the piece <0xXX> for each byte, or -1 */
    /* sentencepiece's remove_extra_whitespaces: strip leading and trailing
     * spaces and collapse runs. True unless the vocabulary has a piece of two
     * or more spaces, which a model trained that way could never have learnt
     * (Llama 2's tokenizer has one; tok512 has none). */
    bool collapse_spaces;
    int max_piece_bytes;        /* the longest piece: no token covers more text */
    int unk_id, bos_id, eos_id; /* -1: the vocabulary has none */
    bool add_bos;               /* whether an encoded prompt starts with BOS */
    /* A tokenizer.json's normalizers, pre-tokenizers, merges and added
     * tokens (owned); NULL for a sentencepiece vocabulary. Its pieces[] are
     * what each id decodes to, shown as text. */
    struct HfTokenizer *hf;
} Tokenizer;

/* The longest text the encoder takes (16 MiB): far beyond any context. */
#define TOKENIZER_MAX_TEXT_BYTES (16 << 20)
/* The longest piece whose merges --trace-bpe traces, in symbols. */
#define TOKENIZER_TRACE_MAX_SYMBOLS 4096

/* Build from parallel arrays (copied). Ids 0, 1, 2 are <unk>, BOS and EOS;
 * pieces spelled <0xXX> are byte pieces; neither kind is ever merged into. */
bool tokenizer_init(Tokenizer *t, int vocab_size, const char *const *pieces, const float *scores,
                    StepError *err);

/* Read llama2.c's tokenizer.bin: int32 max_token_length, then per token a
 * float32 score, an int32 byte length and the bytes, to the end of the file.
 * With vocab_size > 0 the file must hold exactly that many tokens (the
 * model's vocabulary); 0 takes whatever it holds. */
bool tokenizer_load_bin(Tokenizer *t, const char *path, int vocab_size, StepError *err);

/* For the loaders: a tokenizer of vocab_size empty pieces (scores 0, no byte
 * pieces, no BOS or EOS) to fill in. */
bool tokenizer_init_empty(Tokenizer *t, int vocab_size, StepError *err);

/* For the loaders: sort t->hf's vocabulary for tokenizer_find_piece. */
bool tokenizer_index_pieces(Tokenizer *t);

/* The id of the mergeable piece spelled s[0..n) (for a tokenizer.json, any
 * token of its vocabulary as the file spells it), or -1. */
int tokenizer_find_piece(const Tokenizer *t, const char *s, size_t n);

/* The byte a piece spelled exactly <0xXX> stands for, or -1. */
int tokenizer_byte_of_piece(const char *piece);

/* Encode text into ids, BOS first when add_bos and the tokenizer adds one. *out is malloc'd (caller
 * frees); *n_out its length. */
bool tokenizer_encode(const Tokenizer *t, const char *text, bool add_bos, int **out, int *n_out,
                      StepError *err);

/* Whether text could encode into max_tokens tokens at all, checked in
 * O(n) before the encoder runs: no token covers more than max_piece_bytes
 * of the normalised text.
 * False means it cannot fit; true means it may. */
bool tokenizer_may_fit(const Tokenizer *t, const char *text, int max_tokens);

/* One step of the byte-pair merge loop, for watching it work. */
typedef struct {
    int step;                 /* 1, 2, ... */
    int id;                   /* the piece the pair became */
    float score;              /* its score: the best of all adjacent pairs */
    const char *left, *right; /* the pair (not NUL-terminated) */
    int left_len, right_len;
    int n_symbols;              /* the sequence after the merge: */
    const char *const *symbols; /* [n_symbols] texts (not NUL-terminated) */
    const int *symbol_lens;     /* [n_symbols] their lengths */
} BpeMerge;

typedef struct {
    void *ctx;
    void (*on_merge)(void *ctx, const BpeMerge *merge);
    /* A tokenizer.json's pre-tokenizer cut the text: each piece in order,
     * spelled as the vocabulary spells it, with the added token's id or -1
     * (may be NULL). */
    void (*on_piece)(void *ctx, const char *piece, int len, int added_id);
} BpeObserver;

/* tokenizer_encode, reporting every merge to obs (may be NULL). */
bool tokenizer_encode_observed(const Tokenizer *t, const char *text, bool add_bos,
                               const BpeObserver *obs, int **out, int *n_out, StepError *err);

/* The bytes `token` stands for when it follows `prev`: a byte piece is its raw
 * byte, a byte-level token its bytes, and the leading space of a piece right
 * after BOS is dropped (it is the dummy prefix) where the vocabulary has one. Writes into buf (at
 * least 8 bytes) for byte pieces. *len receives the length (byte pieces may be NUL). */
const char *tokenizer_decode(const Tokenizer *t, int prev, int token, char buf[8], int *len);

/* The text of tokens[0..n), each decoded after its predecessor (`prev` for
 * the first). BOS and EOS add nothing. Returns a malloc'd string (NULL when
 * out of memory); its length is strlen unless a byte piece decoded to NUL. */
char *tokenizer_decode_tokens(const Tokenizer *t, const int *tokens, int n, int prev);

void tokenizer_free(Tokenizer *t);

#endif
