/* test_gguf_dequant.c: one block of each ggml type, its values worked out
 * by hand from the format's layout (gguf_dequant.h): scales, minimums, the
 * nibble order, Q5_K's fifth bit, Q6_K's 2-bit high parts and the 6-bit
 * packing of the k-quants' scales. */
#include <criterion/criterion.h>
#include <string.h>

#include "ref/kernels/gguf_dequant.h"

/* F16 bit patterns */
enum { H_0_25 = 0x3400, H_0_5 = 0x3800, H_1 = 0x3C00, H_2 = 0x4000, H_MINUS_1 = 0xBC00 };

static void put_half(unsigned char *p, unsigned h) {
    p[0] = h & 0xFF, p[1] = h >> 8;
}

Test(gguf_dequant, blocks_of_32) {
    unsigned char b[34] = {0};
    float y[32];
    put_half(b, H_0_5); /* Q8_0, d = 0.5: q -128, -1, 0, 1, 127 */
    b[2] = 0x80, b[3] = 0xFF, b[4] = 0, b[5] = 1, b[6] = 127;
    gguf_dequantize_block(GGML_Q8_0, b, y);
    float q8[] = {-64, -0.5f, 0, 0.5f, 63.5f};
    for (int i = 0; i < 5; i++) cr_expect_float_eq(y[i], q8[i], 0, "Q8_0 %d", i);
    memset(b, 0, sizeof b); /* Q4_0, d = 2: byte 0x1F is values 0 (15) and 16 (1) */
    put_half(b, H_2);
    b[2] = 0x1F;
    gguf_dequantize_block(GGML_Q4_0, b, y);
    cr_expect_float_eq(y[0], (15 - 8) * 2.0f, 0);
    cr_expect_float_eq(y[16], (1 - 8) * 2.0f, 0);
    cr_expect_float_eq(y[1], -16.0f, 0, "nibble 0 is -8 d");
    memset(b, 0, sizeof b); /* Q4_1, d = 0.5, m = -1: byte 0x30 is values 0 (0) and 16 (3) */
    put_half(b, H_0_5), put_half(b + 2, H_MINUS_1);
    b[4] = 0x30;
    gguf_dequantize_block(GGML_Q4_1, b, y);
    cr_expect_float_eq(y[0], -1.0f, 0);
    cr_expect_float_eq(y[16], 0.5f, 0);
}

/* Scales for Q4_K and Q5_K: d = 1, dmin = 0.5;
 *   sub-block 0: s[0] & 63 = 3, min s[4] & 63 = 2  (s[0] = 3 | 1 << 6)
 *   sub-block 1: s[1] = 5, min s[5] = 1
 *   sub-block 4: scale (s[8] & 15) | (s[0] >> 6) << 4 = 7 | 16 = 23,
 *                min (s[8] >> 4) | (s[4] >> 6) << 4 = 2   (s[8] = 0x27)
 * qs[0] = 0x9A: value 0 is 10 (low nibble), value 32 is 9 (high nibble);
 * qs[64] = 0x04: value 128 (the third 64, low nibbles) is 4. */
static void k_scales(unsigned char *b) {
    put_half(b, H_1), put_half(b + 2, H_0_5);
    unsigned char *s = b + 4;
    s[0] = 3 | 1 << 6, s[4] = 2, s[1] = 5, s[5] = 1, s[8] = 0x27;
}

Test(gguf_dequant, q4_k) {
    unsigned char b[144] = {0};
    float y[256];
    k_scales(b);
    unsigned char *qs = b + 16;
    qs[0] = 0x9A, qs[64] = 0x04;
    gguf_dequantize_block(GGML_Q4_K, b, y);
    cr_expect_float_eq(y[0], 3 * 10 - 0.5f * 2, 0);   /* 29 */
    cr_expect_float_eq(y[32], 5 * 9 - 0.5f * 1, 0);   /* 44.5 */
    cr_expect_float_eq(y[128], 23 * 4 - 0.5f * 2, 0); /* 91 */
    cr_expect_float_eq(y[1], -1.0f, 0, "q 0 is minus the minimum");
}

/* Q5_K as Q4_K, plus qh[0] = 0x11: bit 0 adds 16 to value 0, bit 4 (the
 * third 64's low half) to value 128; bit 1 (value 32's) is clear. */
Test(gguf_dequant, q5_k) {
    unsigned char b[176] = {0};
    float y[256];
    k_scales(b);
    unsigned char *qh = b + 16, *qs = b + 48;
    qh[0] = 0x11;
    qs[0] = 0x9A, qs[64] = 0x04;
    gguf_dequantize_block(GGML_Q5_K, b, y);
    cr_expect_float_eq(y[0], 3 * (10 + 16) - 0.5f * 2, 0);   /* 77 */
    cr_expect_float_eq(y[32], 5 * 9 - 0.5f * 1, 0);          /* 44.5 */
    cr_expect_float_eq(y[128], 23 * (4 + 16) - 0.5f * 2, 0); /* 459 */
    cr_expect_float_eq(y[1], -1.0f, 0);
}

/* Q6_K, d = 0.25, scales[0] = 2, [2] = -3, [4] = 1, [6] = 4;
 * ql[0] = 0x21, ql[32] = 0x05, qh[0] = 0xE4 (2-bit fields 0, 1, 2, 3):
 *   value 0:  (1 | 0 << 4) - 32 = -31, times 0.25 * 2  = -15.5
 *   value 32: (5 | 1 << 4) - 32 = -11, times 0.25 * -3 = 8.25
 *   value 64: (2 | 2 << 4) - 32 = 2,   times 0.25 * 1  = 0.5
 *   value 96: (0 | 3 << 4) - 32 = 16,  times 0.25 * 4  = 16
 *   value 1:  0 - 32, times 0.25 * 2 = -16 */
Test(gguf_dequant, q6_k) {
    unsigned char b[210] = {0};
    float y[256];
    unsigned char *ql = b, *qh = b + 128;
    signed char *sc = (signed char *)(b + 192);
    put_half(b + 208, H_0_25);
    sc[0] = 2, sc[2] = -3, sc[4] = 1, sc[6] = 4;
    ql[0] = 0x21, ql[32] = 0x05, qh[0] = 0xE4;
    gguf_dequantize_block(GGML_Q6_K, b, y);
    cr_expect_float_eq(y[0], -15.5f, 0);
    cr_expect_float_eq(y[32], 8.25f, 0);
    cr_expect_float_eq(y[64], 0.5f, 0);
    cr_expect_float_eq(y[96], 16.0f, 0);
    cr_expect_float_eq(y[1], -16.0f, 0);
    cr_expect_float_eq(y[128], 0.0f, 0, "the second half has scales of its own (0 here)");
}

Test(gguf_dequant, block_sizes) {
    uint64_t n;
    cr_expect_eq(gguf_block_bytes(GGML_Q4_K, &n), 144u);
    cr_expect_eq(n, 256u);
    cr_expect_eq(gguf_block_bytes(GGML_Q5_K, &n), 176u);
    cr_expect_eq(gguf_block_bytes(GGML_Q6_K, &n), 210u);
    cr_expect_eq(gguf_block_bytes(GGML_Q8_0, &n), 34u);
    cr_expect_eq(n, 32u);
    cr_expect_eq(gguf_block_bytes(7, &n), 0u, "Q5_1 is not read");
}
