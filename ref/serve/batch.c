/* batch.c: see batch.h. */
#include "ref/serve/batch.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ref/util/clock.h"

void batch_request_free(BatchRequest *r) {
    free(r->id), free(r->prompt_text), free(r->prompt), free(r->error), free(r->token_times);
    chat_prompt_free(&r->chat);
    generate_result_free(&r->result);
    sequence_free(&r->seq);
    memset(r, 0, sizeof *r);
}

/* What a request's result says (the sequence's own state is its business):
 * the tokens generated so far, and the bytes of the cache it allocated. */
static int generated(const BatchRequest *r) {
    return r->result.n_tokens - r->result.n_prompt;
}

static uint64_t cache_bytes(const Model *m, const BatchRequest *r) {
    return kv_cache_bytes_of(&m->config, r->result.cache_capacity,
                             kv_type_for(&m->config, m->run.kv, r->result.kv_int8));
}

static int compare_doubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Fill r->metrics from its times (seconds since the start). */
static void request_metrics(BatchRequest *r, double *scratch) {
    int n = generated(r);
    double arrival = r->arrival_ms / 1000.0;
    RequestMetrics *m = &r->metrics;
    m->queue_ms = (r->t_admitted - arrival) * 1e3;
    m->ttft_ms = n > 0 ? (r->token_times[0] - arrival) * 1e3 : 0;
    m->e2e_ms = (r->t_finished - arrival) * 1e3;
    m->tokens_per_second = m->e2e_ms > 0 ? n / (m->e2e_ms / 1e3) : 0;
    m->itl_mean_ms = m->itl_p95_ms = m->itl_max_ms = 0;
    if (n < 2) return;
    for (int i = 1; i < n; i++) scratch[i - 1] = (r->token_times[i] - r->token_times[i - 1]) * 1e3;
    double sum = 0;
    for (int i = 0; i < n - 1; i++) sum += scratch[i];
    m->itl_mean_ms = sum / (n - 1);
    qsort(scratch, (size_t)(n - 1), sizeof(double), compare_doubles);
    int i95 = (int)ceil(0.95 * (n - 1)) - 1;
    m->itl_p95_ms = scratch[i95 < 0 ? 0 : i95];
    m->itl_max_ms = scratch[n - 2];
}

/* The most tokens r can generate: max_tokens, or what the context leaves
 * (a batch stops at a full context), whichever is fewer. */
static int most_tokens(const Model *m, const BatchRequest *r) {
    return r->opt.steps < m->config.seq_len ? r->opt.steps : m->config.seq_len;
}

/* Requests in the order they are served: arrival time, then file order. */
static int compare_arrivals(const void *a, const void *b) {
    const BatchRequest *x = *(BatchRequest *const *)a, *y = *(BatchRequest *const *)b;
    if (x->arrival_ms != y->arrival_ms) return x->arrival_ms < y->arrival_ms ? -1 : 1;
    return (x > y) - (x < y);
}

typedef struct {
    const Model *m;
    const BatchSink *sink;
    BatchMetrics *out;
    double start;
    double *itl_scratch;
    uint64_t kv_bytes; /* allocated by active sequences now */
    int active;
    PrefixCache *prefix; /* or NULL */
    int prefill_chunk;   /* 0: whole prompts */
} Server;

static double now(const Server *s) {
    return clock_seconds() - s->start;
}

static void finish(Server *s, BatchRequest *r) {
    r->t_finished = now(s);
    r->state = REQUEST_DONE;
    if (r->error == NULL) {
        request_metrics(r, s->itl_scratch);
        s->out->completed++;
        s->out->generated += generated(r);
        s->out->mean_ttft_ms += r->metrics.ttft_ms;
        s->out->mean_itl_ms += r->metrics.itl_mean_ms;
        s->out->mean_e2e_ms += r->metrics.e2e_ms;
    } else {
        s->out->failed++;
    }
    s->kv_bytes -= cache_bytes(s->m, r); /* 0 if it never had one */
    if (s->sink && s->sink->finished) s->sink->finished(s->sink->ctx, r);
    sequence_free(&r->seq); /* the cache goes with the request */
}

/* Pick the next token of r; true when r is finished. */
static bool pick(Server *s, BatchRequest *r) {
    bool failed;
    StepError err;
    bool done = sequence_pick(&r->seq, &failed, &err);
    if (failed)
        r->error = strdup(err.message);
    else
        r->token_times[generated(r) - 1] = now(s);
    return done || failed;
}

/* Prompt positions in r's cache: those its chunks computed, or before the
 * first chunk those copied from the prefix cache. */
static int prefilled(const BatchRequest *r) {
    return r->result.positions_filled > 0 ? r->result.positions_filled : r->prefix_reused;
}

/* Compute r's next chunk of prompt (all of it without --prefill-chunk);
 * after the last, keep its rows in the prefix cache and pick its first
 * token. False when r is finished (at its first token, or failed). */
static bool prefill_next(Server *s, BatchRequest *r) {
    int from = prefilled(r), to = r->n_prompt;
    if (s->prefill_chunk > 0 && to - from > s->prefill_chunk) to = from + s->prefill_chunk;
    sequence_prefill_chunk(&r->seq, from, to);
    if (to < r->n_prompt) return true; /* more chunks to come */
    if (s->prefix != NULL && !r->opt.no_kv_cache && !r->opt.all_logits)
        prefix_cache_put(s->prefix, r->prompt, r->n_prompt, &r->seq.s.seq.cache);
    r->state = REQUEST_ACTIVE;
    if (pick(s, r)) {
        finish(s, r);
        return false;
    }
    return true;
}

/* Admit r: allocate, prefill (its first chunk), pick its first token once
 * its prompt is in. True when it stays in the batch. */
static bool admit(Server *s, BatchRequest *r) {
    r->t_admitted = now(s);
    StepError err;
    r->token_times = malloc((size_t)most_tokens(s->m, r) * sizeof(double));
    if (r->token_times == NULL) r->error = strdup("out of memory");
    if (r->error == NULL && s->sink && s->sink->admitted) s->sink->admitted(s->sink->ctx, r);
    if (r->error == NULL && !sequence_init(&r->seq, s->m, r->prompt, r->n_prompt, &r->opt, r->obs,
                                           NULL, &r->result, &err))
        r->error = strdup(err.message);
    if (r->error != NULL) {
        finish(s, r);
        return false;
    }
    s->kv_bytes += cache_bytes(s->m, r);
    if (s->kv_bytes > s->out->peak_kv_bytes) s->out->peak_kv_bytes = s->kv_bytes;
    /* A shared prefix: copy its rows, compute the rest, keep this prompt's.
     * Not for recompute-everything runs or prompt logits (rows they need). */
    bool shares = s->prefix != NULL && !r->opt.no_kv_cache && !r->opt.all_logits;
    int reused =
        shares ? prefix_cache_take(s->prefix, r->prompt, r->n_prompt, &r->seq.s.seq.cache) : 0;
    r->prefix_reused = reused;
    s->out->prefix_tokens_reused += reused;
    /* the blocks' work for the reused positions: positions 0..reused-1 */
    s->out->prefill_macs_saved += forward_body_macs(&s->m->config, reused, 0);
    r->state = REQUEST_PREFILLING;
    return prefill_next(s, r);
}

static bool interrupted(const BatchRequest *r) {
    return r->opt.interrupt != NULL && *r->opt.interrupt;
}

/* Sleep until t seconds after the start; a signal cuts the sleep short. */
static void sleep_until(const Server *s, double t) {
    double wait = t - now(s);
    if (wait <= 0) return;
    struct timespec ts = {(time_t)wait, (long)((wait - (double)(time_t)wait) * 1e9)};
    nanosleep(&ts, NULL);
}

/* One decode step for every active request together. */
static void step(Server *s, PassScratch *scratch, BatchRequest **active, int n_active,
                 ForwardRow *rows) {
    double t0 = clock_seconds();
    for (int b = 0; b < n_active; b++) rows[b] = sequence_begin_decode(&active[b]->seq);
    const float *logits = forward(s->m, scratch, rows, n_active);
    double dt = clock_seconds() - t0;
    for (int b = 0; b < n_active; b++)
        sequence_end_pass(&active[b]->seq, &rows[b], PASS_DECODE,
                          logits + (size_t)b * s->m->config.vocab_size, dt);
    s->out->steps++;
}

bool batch_run(const Model *m, BatchRequest *reqs, int n, int max_batch, int prefill_chunk,
               const QuantRuntime *activations, PrefixCache *prefix, const BatchSink *sink,
               BatchMetrics *out, StepError *err) {
    memset(out, 0, sizeof *out);
    out->requests = n;
    if (max_batch < 1) return step_fail(err, "--max-batch must be at least 1");
    if (prefill_chunk < 0) return step_fail(err, "--prefill-chunk must not be negative");
    if (max_batch > m->config.seq_len) max_batch = m->config.seq_len;
    int max_steps = 1;
    for (int i = 0; i < n; i++)
        max_steps = most_tokens(m, &reqs[i]) > max_steps ? most_tokens(m, &reqs[i]) : max_steps;
    BatchRequest **order = malloc((size_t)(n > 0 ? n : 1) * sizeof *order);
    BatchRequest **active = malloc((size_t)max_batch * sizeof *active);
    BatchRequest **decoding = malloc((size_t)max_batch * sizeof *decoding);
    ForwardRow *rows = malloc((size_t)max_batch * sizeof *rows);
    double *itl = malloc((size_t)max_steps * sizeof(double));
    PassScratch scratch; /* the step's activations and attention's room; each request's cache
                            is its own */
    int capacity = 1;    /* the largest cache a request may have */
    for (int i = 0; i < n; i++) {
        int cap = sequence_capacity(&m->config, reqs[i].n_prompt, &reqs[i].opt);
        capacity = cap > capacity ? cap : capacity;
    }
    KvType kv = kv_type_for(&m->config, m->run.kv, activations != NULL && activations->kv);
    bool allocated = order && active && decoding && rows && itl;
    if (!allocated ||
        !pass_scratch_init(&scratch, &m->config, max_batch, capacity, kv, activations, err)) {
        free(order), free(active), free(decoding), free(rows), free(itl);
        return allocated ? false : step_fail(err, "batch: out of memory");
    }
    for (int i = 0; i < n; i++) order[i] = &reqs[i];
    qsort(order, (size_t)n, sizeof *order, compare_arrivals);
    Server s = {.m = m,
                .sink = sink,
                .out = out,
                .start = clock_seconds(),
                .itl_scratch = itl,
                .prefix = prefix,
                .prefill_chunk = prefill_chunk};
    int next = 0, n_active = 0;
    while (next < n || n_active > 0) {
        /* Interrupted: the requests still waiting are not served; the
         * active ones stop at their next pick (STOP_INTERRUPTED). */
        while (next < n && interrupted(order[next])) {
            if (order[next]->error == NULL)
                order[next]->error = strdup("interrupted before it was served");
            finish(&s, order[next++]);
        }
        /* chunked prefill: each prompt still coming in, one chunk further */
        int kept = 0;
        for (int b = 0; b < n_active; b++)
            if (active[b]->state != REQUEST_PREFILLING || prefill_next(&s, active[b]))
                active[kept++] = active[b];
        n_active = kept;
        while (next < n && n_active < max_batch && order[next]->arrival_ms / 1000.0 <= now(&s)) {
            BatchRequest *r = order[next++];
            if (admit(&s, r)) active[n_active++] = r;
        }
        while (next < n && order[next]->error != NULL) finish(&s, order[next++]);
        if (n_active > out->peak_active) out->peak_active = n_active;
        if (n_active == 0) {
            if (next < n) sleep_until(&s, order[next]->arrival_ms / 1000.0);
            continue;
        }
        /* one decode step for the requests past their prompt */
        int n_decoding = 0;
        for (int b = 0; b < n_active; b++)
            if (active[b]->state == REQUEST_ACTIVE) decoding[n_decoding++] = active[b];
        if (n_decoding == 0) continue;
        step(&s, &scratch, decoding, n_decoding, rows);
        for (int b = 0; b < n_decoding; b++)
            if (pick(&s, decoding[b])) finish(&s, decoding[b]);
        kept = 0;
        for (int b = 0; b < n_active; b++)
            if (active[b]->state != REQUEST_DONE) active[kept++] = active[b];
        n_active = kept;
    }
    out->seconds = now(&s);
    out->throughput = out->seconds > 0 ? out->generated / out->seconds : 0;
    if (prefix != NULL) {
        out->prefix_cache_bytes = prefix->bytes;
        out->prefix_cache_entries = prefix->n;
        out->prefix_cache_evicted = prefix->evicted;
    }
    if (out->completed > 0) {
        out->mean_ttft_ms /= out->completed;
        out->mean_itl_ms /= out->completed;
        out->mean_e2e_ms /= out->completed;
    }
    pass_scratch_free(&scratch);
    free(order), free(active), free(decoding), free(rows), free(itl);
    return true;
}
