/* rng.c: see rng.h. */
#include "ref/util/rng.h"

uint32_t xorshift_u32(XorshiftRng *r) {
    r->state ^= r->state >> 12;
    r->state ^= r->state << 25;
    r->state ^= r->state >> 27;
    return (uint32_t)((r->state * 0x2545F4914F6CDD1Dull) >> 32);
}

float xorshift_f32(XorshiftRng *r) {
    return (float)(xorshift_u32(r) >> 8) / 16777216.0f;
}
