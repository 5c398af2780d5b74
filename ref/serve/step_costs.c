/* step_costs.c: see step_costs.h. */
#include "ref/serve/step_costs.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ref/forward.h"
#include "ref/kernels/threads.h"
#include "ref/util/clock.h"
#include "ref/util/rng.h"

double prefill_attended(int from, int to) {
    /* sum_{i=from}^{to-1} (i + 1) = (to (to + 1) - from (from + 1)) / 2 */
    return ((double)to * (to + 1) - (double)from * (from + 1)) / 2;
}

static double pass_cost(const PassCost *p, int rows, double attended) {
    return p->fixed + p->per_row * rows + p->per_attended * attended;
}

double step_cost_decode(const StepCosts *c, int rows, double attended) {
    return pass_cost(&c->decode, rows, attended);
}

double step_cost_prefill(const StepCosts *c, int from, int to) {
    return pass_cost(&c->prefill, to - from, prefill_attended(from, to));
}

/* Solve the k x k system a x = b (row-major, k <= 3) by elimination with
 * partial pivoting; false when it is singular (relative to its scale). */
static bool solve(double a[3][3], double b[3], int k, double x[3]) {
    double scale = 0;
    for (int i = 0; i < k; i++)
        for (int j = 0; j < k; j++) scale = fmax(scale, fabs(a[i][j]));
    for (int col = 0; col < k; col++) {
        int pivot = col;
        for (int r = col + 1; r < k; r++)
            if (fabs(a[r][col]) > fabs(a[pivot][col])) pivot = r;
        if (!(fabs(a[pivot][col]) > 1e-12 * scale)) return false;
        for (int j = 0; j < k; j++) {
            double t = a[col][j];
            a[col][j] = a[pivot][j], a[pivot][j] = t;
        }
        double t = b[col];
        b[col] = b[pivot], b[pivot] = t;
        for (int r = col + 1; r < k; r++) {
            double f = a[r][col] / a[col][col];
            for (int j = col; j < k; j++) a[r][j] -= f * a[col][j];
            b[r] -= f * b[col];
        }
    }
    for (int r = k - 1; r >= 0; r--) {
        double s = b[r];
        for (int j = r + 1; j < k; j++) s -= a[r][j] * x[j];
        x[r] = s / a[r][r];
    }
    return true;
}

/* Least squares over the coefficients `used` says (fixed, per_row,
 * per_attended), the others 0. Each column is scaled by its largest value
 * first, so that counts in the thousands and a column of ones are
 * equally well conditioned. */
static bool fit_columns(const StepCostPoint *p, int n, PassKind kind, const bool used[3],
                        double coef[3]) {
    int cols[3], k = 0;
    for (int j = 0; j < 3; j++)
        if (used[j]) cols[k++] = j;
    double scale[3] = {1, 0, 0};
    for (int i = 0; i < n; i++)
        if (p[i].kind == kind) {
            scale[1] = fmax(scale[1], p[i].rows);
            scale[2] = fmax(scale[2], p[i].attended);
        }
    if (!(scale[1] > 0) || !(scale[2] > 0)) return false;
    double ata[3][3] = {{0}}, atb[3] = {0}, x[3] = {0};
    for (int i = 0; i < n; i++) {
        if (p[i].kind != kind) continue;
        double v[3] = {1, p[i].rows / scale[1], p[i].attended / scale[2]};
        for (int r = 0; r < k; r++) {
            for (int c = 0; c < k; c++) ata[r][c] += v[cols[r]] * v[cols[c]];
            atb[r] += v[cols[r]] * p[i].seconds;
        }
    }
    if (!solve(ata, atb, k, x)) return false;
    for (int j = 0; j < 3; j++) coef[j] = 0;
    for (int r = 0; r < k; r++) coef[cols[r]] = x[r] / scale[cols[r]];
    return true;
}

bool step_costs_fit(const StepCostPoint *points, int n, PassKind kind, PassCost *out,
                    StepError *err) {
    const char *name = kind == PASS_KIND_DECODE ? "decode" : "prefill";
    bool used[3] = {true, true, true};
    double coef[3];
    for (int round = 0; round < 3; round++) {
        if (!fit_columns(points, n, kind, used, coef))
            return step_fail(err,
                             "step costs: the %s timings do not determine the model "
                             "(too few distinct sizes)",
                             name);
        int worst = -1;
        for (int j = 0; j < 3; j++)
            if (used[j] && coef[j] < 0 && (worst < 0 || coef[j] < coef[worst])) worst = j;
        if (worst < 0) break;
        used[worst] = false;
        coef[worst] = 0;
    }
    for (int j = 0; j < 3; j++)
        if (!(coef[j] >= 0) || !isfinite(coef[j]))
            return step_fail(err, "step costs: the %s fit has no non-negative solution", name);
    *out = (PassCost){.fixed = coef[0], .per_row = coef[1], .per_attended = coef[2]};
    return true;
}

/* The grid measured: decode batches 1, 2, 4, ... up to max_batch at a short
 * and a long context, and prefills of 1, 2, 4, ... positions from 0. */
enum { MAX_DECODE_SIZES = 12, MAX_PREFILL_SIZES = 10, CONTEXTS = 2 };

typedef struct {
    const Model *m;
    PassScratch scratch;
    SeqState *seqs; /* [max_batch] */
    int *pos;       /* [max_batch] the next position of each */
    int *tokens;    /* [capacity] random tokens */
    int max_batch, capacity;
    int long_context; /* the longest prefill timed */
    StepCosts *out;
} Bench;

static void add_point(Bench *b, PassKind kind, int rows, double attended, double seconds) {
    b->out->points[b->out->n_points++] =
        (StepCostPoint){.kind = kind, .rows = rows, .attended = attended, .seconds = seconds};
}

/* Prefill positions [0, n) of sequence i, in one pass; its seconds. */
static double prefill(Bench *b, int i, int n) {
    ForwardRow row = {.state = &b->seqs[i], .tokens = b->tokens, .n_tokens = n, .pos0 = 0};
    double t0 = clock_seconds();
    forward(b->m, &b->scratch, &row, 1);
    b->pos[i] = n;
    return clock_seconds() - t0;
}

/* One decode step of sequences [0, rows): their seconds; *attended set. */
static double decode(Bench *b, int rows, double *attended) {
    ForwardRow row[64];
    *attended = 0;
    for (int i = 0; i < rows; i++) {
        row[i] = (ForwardRow){.state = &b->seqs[i],
                              .tokens = &b->tokens[b->pos[i]],
                              .n_tokens = 1,
                              .pos0 = b->pos[i]};
        *attended += b->pos[i] + 1;
    }
    double t0 = clock_seconds();
    forward(b->m, &b->scratch, row, rows);
    double dt = clock_seconds() - t0;
    for (int i = 0; i < rows; i++) b->pos[i]++;
    return dt;
}

static void measure_prefills(Bench *b, int repeats) {
    for (int n = 1; n <= b->long_context; n *= 2) {
        double best = INFINITY;
        for (int r = 0; r < repeats; r++) best = fmin(best, prefill(b, 0, n));
        add_point(b, PASS_KIND_PREFILL, n, prefill_attended(0, n), best);
    }
}

/* Decode steps at context `context` for every batch size of the grid. */
static void measure_decodes(Bench *b, int context, int repeats) {
    for (int i = 0; i < b->max_batch; i++) prefill(b, i, context);
    for (int rows = 1; rows <= b->max_batch; rows *= 2) {
        double best = INFINITY, best_attended = 0;
        for (int r = 0; r < repeats && b->pos[0] < b->capacity; r++) {
            double attended, dt = decode(b, rows, &attended);
            if (dt < best) best = dt, best_attended = attended;
        }
        if (isfinite(best)) add_point(b, PASS_KIND_DECODE, rows, best_attended, best);
    }
}

bool step_costs_measure(const Model *m, const QuantRuntime *q, int max_batch, int repeats,
                        StepCosts *out, StepError *err) {
    memset(out, 0, sizeof *out);
    const Config *c = &m->config;
    if (max_batch < 1 || max_batch > 64) return step_fail(err, "step costs: batch 1 to 64");
    if (repeats < 1) repeats = 1;
    if (c->seq_len < 8) return step_fail(err, "step costs: the context is under 8 positions");
    if (max_batch > c->seq_len) max_batch = c->seq_len; /* a pass carries at most seq_len rows */
    /* a long context of half the window, at most 256 positions (a 1B
     * model's prefills of every sequence stay within a minute) */
    int long_context = c->seq_len / 2 < 256 ? c->seq_len / 2 : 256;
    int contexts[CONTEXTS] = {long_context / 8 > 1 ? long_context / 8 : 1, long_context};
    Bench b = {.m = m,
               .max_batch = max_batch,
               .capacity = c->seq_len,
               .long_context = long_context,
               .out = out};
    int max_tokens = long_context > max_batch ? long_context : max_batch;
    KvType kv = kv_type_for(c, m->run.kv, q != NULL && q->kv);
    bool ok = pass_scratch_init(&b.scratch, c, max_tokens, c->seq_len, kv, q, err);
    b.seqs = calloc((size_t)max_batch, sizeof *b.seqs);
    b.pos = calloc((size_t)max_batch, sizeof *b.pos);
    b.tokens = malloc((size_t)c->seq_len * sizeof *b.tokens);
    out->points = malloc((MAX_DECODE_SIZES * CONTEXTS + MAX_PREFILL_SIZES) * sizeof *out->points);
    int ready = 0;
    if (ok && !(b.seqs && b.pos && b.tokens && out->points))
        ok = step_fail(err, "step costs: out of memory");
    for (; ok && ready < max_batch; ready++)
        ok = seq_state_init(&b.seqs[ready], c, c->seq_len, kv, err);
    if (ok) {
        XorshiftRng rng = {.state = 42};
        for (int i = 0; i < c->seq_len; i++)
            b.tokens[i] = (int)(xorshift_u32(&rng) % (uint32_t)c->vocab_size);
        prefill(&b, 0, 1); /* untimed: the first touch of every weight's pages */
        measure_prefills(&b, repeats);
        for (int k = 0; k < CONTEXTS; k++) measure_decodes(&b, contexts[k], repeats);
        out->seq_len = c->seq_len;
        out->kv_bytes_per_position = kv_cache_bytes_of(c, 1, kv);
        out->threads = m->pool != NULL ? thread_pool_size(m->pool) : 1;
        ok = step_costs_fit(out->points, out->n_points, PASS_KIND_DECODE, &out->decode, err) &&
             step_costs_fit(out->points, out->n_points, PASS_KIND_PREFILL, &out->prefill, err);
    }
    for (int i = 0; i < ready; i++) seq_state_free(&b.seqs[i]);
    pass_scratch_free(&b.scratch); /* a failed init left it freed or empty */
    free(b.seqs), free(b.pos), free(b.tokens);
    if (!ok) step_costs_free(out);
    return ok;
}

void step_costs_free(StepCosts *c) {
    free(c->points);
    memset(c, 0, sizeof *c);
}
