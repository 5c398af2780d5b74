/* fuzz_tokenizer.c: llama2.c's tokenizer.bin, then encoding a text with it
 * (watching every merge, as --trace-bpe does) and decoding the ids back.
 * Input: a 2-byte length, the text, then the tokenizer file. */
#include "tests/fuzz/fuzz_file.h"

#include "ref/text/tokenizer.h"

static void count_merge(void *ctx, const BpeMerge *m) {
    *(long *)ctx += m->n_symbols;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const uint8_t *text_bytes, *file;
    size_t n_text, n_file;
    fuzz_split(data, size, &text_bytes, &n_text, &file, &n_file);
    const char *path = fuzz_file("tokenizer.bin", file, n_file);
    Tokenizer t;
    StepError err;
    if (!tokenizer_load_bin(&t, path, 0, &err)) return 0;
    char *text = malloc(n_text + 1);
    if (text == NULL) abort();
    memcpy(text, text_bytes, n_text);
    text[n_text] = '\0';
    long seen = 0;
    BpeObserver obs = {&seen, count_merge, NULL};
    int *ids = NULL, n = 0;
    if (tokenizer_encode_observed(&t, text, n_text % 2 == 0, &obs, &ids, &n, &err)) {
        char *back = tokenizer_decode_tokens(&t, ids, n, -1);
        free(back);
        free(ids);
    }
    (void)tokenizer_may_fit(&t, text, 16);
    free(text);
    tokenizer_free(&t);
    return 0;
}
