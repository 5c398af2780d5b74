/* float16.c: see float16.h. */
#include "ref/util/float16.h"

#include <string.h>

float half_to_float(uint16_t h) {
    uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1F, man = h & 0x3FF, bits;
    if (exp == 0x1F) {
        bits = sign | 0x7F800000u | man << 13; /* inf, NaN */
    } else if (exp != 0) {
        bits = sign | (exp + 112) << 23 | man << 13; /* normal: rebias 15 -> 127 */
    } else if (man == 0) {
        bits = sign; /* zero */
    } else {         /* subnormal half: a normal float */
        int shift = 0;
        while ((man & 0x400) == 0) man <<= 1, shift++;
        bits = sign | (uint32_t)(113 - shift) << 23 | (man & 0x3FF) << 13;
    }
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

float half_round(float f) {
    return half_to_float(float_to_half(f));
}

uint16_t float_to_half(float f) {
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    uint32_t sign = (x >> 16) & 0x8000, exp = (x >> 23) & 0xFF, man = x & 0x7FFFFF;
    if (exp == 0xFF) return (uint16_t)(sign | 0x7C00 | (man ? 0x200 : 0)); /* inf, NaN */
    int e = (int)exp - 127 + 15;
    if (e >= 31) return (uint16_t)(sign | 0x7C00);
    if (e <= 0) { /* a half subnormal, or zero */
        if (e < -10) return (uint16_t)sign;
        man |= 0x800000;
        int shift = 14 - e;
        uint32_t half = man >> shift, rest = man & ((1u << shift) - 1), mid = 1u << (shift - 1);
        if (rest > mid || (rest == mid && (half & 1))) half++;
        return (uint16_t)(sign | half);
    }
    uint32_t half = (uint32_t)e << 10 | man >> 13, rest = man & 0x1FFF;
    if (rest > 0x1000 || (rest == 0x1000 && (half & 1))) half++; /* may carry into the exponent */
    return (uint16_t)(sign | half);
}

uint16_t float_to_bf16(float f) {
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    if ((x & 0x7F800000) == 0x7F800000 && (x & 0x7FFFFF)) return (uint16_t)(x >> 16 | 0x40);
    x += 0x7FFF + ((x >> 16) & 1);
    return (uint16_t)(x >> 16);
}
