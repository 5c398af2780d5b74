/* float16.h: IEEE half precision and bfloat16 to and from float32, bit by
 * bit, so that no compiler's _Float16 support is needed. Every half and
 * every bfloat16 is exactly a float32; the way back rounds to nearest even,
 * as numpy's astype and PyTorch's .to() do. */
#ifndef STEPWISE_FLOAT16_H
#define STEPWISE_FLOAT16_H

#include <stdint.h>

/* IEEE half to float32: exact. */
float half_to_float(uint16_t h);
/* float32 to IEEE half, rounded to nearest even (too large: infinity). */
uint16_t float_to_half(float f);
/* f rounded to the nearest IEEE half (even on a tie), as a float32. */
float half_round(float f);
/* float32 to bfloat16, rounded to nearest even. */
uint16_t float_to_bf16(float f);

#endif
