/* bench/bandwidth.c: how fast the cores read memory, for `make bench`,
 * `make bench-scale` and `make bench-batch` (docs/performance.md,
 * docs/batching.md): a buffer of each size read again and again with four
 * independent XOR chains per thread (so no core waits on its own
 * arithmetic), the best of several passes in GB/s. 1 GiB is past every
 * cache (DRAM); 64 MiB is about the 15M shape's weights (58 MiB); 1 MiB is
 * stories260K's. With an argument N, also N threads reading their own
 * parts of the 1 GiB buffer at once. These describe the machine; they are
 * not a decode's ceiling, which a decode can beat (its bytes are not these
 * buffers, nor read with these loads): tests/bench/forward.c measures that
 * by re-reading the decode step's own bytes. A benchmark, not a test. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

typedef struct {
    const uint64_t *a;
    size_t n;
    uint64_t sink;
} Part;

static void *read_part(void *arg) {
    Part *p = arg;
    uint64_t x0 = 0, x1 = 0, x2 = 0, x3 = 0;
    for (size_t i = 0; i + 3 < p->n; i += 4)
        x0 ^= p->a[i], x1 ^= p->a[i + 1], x2 ^= p->a[i + 2], x3 ^= p->a[i + 3];
    p->sink = x0 ^ x1 ^ x2 ^ x3;
    return NULL;
}

/* The best of `passes` reads of a[0..n) by `threads` threads, in GB/s. */
static double read_rate(const uint64_t *a, size_t n, int threads, int passes) {
    double best = 1e9;
    pthread_t tid[64];
    Part parts[64];
    for (int r = 0; r < passes; r++) {
        double t = now();
        if (threads == 1) { /* no thread to start: the caller reads */
            parts[0] = (Part){.a = a, .n = n};
            read_part(&parts[0]);
        }
        for (int k = 0; threads > 1 && k < threads; k++) {
            parts[k] = (Part){.a = a + n / threads * k, .n = n / threads};
            pthread_create(&tid[k], NULL, read_part, &parts[k]);
        }
        for (int k = 0; threads > 1 && k < threads; k++) pthread_join(tid[k], NULL);
        double d = now() - t;
        if (d < best) best = d;
    }
    return (double)(n / threads * threads) * 8 / best / 1e9;
}

int main(int argc, char **argv) {
    int threads = argc > 1 ? atoi(argv[1]) : 0;
    if (threads < 0 || threads > 64) threads = 0;
    const size_t sizes[] = {(size_t)1 << 30, (size_t)64 << 20, (size_t)1 << 20};
    for (int s = 0; s < 3; s++) {
        size_t n = sizes[s] / 8;
        uint64_t *a = malloc(sizes[s]);
        if (a == NULL) return 1;
        for (size_t i = 0; i < n; i++) a[i] = i;
        int passes = s == 0 ? 5 : s == 1 ? 40 : 2000;
        printf("one core reads %5zu MiB at %5.1f GB/s\n", sizes[s] >> 20,
               read_rate(a, n, 1, passes));
        if (s == 0 && threads > 1)
            printf("%2d cores read  %5zu MiB at %5.1f GB/s\n", threads, sizes[s] >> 20,
                   read_rate(a, n, threads, passes));
        free(a);
    }
    return 0;
}
