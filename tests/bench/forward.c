/* bench/forward.c: the forward pass timed in one process, for `make bench`
 * and `make bench-scale` (docs/performance.md). A benchmark, not a test.
 *
 *   forward MODEL [--threads N] [--int8] [--prompt T] [--decode D] [--runs R]
 *
 * Loads MODEL (a llama2.c checkpoint or a Hugging Face folder) in the fast
 * layout (--int8: int8 weights and activations, as llama.cpp's Q8_0), then,
 * R times each, times a prefill of T tokens and a decode of D tokens one by
 * one from position 0 (the cache growing as in generation; no sampling),
 * and prints one JSON object: load seconds, peak resident memory, the
 * medians (and best) in tokens/s, the bytes one decode step reads (weights
 * and KV rows, from the work counters), and the in-cache rate of the
 * prefill kernel (a 256 x C matrix against 96 tokens, again and again) as
 * the prefill's ceiling. It also runs the prompt on one thread and checks
 * that the logits are the same bits ("bitwise": true). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "../../ref/forward.h"
#include "../../ref/hf_model.h"
#include "../../ref/pack.h"
#include "../../ref/quant_model.h"
#include "../../ref/threads.h"

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int compare_doubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, compare_doubles);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Multiply-adds per second of the prefill kernel on a matrix that stays in
 * cache: the most a prefill could reach on this core. */
static double kernel_macs_per_second(int C) {
    int rows = 256, T = 96, reps = 0;
    PackedMatrix w = {.rows = rows, .cols = C};
    w.data = aligned_alloc(64, (size_t)rows * C * sizeof(float));
    float *x = malloc((size_t)T * C * sizeof(float)),
          *out = malloc((size_t)T * rows * sizeof(float));
    if (w.data == NULL || x == NULL || out == NULL) return 0;
    for (size_t i = 0; i < (size_t)rows * C; i++) w.data[i] = (float)(i % 97) / 97.0f;
    for (size_t i = 0; i < (size_t)T * C; i++) x[i] = (float)(i % 89) / 89.0f;
    double best = 1e30;
    for (int r = 0; r < 7; r++) {
        double t = now();
        for (reps = 0; reps < 20; reps++) matmul_packed(out, x, &w, T);
        double d = (now() - t) / 20;
        best = d < best ? d : best;
    }
    free(w.data), free(x), free(out);
    return (double)rows * C * T / best;
}

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : NULL;
    int threads = 1, T = 100, D = 256, runs = 5;
    bool int8 = false;
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--int8") == 0)
            int8 = true;
        else if (i + 1 < argc && strcmp(argv[i], "--threads") == 0)
            threads = atoi(argv[++i]);
        else if (i + 1 < argc && strcmp(argv[i], "--prompt") == 0)
            T = atoi(argv[++i]);
        else if (i + 1 < argc && strcmp(argv[i], "--decode") == 0)
            D = atoi(argv[++i]);
        else if (i + 1 < argc && strcmp(argv[i], "--runs") == 0)
            runs = atoi(argv[++i]);
        else
            path = NULL;
    }
    if (path == NULL || threads < 1 || T < 2 || D < 1 || runs < 1 || runs > 100) {
        fprintf(stderr, "usage: forward MODEL [--threads N] [--int8] [--prompt T] [--decode D] "
                        "[--runs R]\n");
        return 2;
    }
    StepError err;
    Model m = {0};
    HfLoadReport report;
    double t0 = now();
    bool ok = hf_is_model_dir(path) ? hf_model_load(&m, path, NULL, &report, &err)
                                    : model_load_checkpoint(&m, path, &err);
    if (ok && int8) ok = model_quantize(&m, 32, &err) && model_pack_q8(&m, &err);
    if (ok && !int8) ok = model_pack(&m, &err);
    double load = now() - t0;
    int capacity = T > D ? T : D;
    if (ok && capacity > m.config.seq_len)
        ok = step_fail(&err, "--prompt/--decode %d past the window %d", capacity, m.config.seq_len);
    QuantRuntime q = {.activations = int8, .group = 32};
    RunState s = {0};
    if (ok) ok = run_state_init_quant(&s, &m.config, capacity, T, &q, &err);
    if (!ok) {
        fprintf(stderr, "forward: %s\n", err.message);
        model_free(&m);
        return 2;
    }
    int V = m.config.vocab_size, *tokens = malloc((size_t)capacity * sizeof(int));
    float *one_thread = malloc((size_t)V * sizeof(float));
    for (int i = 0; i < capacity; i++) tokens[i] = (int)((1u + 7919u * (unsigned)i) % (unsigned)V);
    /* the reference logits on one thread, then the pool */
    memcpy(one_thread, forward_tokens(&m, &s, tokens, T, 0, false, NULL),
           (size_t)V * sizeof(float));
    ok = model_use_threads(&m, threads, &err);
    bool bitwise = ok && memcmp(one_thread, forward_tokens(&m, &s, tokens, T, 0, false, NULL),
                                (size_t)V * sizeof(float)) == 0;
    double prefill[100], decode[100], best_prefill = 0, best_decode = 0;
    uint64_t step_bytes = 0, prefill_macs = 0;
    for (int r = 0; ok && r < runs; r++) {
        double t = now();
        forward_tokens(&m, &s, tokens, T, 0, false, NULL);
        prefill[r] = T / (now() - t);
        prefill_macs = s.work.macs;
        t = now();
        for (int p = 0; p < D; p++) forward_tokens(&m, &s, &tokens[p], 1, p, false, NULL);
        decode[r] = D / (now() - t);
        step_bytes = s.work.weight_bytes + s.work.kv_bytes_read; /* the last step's */
        best_prefill = prefill[r] > best_prefill ? prefill[r] : best_prefill;
        best_decode = decode[r] > best_decode ? decode[r] : best_decode;
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    /* the decode step's average reads: weights, plus the KV rows of D/2 positions */
    uint64_t kv_row = (uint64_t)m.config.n_layers * config_kv_dim(&m.config) * 2u * sizeof(float);
    uint64_t mean_step_bytes = s.work.weight_bytes + kv_row * (uint64_t)(D + 1) / 2u;
    if (ok)
        printf("{\"model\": \"%s\", \"threads\": %d, \"int8\": %s, \"load_seconds\": %.3f, "
               "\"peak_rss_bytes\": %ld, \"prefill_tokens\": %d, \"prefill_tok_s\": %.1f, "
               "\"prefill_best_tok_s\": %.1f, \"decode_tokens\": %d, \"decode_tok_s\": %.1f, "
               "\"decode_best_tok_s\": %.1f, \"decode_step_bytes\": %llu, "
               "\"last_step_bytes\": %llu, \"prefill_macs\": %llu, "
               "\"kernel_macs_per_second\": %.4g, \"bitwise\": %s}\n",
               path, threads, int8 ? "true" : "false", load, ru.ru_maxrss * 1024L, T,
               median(prefill, runs), best_prefill, D, median(decode, runs), best_decode,
               (unsigned long long)mean_step_bytes, (unsigned long long)step_bytes,
               (unsigned long long)prefill_macs, int8 ? 0.0 : kernel_macs_per_second(m.config.dim),
               bitwise ? "true" : "false");
    free(tokens), free(one_thread);
    run_state_free(&s);
    model_free(&m);
    return ok ? 0 : 2;
}
