/* fuzz_requests.c: a batch's request file (docs/batching.md), parsed for
 * the built-in tiny model with both chat templates. */
#include "tests/fuzz/fuzz_file.h"

#include "ref/generate.h"
#include "ref/formats/model_json.h"
#include "ref/serve/requests.h"

extern const char stepwise_tiny_model_json[];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static Model m;
    static Tokenizer tok;
    static bool loaded;
    StepError err;
    if (!loaded &&
        !(loaded = model_load_json_text(&m, &tok, stepwise_tiny_model_json, "tiny", &err)))
        abort();
    const char *path = fuzz_file("requests.jsonl", data, size);
    GenerateOptions defaults;
    generate_options_default(&defaults);
    BatchRequest *reqs = NULL;
    int n = 0;
    ChatTemplate tmpl = size > 0 && data[0] % 2 ? CHAT_CHATML : CHAT_LLAMA2;
    if (requests_load(path, &m, &tok, tmpl, &defaults, &reqs, &n, &err)) {
        for (int i = 0; i < n; i++) batch_request_free(&reqs[i]);
        free(reqs);
    }
    return 0;
}
