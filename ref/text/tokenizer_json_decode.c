/* tokenizer_json_decode.c: the decoder of a tokenizer.json, what each id
 * decodes to and how it is shown, BOS and EOS, and tokenizer_config.json. */
#include "ref/text/tokenizer_json_parse.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ref/util/json_util.h"
#include "ref/text/pretokenize.h"

bool parse_decoder(Parse *p, const cJSON *d, int depth) {
    const char *type;
    if (!parse_step_type(p, d, "decoder", "decoders", parse_decoder, depth, &type)) return false;
    if (type == NULL) return true; /* none, or a Sequence already walked */
    if (strcmp(type, "ByteLevel") == 0) {
        p->decode_byte_level = true;
    } else if (strcmp(type, "ByteFallback") == 0) {
        p->decode_byte_fallback = true;
    } else if (strcmp(type, "Replace") == 0) {
        bool literal;
        p->decode_replace_from = pattern_of(d, &literal);
        p->decode_replace_to = json_string_field(d, "content");
        if (p->decode_replace_from == NULL || p->decode_replace_to == NULL || !literal ||
            p->decode_replace_from[0] == '\0')
            return fail_json(p, "decoder Replace", "needs a String pattern and a content");
    } else if (strcmp(type, "Strip") == 0) {
        int start = 0;
        const char *content = json_string_field(d, "content");
        if (!json_int_field(d, "start", 0, 1 << 20, &start))
            return fail_json(p, "decoder Strip", "start is not a whole number");
        if (start > 0 && content != NULL && strcmp(content, " ") == 0)
            p->hf->strip_leading_space = true;
    } else if (strcmp(type, "Metaspace") == 0) {
        const char *rep = json_string_field(d, "replacement");
        const char *scheme = json_string_field(d, "prepend_scheme");
        if (rep == NULL || rep[0] == '\0')
            return fail_json(p, "decoder Metaspace", "needs a replacement");
        p->decode_replace_from = rep, p->decode_replace_to = " ";
        p->hf->strip_leading_space = scheme == NULL || strcmp(scheme, "never") != 0;
    } else if (strcmp(type, "Fuse") != 0) {
        return step_fail(p->err,
                         "%s: decoder %.40s is not supported (ByteLevel, ByteFallback, "
                         "Replace, Strip, Fuse, Metaspace, Sequence)",
                         p->what, type);
    }
    return true;
}

/* TemplateProcessing that puts a special token first: that is BOS. */
void parse_post_processor(Parse *p, const cJSON *pp, Tokenizer *t, int depth) {
    const char *type = json_string_field(pp, "type");
    if (type == NULL || depth > 4) return;
    if (strcmp(type, "Sequence") == 0) {
        const cJSON *list = cJSON_GetObjectItemCaseSensitive(pp, "processors");
        for (const cJSON *c = cJSON_IsArray(list) ? list->child : NULL; c != NULL; c = c->next)
            parse_post_processor(p, c, t, depth + 1);
        return;
    }
    if (strcmp(type, "TemplateProcessing") != 0) return;
    const cJSON *single = cJSON_GetObjectItemCaseSensitive(pp, "single");
    const cJSON *first = cJSON_IsArray(single) ? single->child : NULL;
    const cJSON *special = cJSON_GetObjectItemCaseSensitive(first, "SpecialToken");
    const char *name = json_string_field(special, "id");
    if (name == NULL) return;
    int id = tokenizer_find_piece(t, name, strlen(name));
    for (int k = 0; k < p->hf->n_added; k++)
        if (strcmp(p->hf->added[k].content, name) == 0) id = p->hf->added[k].id;
    if (id >= 0) t->bos_id = id, t->add_bos = true;
}

/* ---- what each id decodes to, and how it is shown ---- */

/* The bytes of vocabulary text v under the decoder: byte-level characters
 * back to bytes; or <0xXX> to its byte and the Replace applied. */
static bool decode_vocab(const Parse *p, const char *v, char **out, int *len) {
    size_t n = strlen(v);
    char *b = malloc(n + 1);
    if (b == NULL) return false;
    size_t o = 0;
    int byte = -1;
    if (p->decode_byte_level) {
        for (size_t i = 0; i < n;) {
            unsigned char c = (unsigned char)v[i];
            if ((c >> 5) == 0x6 && i + 1 < n) {
                int back = byte_level_byte(((c & 0x1Fu) << 6) | ((unsigned char)v[i + 1] & 0x3Fu));
                if (back >= 0) {
                    b[o++] = (char)back, i += 2;
                    continue;
                }
            }
            b[o++] = v[i++];
        }
    } else if (p->decode_byte_fallback && (byte = tokenizer_byte_of_piece(v)) >= 0) {
        b[o++] = (char)byte;
    } else {
        const char *from = p->decode_replace_from, *to = p->decode_replace_to;
        size_t nf = from != NULL ? strlen(from) : 0, nt = to != NULL ? strlen(to) : 0;
        for (size_t i = 0; i < n;) {
            if (nf > 0 && nt <= nf && strncmp(v + i, from, nf) == 0) {
                memcpy(b + o, to, nt), o += nt, i += nf;
                continue;
            }
            b[o++] = v[i++];
        }
    }
    b[o] = '\0';
    *out = b, *len = (int)o;
    return true;
}

/* bytes[0..n) spelled <0xXX> each: a piece that is no text (a file's own
 * invalid UTF-8) still prints. Returns a malloc'd string. */
static char *spell_bytes(const char *bytes, size_t n) {
    char *out = malloc(6 * n + 1);
    if (out == NULL) return NULL;
    for (size_t i = 0; i < n; i++) snprintf(out + 6 * i, 7, "<0x%02X>", (unsigned char)bytes[i]);
    out[6 * n] = '\0';
    return out;
}

/* Every id's bytes and display text: the bytes when they are whole UTF-8
 * with no NUL, else the vocabulary's own spelling (a lone byte of a
 * character, say), so that every piece prints and is valid JSON. */
bool build_pieces(Parse *p, Tokenizer *t) {
    HfTokenizer *hf = p->hf;
    hf->bytes = calloc((size_t)hf->n_ids, sizeof *hf->bytes);
    hf->byte_lens = calloc((size_t)hf->n_ids, sizeof *hf->byte_lens);
    if (hf->bytes == NULL || hf->byte_lens == NULL) return fail_json(p, "tokens", "out of memory");
    for (int k = 0; k < hf->n_added; k++) { /* added tokens decode to their text */
        int id = hf->added[k].id;
        free(hf->bytes[id]);
        if (!strdup_into(&hf->bytes[id], hf->added[k].content))
            return fail_json(p, "tokens", "out of memory");
        hf->byte_lens[id] = (int)hf->added[k].len;
    }
    for (int id = 0; id < hf->n_ids; id++) {
        if (hf->bytes[id] == NULL &&
            !(hf->vocab[id] != NULL
                  ? decode_vocab(p, hf->vocab[id], &hf->bytes[id], &hf->byte_lens[id])
                  : strdup_into(&hf->bytes[id], "")))
            return fail_json(p, "tokens", "out of memory");
        const char *shown = hf->bytes[id];
        int len = hf->byte_lens[id];
        if ((int)strlen(shown) != len || !utf8_valid(shown, (size_t)len) ||
            (p->decode_byte_fallback &&
             tokenizer_byte_of_piece(hf->vocab[id] ? hf->vocab[id] : "") >= 0))
            shown = hf->vocab[id];
        free(t->pieces[id]);
        t->pieces[id] = shown != NULL && utf8_valid(shown, strlen(shown))
                            ? strdup(shown)
                            : spell_bytes(hf->bytes[id], (size_t)len);
        if (t->pieces[id] == NULL) return fail_json(p, "tokens", "out of memory");
        if (len > t->max_piece_bytes) t->max_piece_bytes = len;
        int byte = hf->vocab[id] != NULL ? tokenizer_byte_of_piece(hf->vocab[id]) : -1;
        if (byte >= 0 && t->byte_ids[byte] < 0) t->byte_ids[byte] = id;
    }
    return true;
}

/* ---- tokenizer_config.json ---- */

/* The id of a token named by text: an added token's, else the vocabulary's. */
static int named_token(const Tokenizer *t, const char *name) {
    const HfTokenizer *hf = t->hf;
    for (int k = 0; k < hf->n_added; k++)
        if (strcmp(hf->added[k].content, name) == 0) return hf->added[k].id;
    return tokenizer_find_piece(t, name, strlen(name));
}

/* bos_token / eos_token: a string, {"content": string}, or null. Returns
 * false (with err) for a name that is no token. */
static bool config_token(Parse *p, const Tokenizer *t, const cJSON *config, const char *key,
                         int *id) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(config, key);
    if (v == NULL) return true;
    if (cJSON_IsNull(v)) return *id = -1, true;
    const char *name = cJSON_IsString(v) ? v->valuestring : json_string_field(v, "content");
    if (name == NULL)
        return step_fail(p->err, "%s: tokenizer_config.json: %s is not a string", p->what, key);
    *id = named_token(t, name);
    if (*id < 0)
        return step_fail(p->err, "%s: tokenizer_config.json: %s '%.40s' is not a token", p->what,
                         key, name);
    return true;
}

bool parse_config(Parse *p, Tokenizer *t, const char *config_text) {
    cJSON *config = json_parse_whole(config_text);
    if (config == NULL || !cJSON_IsObject(config)) {
        cJSON_Delete(config);
        return step_fail(p->err, "%s: tokenizer_config.json is not a JSON object", p->what);
    }
    bool ok = config_token(p, t, config, "bos_token", &t->bos_id) &&
              config_token(p, t, config, "eos_token", &t->eos_id) &&
              optional_bool(p, config, "add_bos_token", &t->add_bos);
    const cJSON *tmpl = cJSON_GetObjectItemCaseSensitive(config, "chat_template");
    if (cJSON_IsArray(tmpl)) { /* [{"name": "default", "template": ...}, ...] */
        const cJSON *chosen = NULL;
        for (const cJSON *c = tmpl->child; c != NULL; c = c->next) {
            const char *name = json_string_field(c, "name");
            if (name != NULL && strcmp(name, "default") == 0) chosen = c;
        }
        tmpl = cJSON_GetObjectItemCaseSensitive(chosen, "template");
    }
    if (ok && cJSON_IsString(tmpl) && !strdup_into(&p->hf->chat_template, tmpl->valuestring))
        ok = fail_json(p, "tokenizer_config.json", "out of memory");
    cJSON_Delete(config);
    return ok;
}
