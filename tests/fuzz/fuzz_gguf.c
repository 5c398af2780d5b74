/* fuzz_gguf.c: a GGUF file from elsewhere: the parser on its bytes in
 * memory, then the loader `--model FILE.gguf` runs (metadata, tensors, the
 * embedded tokenizer); a model that loads runs one token, encodes a text,
 * and is written back by `convert` (F32): read again, every weight must be
 * the same bits. */
#include "tests/fuzz/fuzz_file.h"
#include "tests/fuzz/fuzz_forward.h"

#include "ref/forward.h"
#include "ref/formats/gguf.h"
#include "ref/formats/gguf_convert.h"
#include "ref/formats/gguf_model.h"
#include "ref/formats/gguf_tokenizer.h"
#include "ref/nonfinite.h"

/* The ids of a short text, or NULL (*n 0). */
static int *encode(const Tokenizer *tok, int *n) {
    StepError err;
    int *ids = NULL;
    *n = 0;
    return tokenizer_encode(tok, "cat sat", true, &ids, n, &err) ? ids : NULL;
}

/* Write m and tok as GGUF and read them back: the same weights, bit for
 * bit, and the same ids for a text (a tokenizer convert cannot describe is
 * left out, and then only the weights are compared). */
static void round_trip(const Model *m, const Tokenizer *tok) {
    StepError err;
    GgufSaveReport r;
    const char *out = fuzz_file("out.gguf", NULL, 0);
    if (!model_check_finite(m, &err)) { /* refused, naming the weight: nothing written */
        if (gguf_model_save(m, NULL, GGUF_OUT_Q8_0, "fuzz", out, &r, &err)) abort();
        return;
    }
    bool with_tok = gguf_model_save(m, tok, GGUF_OUT_F32, "fuzz", out, &r, &err);
    if (!with_tok && !gguf_model_save(m, NULL, GGUF_OUT_F32, "fuzz", out, &r, &err)) abort();
    Model back;
    Tokenizer back_tok;
    if (!gguf_model_load(&back, with_tok ? &back_tok : NULL, out, WEIGHTS_F32, NULL, NULL, &err))
        abort();
    uint64_t n = model_storage_floats(&m->config);
    if (model_storage_floats(&back.config) != n ||
        memcmp(back.storage, m->storage, n * sizeof(float)) != 0)
        abort();
    if (with_tok) {
        int n_a, n_b, *a = encode(tok, &n_a), *b = encode(&back_tok, &n_b);
        if (n_a != n_b || (n_a > 0 && memcmp(a, b, (size_t)n_a * sizeof *a) != 0)) abort();
        free(a), free(b);
        tokenizer_free(&back_tok);
    }
    model_free(&back);
}

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
        for (uint64_t i = 0; i < f.n_tensors; i++) /* names are unique: each finds itself */
            if (gguf_find_tensor(&f, f.tensors[i].name) != &f.tensors[i]) abort();
        gguf_close(&f);
    }
    const char *path = fuzz_file("model.gguf", data, size);
    Model m;
    Tokenizer tok;
    if (gguf_tokenizer_load(&tok, path, 0, &err)) { /* the tokenizer alone, as tokenize reads it */
        int n_ids, *ids = encode(&tok, &n_ids);
        free(ids);
        tokenizer_free(&tok);
    }
    if (gguf_model_load(&m, NULL, path, WEIGHTS_STORED, NULL, NULL, &err)) { /* read in place */
        fuzz_forward_last_token(&m);
        model_free(&m);
    }
    if (gguf_model_load(&m, &tok, path, WEIGHTS_F32, NULL, NULL, &err)) {
        fuzz_forward_last_token(&m);
        int *ids = NULL, n_ids = 0;
        if (tokenizer_encode(&tok, "cat sat", true, &ids, &n_ids, &err)) free(ids);
        round_trip(&m, &tok);
        model_free(&m);
        tokenizer_free(&tok);
    }
    return 0;
}
