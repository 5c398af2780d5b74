/* rope_tables.h: the cos and sin tables RoPE turns queries and keys by,
 * built once per model for every position it can reach (seq_len) and
 * shared by every request that runs on it. */
#ifndef STEPWISE_ROPE_TABLES_H
#define STEPWISE_ROPE_TABLES_H

#include <stdbool.h>
#include <stdint.h>

#include "ref/config.h"
#include "ref/util/error.h"

/* One pair of [capacity, pairs] tables is cos(pos · θ_i) and sin(pos · θ_i)
 * for position pos and pair i of a head's turned dims (pairs =
 * config_rope_dims / 2). A model with learned positions (POS_LEARNED) has
 * none: every pointer NULL. */
typedef struct {
    int capacity;                 /* positions: the model's seq_len */
    int pairs;                    /* config_rope_dims / 2 */
    float *cos, *sin;             /* [capacity, pairs] the model's own theta and scaling */
    float *cos_local, *sin_local; /* the same at rope_local_theta, unscaled, for the sliding
                                     layers (Gemma 3); NULL when it is 0 */
    float *cos_long, *sin_long;   /* the same with longrope's long factors (Phi-3), for passes
                                     past its original context; else NULL */
} RopeTables;

/* The floats c's tables take: 2 x seq_len x pairs for each kind it has. */
uint64_t rope_tables_floats(const Config *c);

/* Build c's tables for every position below c->seq_len; false (err says
 * why) when out of memory. */
bool rope_tables_init(RopeTables *t, const Config *c, StepError *err);
void rope_tables_free(RopeTables *t);

/* The tables a layer turns q and k by in a pass whose last position is
 * last: Gemma 3's local ones on its sliding layers (sliding: its
 * AttentionSpec's window, which the caller holds), Phi-3's long factors
 * once a pass reaches past its original context (config_rope_long), else
 * the model's. The one place the choice is made. */
void rope_tables_for(const RopeTables *t, const Config *c, bool sliding, int last,
                     const float **cos_t, const float **sin_t);

#endif
