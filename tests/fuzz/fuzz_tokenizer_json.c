/* fuzz_tokenizer_json.c: a tokenizer.json (and tokenizer_config.json) read,
 * then a text encoded with it (every piece and merge watched, as
 * --trace-bpe does), decoded back, and a chat assembled with it.
 * Input: a 2-byte length and the text, a 2-byte length and the config
 * (empty: none), then the tokenizer.json. */
#include "tests/fuzz/fuzz_file.h"

#include "ref/text/chat.h"
#include "ref/text/tokenizer_json.h"

static void count_merge(void *ctx, const BpeMerge *m) {
    *(long *)ctx += m->n_symbols;
}
static void count_piece(void *ctx, const char *piece, int len, int added_id) {
    *(long *)ctx += len + (piece[0] != '\0') + (added_id >= 0);
}

static char *text_of(const uint8_t *data, size_t n) {
    char *s = malloc(n + 1);
    if (s == NULL) abort();
    memcpy(s, data, n);
    s[n] = '\0';
    return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const uint8_t *text_bytes, *rest, *config_bytes, *json_bytes;
    size_t n_text, n_rest, n_config, n_json;
    fuzz_split(data, size, &text_bytes, &n_text, &rest, &n_rest);
    fuzz_split(rest, n_rest, &config_bytes, &n_config, &json_bytes, &n_json);
    char *text = text_of(text_bytes, n_text), *config = text_of(config_bytes, n_config);
    char *json = text_of(json_bytes, n_json);
    Tokenizer t;
    StepError err;
    if (tokenizer_parse_json(&t, json, n_config > 0 ? config : NULL, "fuzz", 0, &err)) {
        long seen = 0;
        BpeObserver obs = {&seen, count_merge, count_piece};
        int *ids = NULL, n = 0;
        if (tokenizer_encode_observed(&t, text, true, &obs, &ids, &n, &err)) {
            free(tokenizer_decode_tokens(&t, ids, n, -1));
            free(ids);
        }
        ChatMessage m = {.role = "user", .content = text};
        const char *notes[] = {text};
        ChatDocument doc = {.id = "doc-1", .text = text};
        ChatInput in = {.system = n_text % 3 ? text : NULL,
                        .memory = notes,
                        .n_memory = n_text % 2,
                        .documents = &doc,
                        .n_documents = n_text % 5 == 0,
                        .messages = &m,
                        .n_messages = 1};
        ChatPrompt p;
        if (chat_assemble(&t, (ChatTemplate)(n_text % 4), &in, &p, &err)) chat_prompt_free(&p);
        in.system = NULL, in.n_messages = 0;
        if (chat_assemble_plain(&t, &in, text, &p, &err)) chat_prompt_free(&p);
        tokenizer_free(&t);
    }
    free(text), free(config), free(json);
    return 0;
}
