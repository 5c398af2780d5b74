/* bench/read_spacing.c: how fast one core reads a packed float16 matrix as
 * the decode's four-block kernel reads it, by how far apart its four
 * blocks lie (docs/runs/2026-12-06-spread-streams.txt). A buffer of MIB
 * MiB (2048 unless given; huge pages asked for) holds blocks of 16 rows x
 * 2048 inputs of float16 (64 KiB, a 2048-wide matrix's block,
 * pack_kernels.h); it is read four blocks at a time, 32 bytes of each in
 * turn, as token4_avx512 reads them: widened (vcvtph2ps), multiplied by an
 * input, added into four sums. The four blocks are GAP blocks apart, for
 * GAP 1 (side by side, as the decode took them before 0419e34), 2, 4, 8
 * and 32: with GAP g, each run of 4g blocks is read as its blocks i, i + g,
 * i + 2g, i + 3g for i < g. Each line is the best of 5 passes over the
 * buffer in GB/s, the spacings taking turns, 3 rounds. Needs AVX-512F. A
 * benchmark, not a test.
 *
 *   read_spacing [MIB] */
/* madvise and MADV_HUGEPAGE are not POSIX; _DEFAULT_SOURCE declares them. */
#define _DEFAULT_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

enum { COLS = 2048, ROWS = 16, BLOCK = COLS * ROWS }; /* halves a block */

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Four blocks `gap` apart against x, as token4_avx512 (with its prefetch,
 * 2 KiB ahead in each stream): returns a sum, so nothing is optimised
 * away. */
__attribute__((target("avx512f"))) static float four_blocks(const uint16_t *b0, size_t gap,
                                                            const float *x) {
    const uint16_t *b1 = b0 + gap * BLOCK, *b2 = b1 + gap * BLOCK, *b3 = b2 + gap * BLOCK;
    __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    for (size_t i = 0; i < COLS; i++) {
        size_t at = i * ROWS;
        __m512 xi = _mm512_set1_ps(x[i]);
        if ((i & 1) == 0) {
            __builtin_prefetch(b0 + at + 1024), __builtin_prefetch(b1 + at + 1024);
            __builtin_prefetch(b2 + at + 1024), __builtin_prefetch(b3 + at + 1024);
        }
        s0 = _mm512_add_ps(
            s0, _mm512_mul_ps(_mm512_cvtph_ps(_mm256_loadu_si256((const void *)(b0 + at))), xi));
        s1 = _mm512_add_ps(
            s1, _mm512_mul_ps(_mm512_cvtph_ps(_mm256_loadu_si256((const void *)(b1 + at))), xi));
        s2 = _mm512_add_ps(
            s2, _mm512_mul_ps(_mm512_cvtph_ps(_mm256_loadu_si256((const void *)(b2 + at))), xi));
        s3 = _mm512_add_ps(
            s3, _mm512_mul_ps(_mm512_cvtph_ps(_mm256_loadu_si256((const void *)(b3 + at))), xi));
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(s0, s1), _mm512_add_ps(s2, s3)));
}

/* One pass over the buffer's whole runs of 4 · gap blocks. */
static float read_pass(const uint16_t *a, size_t blocks, size_t gap, const float *x) {
    float sum = 0.0f;
    for (size_t run = 0; run + 4 * gap <= blocks; run += 4 * gap)
        for (size_t i = 0; i < gap; i++) sum += four_blocks(a + (run + i) * BLOCK, gap, x);
    return sum;
}

static int run(long mib) {
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx512f")) {
        fprintf(stderr, "read_spacing: needs AVX-512F (the four-block kernel's)\n");
        return 2;
    }
    static const size_t gaps[] = {1, 2, 4, 8, 32};
    size_t bytes = (size_t)mib << 20, blocks = bytes / (BLOCK * sizeof(uint16_t));
    uint16_t *a = aligned_alloc((size_t)2 << 20, bytes);
    float x[COLS];
    if (a == NULL) {
        fprintf(stderr, "read_spacing: out of memory for %ld MiB\n", mib);
        return 2;
    }
    madvise(a, bytes, MADV_HUGEPAGE); /* as the packed matrices (matrix.c) */
    memset(a, 0x11, bytes);           /* float16 0x1111: small and finite */
    for (int i = 0; i < COLS; i++) x[i] = 1.0f / (float)(i + 1);
    volatile float sink = 0.0f;
    for (int round = 1; round <= 3; round++)
        for (size_t g = 0; g < sizeof gaps / sizeof gaps[0]; g++) {
            size_t run = 4 * gaps[g], used = blocks / run * run;
            double best = 1e30;
            for (int pass = 0; pass < 5; pass++) {
                double t = now();
                sink = sink + read_pass(a, blocks, gaps[g], x);
                t = now() - t;
                best = t < best ? t : best;
            }
            printf("round %d, four blocks %2zu apart: %.1f GB/s\n", round, gaps[g],
                   (double)used * BLOCK * sizeof(uint16_t) / best / 1e9);
        }
    free(a);
    return 0;
}
#else
static int run(long mib) {
    (void)mib;
    fprintf(stderr, "read_spacing: needs x86-64 with AVX-512F (the four-block kernel's)\n");
    return 2;
}
#endif

int main(int argc, char **argv) {
    char *end = NULL;
    long mib = argc > 1 ? strtol(argv[1], &end, 10) : 2048;
    if (argc > 2 || (argc > 1 && (end == argv[1] || *end != '\0')) || mib < 8 || mib > 1 << 16) {
        fprintf(stderr, "usage: read_spacing [MIB from 8 to 65536]\n");
        return 2;
    }
    return run(mib);
}
