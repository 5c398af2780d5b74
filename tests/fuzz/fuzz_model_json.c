/* fuzz_model_json.c: stepwise's JSON model format (docs/model-json.md),
 * with its tokenizer; a model that loads encodes and runs one token. */
#include "tests/fuzz/fuzz_file.h"

#include "ref/forward.h"
#include "ref/formats/model_json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = malloc(size + 1);
    if (text == NULL) abort();
    memcpy(text, data, size);
    text[size] = '\0';
    Model m;
    Tokenizer tok;
    StepError err;
    if (model_load_json_text(&m, &tok, text, "fuzz", &err)) {
        int *ids = NULL, n = 0;
        RunState s;
        if (tokenizer_encode(&tok, "cat sat", true, &ids, &n, &err) && n <= m.config.seq_len &&
            run_state_init(&s, &m.config, n, n, &err)) {
            forward_tokens(&m, &s, ids, n, 0, true, NULL);
            run_state_free(&s);
        }
        free(ids);
        model_free(&m);
        tokenizer_free(&tok);
    }
    free(text);
    return 0;
}
