/* quant.h: symmetric int8 quantization with one float32 scale per group.
 *
 * A row of n values is cut into groups of G consecutive values (the last
 * group is shorter when G does not divide n). For each group
 *     scale = max|x| / 127,   q_i = round(x_i / scale)  in [-127, 127]
 * and x_i is read back as q_i · scale. A group of zeros has scale 0 and
 * codes 0. This is the scheme of llama.cpp's Q8_0 and llama2.c's runq.c;
 * docs/quantization.md says where the details differ. */
#ifndef STEPWISE_QUANT_H
#define STEPWISE_QUANT_H

#include <stdbool.h>
#include <stdint.h>

/* Groups in a row of n values: ceil(n / group). */
int quant_groups(int n, int group);

/* The code of v = x / scale: roundf(v) clamped to [-127, 127], 0 for NaN. */
int8_t quant_code(float v);

/* Quantize x[0..n) into q[0..n) and scales[0..quant_groups(n, group)). */
void quantize_row(const float *x, int n, int group, int8_t *q, float *scales);

/* The values the codes stand for: out[i] = q[i] · scale of i's group. */
void dequantize_row(const int8_t *q, const float *scales, int n, int group, float *out);

/* Σ_i x_i · w_i for two quantized rows with the same grouping: per group
 * an int8 × int8 dot product accumulated in int32, scaled once by
 * sx · sw, and the groups summed in order. */
float dot_q8(const int8_t *qx, const float *sx, const int8_t *qw, const float *sw, int n,
             int group);

/* Σ_i x_i · w_i for float x and a quantized row w: per group,
 * sw · Σ_i x_i · q_i (float, in order), the groups summed in order. */
float dot_f32_q8(const float *x, const int8_t *qw, const float *sw, int n, int group);

/* What is quantized while the model runs (weights are a property of the
 * model: see model_quant.h). */
typedef struct {
    bool activations; /* each matmul input, per group of `group` */
    bool kv;          /* the KV cache: one scale per (position, KV head) */
    int group;        /* activation groups with float weights (int8 weights impose theirs) */
} QuantRuntime;

/* The plain int8 kernel: out[t][o] = dot_f32_q8(x[t], q[o]) for row-major
 * codes q [OC, C] with scales [OC, groups]; with qx/sx (activations
 * quantized with the same grouping, [T, C] and [T, groups]) dot_q8 instead.
 * One dot product at a time; the packed kernel gives the same bits. */
void matmul_q8_rows(float *out, const float *x, const int8_t *qx, const float *sx, const int8_t *q,
                    const float *scales, int T, int C, int OC, int group);

/* Bytes a quantized matrix [rows, cols] takes: codes and scales. */
uint64_t quant_matrix_bytes(int rows, int cols, int group);

/* What quantizing one row did, for the trace: the scale of its first group,
 * the largest |x - dequantized| over the row, and how many distinct values
 * shared their code with another distinct value. */
typedef struct {
    float first_scale;
    float max_error;
    int collapsed; /* distinct values in the row that landed on an already-used code of their group
                    */
} QuantStats;

QuantStats quant_row_stats(const float *x, const int8_t *q, const float *scales, int n, int group);

#endif
