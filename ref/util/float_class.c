/* float_class.c: see float_class.h. */
#include "ref/util/float_class.h"

#include <math.h>
#include <stddef.h>

FloatClass float_class_of(double v) {
    if (isnan(v)) return FLOAT_NAN;
    if (isinf(v)) return FLOAT_INFINITE;
    return v == 0 ? FLOAT_ZERO : FLOAT_FINITE;
}

const char *float_class_change(FloatClass said, float got) {
    FloatClass now = float_class_of(got);
    if (now == said) return NULL;
    if (said == FLOAT_FINITE && now == FLOAT_ZERO)
        return "is not 0 but rounds to 0 as a float32 (its smallest is 1.4e-45)";
    if (said == FLOAT_FINITE && now == FLOAT_INFINITE)
        return "is finite but overflows a float32 to infinity (its largest is 3.4e38)";
    return "changes class as a float32"; /* no rounding does this; kept for the rule's sake */
}

const char *float_narrow(double d, float *out) {
    /* Past 2^128 - 2^103 (the largest float32 plus half its ulp) a double
     * rounds to infinity; the comparison keeps the conversion itself
     * within the float32 range (C leaves an out-of-range one undefined). */
    const double overflow = 0x1.ffffffp127;
    float f = isnan(d)         ? (float)d
              : d >= overflow  ? INFINITY
              : d <= -overflow ? -INFINITY
                               : (float)d;
    const char *why = float_class_change(float_class_of(d), f);
    if (why == NULL) *out = f;
    return why;
}
