/* test_golden.c: stepwise against llama2.c run.c's own outputs for
 * stories260K (../shared/golden, made by run.c itself). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>

#include "ref/forward.h"
#include "ref/generate.h"
#include "ref/kernels/pack.h"
#include "ref/model/model_pack.h"
#include "tests/helpers.h"

#define TOLERANCE 1e-5f

typedef struct {
    cJSON *root;
    int n_pos;
    int *tokens; /* [n_pos] input token at each position */
} OnceUponATime;

static OnceUponATime load_once_upon_a_time(void) {
    OnceUponATime g = {read_json_file(golden_file("stories260K/once_upon_a_time.json")), 0, NULL};
    if (g.root == NULL) cr_skip_test("golden once_upon_a_time.json not found");
    const cJSON *steps = cJSON_GetObjectItem(g.root, "steps");
    g.n_pos = cJSON_GetArraySize(steps);
    cr_assert_eq(g.n_pos, 48);
    g.tokens = malloc((size_t)g.n_pos * sizeof(int));
    for (int p = 0; p < g.n_pos; p++) {
        const cJSON *step = cJSON_GetArrayItem(steps, p);
        cr_assert_eq(cJSON_GetObjectItem(step, "pos")->valueint, p);
        g.tokens[p] = cJSON_GetObjectItem(step, "token")->valueint;
    }
    return g;
}

/* stories260K with the plain kernels (the weights as loaded), or the fast
 * ones (packed, the default path): every golden test runs on both, so a
 * fast-path bug fails here, where the forward pass is tested. */
static void load_with_kernels(Model *m, Tokenizer *tok, bool fast) {
    load_stories260k(m, tok);
    StepError err;
    if (fast) cr_assert(model_pack(m, &err), "%s", err.message);
}

static float max_abs_diff(const float *a, const cJSON *golden, int n) {
    cr_assert_eq(cJSON_GetArraySize(golden), n);
    float worst = 0.0f;
    for (int i = 0; i < n; i++) {
        float d = fabsf(a[i] - (float)cJSON_GetArrayItem(golden, i)->valuedouble);
        if (!(d <= worst)) worst = d; /* NaN counts as worst */
    }
    return worst;
}

/* The generation path: prefill the prompt, then decode each next token. */
static void logits_match_run_c_at_every_position(bool fast) {
    Model m;
    Tokenizer tok;
    load_with_kernels(&m, &tok, fast);
    OnceUponATime g = load_once_upon_a_time();
    /* the golden prompt encoding is also sentencepiece's: [1, 403, 407, 261, 378] */
    int *ids, n_ids;
    StepError err;
    cr_assert(tokenizer_encode(&tok, "Once upon a time", true, &ids, &n_ids, &err));
    cr_assert_eq(n_ids, 5);
    for (int i = 0; i < 5; i++) cr_assert_eq(ids[i], g.tokens[i]);

    RunState s;
    cr_assert(run_state_init(&s, &m.config, g.n_pos, 5, &err), "%s", err.message);
    const cJSON *steps = cJSON_GetObjectItem(g.root, "steps");
    const float *logits = forward_tokens(&m, &s, g.tokens, 5, 0, true, NULL);
    for (int p = 0; p < g.n_pos; p++) {
        const float *row = logits + (p < 5 ? (size_t)p * 512 : 0);
        if (p >= 5) row = forward_tokens(&m, &s, &g.tokens[p], 1, p, false, NULL);
        const cJSON *step = cJSON_GetArrayItem(steps, p);
        float d = max_abs_diff(row, cJSON_GetObjectItem(step, "logits"), 512);
        cr_expect_leq(d, TOLERANCE, "pos %d: max |Δlogit| = %g", p, (double)d);
    }
    /* the cache after all 48 positions */
    const cJSON *kc = cJSON_GetObjectItem(g.root, "key_cache");
    const cJSON *vc = cJSON_GetObjectItem(g.root, "value_cache");
    int kv_dim = config_kv_dim(&m.config);
    cr_assert_eq(cJSON_GetObjectItem(g.root, "kv_dim")->valueint, kv_dim);
    for (int l = 0; l < m.config.n_layers; l++) {
        for (int p = 0; p < g.n_pos; p++) {
            size_t off = ((size_t)l * s.seq.cache.capacity + p) * kv_dim;
            float dk = max_abs_diff(s.seq.cache.key + off,
                                    cJSON_GetArrayItem(cJSON_GetArrayItem(kc, l), p), kv_dim);
            float dv = max_abs_diff(s.seq.cache.value + off,
                                    cJSON_GetArrayItem(cJSON_GetArrayItem(vc, l), p), kv_dim);
            cr_expect_leq(dk, TOLERANCE, "layer %d pos %d: max |ΔK| = %g", l, p, (double)dk);
            cr_expect_leq(dv, TOLERANCE, "layer %d pos %d: max |ΔV| = %g", l, p, (double)dv);
        }
    }
    run_state_free(&s);
    free(ids);
    free(g.tokens);
    cJSON_Delete(g.root);
    model_free(&m);
    tokenizer_free(&tok);
}

Test(golden, logits_match_run_c_at_every_position_plain) {
    logits_match_run_c_at_every_position(false);
}

Test(golden, logits_match_run_c_at_every_position_fast) {
    logits_match_run_c_at_every_position(true);
}

/* One prefill over all 48 golden tokens, every position's logits. */
static void one_prefill_pass_matches_run_c(bool fast) {
    Model m;
    Tokenizer tok;
    load_with_kernels(&m, &tok, fast);
    OnceUponATime g = load_once_upon_a_time();
    RunState s;
    StepError err;
    cr_assert(run_state_init(&s, &m.config, g.n_pos, g.n_pos, &err), "%s", err.message);
    const float *logits = forward_tokens(&m, &s, g.tokens, g.n_pos, 0, true, NULL);
    const cJSON *steps = cJSON_GetObjectItem(g.root, "steps");
    for (int p = 0; p < g.n_pos; p++) {
        const cJSON *step = cJSON_GetArrayItem(steps, p);
        float d = max_abs_diff(logits + (size_t)p * 512, cJSON_GetObjectItem(step, "logits"), 512);
        cr_expect_leq(d, TOLERANCE, "pos %d: max |Δlogit| = %g", p, (double)d);
    }
    run_state_free(&s);
    free(g.tokens);
    cJSON_Delete(g.root);
    model_free(&m);
    tokenizer_free(&tok);
}

Test(golden, one_prefill_pass_matches_run_c_plain) {
    one_prefill_pass_matches_run_c(false);
}

Test(golden, one_prefill_pass_matches_run_c_fast) {
    one_prefill_pass_matches_run_c(true);
}

static void greedy_from_bos_reproduces_run_c_token_for_token(bool fast) {
    Model m;
    Tokenizer tok;
    load_with_kernels(&m, &tok, fast);
    cJSON *g = read_json_file(golden_file("stories260K/greedy_from_bos_256.json"));
    cr_assert_not_null(g);
    const cJSON *want = cJSON_GetObjectItem(g, "tokens");
    cr_assert_eq(cJSON_GetArraySize(want), 257);
    GenerateResult r = greedy_from_bos(&m, 256);
    cr_assert_eq(r.n_tokens, 257);
    cr_assert_eq(r.stop_reason, STOP_STEPS);
    cr_assert_eq(r.n_decoded, 255, "256 forward passes: one prefill, 255 decodes");
    for (int i = 0; i < 257; i++)
        cr_assert_eq(r.tokens[i], cJSON_GetArrayItem(want, i)->valueint, "token %d", i);
    generate_result_free(&r);
    cJSON_Delete(g);
    model_free(&m);
    tokenizer_free(&tok);
}

Test(golden, greedy_from_bos_reproduces_run_c_token_for_token_plain) {
    greedy_from_bos_reproduces_run_c_token_for_token(false);
}

Test(golden, greedy_from_bos_reproduces_run_c_token_for_token_fast) {
    greedy_from_bos_reproduces_run_c_token_for_token(true);
}

/* run.c with seed 133742, temperature 1, top-p 0.9, from BOS, 200 positions
 * (every one a draw, since the prompt is BOS alone). */
static void seeded_top_p_run_reproduces_run_c_token_for_token(bool fast) {
    Model m;
    Tokenizer tok;
    load_with_kernels(&m, &tok, fast);
    cJSON *doc = read_json_file(golden_file("stories260K/seeded_133742.json"));
    cr_assert_not_null(doc);
    const cJSON *g = cJSON_GetArrayItem(doc, 0);
    const cJSON *want = cJSON_GetObjectItem(g, "ids_after_bos");
    int n_want = cJSON_GetArraySize(want);
    cr_assert_eq(n_want, 200);
    GenerateOptions opt;
    generate_options_default(&opt);
    opt.steps = cJSON_GetObjectItem(g, "steps")->valueint;
    opt.sampler.temperature = (float)cJSON_GetObjectItem(g, "temperature")->valuedouble;
    opt.sampler.top_p = (float)cJSON_GetObjectItem(g, "top_p")->valuedouble;
    opt.sampler.seed = (uint64_t)cJSON_GetObjectItem(g, "seed")->valuedouble;
    int bos = TOKEN_BOS;
    GenerateResult r;
    StepError err;
    cr_assert(generate(&m, &bos, 1, &opt, NULL, NULL, &r, &err), "%s", err.message);
    cr_assert_eq(r.n_tokens, 1 + n_want);
    for (int i = 0; i < n_want; i++)
        cr_assert_eq(r.tokens[1 + i], cJSON_GetArrayItem(want, i)->valueint, "token %d", i + 1);
    char *text = tokenizer_decode_tokens(&tok, r.tokens, r.n_tokens, -1);
    cr_expect_str_eq(text, cJSON_GetObjectItem(g, "text")->valuestring);
    free(text);
    generate_result_free(&r);
    cJSON_Delete(doc);
    model_free(&m);
    tokenizer_free(&tok);
}

Test(golden, seeded_top_p_run_reproduces_run_c_token_for_token_plain) {
    seeded_top_p_run_reproduces_run_c_token_for_token(false);
}

Test(golden, seeded_top_p_run_reproduces_run_c_token_for_token_fast) {
    seeded_top_p_run_reproduces_run_c_token_for_token(true);
}
