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

#include "ref/text/hf_tokenizer.h"
#include "ref/text/tokenizer.h"

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

#endif
