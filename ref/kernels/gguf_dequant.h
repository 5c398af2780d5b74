/* gguf_dequant.h: ggml's block formats, dequantized to float32 in the order
 * of operations of ggml's reference C code (dequantize_row_*), so that the
 * float32 values are the ones llama.cpp's reference path computes with.
 *
 * Blocks of 32 (one F16 scale d, and for Q4_1 an F16 minimum m):
 *   Q8_0  34 bytes: d, int8 q[32];                 x = q d
 *   Q4_0  18 bytes: d, 16 bytes of nibbles;        x = (q - 8) d
 *   Q4_1  20 bytes: d, m, 16 bytes of nibbles;     x = q d + m
 * (low nibbles are values 0..15, high nibbles 16..31).
 *
 * Super-blocks of 256, in 8 sub-blocks of 32 (Q4_K, Q5_K) or 16 of 16 (Q6_K):
 *   Q4_K 144 bytes: d, dmin (F16), scales[12], qs[128]
 *   Q5_K 176 bytes: d, dmin, scales[12], qh[32], qs[128]
 *   Q6_K 210 bytes: ql[128], qh[64], int8 scales[16], d
 * Q4_K/Q5_K: sub-block j has a 6-bit scale sc and minimum mn packed in
 * scales[] (j < 4: sc = s[j] & 63, mn = s[j+4] & 63; j >= 4: sc = (s[j+4] &
 * 15) | (s[j-4] >> 6) << 4, mn = (s[j+4] >> 4) | (s[j] >> 6) << 4), and
 * x = (d sc) q - (dmin mn). Each 64 values take 32 bytes of qs: the low
 * nibbles first, then the high ones; Q5_K adds a fifth bit from qh (bit
 * 2i for the low half of the i-th 64, bit 2i+1 for the high half).
 * Q6_K: q = (4 bits of ql | 2 bits of qh << 4) - 32, x = (d scale) q, with a
 * scale each 16 values (the layout is in gguf_dequant.c). */
#ifndef STEPWISE_GGUF_DEQUANT_H
#define STEPWISE_GGUF_DEQUANT_H

#include <stdbool.h>
#include <stdint.h>

/* Tensor types stepwise reads (ggml's numbering). The quantized ones come
 * in blocks of 32 values along the first dimension, each with an F16 scale:
 * Q4_0 (18 bytes: d, 16 bytes of 4-bit q, x = (q - 8) d), Q4_1 (20 bytes: d,
 * m, 4-bit q, x = q d + m) and Q8_0 (34 bytes: d, 32 int8 q, x = q d); the
 * low nibbles hold values 0..15 of a block, the high ones 16..31.
 * The k-quants come in super-blocks of 256 (gguf_dequant.h spells them out):
 * Q4_K (144 bytes), Q5_K (176) and Q6_K (210). */
enum {
    GGML_F32 = 0,
    GGML_F16 = 1,
    GGML_Q4_0 = 2,
    GGML_Q4_1 = 3,
    GGML_Q8_0 = 8,
    GGML_Q4_K = 12,
    GGML_Q5_K = 13,
    GGML_Q6_K = 14,
    GGML_BF16 = 30
};

/* The most values one block holds (a k-quant super-block). */
#define GGUF_MAX_BLOCK_VALUES 256

/* Bytes of one block of ggml type `type` and the values it holds
 * (*values: 1 for F32, F16 and BF16); 0 for a type stepwise does not read. */
uint64_t gguf_block_bytes(uint32_t type, uint64_t *values);

/* "F32", "Q4_K", ...; "unknown" for a type stepwise does not read. */
const char *gguf_type_name(uint32_t type);

/* One block of a quantized type (Q8_0, Q4_0, Q4_1: 32 values; Q4_K, Q5_K,
 * Q6_K: 256) from b into y. */
void gguf_dequantize_block(uint32_t type, const unsigned char *b, float *y);

/* A block of Q8_0 or Q4_0 as what it is: 32 int8 codes (Q4_0's nibbles
 * less 8) and its float16 scale widened, so that code · scale is each value
 * gguf_dequantize_block gives. False (nothing written) for another type. */
bool gguf_block_codes(uint32_t type, const unsigned char *b, int8_t codes[32], float *scale);

#endif
