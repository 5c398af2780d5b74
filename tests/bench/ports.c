/* bench/ports.c: what the no-fused-multiply-add rule costs on this core
 * (docs/performance.md). Four loops on 16-float vectors held in cache, each
 * with 12 independent accumulators (more than a vector unit's latency times
 * its width, so that no chain waits on its own result), each input a fresh
 * load as in the tile kernel:
 *
 *   mul+add  acc = acc + w * x   a multiply, then an add (stepwise's sums)
 *   fma      acc = fma(w, x, acc) one fused instruction (what stepwise forbids)
 *   mul      acc = acc * w       multiplies only
 *   add      acc = acc + w       adds only
 *
 * A core whose multiplies and adds go to separate units runs mul+add at the
 * fma rate (a multiply-add a lane a unit a cycle, on both); one whose units
 * each take either runs it at half. Prints each loop's billions of lane
 * operations a second (a mul+add or an fma counts one) and the ratio
 * mul+add / fma: the share of the fused peak that index-order sums without
 * fusion can reach. The best of several timings; a benchmark, not a test.
 * x86-64 with AVX-512F only (elsewhere it says so and exits 0). */
#include <stdio.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#define ACCS   12   /* independent sums */
#define INPUTS 64   /* w's vectors: 4 KiB, in L1 */
#define REPS   4096 /* passes over w a timing */

typedef enum { LOOP_MUL_ADD, LOOP_FMA, LOOP_MUL, LOOP_ADD, LOOPS } Loop;
static const char *const loop_names[LOOPS] = {"mul+add", "fma", "mul", "add"};

/* One timing of a loop whose step on accumulator k is STEP: REPS · INPUTS ·
 * ACCS vector operations; the sums are returned so that nothing is left
 * out. One function a loop, so that each is straight-line code. */
#define TIMED_LOOP(name, init, STEP)                                                               \
    __attribute__((target("avx512f,fma"))) static float name(const float *w) {                     \
        __m512 acc[ACCS], x[ACCS];                                                                 \
        _Pragma("GCC unroll 12") for (int k = 0; k < ACCS; k++) {                                  \
            acc[k] = _mm512_set1_ps(init + (float)k * 1e-6f);                                      \
            x[k] = _mm512_set1_ps(1.0f + (float)k * 1e-7f);                                        \
        }                                                                                          \
        for (int r = 0; r < REPS; r++) {                                                           \
            for (int i = 0; i < INPUTS; i++) {                                                     \
                __m512 wi = _mm512_load_ps(w + 16 * i);                                            \
                _Pragma("GCC unroll 12") /* named registers, not memory */                         \
                    for (int k = 0; k < ACCS; k++) acc[k] = STEP;                                  \
            }                                                                                      \
        }                                                                                          \
        (void)x; /* (the mul and add loops do not read it) */                                      \
        __m512 s = acc[0];                                                                         \
        for (int k = 1; k < ACCS; k++) s = _mm512_add_ps(s, acc[k]);                               \
        return _mm512_reduce_add_ps(s);                                                            \
    }
TIMED_LOOP(loop_mul_add, 0.0f, _mm512_add_ps(acc[k], _mm512_mul_ps(wi, x[k])))
TIMED_LOOP(loop_fma, 0.0f, _mm512_fmadd_ps(wi, x[k], acc[k]))
TIMED_LOOP(loop_mul, 1.0f, _mm512_mul_ps(acc[k], wi))
TIMED_LOOP(loop_add, 0.0f, _mm512_add_ps(acc[k], wi))

static float run_loop(Loop loop, const float *w) {
    switch (loop) {
        case LOOP_MUL_ADD:
            return loop_mul_add(w);
        case LOOP_FMA:
            return loop_fma(w);
        case LOOP_MUL:
            return loop_mul(w);
        default:
            return loop_add(w);
    }
}

int main(void) {
    if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("fma")) {
        printf("ports: this processor has no AVX-512F and FMA; nothing measured\n");
        return 0;
    }
    static float w[INPUTS * 16] __attribute__((aligned(64)));
    for (int i = 0; i < INPUTS * 16; i++) w[i] = 1.0f + (float)(i % 7) * 1e-8f; /* near 1: finite */
    double ops = (double)REPS * INPUTS * ACCS * 16, best[LOOPS] = {0};
    float sink = 0;
    for (int round = 0; round < 7; round++) { /* interleaved, the best of each */
        for (int l = 0; l < LOOPS; l++) {
            double t0 = now();
            sink += run_loop((Loop)l, w);
            double rate = ops / (now() - t0) / 1e9;
            if (rate > best[l]) best[l] = rate;
        }
    }
    printf("{");
    for (int l = 0; l < LOOPS; l++) printf("\"%s\": %.1f, ", loop_names[l], best[l]);
    printf("\"mul_add_over_fma\": %.2f, \"sink\": %g}\n", best[LOOP_MUL_ADD] / best[LOOP_FMA],
           (double)sink);
    return 0;
}

#else
int main(void) {
    printf("ports: not an x86-64 processor; nothing measured\n");
    return 0;
}
#endif
