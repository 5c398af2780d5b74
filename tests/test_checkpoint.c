/* test_checkpoint.c: the llama2.c checkpoint loader, on files the test
 * writes itself: good ones (tied and untied) and every kind of bad one. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ref/forward.h"
#include "ref/formats/checkpoint.h"
#include "ref/kernels/pack.h"
#include "ref/model/model_pack.h"
#include "tests/helpers.h"

/* Write the tiny model as a llama2.c checkpoint: header, weights in layout
 * order, the two RoPE tables (zeros), and the classifier when untied. */
static void write_checkpoint(const char *path, const Model *m, bool untied, long extra_bytes) {
    const Config *c = &m->config;
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    int32_t header[7] = {c->dim,     c->hidden_dim, c->n_layers,
                         c->n_heads, c->n_kv_heads, untied ? -c->vocab_size : c->vocab_size,
                         c->seq_len};
    fwrite(header, sizeof header, 1, f);
    size_t cls = (size_t)c->vocab_size * c->dim;
    size_t body = model_storage_floats(c) - (c->shared_classifier ? 0 : cls);
    fwrite(m->storage, sizeof(float), body, f);
    float zero = 0.0f;
    for (int i = 0; i < c->seq_len * config_head_dim(c); i++) fwrite(&zero, sizeof zero, 1, f);
    if (untied) fwrite(model_matrix_floats(m, &m->classifier), sizeof(float), cls, f);
    for (long i = 0; i < extra_bytes; i++) fputc(0, f);
    fclose(f);
}

static void write_header_only(const char *path, const int32_t header[7], long pad_floats) {
    FILE *f = fopen(path, "wb");
    fwrite(header, sizeof(int32_t), 7, f);
    float zero = 0.0f;
    for (long i = 0; i < pad_floats; i++) fwrite(&zero, sizeof zero, 1, f);
    fclose(f);
}

static void expect_load_error(const char *path, const char *fragment) {
    Model m;
    StepError err;
    cr_assert(!model_load_checkpoint(&m, path, &err), "loaded a bad file");
    cr_expect(strstr(err.message, fragment) != NULL, "error '%s' lacks '%s'", err.message,
              fragment);
    cr_expect(strchr(err.message, '\n') == NULL, "one line");
}

/* The tiny JSON model, its untied classifier written last, reloaded: the
 * same logits to the bit. */
Test(checkpoint, untied_classifier_round_trips) {
    Model json, bin;
    Tokenizer tok;
    load_tiny(&json, &tok);
    cr_assert(!json.config.shared_classifier);
    const char *path = temp_path("tiny-untied.bin");
    write_checkpoint(path, &json, true, 0);
    StepError err;
    cr_assert(model_load_checkpoint(&bin, path, &err), "%s", err.message);
    cr_expect(!bin.config.shared_classifier);
    cr_expect_eq(bin.config.vocab_size, 13);
    RunState a, b;
    cr_assert(run_state_init(&a, &json.config, 3, 3, &err));
    cr_assert(run_state_init(&b, &bin.config, 3, 3, &err));
    int tokens[] = {1, 11, 12};
    const float *la = forward_tokens(&json, &a, tokens, 3, 0, true, NULL);
    const float *lb = forward_tokens(&bin, &b, tokens, 3, 0, true, NULL);
    cr_expect_eq(memcmp(la, lb, 3 * 13 * sizeof(float)), 0);
    run_state_free(&a), run_state_free(&b);
    model_free(&bin), model_free(&json), tokenizer_free(&tok);
}

/* A tied checkpoint has no classifier: its logits use the embedding rows. */
Test(checkpoint, tied_classifier_is_the_embedding) {
    Model json, bin;
    Tokenizer tok;
    load_tiny(&json, &tok);
    json.config.shared_classifier = true; /* write without the classifier */
    const char *path = temp_path("tiny-tied.bin");
    write_checkpoint(path, &json, false, 0);
    json.config.shared_classifier = false;
    StepError err;
    cr_assert(model_load_checkpoint(&bin, path, &err), "%s", err.message);
    cr_expect(bin.config.shared_classifier);
    cr_expect_eq(bin.classifier.data, bin.embedding.data);
    model_free(&bin), model_free(&json), tokenizer_free(&tok);
}

Test(checkpoint, bad_files_get_one_line_errors) {
    Model json;
    Tokenizer tok;
    load_tiny(&json, &tok);
    const char *path = temp_path("bad.bin");
    expect_load_error("build/tmp/does-not-exist.bin", "cannot open");
    FILE *f = fopen(path, "wb");
    fclose(f);
    expect_load_error(path, "too short");
    write_checkpoint(path, &json, true, -0);
    /* truncate by 4 bytes: rewrite with one float less */
    {
        FILE *in = fopen(path, "rb");
        fseek(in, 0, SEEK_END);
        long n = ftell(in);
        rewind(in);
        char *buf = malloc((size_t)n);
        cr_assert_eq(fread(buf, 1, (size_t)n, in), (size_t)n);
        fclose(in);
        FILE *out = fopen(path, "wb");
        fwrite(buf, 1, (size_t)n - 4, out);
        fclose(out);
        free(buf);
    }
    expect_load_error(path, "truncated");
    write_checkpoint(path, &json, true, 4);
    expect_load_error(path, "oversized");
    model_free(&json), tokenizer_free(&tok);
}

Test(checkpoint, bad_headers_get_one_line_errors) {
    const char *path = temp_path("header.bin");
    /* dim, hidden, layers, heads, kv_heads, vocab, seq_len */
    struct {
        int32_t h[7];
        const char *fragment;
    } cases[] = {
        {{0, 4, 1, 1, 1, 8, 4}, "dim must be positive"},
        {{4, 4, -1, 1, 1, 8, 4}, "n_layers must be positive"},
        {{4, 4, 1, 1, 1, 0, 4}, "vocab_size must be positive"},
        {{4, 4, 1, 1, 1, 8, 0}, "seq_len must be positive"},
        {{4, 0, 1, 1, 1, 8, 4}, "hidden_dim must be positive"},
        {{6, 4, 1, 4, 4, 8, 4}, "not divisible by n_heads"},
        {{8, 4, 1, 4, 3, 8, 4}, "not a multiple of n_kv_heads"},
        {{8, 4, 1, 2, 4, 8, 4}, "not a multiple of n_kv_heads"},
        {{6, 4, 1, 2, 2, 8, 4}, "odd"},
        {{1 << 30, 1 << 30, 1 << 30, 2, 2, 1 << 30, 1 << 30}, "overflows"},
        {{1 << 20, 1 << 20, 64, 2, 2, 8, 4}, "overflows"},
        {{4, 4, 1, 1, 1, INT32_MIN, 4}, "vocab_size must be positive"},
        {{4, 4, 1, 1, 1, 8, 4}, "truncated"}, /* a fine header, no weights */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        write_header_only(path, cases[i].h, 0);
        expect_load_error(path, cases[i].fragment);
    }
}

Test(checkpoint, sizes_derived_from_the_header) {
    /* stories260K: dim 64, 5 layers, 8 heads, 4 KV heads: head_dim 8,
     * kv_dim 32; cache bytes per token = 5 layers × 32 × 2 × 4 = 1280. */
    Config c = {.dim = 64,
                .hidden_dim = 172,
                .n_layers = 5,
                .n_heads = 8,
                .n_kv_heads = 4,
                .vocab_size = 512,
                .seq_len = 512,
                .shared_classifier = true};
    cr_expect_eq(config_head_dim(&c), 8);
    cr_expect_eq(config_kv_dim(&c), 32);
    cr_expect_str_eq(config_attention_kind(&c), "GQA");
    cr_expect_eq(kv_cache_bytes(&c, 1), 1280u);
    cr_expect_eq(kv_cache_bytes(&c, 512), 655360u);
    /* Parameters: 512·64 embedding + 5·(64 + 4096 + 2·2048 + 4096 + 64 + 3·11008) + 64
     *           = 32768 + 5·45440 + 64 = 260032 (the "260K" of its name; the file
     * is 28 + 4·(260032 + 512·8 RoPE floats) = 1056540 bytes). */
    cr_expect_eq(config_param_count(&c), 260032u);
    c.n_kv_heads = 8;
    cr_expect_str_eq(config_attention_kind(&c), "MHA");
    c.n_kv_heads = 1;
    cr_expect_str_eq(config_attention_kind(&c), "MQA");
}

/* A checkpoint is mapped, not read: releasing a matrix's pages (as packing
 * does) must leave its values as they were, read again from the file, and a
 * packed model must give the logits of the unpacked one to the bit. */
Test(checkpoint, released_pages_read_back_the_same_weights) {
    const char *path = model_file("stories260K.bin");
    if (path == NULL) cr_skip_test("stories260K.bin not in the models folder");
    Model a, b;
    StepError err;
    cr_assert(model_load_checkpoint(&a, path, &err), "%s", err.message);
    cr_assert(model_load_checkpoint(&b, path, &err), "%s", err.message);
    cr_assert_not_null(a.mapping, "the checkpoint is mapped");
    const Config *c = &a.config;
    uint64_t n = (uint64_t)c->n_layers * (uint64_t)c->hidden_dim * (uint64_t)c->dim;
    /* every layer's gate lies together in storage (weight_layout.h) */
    const float *gate_a = model_matrix_floats(&a, &a.layers[0].m[MAT_GATE]);
    const float *gate_b = model_matrix_floats(&b, &b.layers[0].m[MAT_GATE]);
    const float *embedding_a = model_matrix_floats(&a, &a.embedding);
    const float *embedding_b = model_matrix_floats(&b, &b.embedding);
    model_release_pages(&a, gate_a, n);
    model_release_pages(&a, embedding_a, (uint64_t)c->vocab_size * c->dim);
    cr_assert_eq(memcmp(gate_a, gate_b, n * sizeof(float)), 0);
    cr_assert_eq(memcmp(embedding_a, embedding_b, (size_t)c->vocab_size * c->dim * sizeof(float)),
                 0);
    cr_assert(model_pack(&a, &err), "%s", err.message);
    cr_assert_null(a.mapping, "packing lets go of the mapping");
    int tokens[] = {1, 403, 407, 261, 378};
    RunState sa, sb;
    cr_assert(run_state_init(&sa, c, 5, 5, &err), "%s", err.message);
    cr_assert(run_state_init(&sb, c, 5, 5, &err), "%s", err.message);
    const float *la = forward_tokens(&a, &sa, tokens, 5, 0, true, NULL);
    const float *lb = forward_tokens(&b, &sb, tokens, 5, 0, true, NULL);
    cr_assert_eq(memcmp(la, lb, 5 * (size_t)c->vocab_size * sizeof(float)), 0);
    run_state_free(&sa);
    run_state_free(&sb);
    model_free(&a);
    model_free(&b);
}

/* A model that does not fit is refused before anything is allocated, with
 * both figures: 3 GiB of weights against 1 GiB available. */
Test(checkpoint, a_model_larger_than_memory_is_refused_with_the_bytes) {
    StepError err;
    cr_assert(model_memory_fits(1u << 30, 1u << 30, "m", &err), "exactly enough fits");
    cr_assert(model_memory_fits(3ull << 30, 0, "m", &err), "unknown memory: let it try");
    cr_assert_not(model_memory_fits(3ull << 30, 1ull << 30, "big.gguf", &err));
    cr_expect(strstr(err.message, "big.gguf: the weights need 3221225472 bytes (3.00 GiB)") != NULL,
              "%s", err.message);
    cr_expect(strstr(err.message, "can take 1073741824 (1.00 GiB)") != NULL, "%s", err.message);
}
