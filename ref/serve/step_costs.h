/* step_costs.h: what a forward pass costs in time, as a few measured
 * coefficients, so that a load simulation (load_sim.h) can run in simulated
 * time: the same report for the same seed whatever the machine is doing.
 *
 * A pass's time is modelled as linear in three counts:
 *   decode step of B requests:  fixed + per_row x B + per_attended x A
 *   prefill of n positions:     fixed + per_row x n + per_attended x A
 * where A is the positions the pass's queries attend to (a decode row at
 * position p attends p + 1; a prefill of positions [from, to) attends
 * sum(i + 1) over them). `fixed` is what a pass costs whatever it carries
 * (reading every weight once: why decode is memory-bound, docs/roofline.md),
 * per_row what each more token adds (its multiply-adds), per_attended the
 * attention's reads of the cache. The coefficients come from timing real
 * passes (step_costs_measure) and a least-squares fit (step_costs_fit). */
#ifndef STEPWISE_STEP_COSTS_H
#define STEPWISE_STEP_COSTS_H

#include <stdint.h>

#include "ref/model/model.h"
#include "ref/run_state.h"
#include "ref/util/error.h"

typedef enum { PASS_KIND_DECODE, PASS_KIND_PREFILL } PassKind;

/* One timed pass: its kind, its rows (decode) or positions (prefill), the
 * positions attended, and the best of its repeats, in seconds. */
typedef struct {
    PassKind kind;
    int rows;
    double attended;
    double seconds;
} StepCostPoint;

/* A linear model of one kind of pass, in seconds. */
typedef struct {
    double fixed, per_row, per_attended;
} PassCost;

typedef struct {
    PassCost decode, prefill;
    int seq_len;                    /* the model's context: no request may be longer */
    uint64_t kv_bytes_per_position; /* the KV cache's bytes for one position (every layer) */
    int threads;                    /* how the passes were run, for the record */
    StepCostPoint *points;          /* [n_points] what was timed (owned; NULL when read
                                       from a file without them) */
    int n_points;
} StepCosts;

/* Seconds of a decode step of `rows` requests attending `attended`
 * positions in all, and of a prefill of positions [from, to). */
double step_cost_decode(const StepCosts *c, int rows, double attended);
double step_cost_prefill(const StepCosts *c, int from, int to);

/* Positions a prefill of [from, to) attends: sum of (i + 1) for i in it. */
double prefill_attended(int from, int to);

/* Fit fixed, per_row and per_attended to the points of one kind by least
 * squares; a coefficient the fit makes negative is set to 0 and the rest
 * fitted again, so that no pass is predicted to take less time for more
 * work. False when the points do not determine the model. */
bool step_costs_fit(const StepCostPoint *points, int n, PassKind kind, PassCost *out,
                    StepError *err);

/* Time forward passes of m (its threads, its kernels; activations as q
 * says, NULL: float32) over a grid of decode batch sizes up to max_batch and
 * contexts, and of prefill lengths, each the best of `repeats`; fill *out
 * (points and fits). The caches are m's own allocation, freed before it
 * returns. */
bool step_costs_measure(const Model *m, const QuantRuntime *q, int max_batch, int repeats,
                        StepCosts *out, StepError *err);

void step_costs_free(StepCosts *c);

#endif
