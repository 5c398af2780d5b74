/* pretokenize.h: the text side of a tokenizer.json, before any merge:
 * added tokens found in the raw text, then, between them, the normalizers
 * and the pre-tokenizers, which cut the text into the pieces ("words") BPE
 * merges within. */
#ifndef STEPWISE_PRETOKENIZE_H
#define STEPWISE_PRETOKENIZE_H

#include <stddef.h>

#include "ref/util/error.h"
#include "ref/text/hf_tokenizer.h"

/* Called for each piece in order: an added token (added_id >= 0, piece its
 * text) or a pre-tokenized word (added_id -1). Returns false to stop. */
typedef bool (*PieceFn)(void *ctx, const char *piece, size_t len, int added_id);

/* Cut text[0..n) (valid UTF-8) into pieces for fn. False on a failure
 * (err says which) or when fn stops (err as fn left it). */
bool hf_pretokenize(const HfTokenizer *hf, const char *text, size_t n, PieceFn fn, void *ctx,
                    StepError *err);

/* Compile a Split pattern: a regex (PCRE2 with Unicode properties, as the
 * tokenizers library's Oniguruma reads it) or, when literal, a plain string. */
bool hf_regex_compile(const char *pattern, bool literal, void **code, StepError *err);
void hf_regex_free(void *code);

/* A match context that bounds backtracking, so that a hostile pattern
 * fails with an error instead of running for hours. */
void *hf_match_context_create(void);
void hf_match_context_free(void *ctx);

/* GPT-2's byte-level alphabet: each byte as one printable character (the
 * printable bytes are themselves, the others 256 + their order). Writes its
 * UTF-8 to out and returns the length (1 or 2). */
int byte_level_char(unsigned char byte, char out[2]);

/* The byte a byte-level code point stands for, or -1. */
int byte_level_byte(unsigned int code_point);

/* Whether s[0..n) is valid UTF-8 (no surrogates, no overlong forms). */
bool utf8_valid(const char *s, size_t n);

#endif
