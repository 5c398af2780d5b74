/* fuzz_gguf.c: a GGUF file from elsewhere: the parser on its bytes in
 * memory, then the loader `--model FILE.gguf` runs (metadata, tensors, the
 * embedded tokenizer); a model that loads runs one token and encodes a
 * text. */
#include "fuzz_file.h"

#include "ref/forward.h"
#include "ref/gguf.h"
#include "ref/gguf_model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    StepError err;
    GgufFile f;
    if (gguf_parse(&f, data, size, "fuzz", &err)) {
        uint64_t n = 0, v;
        double d;
        char **strings = gguf_string_array(&f, "tokenizer.ggml.tokens", &n);
        for (uint64_t i = 0; strings != NULL && i < n; i++) free(strings[i]);
        free(strings);
        (void)gguf_get_uint(&f, "general.alignment", 1u << 20, &v);
        (void)gguf_get_float(&f, "llama.rope.freq_base", &d);
        free(gguf_get_string(&f, "general.architecture"));
        gguf_close(&f);
    }
    const char *path = fuzz_file("model.gguf", data, size);
    Model m;
    Tokenizer tok;
    if (gguf_model_load(&m, &tok, path, &err)) {
        RunState s;
        if (run_state_init(&s, &m.config, 1, 1, &err)) {
            int token = m.config.vocab_size - 1;
            forward_tokens(&m, &s, &token, 1, 0, false, NULL);
            run_state_free(&s);
        }
        int *ids = NULL, n_ids = 0;
        if (tokenizer_encode(&tok, "cat sat", true, &ids, &n_ids, &err)) free(ids);
        model_free(&m);
        tokenizer_free(&tok);
    }
    return 0;
}
