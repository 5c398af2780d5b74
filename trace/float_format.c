/* float_format.c: see float_format.h.
 *
 * A float is x = m · 2^e with m < 2^24. Its nine significant digits are
 * N = round(x · 10^k) with k = 8 - floor(log10 x), rounded half to even on
 * an exact tie, as printf does. For 1e-22 <= x < 1e9, m · 10^k fits in 128
 * bits and the division by 2^-e is a shift with an exact remainder, so N is
 * exact. Outside that range, snprintf does it. */
#include "trace/float_format.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef unsigned __int128 u128;

/* 10^k for 0 <= k <= 30: 10^19 is the largest power of ten in 64 bits. */
static u128 pow10_u128(int k) {
    static const uint64_t small[20] = {1u,
                                       10u,
                                       100u,
                                       1000u,
                                       10000u,
                                       100000u,
                                       1000000u,
                                       10000000u,
                                       100000000u,
                                       1000000000u,
                                       10000000000u,
                                       100000000000u,
                                       1000000000000u,
                                       10000000000000u,
                                       100000000000000u,
                                       1000000000000000u,
                                       10000000000000000u,
                                       100000000000000000u,
                                       1000000000000000000u,
                                       10000000000000000000u};
    return k < 20 ? (u128)small[k] : (u128)small[19] * small[k - 19];
}

/* N = round-half-even(m · 10^k · 2^e), or false when out of the exact range. */
static int scaled_digits(uint32_t m, int e, int k, uint64_t *n) {
    if (k < 0 || k > 30 || e > 6 || e < -120) return 0;
    u128 num = (u128)m * pow10_u128(k);
    if (e >= 0) {
        *n = (uint64_t)(num << e);
        return 1;
    }
    int s = -e;
    u128 q = num >> s, rem = num & (((u128)1 << s) - 1), half = (u128)1 << (s - 1);
    if (rem > half || (rem == half && (q & 1))) q++;
    *n = (uint64_t)q;
    return 1;
}

/* floor(n · log10 2), for |n| < 1650, in integers. */
static int floor_log10_pow2(int n) {
    return n >= 0 ? (n * 78913) >> 18 : -((-n * 78913 + (1 << 18) - 1) >> 18);
}

/* Write "e+XX" or "e-XX" (at least two digits, as printf does) at p. */
static char *put_exponent(char *p, int d) {
    *p++ = 'e';
    *p++ = d < 0 ? '-' : '+';
    int a = d < 0 ? -d : d;
    if (a >= 100) *p++ = (char)('0' + a / 100);
    *p++ = (char)('0' + a / 10 % 10);
    *p++ = (char)('0' + a % 10);
    return p;
}

int format_float9(float v, char *buf) {
    if (v == 0.0f) return (int)(strcpy(buf, signbit(v) ? "-0" : "0"), strlen(buf));
    /* x = |v| = m · 2^e read from the bits: 24-bit m with the implicit one
     * for a normal float; a subnormal's e = -149 is outside the exact range. */
    uint32_t bits;
    memcpy(&bits, &v, sizeof bits);
    int biased = (int)((bits >> 23) & 0xffu);
    uint32_t m = bits & 0x7fffffu;
    if (biased == 0) return snprintf(buf, 32, "%.9g", (double)v);
    m |= 0x800000u;
    int e = biased - 150;
    /* x is in [2^(e+23), 2^(e+24)), so floor(log10 x) is floor((e + 23) · log10 2)
     * or one more; 78913 / 2^18 is log10 2 to the precision that needs. The
     * loop below moves d up or down when N comes out with ten or eight digits. */
    int d = floor_log10_pow2(e + 23);
    uint64_t n = 0;
    for (int tries = 0; tries < 3; tries++) {
        if (!scaled_digits(m, e, 8 - d, &n)) return snprintf(buf, 32, "%.9g", (double)v);
        if (n >= 1000000000u)
            d++;
        else if (n < 100000000u)
            d--;
        else
            break;
    }
    if (n < 100000000u || n >= 1000000000u) return snprintf(buf, 32, "%.9g", (double)v);
    char digits[10];
    for (int i = 8; i >= 0; i--) digits[i] = (char)('0' + n % 10), n /= 10;
    int nd = 9;
    while (nd > 1 && digits[nd - 1] == '0') nd--; /* %g drops trailing zeros */
    char *p = buf;
    if (signbit(v)) *p++ = '-';
    if (d < -4 || d >= 9) { /* d.ddde±XX */
        *p++ = digits[0];
        if (nd > 1) {
            *p++ = '.';
            memcpy(p, digits + 1, (size_t)nd - 1), p += nd - 1;
        }
        p = put_exponent(p, d);
    } else if (d >= 0) { /* ddd.ddd */
        int whole = d + 1;
        for (int i = 0; i < whole; i++) *p++ = i < nd ? digits[i] : '0';
        if (nd > whole) {
            *p++ = '.';
            memcpy(p, digits + whole, (size_t)(nd - whole)), p += nd - whole;
        }
    } else { /* 0.000ddd */
        *p++ = '0', *p++ = '.';
        for (int i = 0; i < -d - 1; i++) *p++ = '0';
        memcpy(p, digits, (size_t)nd), p += nd;
    }
    *p = '\0';
    return (int)(p - buf);
}
