/* bench/forward.c: the forward pass timed in one process, for `make bench`
 * and `make bench-scale` (docs/performance.md). A benchmark, not a test.
 *
 *   forward MODEL [--threads N] [--int8] [--f32] [--prompt T] [--decode D] [--runs R]
 *                 [--batch B,B,...] [--no-kernel-rate]
 *
 * Loads MODEL (a llama2.c checkpoint, a Hugging Face folder or a GGUF file) in the fast
 * layout (--int8: int8 weights and activations, as llama.cpp's Q8_0), then,
 * R times each, times a prefill of T tokens and a decode of D tokens one by
 * one after it (positions T to T+D-1, the cache growing as in generation,
 * as llama.cpp's decode after the same prompt; no sampling),
 * and prints one JSON object: load seconds, peak resident memory, the
 * medians (and best) in tokens/s, the bytes one decode step reads (weights
 * and KV rows, from the work counters), and the in-cache rate of the
 * prefill kernel (a 256 x C matrix against 96 tokens, again and again) as
 * the prefill's ceiling (--no-kernel-rate: not timed, 0, for a profile of
 * the forward pass alone: docs/runs/profile_prefill_1b.py). It also runs
 * the prompt on one thread and checks that the logits are the same bits
 * ("bitwise": true).
 *
 * The decode's ceiling is measured the way a decode step reads: the
 * model's own packed matrices and the cache rows of an average step, warm,
 * re-read matrix by matrix by the same pool of threads, with vector loads
 * (FAST_CLONES, as the kernels), each thread's part as one stream and as
 * four (as the half kernels' decode reads four blocks at once), best of
 * the runs ("read_seconds", the faster of "read_one_stream_seconds" and
 * "read_four_streams_seconds"). A read that does less
 * than the decode could still lose to it (a prefetcher's luck), so the
 * ceiling is the faster of that read and the decode itself: the fastest
 * these bytes were read in this run, which no decode can beat
 * ("decode_read_seconds", and "ceiling_from" says which). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "ref/forward.h"
#include "ref/kernels/clones.h"
#include "ref/formats/model_open.h"
#include "ref/kernels/pack.h"
#include "ref/model/model_pack.h"
#include "ref/model/model_prepare.h"
#include "ref/kernels/threads.h"

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
 * cache, packed as a model's are (matrix_pack): the most a prefill could
 * reach on this core. 0 when out of memory. */
static double kernel_macs_per_second(int C) {
    int rows = 256, T = 96;
    float *data = malloc((size_t)rows * C * sizeof(float)),
          *x = malloc((size_t)T * C * sizeof(float)),
          *out = malloc((size_t)T * rows * sizeof(float));
    Matrix w = {0}, rows_view = matrix_view(ELEM_F32, data, rows, C);
    double best = 1e30;
    if (data == NULL || x == NULL || out == NULL) goto done;
    for (size_t i = 0; i < (size_t)rows * C; i++) data[i] = (float)(i % 97) / 97.0f;
    for (size_t i = 0; i < (size_t)T * C; i++) x[i] = (float)(i % 89) / 89.0f;
    if (!matrix_pack(&w, &rows_view)) goto done;
    for (int r = 0; r < 7; r++) {
        double t = now();
        for (int reps = 0; reps < 20; reps++) matmul_packed(out, x, &w, T);
        double d = (now() - t) / 20;
        best = d < best ? d : best;
    }
done:
    matrix_free(&w);
    free(data), free(x), free(out);
    return best < 1e30 ? (double)rows * C * T / best : 0;
}

/* The memory a decode step reads, as (start, bytes) regions in the order it
 * reads them: the token's embedding row; each layer's norms and seven
 * matrices; the final norm and the classifier; the cache rows of positions
 * 0..kv_positions-1 of each layer. The bytes the work counters count, and
 * the padding of the int8 layout's last block of rows, which its kernel
 * reads too. */
typedef struct {
    const unsigned char **start; /* [cap] */
    size_t *bytes;               /* [cap] */
    int n, cap;                  /* cap: REGIONS_PER_LAYER a layer, and the rest */
} Regions;

#define REGIONS_PER_LAYER 18 /* two norms, seven matrices (int8: codes and scales), K and V */

static void add_region(Regions *r, const void *start, size_t bytes) {
    if (bytes > 0) r->start[r->n] = start, r->bytes[r->n++] = bytes; /* n < cap: sized for it */
}

/* A matrix as the fast kernels hold it: packed floats (of any element
 * type) or packed int8 codes and scales, padding included. */
static void add_matrix(Regions *r, const Matrix *m) {
    if (m->layout == MATRIX_Q8_PACKED) {
        size_t blocks = (size_t)q8_blocks(m), groups = (size_t)quant_groups(m->cols, m->group);
        add_region(r, m->data, blocks * Q8_ROWS * (size_t)m->cols);
        add_region(r, m->scales, blocks * Q8_ROWS * groups * sizeof(float));
    } else {
        add_region(r, m->data,
                   (size_t)packed_blocks(m) * PACK_ROWS * (size_t)m->cols * element_bytes(m->elem));
    }
}

static bool decode_regions(Regions *r, const Model *m, const RunState *s, int kv_positions) {
    const Config *c = &m->config;
    r->cap =
        REGIONS_PER_LAYER * c->n_layers + 4; /* and the embedding row, final norm, classifier */
    r->start = malloc((size_t)r->cap * sizeof *r->start);
    r->bytes = malloc((size_t)r->cap * sizeof *r->bytes);
    if (r->start == NULL || r->bytes == NULL) return false;
    size_t norm = (size_t)c->dim * sizeof(float);
    r->n = 0;
    /* the token's row (from the packed classifier when tied) */
    add_region(r, m->embedding.data, matrix_bytes(&m->embedding) / (uint64_t)m->embedding.rows);
    for (int l = 0; l < c->n_layers; l++) {
        add_region(r, model_vector(m, VEC_ATT_NORM, l), norm);
        add_region(r, model_vector(m, VEC_FFN_NORM, l), norm);
        for (int k = 0; k < LAYER_MATRICES; k++) add_matrix(r, &m->layers[l].m[k]);
    }
    add_region(r, model_vector(m, VEC_FINAL_NORM, 0), norm);
    add_matrix(r, &m->classifier);
    const KVCache *kv = &s->seq.cache;
    size_t layer = (size_t)kv->capacity * (size_t)kv->kv_dim,
           rows = (size_t)kv_positions * kv->kv_dim;
    for (int l = 0; l < kv->n_layers && kv->key != NULL; l++) {
        add_region(r, kv->key + (size_t)l * layer, rows * sizeof(float));
        add_region(r, kv->value + (size_t)l * layer, rows * sizeof(float));
    }
    return true;
}

/* Read one region's chunks [begin, end) of 4 KiB with vector loads: eight
 * independent XOR chains, as wide as the kernels' clone. */
typedef struct {
    const unsigned char *start;
    size_t bytes;
    uint64_t *sink;    /* [chunks] one per task range, so that no read is optimised away */
    bool four_streams; /* each thread's range as four streams (or one) */
} ReadJob;

#define READ_CHUNK 4096

FAST_CLONES static uint64_t read_bytes(const uint64_t *a, size_t n) {
    uint64_t x[8] = {0};
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++) x[k] ^= a[i + k];
    for (; i < n; i++) x[0] ^= a[i];
    return x[0] ^ x[1] ^ x[2] ^ x[3] ^ x[4] ^ x[5] ^ x[6] ^ x[7];
}

/* The same words read as four streams side by side, a line (8 words) of
 * each quarter in turn, as a decode reads four blocks at once: one core's
 * reads are faster as several streams than as one
 * (docs/runs/2026-12-06-four-blocks.txt). */
FAST_CLONES static uint64_t read_bytes_four_streams(const uint64_t *a, size_t n) {
    size_t part = n / 32 * 8; /* words of each quarter, whole lines */
    const uint64_t *q0 = a, *q1 = a + part, *q2 = a + 2 * part, *q3 = a + 3 * part;
    uint64_t x0[8] = {0}, x1[8] = {0}, x2[8] = {0}, x3[8] = {0};
    for (size_t i = 0; i < part; i += 8)
        for (int k = 0; k < 8; k++) {
            x0[k] ^= q0[i + k], x1[k] ^= q1[i + k];
            x2[k] ^= q2[i + k], x3[k] ^= q3[i + k];
        }
    for (size_t i = 4 * part; i < n; i++) x0[0] ^= a[i];
    uint64_t x = 0;
    for (int k = 0; k < 8; k++) x ^= x0[k] ^ x1[k] ^ x2[k] ^ x3[k];
    return x;
}

static void read_chunks(void *ctx, int begin, int end) {
    ReadJob *job = ctx;
    size_t from = (size_t)begin * READ_CHUNK, to = (size_t)end * READ_CHUNK;
    if (to > job->bytes) to = job->bytes;
    const uint64_t *words = (const uint64_t *)(job->start + from);
    size_t n = (to - from) / 8;
    job->sink[begin] ^=
        job->four_streams ? read_bytes_four_streams(words, n) : read_bytes(words, n);
}

/* The best of `passes` reads of every region, in seconds, the passes
 * taking turns at reading each thread's range as one stream and as four:
 * best[0] and best[1] the best of each (false: out of memory). */
static bool read_regions_seconds(const Regions *r, ThreadPool *pool, int passes, double best[2]) {
    size_t most = 0;
    for (int i = 0; i < r->n; i++) most = r->bytes[i] > most ? r->bytes[i] : most;
    ReadJob job = {.sink = calloc(most / READ_CHUNK + 1, sizeof(uint64_t))};
    if (job.sink == NULL) return false;
    best[0] = best[1] = 1e30;
    for (int p = 0; p < passes; p++) {
        job.four_streams = p % 2 == 1;
        double t = now();
        for (int i = 0; i < r->n; i++) {
            job.start = r->start[i], job.bytes = r->bytes[i];
            parallel_for(pool, (int)((r->bytes[i] + READ_CHUNK - 1) / READ_CHUNK), read_chunks,
                         &job);
        }
        double d = now() - t;
        best[job.four_streams] = d < best[job.four_streams] ? d : best[job.four_streams];
    }
    free(job.sink);
    return true;
}

/* Decode steps of B sequences at once (a batch, one forward() of B rows),
 * each sequence's positions 0..D-1, for each B of the comma-separated list:
 * the median of `runs` in tokens a second (B x D a run), appended to out as
 * "B": tok/s pairs. */
static bool batch_decodes(const Model *m, const QuantRuntime *q, const int *tokens, int D, int runs,
                          const char *list, char *out, StepError *err) {
    for (const char *c = list; *c != '\0';) {
        int B = atoi(c);
        if (B < 1 || B > 256) return step_fail(err, "--batch: sizes from 1 to 256");
        SeqState *seqs = calloc((size_t)B, sizeof *seqs);
        ForwardRow *rows = malloc((size_t)B * sizeof *rows);
        PassScratch scratch = {0};
        int ready = 0;
        KvType kv = kv_type_for(&m->config, m->run.kv, q->kv);
        bool ok = seqs && rows && pass_scratch_init(&scratch, &m->config, B, D, kv, q, err);
        for (; ok && ready < B; ready++) ok = seq_state_init(&seqs[ready], &m->config, D, kv, err);
        double rate[100];
        for (int r = 0; ok && r < runs; r++) {
            double t = now();
            for (int p = 0; p < D; p++) {
                for (int b = 0; b < B; b++)
                    rows[b] = (ForwardRow){.state = &seqs[b],
                                           .tokens = &tokens[(p + b) % D],
                                           .n_tokens = 1,
                                           .pos0 = p};
                forward(m, &scratch, rows, B);
            }
            rate[r] = (double)B * D / (now() - t);
        }
        if (ok)
            snprintf(out + strlen(out), 512 - strlen(out), "%s\"%d\": %.1f", *out ? ", " : "", B,
                     median(rate, runs));
        bool allocated = seqs != NULL && rows != NULL;
        for (int i = 0; i < ready; i++) seq_state_free(&seqs[i]);
        pass_scratch_free(&scratch);
        free(seqs), free(rows);
        if (!ok) return allocated ? false : step_fail(err, "--batch: out of memory");
        c = strchr(c, ',');
        if (c == NULL) break;
        c++;
    }
    return true;
}

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : NULL;
    int threads = 1, T = 100, D = 256, runs = 5;
    const char *batches = NULL; /* --batch 4,16,64: decode steps of that many sequences at once */
    bool int8 = false, kernel_rate = true;
    WeightsMode mode = WEIGHTS_STORED;
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--int8") == 0)
            int8 = true;
        else if (strcmp(argv[i], "--no-kernel-rate") == 0)
            kernel_rate = false;
        else if (strcmp(argv[i], "--f32") == 0) /* a folder's weights widened at load */
            mode = WEIGHTS_F32;
        else if (i + 1 < argc && strcmp(argv[i], "--threads") == 0)
            threads = atoi(argv[++i]);
        else if (i + 1 < argc && strcmp(argv[i], "--prompt") == 0)
            T = atoi(argv[++i]);
        else if (i + 1 < argc && strcmp(argv[i], "--decode") == 0)
            D = atoi(argv[++i]);
        else if (i + 1 < argc && strcmp(argv[i], "--runs") == 0)
            runs = atoi(argv[++i]);
        else if (i + 1 < argc && strcmp(argv[i], "--batch") == 0)
            batches = argv[++i];
        else
            path = NULL;
    }
    if (path == NULL || threads < 1 || T < 2 || T > 1 << 20 || D < 1 || D > 1 << 20 || runs < 1 ||
        runs > 100) {
        fprintf(stderr,
                "usage: forward MODEL [--threads N] [--int8] [--f32] [--prompt T>=2] [--decode D] "
                "[--runs R] [--batch B,B,...] [--no-kernel-rate]\n");
        return 2;
    }
    StepError err;
    Model m = {0};
    double t0 = now();
    /* int8: quantized at load, or a Q8_0 file's blocks as they are (model_prepare) */
    ModelPrepare prep = {.kernels = KERNELS_FAST, .int8_activations = int8, .threads = 1};
    bool ok = model_open_weights(path, mode, &m, NULL, NULL, &err);
    if (ok && int8 && !m.q8_0_file) prep.quant_group = 32;
    if (ok) ok = model_prepare(&m, &prep, &err);
    double load = now() - t0;
    int capacity = T + D; /* the prompt, then the decode after it */
    if (ok && capacity > m.config.seq_len)
        ok = step_fail(&err, "--prompt + --decode %d past the window %d", capacity,
                       m.config.seq_len);
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
        prefill_macs = s.seq.work.macs;
        t = now();
        for (int p = T; p < T + D; p++) forward_tokens(&m, &s, &tokens[p], 1, p, false, NULL);
        decode[r] = D / (now() - t);
        step_bytes = s.seq.work.weight_bytes + s.seq.work.kv_bytes_read; /* the last step's */
        best_prefill = prefill[r] > best_prefill ? prefill[r] : best_prefill;
        best_decode = decode[r] > best_decode ? decode[r] : best_decode;
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    /* the decode's ceiling: its average step's bytes, read as it reads them */
    Regions regions = {0};
    double read_seconds = 0, decode_step_seconds = 1.0 / best_decode;
    double reads[2] = {0, 0}; /* the best read as one stream, as four */
    uint64_t read_bytes_total = 0;
    if (ok && decode_regions(&regions, &m, &s, T + (D + 1) / 2)) {
        for (int i = 0; i < regions.n; i++) read_bytes_total += regions.bytes[i];
        if (read_regions_seconds(&regions, m.pool, 20 * runs, reads))
            read_seconds = reads[0] < reads[1] ? reads[0] : reads[1];
    }
    free(regions.start), free(regions.bytes);
    char batched[512] = "";
    if (ok && batches != NULL) ok = batch_decodes(&m, &q, tokens, D, runs, batches, batched, &err);
    if (!ok) fprintf(stderr, "forward: %s\n", err.message);
    bool decode_faster = read_seconds <= 0 || decode_step_seconds < read_seconds;
    double ceiling_seconds = decode_faster ? decode_step_seconds : read_seconds;
    /* the decode step's average reads: weights, plus the KV rows of the
     * mean of T+1 .. T+D positions, T + (D+1)/2 */
    uint64_t kv_row = (uint64_t)m.config.n_layers * config_kv_dim(&m.config) * 2u * sizeof(float);
    uint64_t mean_step_bytes =
        s.seq.work.weight_bytes + kv_row * (2u * (uint64_t)T + (uint64_t)D + 1u) / 2u;
    if (ok)
        printf("{\"model\": \"%s\", \"threads\": %d, \"int8\": %s, \"load_seconds\": %.3f, "
               "\"peak_rss_bytes\": %ld, \"prefill_tokens\": %d, \"prefill_tok_s\": %.1f, "
               "\"prefill_best_tok_s\": %.1f, \"decode_tokens\": %d, \"decode_tok_s\": %.1f, "
               "\"decode_best_tok_s\": %.1f, \"decode_step_bytes\": %llu, "
               "\"last_step_bytes\": %llu, \"prefill_macs\": %llu, "
               "\"kernel_macs_per_second\": %.4g, \"decode_read_seconds\": %.6g, "
               "\"read_seconds\": %.6g, \"read_one_stream_seconds\": %.6g, "
               "\"read_four_streams_seconds\": %.6g, \"read_bytes\": %llu, "
               "\"ceiling_from\": \"%s\", "
               "\"bitwise\": %s, \"batch_decode_tok_s\": {%s}}\n",
               path, threads, int8 ? "true" : "false", load, ru.ru_maxrss * 1024L, T,
               median(prefill, runs), best_prefill, D, median(decode, runs), best_decode,
               (unsigned long long)mean_step_bytes, (unsigned long long)step_bytes,
               (unsigned long long)prefill_macs,
               int8 || !kernel_rate ? 0.0 : kernel_macs_per_second(m.config.dim), ceiling_seconds,
               read_seconds, reads[0], reads[1], (unsigned long long)read_bytes_total,
               decode_faster ? "decode" : "read", bitwise ? "true" : "false", batched);
    free(tokens), free(one_thread);
    run_state_free(&s);
    model_free(&m);
    return ok ? 0 : 2;
}
