/* bench/read_spacing.c: how fast one core runs the decode's own multi-block
 * kernels over a packed float16 matrix, by how far apart the blocks they
 * take lie (docs/runs/2026-12-06-spread-streams*.txt). A buffer of MIB MiB
 * (2048 unless given; huge pages asked for) holds blocks of 16 rows x 2048
 * inputs of float16 (64 KiB, a 2048-wide matrix's block, pack_kernels.h).
 * For each instruction set this processor has, its kernel of most blocks
 * (AVX-512F's four, F16C's pair: half_kernels) reads the buffer with its
 * blocks GAP blocks apart, for GAP 1 (side by side, as the decode took them
 * before 0419e34), 2, 4, 8 and 32: with n blocks a call and GAP g, each run
 * of n·g blocks is read as calls at its blocks 0..g-1. Each line is the
 * best of 5 passes over the buffer in GB/s, the spacings taking turns, 3
 * rounds. A benchmark, not a test.
 *
 *   read_spacing [MIB] */
/* madvise and MADV_HUGEPAGE are not POSIX; _DEFAULT_SOURCE declares them. */
#define _DEFAULT_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "ref/kernels/pack_kernels.h"
#include "ref/util/clock.h"

enum { COLS = 2048, BLOCK_HALVES = COLS * PACK_ROWS };

/* One instruction set's kernel of most blocks, and how many it takes. */
typedef struct {
    const char *name;
    WholeBlocks kernel;
    int blocks;
} SpacedKernel;

/* One pass over the buffer's whole runs of n · gap blocks; out [blocks ·
 * PACK_ROWS] takes the sums (each row written once a pass). */
static void read_pass(float *out, const uint16_t *a, size_t blocks, SpacedKernel k, int gap,
                      const float *x) {
    size_t run = (size_t)k.blocks * (size_t)gap;
    for (size_t at = 0; at + run <= blocks; at += run)
        for (int i = 0; i < gap; i++)
            k.kernel(out, x, a + (at + (size_t)i) * BLOCK_HALVES, COLS,
                     (int)((at + (size_t)i) * PACK_ROWS), gap);
}

/* 3 rounds of k over a at each spacing: one line each. */
static void time_spacings(float *out, const uint16_t *a, size_t blocks, SpacedKernel k,
                          const float *x) {
    static const int gaps[] = {1, 2, 4, 8, 32};
    for (int round = 1; round <= 3; round++)
        for (size_t g = 0; g < sizeof gaps / sizeof gaps[0]; g++) {
            size_t run = (size_t)k.blocks * (size_t)gaps[g], used = blocks / run * run;
            double best = 1e30;
            for (int pass = 0; pass < 5; pass++) {
                double t = clock_seconds();
                read_pass(out, a, blocks, k, gaps[g], x);
                t = clock_seconds() - t;
                best = t < best ? t : best;
            }
            printf("round %d, %s, blocks %2d apart: %.1f GB/s\n", round, k.name, gaps[g],
                   (double)used * BLOCK_HALVES * sizeof(uint16_t) / best / 1e9);
        }
}

static int run(long mib) {
    SpacedKernel kernels[2];
    int n = 0;
    if (half_isa_available(HALF_AVX512))
        kernels[n++] = (SpacedKernel){.name = "avx512 four",
                                      .kernel = half_kernels(HALF_AVX512, ELEM_F16)->four,
                                      .blocks = 4};
    if (half_isa_available(HALF_F16C))
        kernels[n++] = (SpacedKernel){
            .name = "f16c pair", .kernel = half_kernels(HALF_F16C, ELEM_F16)->pair, .blocks = 2};
    if (n == 0) {
        fprintf(stderr, "read_spacing: this processor has neither AVX-512F nor F16C\n");
        return 2;
    }
    size_t bytes = (size_t)mib << 20, blocks = bytes / (BLOCK_HALVES * sizeof(uint16_t));
    uint16_t *a = aligned_alloc((size_t)2 << 20, bytes);
    float *out = malloc(blocks * PACK_ROWS * sizeof(float)), x[COLS];
    int rc = 0;
    if (a == NULL || out == NULL) {
        fprintf(stderr, "read_spacing: out of memory for %ld MiB\n", mib);
        rc = 2;
        goto done;
    }
    madvise(a, bytes, MADV_HUGEPAGE); /* as the packed matrices (matrix.c) */
    memset(a, 0x11, bytes);           /* float16 0x1111: small and finite */
    for (int i = 0; i < COLS; i++) x[i] = 1.0f / (float)(i + 1);
    for (int k = 0; k < n; k++) time_spacings(out, a, blocks, kernels[k], x);
done:
    free(a);
    free(out);
    return rc;
}

int main(int argc, char **argv) {
    char *end = NULL;
    long mib = argc > 1 ? strtol(argv[1], &end, 10) : 2048;
    if (argc > 2 || (argc > 1 && (end == argv[1] || *end != '\0')) || mib < 8 || mib > 1 << 16) {
        fprintf(stderr, "usage: read_spacing [MIB from 8 to 65536]\n");
        return 2;
    }
    return run(mib);
}
