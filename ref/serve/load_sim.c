/* load_sim.c: see load_sim.h. */
#include "ref/serve/load_sim.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "ref/util/rng.h"

/* A uniform draw in [0, 1) with 24 bits, as xorshift_f32 but kept double. */
static double uniform(XorshiftRng *r) {
    return (double)(xorshift_u32(r) >> 8) / 16777216.0;
}

static int uniform_int(XorshiftRng *r, int lo, int hi) {
    return lo + (int)(xorshift_u32(r) % (uint32_t)(hi - lo + 1));
}

bool sim_workload_make(const SimWorkload *w, SimRequest *reqs, StepError *err) {
    if (w->n < 1 || w->n > SIM_MAX_REQUESTS)
        return step_fail(err, "load simulation: %d requests (1 to %d)", w->n, SIM_MAX_REQUESTS);
    if (!(w->rate >= 0) || !isfinite(w->rate))
        return step_fail(err, "load simulation: the rate must be a finite number >= 0");
    if (w->prompt_min < 1 || w->prompt_min > w->prompt_max || w->new_min < 1 ||
        w->new_min > w->new_max)
        return step_fail(err, "load simulation: lengths must be >= 1, the least first");
    if (w->seed == 0) return step_fail(err, "load simulation: the seed must not be 0");
    XorshiftRng rng = {.state = w->seed};
    double t = 0;
    for (int i = 0; i < w->n; i++) {
        /* an exponential gap: -ln(1 - u) / rate (u < 1, so the log is finite) */
        double gap = uniform(&rng);
        if (w->rate > 0) t += -log(1.0 - gap) / w->rate;
        reqs[i] = (SimRequest){.arrival_s = t,
                               .prompt_tokens = uniform_int(&rng, w->prompt_min, w->prompt_max),
                               .new_tokens = uniform_int(&rng, w->new_min, w->new_max)};
    }
    return true;
}

typedef enum { SIM_WAITING, SIM_PREFILLING, SIM_DECODING, SIM_DONE } SimState;

/* One request as the server sees it. */
typedef struct {
    const SimRequest *r;
    SimRequestResult *res;
    SimState state;
    int prefilled, generated;
    double first_token, last_token, itl_sum;
    double blocked_since; /* < 0: never first in line without blocks */
} Live;

typedef struct {
    const SimServer *s;
    const StepCosts *c;
    SimReport *out;
    double t;         /* the simulated clock, seconds */
    long blocks_used; /* reserved by admitted requests */
    double *gaps;     /* every inter-token gap, ms */
    long n_gaps;
} Sim;

static long blocks_needed(const Sim *sim, const SimRequest *r) {
    long positions = (long)r->prompt_tokens + r->new_tokens;
    return (positions + sim->s->block_size - 1) / sim->s->block_size;
}

/* A token for q at the current time; true when it was q's last. */
static bool emit(Sim *sim, Live *q) {
    if (q->generated == 0) {
        q->first_token = sim->t;
    } else {
        double gap = (sim->t - q->last_token) * 1e3;
        q->itl_sum += gap;
        if (gap > q->res->itl_max_ms) q->res->itl_max_ms = gap;
        sim->gaps[sim->n_gaps++] = gap;
    }
    q->last_token = sim->t;
    q->generated++;
    return q->generated == q->r->new_tokens;
}

static void finish(Sim *sim, Live *q) {
    SimRequestResult *res = q->res;
    res->ttft_ms = (q->first_token - q->r->arrival_s) * 1e3;
    res->e2e_ms = (q->last_token - q->r->arrival_s) * 1e3;
    res->itl_mean_ms = q->generated > 1 ? q->itl_sum / (q->generated - 1) : 0;
    sim->blocks_used -= res->blocks;
    sim->out->served++;
    sim->out->generated += q->generated;
    q->state = SIM_DONE;
}

/* q's next prefill pass (a chunk, or the rest of its prompt); at the end
 * of its prompt, its first token. False when q is finished. */
static bool prefill_next(Sim *sim, Live *q) {
    int from = q->prefilled, to = q->r->prompt_tokens;
    if (sim->s->prefill_chunk > 0 && to - from > sim->s->prefill_chunk)
        to = from + sim->s->prefill_chunk;
    sim->t += step_cost_prefill(sim->c, from, to);
    sim->out->prefill_passes++;
    q->prefilled = to;
    if (to < q->r->prompt_tokens) return true;
    q->state = SIM_DECODING;
    if (emit(sim, q)) {
        finish(sim, q);
        return false;
    }
    return true;
}

/* One decode step of every request past its prompt, together. */
static void decode_step(Sim *sim, Live **active, int n_active) {
    int rows = 0;
    double attended = 0;
    for (int i = 0; i < n_active; i++)
        if (active[i]->state == SIM_DECODING) {
            rows++; /* it feeds the token at position prompt + generated - 1 */
            attended += active[i]->r->prompt_tokens + active[i]->generated;
        }
    if (rows == 0) return;
    sim->t += step_cost_decode(sim->c, rows, attended);
    sim->out->steps++;
    for (int i = 0; i < n_active; i++)
        if (active[i]->state == SIM_DECODING && emit(sim, active[i])) finish(sim, active[i]);
}

static int compare_doubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Percentiles of v[0..n) (sorted in place). */
static SimPercentiles percentiles(double *v, long n) {
    SimPercentiles p = {0};
    if (n == 0) return p;
    qsort(v, (size_t)n, sizeof *v, compare_doubles);
    double sum = 0;
    for (long i = 0; i < n; i++) sum += v[i];
    const double q[3] = {0.50, 0.95, 0.99};
    double *dest[3] = {&p.p50, &p.p95, &p.p99};
    for (int k = 0; k < 3; k++) {
        long rank = (long)ceil(q[k] * (double)n);
        *dest[k] = v[(rank < 1 ? 1 : rank) - 1];
    }
    p.max = v[n - 1];
    p.mean = sum / (double)n;
    return p;
}

/* Requests in arrival order, ties in the order given. */
static int compare_arrivals(const void *a, const void *b) {
    const Live *x = *(Live *const *)a, *y = *(Live *const *)b;
    if (x->r->arrival_s != y->r->arrival_s) return x->r->arrival_s < y->r->arrival_s ? -1 : 1;
    return (x > y) - (x < y);
}

/* The served requests' results gathered into the report's percentiles. */
static bool summarise(Sim *sim, const Live *live, int n, double first_arrival) {
    SimReport *out = sim->out;
    double *v = malloc((size_t)n * sizeof *v);
    if (v == NULL) return false;
    const size_t fields[3] = {offsetof(SimRequestResult, ttft_ms),
                              offsetof(SimRequestResult, e2e_ms),
                              offsetof(SimRequestResult, queue_ms)};
    SimPercentiles *dest[3] = {&out->ttft_ms, &out->e2e_ms, &out->queue_ms};
    for (int f = 0; f < 3; f++) {
        long k = 0;
        for (int i = 0; i < n; i++)
            if (!live[i].res->rejected)
                v[k++] = *(const double *)((const char *)live[i].res + fields[f]);
        *dest[f] = percentiles(v, k);
    }
    free(v);
    out->itl_ms = percentiles(sim->gaps, sim->n_gaps);
    for (int i = 0; i < n; i++) {
        const SimRequestResult *res = live[i].res;
        if (res->block_wait_ms > 0) out->waited_for_blocks++;
        out->block_wait_total_ms += res->block_wait_ms;
        if (res->block_wait_ms > out->block_wait_max_ms)
            out->block_wait_max_ms = res->block_wait_ms;
    }
    out->seconds = sim->t - first_arrival;
    out->throughput = out->seconds > 0 ? out->generated / out->seconds : 0; /* 0 tokens */
    return true;
}

bool load_sim_run(const SimRequest *reqs, int n, const SimServer *s, const StepCosts *c,
                  SimRequestResult *per, SimReport *out, StepError *err) {
    memset(out, 0, sizeof *out);
    out->requests = n;
    if (n < 1 || n > SIM_MAX_REQUESTS)
        return step_fail(err, "load simulation: %d requests (1 to %d)", n, SIM_MAX_REQUESTS);
    if (s->max_batch < 1 || s->prefill_chunk < 0 || s->block_size < 1 || s->kv_blocks < 0)
        return step_fail(err, "load simulation: the server needs a batch >= 1, blocks >= 1 "
                              "position, a chunk and a budget >= 0");
    long gaps = 0;
    for (int i = 0; i < n; i++) {
        if (!(reqs[i].arrival_s >= 0) || !isfinite(reqs[i].arrival_s) ||
            reqs[i].prompt_tokens < 1 || reqs[i].new_tokens < 1)
            return step_fail(err, "load simulation: request %d has no arrival time or length", i);
        gaps += reqs[i].new_tokens - 1;
        if (gaps > 100000000L)
            return step_fail(err, "load simulation: more than 10^8 tokens to generate");
    }
    Live *live = calloc((size_t)n, sizeof *live);
    Live **order = malloc((size_t)n * sizeof *order);
    Live **active = malloc((size_t)s->max_batch * sizeof *active);
    Sim sim = {
        .s = s, .c = c, .out = out, .gaps = malloc((size_t)(gaps > 0 ? gaps : 1) * sizeof(double))};
    bool ok = live && order && active && sim.gaps;
    for (int i = 0; ok && i < n; i++) {
        per[i] = (SimRequestResult){0};
        live[i] = (Live){.r = &reqs[i], .res = &per[i], .blocked_since = -1};
        per[i].blocks = blocks_needed(&sim, &reqs[i]);
        per[i].rejected = reqs[i].prompt_tokens + (long)reqs[i].new_tokens > c->seq_len ||
                          (s->kv_blocks > 0 && per[i].blocks > s->kv_blocks);
        out->rejected += per[i].rejected;
        order[i] = &live[i];
    }
    if (ok) qsort(order, (size_t)n, sizeof *order, compare_arrivals);
    int next = 0, n_active = 0;
    while (ok && (next < n || n_active > 0)) {
        int kept = 0; /* chunked prefill: each prompt still coming in, a chunk further */
        for (int i = 0; i < n_active; i++)
            if (active[i]->state != SIM_PREFILLING || prefill_next(&sim, active[i]))
                active[kept++] = active[i];
        n_active = kept;
        while (next < n && order[next]->res->rejected) order[next++]->state = SIM_DONE;
        while (next < n && n_active < s->max_batch && order[next]->r->arrival_s <= sim.t) {
            Live *q = order[next];
            if (q->res->rejected) {
                q->state = SIM_DONE, next++;
                continue;
            }
            if (s->kv_blocks > 0 && sim.blocks_used + q->res->blocks > s->kv_blocks) {
                if (q->blocked_since < 0) q->blocked_since = sim.t;
                break; /* first come, first served: the rest wait behind it */
            }
            next++;
            sim.blocks_used += q->res->blocks;
            if (sim.blocks_used > out->peak_blocks) out->peak_blocks = sim.blocks_used;
            q->res->queue_ms = (sim.t - q->r->arrival_s) * 1e3;
            q->res->block_wait_ms = q->blocked_since >= 0 ? (sim.t - q->blocked_since) * 1e3 : 0;
            q->state = SIM_PREFILLING;
            active[n_active++] = q;
            if (n_active > out->peak_batch) out->peak_batch = n_active;
            if (!prefill_next(&sim, q)) n_active--; /* done at its first token */
        }
        while (next < n && order[next]->res->rejected) order[next++]->state = SIM_DONE;
        if (n_active == 0) {
            if (next < n && order[next]->r->arrival_s > sim.t) sim.t = order[next]->r->arrival_s;
            continue;
        }
        decode_step(&sim, active, n_active);
        kept = 0;
        for (int i = 0; i < n_active; i++)
            if (active[i]->state != SIM_DONE) active[kept++] = active[i];
        n_active = kept;
    }
    double first_arrival = ok ? order[0]->r->arrival_s : 0;
    bool summarised = ok && summarise(&sim, live, n, first_arrival);
    free(live), free(order), free(active), free(sim.gaps);
    if (!summarised) return step_fail(err, "load simulation: out of memory");
    /* Tokens in no time: every pass they needed cost 0 s (a free prefill and
     * one token each, all at once), so tokens/s has no value to report; or
     * in so little (costs of 1e-320 s) that the rate passes a double's range. */
    if (out->generated > 0 && !(out->seconds > 0))
        return step_fail(err,
                         "load simulation: %ld tokens in 0 s of simulated time (every pass "
                         "they needed costs 0 s): tokens/s is undefined",
                         out->generated);
    if (!isfinite(out->throughput))
        return step_fail(err,
                         "load simulation: %ld tokens in %g s of simulated time: tokens/s "
                         "is past a double's range",
                         out->generated, out->seconds);
    return true;
}
