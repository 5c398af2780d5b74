/* gguf_tokenizer.h: the tokenizer a GGUF file embeds (tokenizer.ggml.*).
 *
 * "llama": SentencePiece-style tokens and scores (spaces as U+2581), read
 * as llama2.c's tokenizer.bin is. "gpt2": byte-level BPE, tokens and merges,
 * with the split pattern tokenizer.ggml.pre names (llama-bpe: Llama 3's;
 * qwen2: Qwen's, with NFC; gpt-2/default: GPT-2's), control and
 * user-defined tokens matched whole as added tokens: the same pipeline as a
 * tokenizer.json (tokenizer_json.h), built from the metadata. BOS, EOS and
 * add_bos_token come from the metadata, and for gpt2 the chat template
 * (tokenizer.chat_template), recognised as a tokenizer_config.json's is. */
#ifndef STEPWISE_GGUF_TOKENIZER_H
#define STEPWISE_GGUF_TOKENIZER_H

#include "ref/formats/gguf.h"
#include "ref/formats/gguf_write.h"
#include "ref/text/tokenizer.h"

/* The tokenizer of f for a model of vocab tokens (the tokenizer may have
 * fewer: the embedding's padding). */
bool gguf_read_tokenizer(const GgufFile *f, Tokenizer *tok, int vocab, StepError *err);

/* The tokenizer of the GGUF file at path alone, weights or none: a model's,
 * or a vocabulary-only file's (llama.cpp's ggml-vocab-*.gguf, which its own
 * tokenizer tests use). vocab: the model's vocabulary it must fit, or 0 for
 * the file's own: its embedding's rows, or with no embedding (a
 * vocabulary-only file) its count of tokens. */
bool gguf_tokenizer_load(Tokenizer *tok, const char *path, int vocab, StepError *err);

/* The metadata that gguf_read_tokenizer reads back as tok: a
 * sentencepiece vocabulary (tokenizer.bin) as "llama" with token types
 * (unknown, control for BOS and EOS, byte, normal); a tokenizer.json as
 * "gpt2" when its pipeline is one that tokenizer.ggml.pre names (anything
 * else is refused, naming what it has), with its merges by rank, its added
 * tokens as control (special) or user-defined, ids no token holds as
 * unused "[PADn]", and its chat template. */
bool gguf_write_tokenizer(GgufMetadata *meta, const Tokenizer *tok, StepError *err);

#endif
