/* float_format.c: see float_format.h.
 *
 * A float is x = m · 2^e with m < 2^24. Its nine significant digits are
 * N = round(x · 10^k) with k = 8 - floor(log10 x), rounded half to even on
 * an exact tie, as printf does. For 1e-22 <= x < 1e9, m · 10^k fits in 128
 * bits and the division by 2^-e is a shift with an exact remainder, so N is
 * exact. Outside that range, snprintf does it. */
#include "float_format.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef unsigned __int128 u128;

static u128 pow10_u128(int k) {
    u128 p = 1;
    while (k-- > 0) p *= 10;
    return p;
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

int format_float9(float v, char *buf) {
    if (v == 0.0f) return (int)(strcpy(buf, signbit(v) ? "-0" : "0"), strlen(buf));
    double x = fabs((double)v);
    int e2;
    double mant = frexp(x, &e2); /* x = mant · 2^e2, mant in [0.5, 1) */
    uint32_t m = (uint32_t)ldexp(mant, 24);
    int e = e2 - 24, d = (int)floor(log10(x));
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
        p += sprintf(p, "e%c%02d", d < 0 ? '-' : '+', d < 0 ? -d : d);
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
