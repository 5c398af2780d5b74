/* quant.c: see quant.h. */
#include "ref/kernels/quant.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ref/kernels/clones.h"

int quant_groups(int n, int group) {
    return n / group + (n % group != 0); /* ceil(n / group), without n + group - 1 overflowing */
}

/* See quant.h: roundf's rule (halves away from zero) without a call into
 * libm, which cost more than the rest of quantizing, in three steps. NaN
 * becomes 0. Clamping next changes nothing (the bounds are whole and
 * rounding is monotone) and keeps |v| small, so that truncating to an
 * integer is exact and defined; v - t is then exact, and a distance of at
 * least one half moves one step away from zero. Checked against roundf on
 * every float. */
static inline float nan_to_zero(float v) {
    return v == v ? v : 0.0f;
}

static inline float clamp_127(float v) {
    v = v > 127.0f ? 127.0f : v;
    return v < -127.0f ? -127.0f : v;
}

static inline int32_t round_clamped32(float v) {
    int32_t t = (int32_t)v;
    float d = v - (float)t;
    return t + (d >= 0.5f) - (d <= -0.5f);
}

static inline int8_t round_clamped(float v) {
    return (int8_t)round_clamped32(v);
}

static inline int8_t code_of(float v) {
    return round_clamped(clamp_127(nan_to_zero(v)));
}

int8_t quant_code(float v) {
    return code_of(v);
}

#define CODE_CHUNK 16 /* values coded together */

/* code_of for CODE_CHUNK values of x / scale, one step at a time over the
 * chunk. Composed in one loop, gcc turns the NaN and clamp tests into
 * branches (each value's conversion then waits behind them) and nothing is
 * vectorised; as separate fixed-length loops over a small array each step
 * is one vector operation. The same steps on every value: the same codes
 * (test_quant checks them against quant_code). */
static ALWAYS_INLINE void code_chunk(const float *x, float scale, int8_t *q) {
    float v[CODE_CHUNK];
    for (int k = 0; k < CODE_CHUNK; k++) v[k] = x[k] / scale;
    for (int k = 0; k < CODE_CHUNK; k++) v[k] = nan_to_zero(v[k]);
    for (int k = 0; k < CODE_CHUNK; k++) v[k] = clamp_127(v[k]);
    int32_t c[CODE_CHUNK]; /* rounded in 32 bits, then narrowed: whole vectors each */
    for (int k = 0; k < CODE_CHUNK; k++) c[k] = round_clamped32(v[k]);
    for (int k = 0; k < CODE_CHUNK; k++) q[k] = (int8_t)c[k];
}

/* The larger of |x| and m, m >= 0; a NaN x never wins, as with fmaxf. */
static inline float larger_abs(float x, float m) {
    float a = fabsf(x);
    return a > m ? a : m;
}

/* The largest |x_i| of n values, NaNs left out. CODE_CHUNK running maxima,
 * one per lane, then the largest of them: the maximum of the same values,
 * whatever the order in which they are compared. */
static ALWAYS_INLINE float abs_max(const float *x, int n) {
    float m[CODE_CHUNK] = {0};
    int i = 0;
    for (; i + CODE_CHUNK <= n; i += CODE_CHUNK)
        for (int k = 0; k < CODE_CHUNK; k++) m[k] = larger_abs(x[i + k], m[k]);
    /* the lanes halved in a tree: four steps, not sixteen in a chain, each
     * loop of a fixed length (one vector operation) */
    for (int k = 0; k < 8; k++) m[k] = larger_abs(m[k + 8], m[k]);
    for (int k = 0; k < 4; k++) m[k] = larger_abs(m[k + 4], m[k]);
    for (int k = 0; k < 2; k++) m[k] = larger_abs(m[k + 2], m[k]);
    float amax = larger_abs(m[1], m[0]);
    for (; i < n; i++) amax = larger_abs(x[i], amax);
    return amax;
}

/* One dispatched call a row, its steps inlined into each clone: a call a
 * chunk through the clones' dispatch cost more than the chunk. */
FAST_CLONES void quantize_row(const float *x, int n, int group, int8_t *q, float *scales) {
    for (int g = 0, start = 0; start < n; g++, start += group) {
        int len = n - start < group ? n - start : group;
        float scale = abs_max(x + start, len) / 127.0f;
        scales[g] = scale;
        if (!(scale > 0.0f)) {
            memset(q + start, 0, (size_t)len);
            continue;
        }
        int i = 0;
        for (; i + CODE_CHUNK <= len; i += CODE_CHUNK)
            code_chunk(x + start + i, scale, q + start + i);
        for (; i < len; i++) q[start + i] = code_of(x[start + i] / scale);
    }
}

void dequantize_row(const int8_t *q, const float *scales, int n, int group, float *out) {
    for (int i = 0; i < n; i++) out[i] = (float)q[i] * scales[i / group];
}

float dot_q8(const int8_t *qx, const float *sx, const int8_t *qw, const float *sw, int n,
             int group) {
    float sum = 0.0f;
    for (int g = 0, start = 0; start < n; g++, start += group) {
        int len = n - start < group ? n - start : group;
        int32_t acc = 0; /* |acc| <= 127 · 127 · group: fits for any group < 133,000 */
        for (int i = 0; i < len; i++) acc += (int32_t)qx[start + i] * (int32_t)qw[start + i];
        sum += (float)acc * (sx[g] * sw[g]);
    }
    return sum;
}

float dot_f32_q8(const float *x, const int8_t *qw, const float *sw, int n, int group) {
    float sum = 0.0f;
    for (int g = 0, start = 0; start < n; g++, start += group) {
        int len = n - start < group ? n - start : group;
        float acc = 0.0f;
        for (int i = 0; i < len; i++) acc += x[start + i] * (float)qw[start + i];
        sum += acc * sw[g];
    }
    return sum;
}

void matmul_q8_rows(float *out, const float *x, const int8_t *qx, const float *sx, const int8_t *q,
                    const float *scales, int T, int C, int OC, int group) {
    int groups = quant_groups(C, group);
    for (int t = 0; t < T; t++) {
        for (int o = 0; o < OC; o++) {
            const int8_t *qo = q + (size_t)o * C;
            const float *so = scales + (size_t)o * groups;
            out[(size_t)t * OC + o] =
                qx != NULL ? dot_q8(qx + (size_t)t * C, sx + (size_t)t * groups, qo, so, C, group)
                           : dot_f32_q8(x + (size_t)t * C, qo, so, C, group);
        }
    }
}

uint64_t quant_matrix_bytes(int rows, int cols, int group) {
    return (uint64_t)rows * (uint64_t)cols +
           (uint64_t)rows * (uint64_t)quant_groups(cols, group) * sizeof(float);
}

QuantStats quant_row_stats(const float *x, const int8_t *q, const float *scales, int n, int group) {
    QuantStats s = {scales[0], 0.0f, 0};
    for (int i = 0; i < n; i++) {
        float err = fabsf(x[i] - (float)q[i] * scales[i / group]);
        s.max_error = fmaxf(s.max_error, err);
        /* Does an earlier, different value of the same group share this code? */
        int start = (i / group) * group;
        for (int j = start; j < i; j++) {
            if (q[j] == q[i] && x[j] != x[i]) {
                bool first_of_value = true;
                for (int k = start; k < i; k++) first_of_value &= !(x[k] == x[i]);
                s.collapsed += first_of_value;
                break;
            }
        }
    }
    return s;
}
