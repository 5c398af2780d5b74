/* test_load_sim.c: the load simulation against schedules worked by hand
 * (docs/serving-under-load.md works the first), the least-squares fit
 * against coefficients it must recover exactly, and the workload's draws
 * against the exponential's mean. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ref/serve/load_sim.h"
#include "ref/serve/step_costs_file.h"
#include "tests/helpers.h"

/* Costs of whole milliseconds: a decode step 1 ms, a prefill 2 ms, nothing
 * per row or position, so each schedule below can be followed on paper. */
static StepCosts flat_costs(void) {
    return (StepCosts){.decode = {.fixed = 0.001},
                       .prefill = {.fixed = 0.002},
                       .seq_len = 512,
                       .kv_bytes_per_position = 1024};
}

static void run(const SimRequest *reqs, int n, SimServer s, const StepCosts *c,
                SimRequestResult *per, SimReport *r) {
    StepError err;
    cr_assert(load_sim_run(reqs, n, &s, c, per, r, &err), "%s", err.message);
}

/* Two requests at time 0, one slot: the second waits for the first.
 * R1: prefill 0-2 ms (token 1 at 2), decode steps end at 3 and 4.
 * R2: admitted at 4, prefill to 6 (token 1), steps end at 7 and 8. */
Test(load_sim, one_slot_serves_in_turn) {
    StepCosts c = flat_costs();
    SimRequest reqs[2] = {{0, 4, 3}, {0, 4, 3}};
    SimRequestResult per[2];
    SimReport r;
    run(reqs, 2, (SimServer){.max_batch = 1, .block_size = 16}, &c, per, &r);
    cr_assert_float_eq(per[0].ttft_ms, 2.0, 1e-9);
    cr_assert_float_eq(per[0].e2e_ms, 4.0, 1e-9);
    cr_assert_float_eq(per[0].itl_mean_ms, 1.0, 1e-9);
    cr_assert_float_eq(per[1].queue_ms, 4.0, 1e-9);
    cr_assert_float_eq(per[1].ttft_ms, 6.0, 1e-9);
    cr_assert_float_eq(per[1].e2e_ms, 8.0, 1e-9);
    cr_assert_eq(r.steps, 4);
    cr_assert_eq(r.generated, 6);
    cr_assert_float_eq(r.seconds, 0.008, 1e-12);
    cr_assert_float_eq(r.throughput, 750.0, 1e-6);
    cr_assert_float_eq(r.ttft_ms.p50, 2.0, 1e-9); /* rank ceil(0.5 x 2) = 1 */
    cr_assert_float_eq(r.ttft_ms.p95, 6.0, 1e-9); /* rank 2 */
}

/* Two slots: both prefilled first (tokens at 2 and 4), then decoded
 * together: steps end at 5 and 6. R1's gaps are 3 and 1 ms. */
Test(load_sim, two_slots_decode_together) {
    StepCosts c = flat_costs();
    SimRequest reqs[2] = {{0, 4, 3}, {0, 4, 3}};
    SimRequestResult per[2];
    SimReport r;
    run(reqs, 2, (SimServer){.max_batch = 2, .block_size = 16}, &c, per, &r);
    cr_assert_float_eq(per[0].ttft_ms, 2.0, 1e-9);
    cr_assert_float_eq(per[0].itl_max_ms, 3.0, 1e-9);
    cr_assert_float_eq(per[0].e2e_ms, 6.0, 1e-9);
    cr_assert_float_eq(per[1].ttft_ms, 4.0, 1e-9);
    cr_assert_float_eq(per[1].e2e_ms, 6.0, 1e-9);
    cr_assert_eq(r.steps, 2);
    cr_assert_eq(r.peak_batch, 2);
    /* the pooled gaps: 3, 1 (R1) and 1, 1 (R2); p50 rank 2 = 1, p95 rank 4 = 3 */
    cr_assert_float_eq(r.itl_ms.p50, 1.0, 1e-9);
    cr_assert_float_eq(r.itl_ms.p95, 3.0, 1e-9);
    cr_assert_float_eq(r.itl_ms.mean, 1.5, 1e-9);
}

/* Two slots but blocks for one: each request needs (4 + 3) / 4 rounded up
 * = 2 blocks of 4 positions, and there are 3. R2 is first in line with a
 * free slot from 2 ms (after R1's prefill) until R1 ends at 4 ms. */
Test(load_sim, too_few_blocks_make_a_request_wait_and_say_how_long) {
    StepCosts c = flat_costs();
    SimRequest reqs[2] = {{0, 4, 3}, {0, 4, 3}};
    SimRequestResult per[2];
    SimReport r;
    run(reqs, 2, (SimServer){.max_batch = 2, .block_size = 4, .kv_blocks = 3}, &c, per, &r);
    cr_assert_eq(per[0].blocks, 2);
    cr_assert_float_eq(per[1].queue_ms, 4.0, 1e-9);
    cr_assert_float_eq(per[1].block_wait_ms, 2.0, 1e-9); /* first in line from 2 ms */
    cr_assert_float_eq(per[1].ttft_ms, 6.0, 1e-9);
    cr_assert_eq(r.waited_for_blocks, 1);
    cr_assert_float_eq(r.block_wait_max_ms, 2.0, 1e-9);
    cr_assert_eq(r.peak_blocks, 2);
    cr_assert_eq(r.peak_batch, 1);
}

/* A request longer than the context, or than every block there is, is
 * rejected and the rest are served. */
Test(load_sim, requests_that_can_never_run_are_rejected_not_waited_for) {
    StepCosts c = flat_costs();
    SimRequest reqs[3] = {{0, 500, 20}, {0, 4, 3}, {0, 40, 30}};
    SimRequestResult per[3];
    SimReport r;
    run(reqs, 3, (SimServer){.max_batch = 4, .block_size = 4, .kv_blocks = 10}, &c, per, &r);
    cr_assert(per[0].rejected); /* 520 > 512 positions */
    cr_assert(per[2].rejected); /* 70 / 4 -> 18 blocks > 10 */
    cr_assert(!per[1].rejected);
    cr_assert_eq(r.served, 1);
    cr_assert_eq(r.rejected, 2);
    cr_assert_float_eq(per[1].ttft_ms, 2.0, 1e-9);
}

/* Chunked prefill: a 10-position prompt in chunks of 4 is three passes
 * (2 ms each); R1, decoding, gets a token between them. R1: prefill 0-2,
 * R2 admitted at 2: chunk 2-4; decode step (R1) 4-5; chunk 5-7; step 7-8;
 * last chunk 8-10: R2's first token at 10. */
Test(load_sim, chunked_prefill_interleaves_decode_steps) {
    StepCosts c = flat_costs();
    SimRequest reqs[2] = {{0, 4, 4}, {0.001, 10, 1}};
    SimRequestResult per[2];
    SimReport r;
    run(reqs, 2, (SimServer){.max_batch = 2, .block_size = 16, .prefill_chunk = 4}, &c, per, &r);
    cr_assert_float_eq(per[1].queue_ms, 1.0, 1e-9);
    cr_assert_float_eq(per[1].ttft_ms, 9.0, 1e-9); /* 10 ms, arrived at 1 */
    cr_assert_eq(r.prefill_passes, 4);
    cr_assert_float_eq(per[0].e2e_ms, 11.0, 1e-9); /* tokens at 2, 5, 8, 11 */
}

/* The clock waits for an arrival when nothing is running. */
Test(load_sim, an_idle_server_waits_for_the_next_arrival) {
    StepCosts c = flat_costs();
    SimRequest reqs[2] = {{0, 4, 2}, {1.0, 4, 2}};
    SimRequestResult per[2];
    SimReport r;
    run(reqs, 2, (SimServer){.max_batch = 2, .block_size = 16}, &c, per, &r);
    cr_assert_float_eq(per[1].queue_ms, 0.0, 1e-9);
    cr_assert_float_eq(per[1].ttft_ms, 2.0, 1e-9);
    cr_assert_float_eq(r.seconds, 1.003, 1e-12);
}

/* Per row and per position: a decode step of 2 rows at positions 4 and 4
 * attends 10 positions; a prefill of [0, 4) attends 1 + 2 + 3 + 4 = 10. */
Test(load_sim, costs_count_rows_and_attended_positions) {
    StepCosts c = {.decode = {.fixed = 1, .per_row = 10, .per_attended = 100},
                   .prefill = {.fixed = 2, .per_row = 20, .per_attended = 200}};
    cr_assert_float_eq(step_cost_decode(&c, 2, 10), 1 + 20 + 1000, 1e-9);
    cr_assert_float_eq(prefill_attended(0, 4), 10, 0);
    cr_assert_float_eq(prefill_attended(4, 6), 5 + 6, 0);
    cr_assert_float_eq(step_cost_prefill(&c, 0, 4), 2 + 80 + 2000, 1e-9);
}

/* Points made from known coefficients are fitted back to them; a negative
 * coefficient is dropped to 0 and the rest refitted. */
Test(load_sim, the_fit_recovers_the_coefficients_that_made_the_points) {
    StepCostPoint p[6];
    const int rows[6] = {1, 2, 4, 1, 2, 4};
    const double attended[6] = {17, 34, 68, 129, 258, 516};
    for (int i = 0; i < 6; i++)
        p[i] = (StepCostPoint){PASS_KIND_DECODE, rows[i], attended[i],
                               1e-3 + 2e-5 * rows[i] + 3e-7 * attended[i]};
    PassCost fit;
    StepError err;
    cr_assert(step_costs_fit(p, 6, PASS_KIND_DECODE, &fit, &err), "%s", err.message);
    cr_assert_float_eq(fit.fixed, 1e-3, 1e-12);
    cr_assert_float_eq(fit.per_row, 2e-5, 1e-12);
    cr_assert_float_eq(fit.per_attended, 3e-7, 1e-14);
    for (int i = 0; i < 6; i++) p[i].seconds = 1e-3 - 1e-6 * rows[i] + 3e-7 * attended[i];
    cr_assert(step_costs_fit(p, 6, PASS_KIND_DECODE, &fit, &err), "%s", err.message);
    cr_assert_eq(fit.per_row, 0.0);
    cr_assert(fit.fixed > 0 && fit.per_attended > 0);
    cr_assert_not(step_costs_fit(p, 1, PASS_KIND_DECODE, &fit, &err), "one point fits nothing");
}

/* The gaps are exponential: their mean is 1 / rate within a few standard
 * errors (1/rate/sqrt(n)), and the same seed draws the same workload. */
Test(load_sim, poisson_gaps_have_the_rate_as_their_mean) {
    enum { N = 20000 };
    static SimRequest a[N], b[N];
    SimWorkload w = {.n = N,
                     .rate = 50,
                     .prompt_min = 3,
                     .prompt_max = 9,
                     .new_min = 1,
                     .new_max = 1,
                     .seed = 7};
    StepError err;
    cr_assert(sim_workload_make(&w, a, &err), "%s", err.message);
    cr_assert(sim_workload_make(&w, b, &err));
    double mean_gap = a[N - 1].arrival_s / N;
    cr_assert(fabs(mean_gap - 0.02) < 4 * 0.02 / sqrt(N), "mean gap %g", mean_gap);
    int lo = 99, hi = 0;
    for (int i = 0; i < N; i++) {
        cr_assert_eq(a[i].arrival_s, b[i].arrival_s);
        lo = a[i].prompt_tokens < lo ? a[i].prompt_tokens : lo;
        hi = a[i].prompt_tokens > hi ? a[i].prompt_tokens : hi;
    }
    cr_assert(lo == 3 && hi == 9);
    w.seed = 0;
    cr_assert_not(sim_workload_make(&w, a, &err));
}

/* A cost file from elsewhere: every field checked. */
Test(load_sim, cost_files_are_checked_field_by_field) {
    StepCosts c;
    StepError err;
    const char *good = "{\"format\":\"stepwise-step-costs\",\"version\":1,\"seq_len\":512,"
                       "\"kv_bytes_per_position\":1280,\"decode\":{\"fixed_s\":0.001,"
                       "\"per_row_s\":0,\"per_attended_s\":0},\"prefill\":{\"fixed_s\":0.002,"
                       "\"per_row_s\":0,\"per_attended_s\":0}}";
    cr_assert(step_costs_parse(good, strlen(good), &c, &err), "%s", err.message);
    cr_assert_eq(c.seq_len, 512);
    cr_assert_float_eq(c.prefill.fixed, 0.002, 0);
    step_costs_free(&c);
    const char *bad[] = {
        "[]",
        "{\"format\":\"x\"}",
        "{\"format\":\"stepwise-step-costs\",\"version\":2}",
        "{\"format\":\"stepwise-step-costs\",\"version\":1,\"seq_len\":0}",
        "{\"format\":\"stepwise-step-costs\",\"version\":1,\"seq_len\":8,"
        "\"kv_bytes_per_position\":1.5}",
        "{\"format\":\"stepwise-step-costs\",\"version\":1,\"seq_len\":8,"
        "\"kv_bytes_per_position\":4,\"decode\":{\"fixed_s\":-1,\"per_row_s\":0,"
        "\"per_attended_s\":0}}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        cr_assert_not(step_costs_parse(bad[i], strlen(bad[i]), &c, &err), "%s", bad[i]);
}

/* A file that cannot be read (missing, a directory, a NUL byte) leaves the
 * costs empty, whatever they held: their caller frees them on every path
 * (serve-sim freed stack garbage here, and crashed about half the runs). */
Test(load_sim, a_cost_file_that_cannot_be_read_leaves_the_costs_empty) {
    char nul[512];
    snprintf(nul, sizeof nul, "%s", temp_path("costs-nul.json"));
    FILE *f = fopen(nul, "wb");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite("{\"a\0\"}", 1, 6, f), 6u);
    fclose(f);
    const char *paths[] = {"/nonexistent/costs.json", "/tmp", nul};
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        StepCosts c;
        memset(&c, 0xA5, sizeof c); /* what an uninitialised one might hold */
        StepError err;
        cr_assert_not(step_costs_read(paths[i], &c, &err), "%s", paths[i]);
        cr_assert_null(c.points, "%s: %s", paths[i], err.message);
        cr_assert_eq(c.n_points, 0, "%s", paths[i]);
        step_costs_free(&c); /* what serve-sim does next: safe now */
    }
    remove(nul);
}

/* Costs that let no time pass give no report: 3 tokens in 0 s is no rate
 * (the simulation said 0 tokens/s). Here prefill costs nothing and each
 * request wants one token, its prefill's: every token at t = 0. With a
 * decode step of 1 ms and two tokens each, time passes: 4 tokens, the
 * second of each at 1 ms (both decoded in one step), 4000 tokens/s. */
Test(load_sim, tokens_in_no_time_are_refused_not_reported_at_0_tokens_a_second) {
    StepCosts c = {.decode = {.fixed = 0.001}, .seq_len = 64, .kv_bytes_per_position = 4};
    SimRequest reqs[2] = {{0, 4, 1}, {0, 4, 1}};
    SimRequestResult per[2];
    SimReport r;
    SimServer s = {.max_batch = 2, .block_size = 16};
    StepError err;
    cr_assert_not(load_sim_run(reqs, 2, &s, &c, per, &r, &err));
    cr_assert(strstr(err.message, "0 s") != NULL, "%s", err.message);
    reqs[0].new_tokens = reqs[1].new_tokens = 2;
    run(reqs, 2, s, &c, per, &r);
    cr_assert_eq(r.generated, 4);
    cr_assert_float_eq(r.seconds, 0.001, 1e-15);
    cr_assert_float_eq(r.throughput, 4000.0, 1e-6);
}

/* A cost file whose every coefficient is 0 is refused; one nonzero
 * coefficient of either pass is enough for time to pass. */
Test(load_sim, a_cost_file_of_zeros_is_refused) {
    const char *head = "{\"format\":\"stepwise-step-costs\",\"version\":1,\"seq_len\":8,"
                       "\"kv_bytes_per_position\":4,";
    const char *passes[] = {"\"decode\":{\"fixed_s\":0,\"per_row_s\":0,\"per_attended_s\":0},"
                            "\"prefill\":{\"fixed_s\":0,\"per_row_s\":0,\"per_attended_s\":0}}",
                            "\"decode\":{\"fixed_s\":0,\"per_row_s\":0,\"per_attended_s\":1e-300},"
                            "\"prefill\":{\"fixed_s\":0,\"per_row_s\":0,\"per_attended_s\":0}}",
                            "\"decode\":{\"fixed_s\":0,\"per_row_s\":0,\"per_attended_s\":0},"
                            "\"prefill\":{\"fixed_s\":0,\"per_row_s\":1e-9,\"per_attended_s\":0}}"};
    for (int i = 0; i < 3; i++) {
        char text[512];
        snprintf(text, sizeof text, "%s%s", head, passes[i]);
        StepCosts c;
        StepError err;
        bool ok = step_costs_parse(text, strlen(text), &c, &err);
        cr_assert_eq(ok, i > 0, "%s: %s", passes[i], ok ? "read" : err.message);
        if (!ok) cr_assert(strstr(err.message, "every cost is 0") != NULL, "%s", err.message);
        step_costs_free(&c);
    }
}
