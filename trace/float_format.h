/* float_format.h: a float32 written exactly as printf's "%.9g" writes it,
 * quickly. Nine significant digits are exactly enough to read back the
 * same float32; printing them is most of a trace's cost, so the common range
 * is done with exact integer arithmetic, and the rest falls back to
 * snprintf. tests/test_float_format.c compares the two on millions of
 * values. */
#ifndef STEPWISE_FLOAT_FORMAT_H
#define STEPWISE_FLOAT_FORMAT_H

/* Write v (finite) as "%.9g" into buf (at least 20 bytes), NUL-terminated;
 * returns the length. */
int format_float9(float v, char *buf);

#endif
