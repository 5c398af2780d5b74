/* bench/bandwidth.c: how fast one core reads memory, for `make bench-batch`
 * (and docs/batching.md): a buffer of each size read again and again with
 * four independent XOR chains (so the core is never waiting on its own
 * arithmetic), the best of several passes in GB/s. 1 GiB is past every
 * cache (DRAM); 64 MiB is about the 15M shape's weights (58 MiB); 1 MiB is
 * stories260K's. A benchmark, not a test. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(void) {
    const size_t sizes[] = {(size_t)1 << 30, (size_t)64 << 20, (size_t)1 << 20};
    for (int s = 0; s < 3; s++) {
        size_t n = sizes[s] / 8;
        uint64_t *a = malloc(sizes[s]), sink = 0;
        if (a == NULL) return 1;
        for (size_t i = 0; i < n; i++) a[i] = i;
        double best = 1e9;
        int passes = s == 0 ? 5 : s == 1 ? 40 : 2000;
        for (int r = 0; r < passes; r++) {
            double t = now();
            uint64_t x0 = 0, x1 = 0, x2 = 0, x3 = 0;
            for (size_t i = 0; i < n; i += 4)
                x0 ^= a[i], x1 ^= a[i + 1], x2 ^= a[i + 2], x3 ^= a[i + 3];
            sink += x0 ^ x1 ^ x2 ^ x3;
            double d = now() - t;
            if (d < best) best = d;
        }
        printf("one core reads %5zu MiB at %5.1f GB/s%s\n", sizes[s] >> 20,
               (double)sizes[s] / best / 1e9, sink == 42 ? " " : "");
        free(a);
    }
    return 0;
}
