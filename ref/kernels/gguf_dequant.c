/* gguf_dequant.c: see gguf_dequant.h. */
#include "ref/kernels/gguf_dequant.h"

#include <stddef.h>

#include "ref/util/float16.h"

uint64_t gguf_block_bytes(uint32_t type, uint64_t *values) {
    *values = 1;
    switch (type) {
        case GGML_F32:
            return 4;
        case GGML_F16:
        case GGML_BF16:
            return 2;
        case GGML_Q4_0:
            return *values = 32, 18;
        case GGML_Q4_1:
            return *values = 32, 20;
        case GGML_Q8_0:
            return *values = 32, 34;
        case GGML_Q4_K:
            return *values = 256, 144;
        case GGML_Q5_K:
            return *values = 256, 176;
        case GGML_Q6_K:
            return *values = 256, 210;
        default:
            return 0;
    }
}

const char *gguf_type_name(uint32_t type) {
    switch (type) {
        case GGML_F32:
            return "F32";
        case GGML_F16:
            return "F16";
        case GGML_BF16:
            return "BF16";
        case GGML_Q4_0:
            return "Q4_0";
        case GGML_Q4_1:
            return "Q4_1";
        case GGML_Q8_0:
            return "Q8_0";
        case GGML_Q4_K:
            return "Q4_K";
        case GGML_Q5_K:
            return "Q5_K";
        case GGML_Q6_K:
            return "Q6_K";
        default:
            return "unknown";
    }
}

/* The F16 at p (unaligned) as float32. */
static float half_at(const unsigned char *p) {
    uint16_t h = (uint16_t)(p[0] | p[1] << 8); /* little-endian, as GGUF stores it */
    return half_to_float(h);
}

bool gguf_block_codes(uint32_t type, const unsigned char *b, int8_t codes[32], float *scale) {
    if (type != GGML_Q8_0 && type != GGML_Q4_0) return false;
    *scale = half_at(b);
    for (int j = 0; j < 32 && type == GGML_Q8_0; j++) codes[j] = (int8_t)b[2 + j];
    for (int j = 0; j < 16 && type == GGML_Q4_0; j++) {
        codes[j] = (int8_t)((b[2 + j] & 0x0F) - 8);
        codes[j + 16] = (int8_t)((b[2 + j] >> 4) - 8);
    }
    return true;
}

/* Q8_0 and Q4_0 are their codes times the scale (gguf_block_codes); Q4_1 adds
 * its minimum. */
static void dequantize_32(uint32_t type, const unsigned char *b, float *y) {
    int8_t q[32];
    float d;
    if (gguf_block_codes(type, b, q, &d)) {
        for (int j = 0; j < 32; j++) y[j] = (float)q[j] * d;
        return;
    }
    d = half_at(b); /* Q4_1 */
    float m = half_at(b + 2);
    for (int j = 0; j < 16; j++) {
        y[j] = (float)(b[4 + j] & 0x0F) * d + m;
        y[j + 16] = (float)(b[4 + j] >> 4) * d + m;
    }
}

/* The 6-bit scale and minimum of sub-block j of Q4_K and Q5_K. */
static void scale_min_k4(int j, const unsigned char *s, int *sc, int *mn) {
    if (j < 4) {
        *sc = s[j] & 63, *mn = s[j + 4] & 63;
    } else {
        *sc = (s[j + 4] & 0x0F) | ((s[j - 4] >> 6) << 4);
        *mn = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
    }
}

/* Q4_K (qh NULL) and Q5_K. */
static void dequantize_q4_q5_k(const unsigned char *b, const unsigned char *qh,
                               const unsigned char *qs, float *y) {
    float d = half_at(b), dmin = half_at(b + 2);
    const unsigned char *scales = b + 4;
    for (int i = 0; i < 4; i++) { /* 64 values: sub-blocks 2i (low nibbles) and 2i+1 (high) */
        int sc, mn;
        scale_min_k4(2 * i, scales, &sc, &mn);
        float d1 = d * (float)sc, m1 = dmin * (float)mn;
        scale_min_k4(2 * i + 1, scales, &sc, &mn);
        float d2 = d * (float)sc, m2 = dmin * (float)mn;
        for (int l = 0; l < 32; l++) {
            int hi1 = qh != NULL && (qh[l] >> (2 * i)) & 1 ? 16 : 0;
            int hi2 = qh != NULL && (qh[l] >> (2 * i + 1)) & 1 ? 16 : 0;
            y[64 * i + l] = d1 * (float)((qs[32 * i + l] & 0x0F) + hi1) - m1;
            y[64 * i + 32 + l] = d2 * (float)((qs[32 * i + l] >> 4) + hi2) - m2;
        }
    }
}

/* Q6_K: two halves of 128; in each, value l (0..31) of the four quarters
 * takes the low or high nibble of ql[l] or ql[l+32] and two bits of qh[l]. */
static void dequantize_q6_k(const unsigned char *b, float *y) {
    const unsigned char *ql = b, *qh = b + 128;
    const signed char *sc = (const signed char *)(b + 192);
    float d = half_at(b + 208);
    for (int half = 0; half < 2; half++) {
        for (int l = 0; l < 32; l++) {
            int is = l / 16;
            int q1 = ((ql[l] & 0x0F) | ((qh[l] & 3) << 4)) - 32;
            int q2 = ((ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4)) - 32;
            int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
            int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
            y[l] = d * (float)sc[is] * (float)q1;
            y[l + 32] = d * (float)sc[is + 2] * (float)q2;
            y[l + 64] = d * (float)sc[is + 4] * (float)q3;
            y[l + 96] = d * (float)sc[is + 6] * (float)q4;
        }
        y += 128, ql += 64, qh += 32, sc += 8;
    }
}

void gguf_dequantize_block(uint32_t type, const unsigned char *b, float *y) {
    switch (type) {
        case GGML_Q4_K:
            dequantize_q4_q5_k(b, NULL, b + 16, y);
            break;
        case GGML_Q5_K:
            dequantize_q4_q5_k(b, b + 16, b + 48, y);
            break;
        case GGML_Q6_K:
            dequantize_q6_k(b, y);
            break;
        default:
            dequantize_32(type, b, y);
    }
}
