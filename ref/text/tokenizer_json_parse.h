/* tokenizer_json_parse.h: what the two halves of the tokenizer.json reader
 * share: tokenizer_json.c reads the model, added tokens, normalizers and
 * pre-tokenizers; tokenizer_json_decode.c the decoder, BOS and EOS, and
 * tokenizer_config.json, and works out what each id decodes to. Internal to
 * the reader. */
#ifndef STEPWISE_TOKENIZER_JSON_PARSE_H
#define STEPWISE_TOKENIZER_JSON_PARSE_H

#include <cjson/cJSON.h>

#include "ref/text/hf_tokenizer.h"
#include "ref/text/tokenizer.h"

/* The reader's state besides the Tokenizer it fills: names for errors, the
 * parts, and the decoder's settings until each id's bytes are worked out. */
typedef struct {
    const char *what;
    StepError *err;
    HfTokenizer *hf;
    bool decode_byte_level, decode_byte_fallback;
    const char *decode_replace_from, *decode_replace_to;
} Parse;

/* "WHAT: where: why" into p->err; false. */
bool fail_json(Parse *p, const char *where, const char *why);

/* *dst = strdup(src); false when out of memory. */
bool strdup_into(char **dst, const char *src);

/* obj[key] as a bool into *out when present and not null; false (err) for
 * another type. */
bool optional_bool(Parse *p, const cJSON *obj, const char *key, bool *out);

/* A {"String": s} or {"Regex": r} pattern's text; *literal says which. */
const char *pattern_of(const cJSON *step, bool *literal);

/* One step of a normalizer, pre-tokenizer or decoder, read into p. */
typedef bool (*StepParser)(Parse *p, const cJSON *node, int depth);

/* The type of step `node` (what: its field, for errors). A Sequence (its
 * members under list_key) is walked here, each member through parse; then,
 * as for a null or absent node, *type is NULL. Nesting stops at depth 4. */
bool parse_step_type(Parse *p, const cJSON *node, const char *what, const char *list_key,
                     StepParser parse, int depth, const char **type);

/* The decoder (into p's decode_* fields and hf->strip_leading_space). */
bool parse_decoder(Parse *p, const cJSON *d, int depth);

/* A TemplateProcessing post-processor that puts a special token first: BOS. */
void parse_post_processor(Parse *p, const cJSON *pp, Tokenizer *t, int depth);

/* Every id's bytes (hf->bytes) and display text (t->pieces), byte pieces. */
bool build_pieces(Parse *p, Tokenizer *t);

/* tokenizer_config.json: BOS, EOS, add_bos_token, the chat template. */
bool parse_config(Parse *p, Tokenizer *t, const char *config_text);

#endif
