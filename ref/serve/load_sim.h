/* load_sim.h: serving under load, simulated. Requests arrive over time
 * (Poisson at a rate, with a seed, or at given times); a server admits them
 * first come, first served, while it has a batch slot and KV blocks for
 * them (blocks of positions, as paged engines allocate the cache); admitted
 * prompts are prefilled (whole, or a chunk a step), and every admitted
 * request past its prompt gets one token per decode step, all together
 * (continuous batching: batch.h's scheduler, step for step). Time is not
 * the machine's: each pass advances a simulated clock by what step_costs.h
 * says it costs, so the report is the same, bit for bit, for the same
 * inputs, however busy the machine is.
 *
 * What it leaves out, on purpose: a request's tokens (each runs to its
 * new_tokens: no end-of-text), preemption (a request's blocks are reserved
 * whole at admission, for its prompt and every token it may generate), and
 * any overlap of passes (one engine, one pass at a time). */
#ifndef STEPWISE_LOAD_SIM_H
#define STEPWISE_LOAD_SIM_H

#include <stdint.h>

#include "ref/serve/step_costs.h"

/* One request of the workload: when it arrives, its prompt's length and
 * the tokens it generates. */
typedef struct {
    double arrival_s;
    int prompt_tokens, new_tokens;
} SimRequest;

/* The most requests a workload may hold. */
#define SIM_MAX_REQUESTS 100000

/* A synthetic workload: n requests, Poisson arrivals at rate (requests a
 * second; 0: all at time 0), prompt and new-token lengths uniform in
 * [min, max], all drawn from a xorshift generator seeded with seed (never
 * 0): the draws for request i are its gap, its prompt, its new tokens. */
typedef struct {
    int n;
    double rate;
    int prompt_min, prompt_max, new_min, new_max;
    uint64_t seed;
} SimWorkload;

/* Fill reqs[0..w->n) (caller's array). False (err set) when the workload
 * is out of range: n in [1, SIM_MAX_REQUESTS], lengths >= 1 and min <= max,
 * rate finite and >= 0, seed not 0. */
bool sim_workload_make(const SimWorkload *w, SimRequest *reqs, StepError *err);

/* The server: max_batch slots; kv_blocks blocks of block_size positions
 * (kv_blocks 0: no limit); prefill_chunk positions a prefill pass at most
 * (0: whole prompts). */
typedef struct {
    int max_batch;
    int prefill_chunk;
    int block_size;
    long kv_blocks;
} SimServer;

/* What happened to one request, in milliseconds from its arrival (queue:
 * to admission; block_wait: the part of the queue it spent first in line
 * with a slot free but too few KV blocks). rejected: it could never be
 * served (longer than the context, or more blocks than the whole budget). */
typedef struct {
    double queue_ms, block_wait_ms, ttft_ms, e2e_ms;
    double itl_mean_ms, itl_max_ms;
    long blocks;
    bool rejected;
} SimRequestResult;

/* Percentiles, nearest rank: the value at rank ceil(p n) of n sorted. */
typedef struct {
    double p50, p95, p99, max, mean;
} SimPercentiles;

typedef struct {
    int requests, served, rejected;
    long generated;        /* tokens */
    double seconds;        /* the simulated time from 0 to the last token */
    double throughput;     /* generated / seconds */
    int steps;             /* decode steps */
    int prefill_passes;    /* prefill passes (chunks count one each) */
    int peak_batch;        /* the most requests admitted at once */
    long peak_blocks;      /* the most KV blocks reserved at once */
    int waited_for_blocks; /* requests whose block_wait_ms > 0 */
    double block_wait_total_ms, block_wait_max_ms;
    SimPercentiles ttft_ms, itl_ms, e2e_ms, queue_ms; /* itl: every gap of every request */
} SimReport;

/* Serve reqs[0..n) (in arrival order, ties in array order) on server s at
 * the costs c; per[i] gets request i's result (caller's array of n).
 * False when tokens were generated in no simulated time (every pass they
 * needed cost 0 s): their tokens/s would be a number with no meaning. */
bool load_sim_run(const SimRequest *reqs, int n, const SimServer *s, const StepCosts *c,
                  SimRequestResult *per, SimReport *out, StepError *err);

#endif
