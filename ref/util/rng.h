/* rng.h: llama2.c's random number generator, xorshift* on 64 bits of state.
 * Used for the sampler's draws and for make-model's weights; docs/sampling.md
 * spells it out. */
#ifndef STEPWISE_RNG_H
#define STEPWISE_RNG_H

#include <stdint.h>

typedef struct {
    uint64_t state; /* never 0: xorshift cannot leave state 0 */
} XorshiftRng;

/* state ^= state >> 12; state ^= state << 25; state ^= state >> 27;
 * then the top 32 bits of state × 0x2545F4914F6CDD1D. */
uint32_t xorshift_u32(XorshiftRng *r);

/* A float in [0, 1): the top 24 bits of xorshift_u32 / 2^24, as run.c. */
float xorshift_f32(XorshiftRng *r);

#endif
