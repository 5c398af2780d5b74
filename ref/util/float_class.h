/* float_class.h: a number keeps its class on its way into a float32.
 *
 * Many float options give 0 a meaning of its own ("0 = off", "0 = greedy",
 * "0 = all at once"), and infinity another or none. A nonzero value that
 * rounds to 0 as a float32 (below half the smallest subnormal, 2^-150,
 * about 7e-46) would silently read as that 0, and a finite one past the
 * largest float32 (3.4028235e38, and half an ulp: 2^128 - 2^103) as
 * infinity. So every float32 a user gives passes one rule, here: zero
 * stays zero, nonzero stays nonzero, finite stays finite, infinite stays
 * infinite (NaN stays NaN); a value that changes class is refused, never
 * rounded into another meaning. The command line's numbers (cli_parse_float)
 * and a request file's sampler fields (serve/requests.c) use it; the Python
 * package states the same rule before it hands a float to C. */
#ifndef STEPWISE_FLOAT_CLASS_H
#define STEPWISE_FLOAT_CLASS_H

typedef enum { FLOAT_ZERO, FLOAT_FINITE, FLOAT_INFINITE, FLOAT_NAN } FloatClass;

/* v's class: FLOAT_FINITE is every finite nonzero value (subnormals too). */
FloatClass float_class_of(double v);

/* NULL when a number of class `said` that reads as `got` keeps its class;
 * else why not, a phrase for a message ("is not 0 but rounds to 0 as a
 * float32 (its smallest is 1.4e-45)"). */
const char *float_class_change(FloatClass said, float got);

/* d as a float32 into *out, rounded to nearest; NULL, or why it changes
 * class as float_class_change says (then *out is left alone). */
const char *float_narrow(double d, float *out);

#endif
