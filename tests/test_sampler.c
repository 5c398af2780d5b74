/* test_sampler.c: every sampling stage on hand-computed cases; the arithmetic
 * is in the comments, done with exp() on a pocket calculator. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "ref/sampler.h"

#define P_TOL 1e-4

typedef struct {
    Sampler s;
    int token;
} Draw;

/* One draw with the given settings (default order unless `order` given). */
static Draw draw_once(const float *logits, int n, float t, int k, float p, float min_p,
                      const char *order, uint64_t seed) {
    SamplerParams params;
    sampler_params_default(&params);
    params.temperature = t, params.top_k = k, params.top_p = p, params.min_p = min_p;
    params.seed = seed;
    StepError err;
    if (order != NULL) cr_assert(sampler_order_parse(&params, order, &err), "%s", err.message);
    Draw d;
    cr_assert(sampler_init(&d.s, n, &params, &err), "%s", err.message);
    d.s.record_survivors = d.s.record_every_stage = true;
    cr_assert(sampler_sample(&d.s, logits, &d.token, &err), "%s", err.message);
    return d;
}

static const StageResult *stage_of(const Sampler *s, SamplerStage stage) {
    for (int i = 0; i < N_STAGES; i++) {
        if (s->stages[i].stage == stage) return &s->stages[i];
    }
    cr_assert_fail("stage %d not recorded", stage);
    return NULL;
}

static void expect_ids(const int *got, int n_got, const int *want, int n_want, const char *what) {
    cr_assert_eq(n_got, n_want, "%s: %d ids, expected %d", what, n_got, n_want);
    for (int i = 0; i < n_want; i++) cr_expect_eq(got[i], want[i], "%s[%d]", what, i);
}

static void expect_survivors(const Sampler *s, const int *ids, const double *probs, int n) {
    expect_ids(s->survivors, s->n_survivors, ids, n, "survivors");
    for (int i = 0; i < n; i++)
        cr_expect(fabs(s->survivor_probs[i] - probs[i]) < P_TOL, "prob %d: %f, by hand %f", i,
                  (double)s->survivor_probs[i], probs[i]);
}

/* logits [1, 3, 3, 2, 3], k = 2: three tokens tie at 3 for two places; the
 * lower ids (1, 2) win. softmax over {3, 3} = 1/2 each. */
Test(sampler, top_k_breaks_ties_by_lower_id) {
    float logits[] = {1, 3, 3, 2, 3};
    Draw d = draw_once(logits, 5, 1.0f, 2, 1.0f, 0.0f, NULL, 42);
    const StageResult *r = stage_of(&d.s, STAGE_TOP_K);
    int kept[] = {1, 2};
    expect_ids(r->kept, r->n_kept, kept, 2, "top_k kept");
    expect_survivors(&d.s, kept, (double[]){0.5, 0.5}, 2);
    cr_expect(d.token == 1 || d.token == 2);
    sampler_free(&d.s);
}

/* logits [0, 0, 0, 0]: each probability is e^0 / 4 = 1/4, exactly. p = 0.5:
 * running mass 0.25, then 0.5, which reaches p: keep ids 0 and 1 (ties by
 * lower id), mass 0.5, renormalised 1/2 each. */
Test(sampler, top_p_mass_landing_exactly_on_p) {
    float logits[] = {0, 0, 0, 0};
    Draw d = draw_once(logits, 4, 1.0f, 0, 0.5f, 0.0f, NULL, 42);
    const StageResult *r = stage_of(&d.s, STAGE_TOP_P);
    int kept[] = {0, 1};
    expect_ids(r->kept, r->n_kept, kept, 2, "top_p kept");
    cr_expect_eq(r->mass, 0.5f);
    expect_survivors(&d.s, kept, (double[]){0.5, 0.5}, 2);
    sampler_free(&d.s);
}

/* logits [10, 0, 0]: p(0) = e^10 / (e^10 + 2) = 22026.47 / 22028.47 = 0.99991,
 * already above p = 0.9: the nucleus is token 0 alone, whatever u is. */
Test(sampler, top_p_single_token_above_p) {
    float logits[] = {10, 0, 0};
    for (uint64_t seed = 1; seed <= 20; seed++) {
        Draw d = draw_once(logits, 3, 1.0f, 0, 0.9f, 0.0f, NULL, seed);
        const StageResult *r = stage_of(&d.s, STAGE_TOP_P);
        cr_expect_eq(r->n_kept, 1);
        cr_expect(fabs(r->mass - 0.99991) < P_TOL);
        cr_expect_eq(d.token, 0);
        sampler_free(&d.s);
    }
}

/* logits ln 4, ln 2, ln 1, ln 0.5: probabilities 4, 2, 1, 0.5 over 7.5 =
 * 0.5333, 0.2667, 0.1333, 0.0667. min_p = 0.2: threshold 0.2 · 0.5333 =
 * 0.1067; token 3 (0.0667) goes. Renormalised: 4/7, 2/7, 1/7. */
Test(sampler, min_p_keeps_tokens_near_the_top) {
    float logits[] = {logf(4), logf(2), 0.0f, logf(0.5f)};
    Draw d = draw_once(logits, 4, 1.0f, 0, 1.0f, 0.2f, NULL, 42);
    const StageResult *r = stage_of(&d.s, STAGE_MIN_P);
    int kept[] = {0, 1, 2};
    expect_ids(r->kept, r->n_kept, kept, 3, "min_p kept");
    expect_survivors(&d.s, kept, (double[]){4.0 / 7, 2.0 / 7, 1.0 / 7}, 3);
    sampler_free(&d.s);
}

/* T = 0 is greedy: the argmax, lowest id on a tie, and no random number is
 * drawn (the generator's state is untouched). T = 0.001 is nearly greedy:
 * [1, 3, 2.9] / 0.001 puts e^-100 on the runner-up, so every u gives 1. */
Test(sampler, temperature_to_zero_matches_greedy) {
    float ties[] = {3, 1, 3};
    Draw d = draw_once(ties, 3, 0.0f, 0, 1.0f, 0.0f, NULL, 42);
    cr_expect(d.s.greedy);
    cr_expect_eq(d.token, 0);
    cr_expect_eq(d.s.rng.state, 42u, "greedy drew a random number");
    sampler_free(&d.s);
    float logits[] = {1, 3, 2.9f};
    for (uint64_t seed = 1; seed <= 20; seed++) {
        d = draw_once(logits, 3, 0.001f, 0, 1.0f, 0.0f, NULL, seed);
        cr_expect_eq(d.token, sample_argmax(logits, 3));
        sampler_free(&d.s);
    }
}

/* T = 10^6: [2, 1, 0] / 10^6 differ by 2·10^-6, so each probability is
 * 1/3 within 10^-6. */
Test(sampler, very_large_temperature_is_nearly_uniform) {
    float logits[] = {2, 1, 0};
    Draw d = draw_once(logits, 3, 1e6f, 0, 1.0f, 0.0f, NULL, 42);
    cr_assert_eq(d.s.n_survivors, 3);
    for (int i = 0; i < 3; i++) cr_expect(fabs(d.s.survivor_probs[i] - 1.0 / 3) < 1e-5);
    sampler_free(&d.s);
}

/* A -inf logit masks its token: [-inf, 1, 1] leaves {1, 2} at 1/2 each,
 * and token 0 is never drawn. All -inf is an error. */
Test(sampler, minus_infinity_masks_a_token) {
    float logits[] = {-INFINITY, 1, 1};
    for (uint64_t seed = 1; seed <= 200; seed++) {
        Draw d = draw_once(logits, 3, 1.0f, 0, 1.0f, 0.0f, NULL, seed);
        cr_expect_neq(d.token, 0);
        if (seed == 1) expect_survivors(&d.s, (int[]){1, 2}, (double[]){0.5, 0.5}, 2);
        sampler_free(&d.s);
    }
    float masked[] = {-INFINITY, -INFINITY};
    SamplerParams p;
    sampler_params_default(&p);
    p.temperature = 1.0f;
    Sampler s;
    StepError err;
    int token;
    cr_assert(sampler_init(&s, 2, &p, &err));
    cr_expect(!sampler_sample(&s, masked, &token, &err));
    cr_expect(strstr(err.message, "-inf") != NULL, "%s", err.message);
    float nan_logits[] = {0, NAN};
    cr_expect(!sampler_sample(&s, nan_logits, &token, &err));
    cr_expect(strstr(err.message, "NaN") != NULL, "%s", err.message);
    sampler_free(&s);
}

/* One vector, three orders, three different survivor sets.
 * logits [4, 2, 1, 0.5, 0], T = 2, top-k 4, top-p 0.8, min-p 0.2.
 *
 * default (T, top-k, top-p, min-p): /2 → [2, 1, 0.5, 0.25, 0]; top-k drops
 *   id 4; softmax of [2, 1, 0.5, 0.25]: e^x = 7.389, 2.718, 1.649, 1.284,
 *   sum 13.040 → 0.5667, 0.2085, 0.1264, 0.0985; mass 0.5667, 0.7751,
 *   0.9016 ≥ 0.8 → {0, 1, 2}; min-p threshold 0.1133 keeps all three;
 *   renormalised 0.5667/0.9016 = 0.6285, 0.2312, 0.1402.
 * llama.cpp (top-k, top-p, min-p, T): top-p at T = 1 over [4, 2, 1, 0.5]:
 *   e^x = 54.598, 7.389, 2.718, 1.649, sum 66.354 → p(0) = 0.8228 ≥ 0.8
 *   → {0} alone; probability 1.
 * vllm (T, min-p, top-k, top-p): min-p over all five at T = 2: e^x = 7.389,
 *   2.718, 1.649, 1.284, 1, sum 14.040 → 0.5263, 0.1936, 0.1174, 0.0915,
 *   0.0712; threshold 0.2 · 0.5263 = 0.1053 → {0, 1, 2}; top-k keeps them;
 *   top-p over [2, 1, 0.5]: sum 11.756 → 0.6285, 0.2312, 0.1402; mass
 *   0.6285, 0.8597 ≥ 0.8 → {0, 1}; renormalised 0.6285/0.8597 = 0.7311, 0.2689.
 * hf is the default order under another name. */
Test(sampler, each_order_preset_keeps_its_own_survivors) {
    float logits[] = {4, 2, 1, 0.5f, 0};
    Draw d = draw_once(logits, 5, 2.0f, 4, 0.8f, 0.2f, "default", 42);
    expect_survivors(&d.s, (int[]){0, 1, 2}, (double[]){0.6285, 0.2312, 0.1402}, 3);
    cr_expect(fabs(stage_of(&d.s, STAGE_TOP_P)->mass - 0.9016) < P_TOL);
    sampler_free(&d.s);
    d = draw_once(logits, 5, 2.0f, 4, 0.8f, 0.2f, "hf", 42);
    expect_survivors(&d.s, (int[]){0, 1, 2}, (double[]){0.6285, 0.2312, 0.1402}, 3);
    sampler_free(&d.s);
    d = draw_once(logits, 5, 2.0f, 4, 0.8f, 0.2f, "llama.cpp", 42);
    expect_survivors(&d.s, (int[]){0}, (double[]){1.0}, 1);
    cr_expect(fabs(stage_of(&d.s, STAGE_TOP_P)->mass - 0.8228) < P_TOL);
    cr_expect_eq(d.s.stages[3].stage, STAGE_TEMPERATURE, "llama.cpp applies T last");
    sampler_free(&d.s);
    d = draw_once(logits, 5, 2.0f, 4, 0.8f, 0.2f, "vllm", 42);
    const StageResult *mp = stage_of(&d.s, STAGE_MIN_P);
    expect_ids(mp->kept, mp->n_kept, (int[]){0, 1, 2}, 3, "vllm min_p kept");
    expect_survivors(&d.s, (int[]){0, 1}, (double[]){0.7311, 0.2689}, 2);
    cr_expect(fabs(stage_of(&d.s, STAGE_TOP_P)->mass - 0.8597) < P_TOL);
    sampler_free(&d.s);
}

/* 20,000 seeded draws from (2, 1, 0) at T = 1 land within one percentage
 * point of 66.5 / 24.5 / 9.0 % (e^2, e^1, e^0 over 11.107). Deterministic:
 * the seed is fixed. */
Test(sampler, draws_follow_the_distribution) {
    float logits[] = {2, 1, 0};
    SamplerParams p;
    sampler_params_default(&p);
    p.temperature = 1.0f;
    p.seed = 2026;
    Sampler s;
    StepError err;
    cr_assert(sampler_init(&s, 3, &p, &err));
    int counts[3] = {0};
    for (int i = 0; i < 20000; i++) {
        int token;
        cr_assert(sampler_sample(&s, logits, &token, &err));
        counts[token]++;
    }
    double want[] = {66.5, 24.5, 9.0};
    for (int i = 0; i < 3; i++) {
        double pct = 100.0 * counts[i] / 20000.0;
        cr_expect(fabs(pct - want[i]) < 1.0, "token %d: %.2f%%, expected %.1f%%", i, pct, want[i]);
    }
    sampler_free(&s);
}

/* llama2.c's xorshift*: from state 1, the first step gives state
 * 1 ^ (1 << 25) = 0x2000001, then ^ (0x2000001 >> 27) = 0x2000001 (the shift
 * leaves 0); the output is the top 32 bits of 0x2000001 · 0x2545F4914F6CDD1D. */
Test(sampler, xorshift_matches_its_definition) {
    XorshiftRng r = {1};
    uint32_t out = xorshift_u32(&r);
    cr_expect_eq(r.state, 0x2000001ull);
    unsigned __int128 product = (unsigned __int128)0x2000001ull * 0x2545F4914F6CDD1Dull;
    cr_expect_eq(out, (uint32_t)((uint64_t)product >> 32));
    XorshiftRng r2 = {1};
    float f = xorshift_f32(&r2);
    cr_expect_eq(f, (float)(out >> 8) / 16777216.0f);
    cr_expect(f >= 0.0f && f < 1.0f);
}

Test(sampler, bad_parameters_are_refused) {
    SamplerParams p;
    StepError err;
    struct {
        float t, top_p, min_p;
        int k;
        const char *fragment;
    } cases[] = {
        {-0.5f, 1, 0, 0, "temperature"}, {1, 0, 0, 0, "top-p"},    {1, 1.5f, 0, 0, "top-p"},
        {1, 1, -0.1f, 0, "min-p"},       {1, 1, 1.1f, 0, "min-p"}, {1, 1, 0, -1, "top-k"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sampler_params_default(&p);
        p.temperature = cases[i].t, p.top_p = cases[i].top_p, p.min_p = cases[i].min_p;
        p.top_k = cases[i].k;
        cr_expect(!sampler_params_validate(&p, &err), "case %zu accepted", i);
        cr_expect(strstr(err.message, cases[i].fragment) != NULL, "%s", err.message);
    }
    cr_expect(!sampler_order_parse(&p, "random", &err));
    cr_expect(strstr(err.message, "unknown sampler order 'random'") != NULL);
}

/* The first u of a seed against run.c's formula, worked in Python's
 * integers (not by this sampler): state ^= state >> 12, ^= state << 25,
 * ^= state >> 27 (mod 2^64), out = (state · 0x2545F4914F6CDD1D mod 2^64)
 * >> 32, u = (out >> 8) / 2^24. Seed 7767648's first u is exactly 0.5. */
Test(sampler, first_draws_of_a_seed_are_run_c_s) {
    struct {
        uint64_t seed;
        uint32_t top24[4];
    } cases[] = {{7767648, {8388608, 12117465, 6452784, 6965448}},
                 {42, {5688906, 13124075, 13256299, 15838407}}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        XorshiftRng r = {cases[c].seed};
        for (int i = 0; i < 4; i++) {
            float u = xorshift_f32(&r);
            cr_expect_eq(u, (float)cases[c].top24[i] / 16777216.0f, "seed %llu, draw %d: %.9g",
                         (unsigned long long)cases[c].seed, i, (double)u);
        }
    }
}

/* Logits [0, 0]: p = [0.5, 0.5], CDF [0.5, 1]. Seed 7767648 draws u = 0.5
 * exactly: run.c's rule takes the first token whose CDF exceeds u
 * (u < cdf), which is token 1; `u <= cdf` would take token 0. Both ways
 * of walking (every filter off: ids in order; a filter on: survivors by
 * probability, ties by id) must give 1. */
Test(sampler, u_on_a_cdf_value_takes_the_next_token) {
    float logits[] = {0.0f, 0.0f};
    Draw plain = draw_once(logits, 2, 1.0f, 0, 1.0f, 0.0f, NULL, 7767648);
    cr_expect_eq(plain.s.u, 0.5f);
    cr_expect_eq(plain.token, 1, "u = 0.5 on the CDF's 0.5: token 1, got %d", plain.token);
    Draw filtered = draw_once(logits, 2, 1.0f, 2, 1.0f, 0.0f, NULL, 7767648);
    cr_expect_eq(filtered.token, 1, "with top-k 2: token 1, got %d", filtered.token);
    sampler_free(&plain.s), sampler_free(&filtered.s);
}

/* Min-p keeps a token whose probability is exactly min_p × the top one (at
 * least, not more than): logits [0, 0, -1] give p = [a, a, a/e], and
 * min_p = 1 puts the threshold at a itself, so tokens 0 and 1 stay
 * (renormalised 1/2 each) and token 2 goes. */
Test(sampler, min_p_keeps_a_token_exactly_at_the_threshold) {
    float logits[] = {0.0f, 0.0f, -1.0f};
    Draw d = draw_once(logits, 3, 1.0f, 0, 1.0f, 1.0f, NULL, 42);
    const StageResult *r = stage_of(&d.s, STAGE_MIN_P);
    int kept[] = {0, 1};
    expect_ids(r->kept, r->n_kept, kept, 2, "min_p kept");
    expect_survivors(&d.s, kept, (double[]){0.5, 0.5}, 2);
    sampler_free(&d.s);
}
