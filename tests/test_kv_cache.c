/* test_kv_cache.c: the cache is an optimisation, not a different model;
 * its size is what inspect says; its work is what the formulas say; and a
 * full window is handled as each policy promises. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ref/context_shift.h"
#include "ref/formats/checkpoint.h"
#include "ref/forward.h"
#include "ref/generate.h"
#include "tests/helpers.h"

/* Records, per draw, the logits at the sampled position; per pass, the work;
 * per context shift, the shift. */
#define MAX_STEPS 64
typedef struct {
    int vocab;
    int n_draws;
    int draw_pos[MAX_STEPS];
    float *logits[MAX_STEPS];
    int n_passes;
    WorkCount work[MAX_STEPS];
    int pass_pos0[MAX_STEPS], pass_tokens[MAX_STEPS];
    int n_shifts;
    ContextShift shifts[8];
    int shift_dropped[8][64];
} Recorder;

static void on_sample(void *ctx, int pos, const float *logits, const Sampler *s) {
    Recorder *r = ctx;
    (void)s;
    cr_assert_lt(r->n_draws, MAX_STEPS);
    r->draw_pos[r->n_draws] = pos;
    r->logits[r->n_draws] = malloc((size_t)r->vocab * sizeof(float));
    memcpy(r->logits[r->n_draws++], logits, (size_t)r->vocab * sizeof(float));
}

static void on_work(void *ctx, PassPhase phase, int pos0, int n, const WorkCount *w) {
    Recorder *r = ctx;
    (void)phase;
    cr_assert_lt(r->n_passes, MAX_STEPS);
    r->work[r->n_passes] = *w;
    r->pass_pos0[r->n_passes] = pos0;
    r->pass_tokens[r->n_passes++] = n;
}

static void on_context(void *ctx, const ContextShift *shift) {
    Recorder *r = ctx;
    cr_assert_lt(r->n_shifts, 8);
    r->shifts[r->n_shifts] = *shift;
    memcpy(r->shift_dropped[r->n_shifts], shift->dropped, (size_t)shift->n_dropped * sizeof(int));
    r->shifts[r->n_shifts].dropped = r->shift_dropped[r->n_shifts];
    r->n_shifts++;
}

static void recorder_free(Recorder *r) {
    for (int i = 0; i < r->n_draws; i++) free(r->logits[i]);
}

static GenerateResult run(const Model *m, const int *prompt, int n_prompt, GenerateOptions *opt,
                          Recorder *rec) {
    *rec = (Recorder){.vocab = m->config.vocab_size};
    StepObserver obs = {.ctx = rec, .sample = on_sample, .work = on_work, .context = on_context};
    GenerateResult r;
    StepError err;
    cr_assert(generate(m, prompt, n_prompt, opt, &obs, NULL, &r, &err), "%s", err.message);
    return r;
}

/* A random model whose classifier rows for BOS and EOS are zero, so that
 * greedy decoding (nearly surely) never stops early. */
static void random_model(Model *m, int dim, int hidden, int layers, int heads, int kv, int vocab,
                         int seq_len, bool untied) {
    Config c = {.dim = dim,
                .hidden_dim = hidden,
                .n_layers = layers,
                .n_heads = heads,
                .n_kv_heads = kv,
                .vocab_size = vocab,
                .seq_len = seq_len,
                .shared_classifier = !untied};
    StepError err;
    cr_assert(model_init_random(m, &c, 1234, &err), "%s", err.message);
    float *cls = model_matrix_slot(m, &m->classifier);
    memset(cls + 1 * dim, 0, 2 * (size_t)dim * sizeof(float));
}

/* The same run with and without a cache: bitwise-equal logits at every step. */
static void expect_cache_changes_nothing(const Model *m, const int *prompt, int n_prompt,
                                         int steps) {
    GenerateOptions opt;
    generate_options_default(&opt);
    opt.steps = steps;
    Recorder cached, recomputed;
    GenerateResult a = run(m, prompt, n_prompt, &opt, &cached);
    opt.no_kv_cache = true;
    GenerateResult b = run(m, prompt, n_prompt, &opt, &recomputed);
    cr_assert_eq(a.n_tokens, b.n_tokens);
    cr_assert_eq(memcmp(a.tokens, b.tokens, (size_t)a.n_tokens * sizeof(int)), 0);
    cr_assert_eq(cached.n_draws, recomputed.n_draws);
    for (int i = 0; i < cached.n_draws; i++)
        cr_assert_eq(memcmp(cached.logits[i], recomputed.logits[i],
                            (size_t)m->config.vocab_size * sizeof(float)),
                     0, "logits differ at draw %d (pos %d)", i, cached.draw_pos[i]);
    /* the no-cache path does more work at every step after the first */
    cr_expect_gt(b.work.macs, a.work.macs);
    generate_result_free(&a), generate_result_free(&b);
    recorder_free(&cached), recorder_free(&recomputed);
}

Test(kv_cache, no_cache_gives_bitwise_identical_logits_on_stories260k) {
    Model m;
    Tokenizer tok;
    load_stories260k(&m, &tok);
    int prompt[] = {1, 403, 407, 261, 378};
    expect_cache_changes_nothing(&m, prompt, 5, 40);
    model_free(&m), tokenizer_free(&tok);
}

Test(kv_cache, no_cache_gives_bitwise_identical_logits_on_mha_gqa_mqa) {
    struct {
        int heads, kv;
        bool untied;
    } shapes[] = {{4, 4, false}, {4, 2, false}, {4, 1, false}, {4, 2, true}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        Model m;
        random_model(&m, 16, 24, 2, shapes[i].heads, shapes[i].kv, 40, 32, shapes[i].untied);
        int prompt[] = {1, 7, 9, 3};
        expect_cache_changes_nothing(&m, prompt, 4, 20);
        model_free(&m);
    }
}

/* The closed forms, for a pass of T tokens from pos0 with `rows` logit rows
 * (L layers, dim d, kv_dim k, hidden h, vocab V, n_heads H, head_dim hd):
 *   macs   = T·L·(2d² + 2dk + 3dh) + rows·d·V + H·hd·2·S
 *   weight = 4·(T·d + L·(2d + 2d² + 2dk + 3dh) + d + V·d)
 *   read   = k·2·4·S
 *   write  = T·L·k·2·4
 * with S = Σ_layers Σ_t (pos0 + t + 1): the positions each query sees, at
 * most W on a layer with a window of W (each layer but every
 * sliding_pattern-th, when sliding_window is set). */
static WorkCount closed_form_rows(const Config *c, int T, int pos0, int rows, uint64_t row_bytes);
static WorkCount closed_form(const Config *c, int T, int pos0, int rows) {
    return closed_form_rows(c, T, pos0, rows, 4 * (uint64_t)config_kv_dim(c));
}
/* The same with a cache row (K or V, one position, one layer) of row_bytes. */
static WorkCount closed_form_rows(const Config *c, int T, int pos0, int rows, uint64_t row_bytes) {
    uint64_t d = c->dim, k = config_kv_dim(c), h = c->hidden_dim, V = c->vocab_size;
    uint64_t L = c->n_layers, H = c->n_heads, hd = config_head_dim(c), seen = 0;
    for (int l = 0; l < c->n_layers; l++) {
        bool slides =
            c->sliding_window > 0 && (c->sliding_pattern == 0 || (l + 1) % c->sliding_pattern != 0);
        for (int t = 0; t < T; t++) {
            int sees = pos0 + t + 1;
            seen += (uint64_t)(slides && sees > c->sliding_window ? c->sliding_window : sees);
        }
    }
    WorkCount w;
    w.macs = T * L * (2 * d * d + 2 * d * k + 3 * d * h) + rows * d * V + H * hd * 2 * seen;
    w.weight_bytes = 4 * (T * d + L * (2 * d + 2 * d * d + 2 * d * k + 3 * d * h) + d + V * d);
    w.kv_bytes_read = row_bytes * 2 * seen;
    w.kv_bytes_written = (uint64_t)T * L * row_bytes * 2;
    return w;
}

static void expect_work(const WorkCount *got, const WorkCount *want, int pass) {
    cr_expect_eq(got->macs, want->macs, "pass %d macs %llu, formula %llu", pass,
                 (unsigned long long)got->macs, (unsigned long long)want->macs);
    cr_expect_eq(got->weight_bytes, want->weight_bytes, "pass %d weight bytes", pass);
    cr_expect_eq(got->kv_bytes_read, want->kv_bytes_read, "pass %d kv read", pass);
    cr_expect_eq(got->kv_bytes_written, want->kv_bytes_written, "pass %d kv written", pass);
}

/* The prompt 1, 5, 6 and 4 steps (opt as they leave it): with the cache,
 * a prefill of 3 then decodes at 3, 4, 5. */
static GenerateResult four_passes(const Model *m, GenerateOptions *opt, Recorder *rec) {
    static const int prompt[] = {1, 5, 6};
    generate_options_default(opt);
    opt->steps = 4;
    GenerateResult r = run(m, prompt, 3, opt, rec);
    cr_assert_eq(rec->n_passes, 4);
    return r;
}

/* Cached: a prefill of 3 then decodes at 3, 4, 5 (linear in the position).
 * Without a cache: passes of 3, 4, 5, 6 tokens from 0 (quadratic). */
Test(kv_cache, work_counts_match_the_closed_forms) {
    Model m;
    random_model(&m, 8, 12, 2, 4, 2, 32, 16, false);
    int prompt[] = {1, 5, 6};
    GenerateOptions opt;
    Recorder rec;
    GenerateResult r = four_passes(&m, &opt, &rec);
    WorkCount total = {0};
    for (int p = 0; p < 4; p++) {
        int T = p == 0 ? 3 : 1, pos0 = p == 0 ? 0 : 2 + p;
        cr_expect_eq(rec.pass_tokens[p], T);
        cr_expect_eq(rec.pass_pos0[p], pos0);
        WorkCount want = closed_form(&m.config, T, pos0, 1);
        expect_work(&rec.work[p], &want, p);
        work_add(&total, &want);
    }
    expect_work(&r.work, &total, -1);
    generate_result_free(&r), recorder_free(&rec);

    opt.no_kv_cache = true;
    r = run(&m, prompt, 3, &opt, &rec);
    cr_assert_eq(rec.n_passes, 4);
    for (int p = 0; p < 4; p++) {
        WorkCount want = closed_form(&m.config, 3 + p, 0, 1);
        cr_expect_eq(rec.pass_tokens[p], 3 + p);
        expect_work(&rec.work[p], &want, p);
    }
    generate_result_free(&r), recorder_free(&rec);
    model_free(&m);
}

/* Every form of attention (MHA, GQA, MQA) with every cache (float32,
 * float16, bfloat16, int8), issue 67: a cache row (K or V of one position
 * in one layer, kv_dim = kv heads x head_dim 2 values) is 4·kv_dim bytes in
 * float32, 2·kv_dim in 16 bits, and kv_dim int8 codes plus one float32
 * scale a KV head in int8; each query reads a K and a V row of every
 * position it sees, each token writes one of each. The multiply-adds and
 * the weight bytes do not depend on the cache. */
Test(kv_cache, work_counts_every_attention_and_cache) {
    const int kvs[] = {4, 2, 1};
    for (size_t i = 0; i < sizeof kvs / sizeof kvs[0]; i++) {
        for (int cache = 0; cache < 4; cache++) { /* float32, float16, bfloat16, int8 */
            Model m;
            random_model(&m, 8, 12, 2, 4, kvs[i], 32, 16, false);
            m.run.kv = cache == 1 ? KV_F16 : cache == 2 ? KV_BF16 : KV_F32;
            uint64_t kv_dim = (uint64_t)kvs[i] * 2;
            uint64_t row = cache == 0   ? 4 * kv_dim
                           : cache == 3 ? kv_dim + 4 * (uint64_t)kvs[i]
                                        : 2 * kv_dim;
            static const int prompt[] = {1, 5, 6};
            GenerateOptions opt;
            Recorder rec;
            generate_options_default(&opt);
            opt.steps = 4, opt.quant.kv = cache == 3;
            GenerateResult r = run(&m, prompt, 3, &opt, &rec);
            cr_assert_eq(rec.n_passes, 4);
            /* inspect's bytes a token, from the same row */
            cr_expect_eq(
                kv_cache_bytes_of(&m.config, 1, kv_type_for(&m.config, m.run.kv, cache == 3)),
                2 * (uint64_t)m.config.n_layers * row, "kv heads %d, cache %d: bytes a token",
                kvs[i], cache);
            for (int p = 0; p < 4; p++) {
                int T = p == 0 ? 3 : 1, pos0 = p == 0 ? 0 : 2 + p;
                WorkCount want = closed_form_rows(&m.config, T, pos0, 1, row);
                cr_expect_eq(rec.work[p].kv_bytes_read, want.kv_bytes_read,
                             "kv heads %d, cache %d, pass %d: %llu bytes read, closed form %llu",
                             kvs[i], cache, p, (unsigned long long)rec.work[p].kv_bytes_read,
                             (unsigned long long)want.kv_bytes_read);
                expect_work(&rec.work[p], &want, p);
            }
            generate_result_free(&r), recorder_free(&rec);
            model_free(&m);
        }
    }
}

/* A window of 2 on layer 0 only (sliding_pattern 2: layer 1 sees every
 * position): a prefill of 3 sees 1 + 2 + 2 there and 1 + 2 + 3 on layer 1;
 * each decode then 2 there. The pass's count and forward_body_macs (the
 * same work without the classifier's d·V) both follow the closed form. */
Test(kv_cache, work_counts_follow_the_sliding_window) {
    Model m;
    random_model(&m, 8, 12, 2, 4, 2, 32, 16, false);
    m.config.sliding_window = 2, m.config.sliding_pattern = 2;
    GenerateOptions opt;
    Recorder rec;
    GenerateResult r = four_passes(&m, &opt, &rec);
    uint64_t classifier = (uint64_t)m.config.dim * (uint64_t)m.config.vocab_size;
    for (int p = 0; p < 4; p++) {
        int T = p == 0 ? 3 : 1, pos0 = p == 0 ? 0 : 2 + p;
        WorkCount want = closed_form(&m.config, T, pos0, 1);
        expect_work(&rec.work[p], &want, p);
        cr_expect_eq(forward_body_macs(&m.config, T, pos0) + classifier, want.macs, "pass %d", p);
    }
    /* by hand, the prefill: d 8, kv_dim 4, hidden 12, vocab 32, 2 layers,
     * 4 heads of 2, 11 positions seen: 3·2·(2·64 + 2·8·4 + 3·8·12) + 8·32
     * + 4·2·2·11 = 2880 + 256 + 176 MACs, and 4·2·4·11 bytes of K and V read */
    cr_expect_eq(rec.work[0].macs, 3312u);
    cr_expect_eq(rec.work[0].kv_bytes_read, 352u);
    generate_result_free(&r), recorder_free(&rec);
    model_free(&m);
}

/* inspect's bytes are the bytes the engine allocates: stories260K holds
 * 5 layers × 4 KV heads × 8 × 2 × 4 = 1280 bytes a token; 100 tokens for 3
 * requests: 128000 bytes each, 384000 in all. */
Test(kv_cache, inspect_reports_what_the_engine_allocates) {
    Model m;
    Tokenizer tok;
    load_stories260k(&m, &tok);
    static char out[1 << 16], err[1 << 12];
    char args[1024];
    snprintf(args, sizeof args, "inspect --model %s --context 100 --requests 3 --json",
             model_file("stories260K.bin"));
    cr_assert_eq(run_stepwise(args, out, sizeof out, err, sizeof err), 0, "%s", err);
    cJSON *doc = cJSON_Parse(out);
    cr_assert_not_null(doc, "%s", out);
    const cJSON *facts = cJSON_GetObjectItem(doc, "this_model");
    RunState s;
    StepError e;
    cr_assert(run_state_init(&s, &m.config, 100, 1, &e));
    double at_context = cJSON_GetObjectItem(facts, "kv_bytes_at_context")->valuedouble;
    cr_expect_eq(at_context, (double)s.seq.cache.bytes);
    cr_expect_eq(at_context, 128000.0);
    cr_expect_eq(cJSON_GetObjectItem(facts, "kv_bytes_total")->valuedouble, 384000.0);
    cr_expect_eq(cJSON_GetObjectItem(facts, "kv_bytes_per_token")->valuedouble, 1280.0);
    /* weights 260032 × 4 = 1040128 bytes; 1040128 / (1280 × 3) = 270.9 → 271 */
    cr_expect_eq(cJSON_GetObjectItem(facts, "outgrows_weights_at")->valuedouble, 271.0);
    /* MQA variant: 1 KV head: 5 × 1 × 8 × 2 × 4 = 320 bytes a token */
    const cJSON *mqa = cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "variants"), 0);
    cr_expect_str_eq(cJSON_GetObjectItem(mqa, "attention")->valuestring, "MQA");
    cr_expect_eq(cJSON_GetObjectItem(mqa, "kv_bytes_per_token")->valuedouble, 320.0);
    cr_expect_eq(cJSON_GetArraySize(cJSON_GetObjectItem(doc, "variants")), 4); /* 1, 2, 4, 8 */
    run_state_free(&s);
    cJSON_Delete(doc);
    model_free(&m), tokenizer_free(&tok);
}

/* With --quant-kv int8, every report of the cache's size (the run header,
 * done, trace show, inspect) is the int8 cache the engine allocates: per
 * token 5 layers × 2 (K, V) × 4 KV heads × (8 one-byte codes + a 4-byte
 * scale) = 480 bytes on stories260K, not float32's 1280. */
Test(kv_cache, int8_cache_size_is_reported_as_allocated) {
    if (model_file("stories260K.bin") == NULL) cr_skip_test("stories260K not found");
    static char out[1 << 16], err[1 << 12];
    char args[2048], trace[512];
    snprintf(trace, sizeof trace, "%s", temp_path("kv8.jsonl"));
    snprintf(args, sizeof args,
             "generate --model %s --tokenizer %s --quant-kv int8 --steps 6 --quiet --trace %s",
             model_file("stories260K.bin"), model_file("tok512.bin"), trace);
    cr_assert_eq(run_stepwise(args, out, sizeof out, err, sizeof err), 0, "%s", err);
    FILE *f = fopen(trace, "r");
    cr_assert_not_null(f);
    static char line[1 << 16], first[1 << 16];
    cr_assert_not_null(fgets(first, sizeof first, f));
    while (fgets(line, sizeof line, f) != NULL) continue; /* the last line: done */
    fclose(f);
    cJSON *run = cJSON_Parse(first), *done = cJSON_Parse(line);
    cr_assert(run && done);
    double header =
        cJSON_GetObjectItem(cJSON_GetObjectItem(run, "kv_cache"), "bytes_per_token")->valuedouble;
    const cJSON *kv = cJSON_GetObjectItem(done, "kv_cache");
    cr_expect_eq(header, 480.0);
    cr_expect_eq(cJSON_GetObjectItem(kv, "bytes_per_token")->valuedouble, 480.0);
    /* 1 prompt token + 6 steps: the cache holds 6 positions (the last pick is never fed) */
    cr_expect_eq(cJSON_GetObjectItem(kv, "allocated_bytes")->valuedouble, 6 * 480.0);
    Model m;
    Tokenizer tok;
    load_stories260k(&m, &tok);
    RunState s;
    StepError e;
    QuantRuntime q8 = {.kv = true, .group = 32};
    cr_assert(run_state_init_quant(&s, &m.config, 6, 1, &q8, &e));
    cr_expect_eq((double)s.seq.cache.bytes, 6 * 480.0, "the engine allocates %llu",
                 (unsigned long long)s.seq.cache.bytes);
    run_state_free(&s);
    model_free(&m), tokenizer_free(&tok);
    snprintf(args, sizeof args, "trace show %s --pos 3", trace);
    cr_assert_eq(run_stepwise(args, out, sizeof out, err, sizeof err), 0, "%s", err);
    cr_expect(strstr(out, "4 positions x 480 bytes = 1920 bytes") != NULL, "%s", out);
    snprintf(args, sizeof args, "inspect --model %s --json", model_file("stories260K.bin"));
    cr_assert_eq(run_stepwise(args, out, sizeof out, err, sizeof err), 0, "%s", err);
    cJSON *doc = cJSON_Parse(out);
    cr_expect_eq(
        cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "int8"), "kv_bytes_per_token")->valuedouble,
        header);
    cJSON_Delete(doc), cJSON_Delete(run), cJSON_Delete(done);
}

/* The logits after a rebuild are those of a fresh prefill of what was kept
 * plus the new token: the rebuilt cache is exactly a new cache. */
static void expect_rebuild_is_a_fresh_prefill(const Model *m, const Recorder *rec, const int *kept,
                                              int n_kept, int draw) {
    RunState s;
    StepError err;
    cr_assert(run_state_init(&s, &m->config, n_kept, n_kept, &err));
    const float *fresh = forward_tokens(m, &s, kept, n_kept, 0, false, NULL);
    cr_expect_eq(memcmp(fresh, rec->logits[draw], (size_t)m->config.vocab_size * sizeof(float)), 0,
                 "the rebuilt logits differ from a fresh prefill");
    run_state_free(&s);
}

/* Window 8, drop 4: when 8 positions are full, the oldest 4 go and the
 * other 4 are prefilled again with the new token (5 positions). */
Test(kv_cache, drop_oldest_drops_and_rebuilds) {
    Model m;
    random_model(&m, 8, 12, 2, 4, 2, 32, 64, false);
    int prompt[] = {1, 5, 6};
    GenerateOptions opt;
    generate_options_default(&opt);
    opt.steps = 12, opt.context = 8, opt.policy = CONTEXT_DROP_OLDEST, opt.context_drop = 4;
    Recorder rec;
    GenerateResult r = run(&m, prompt, 3, &opt, &rec);
    cr_assert_eq(r.stop_reason, STOP_STEPS);
    cr_assert_geq(rec.n_shifts, 1);
    const ContextShift *s = &rec.shifts[0];
    /* tokens 0..7 filled the window; token 8 (r.tokens[8]) needed position 8 */
    cr_expect_eq(s->first_dropped, 0);
    cr_expect_eq(s->n_dropped, 4);
    for (int i = 0; i < 4; i++) cr_expect_eq(s->dropped[i], r.tokens[i]);
    cr_expect_eq(s->kept, 4);
    cr_expect_eq(s->positions_before, 8);
    cr_expect_eq(s->positions_after, 5);
    /* the draw after the rebuild sampled position 4 of tokens 4..8 */
    int draw = 6; /* draws 0..5 sample positions 2..7; draw 6 is the first after it */
    cr_expect_eq(rec.draw_pos[draw], 4);
    expect_rebuild_is_a_fresh_prefill(&m, &rec, r.tokens + 4, 5, draw);
    cr_expect_eq(r.positions_filled, 8);
    cr_expect_eq(r.cache_capacity, 8);
    generate_result_free(&r), recorder_free(&rec);
    model_free(&m);
}

/* keep-prefix keeps the first 2 (say, BOS and a system token) and the most
 * recent 8 - 4 - 2 = 2; the 4 in between go. */
Test(kv_cache, keep_prefix_keeps_the_prefix_and_the_recent_tokens) {
    Model m;
    random_model(&m, 8, 12, 2, 4, 2, 32, 64, false);
    int prompt[] = {1, 5, 6};
    GenerateOptions opt;
    generate_options_default(&opt);
    opt.steps = 12, opt.context = 8, opt.policy = CONTEXT_KEEP_PREFIX, opt.context_drop = 4;
    opt.keep = 2;
    Recorder rec;
    GenerateResult r = run(&m, prompt, 3, &opt, &rec);
    cr_assert_geq(rec.n_shifts, 1);
    const ContextShift *s = &rec.shifts[0];
    cr_expect_eq(s->first_dropped, 2);
    for (int i = 0; i < 4; i++) cr_expect_eq(s->dropped[i], r.tokens[2 + i]);
    cr_expect_eq(s->kept, 4);
    int kept[5] = {r.tokens[0], r.tokens[1], r.tokens[6], r.tokens[7], r.tokens[8]};
    expect_rebuild_is_a_fresh_prefill(&m, &rec, kept, 5, 6);
    generate_result_free(&r), recorder_free(&rec);
    model_free(&m);
}

/* stop ends with context_full; --context shrinks the window. */
Test(kv_cache, stop_policy_ends_at_the_window) {
    Model m;
    random_model(&m, 8, 12, 2, 4, 2, 32, 64, false);
    int prompt[] = {1, 5, 6};
    GenerateOptions opt;
    generate_options_default(&opt);
    opt.steps = 30, opt.context = 6;
    Recorder rec;
    GenerateResult r = run(&m, prompt, 3, &opt, &rec);
    cr_expect_eq(r.stop_reason, STOP_CONTEXT_FULL);
    cr_expect_eq(r.n_tokens, 7); /* positions 0..5 fed, one more token drawn */
    cr_expect_eq(r.cache_capacity, 6);
    generate_result_free(&r), recorder_free(&rec);
    model_free(&m);
}

/* A run that exactly fills the window (issue 67: no test used the value):
 * window W, a prompt of P and S steps with P + S = W + 1 ids feeds
 * positions 0..W-1, every one, and draws its last token without a position
 * to feed it to: it must end by its step count, each policy alike, no
 * shift. One step more needs position W: stop ends with context_full at
 * the same W + 1 ids, drop-oldest shifts once and finishes its steps. The
 * window is the model's seq_len (16) or --context 6, and a prompt of W
 * tokens itself (S = 1) fills it by prefill alone. */
static void expect_exact_fill(int seq_len, int window, int n_prompt) {
    Model m;
    random_model(&m, 8, 12, 2, 4, 2, 32, seq_len, false);
    int prompt[16] = {1, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19};
    int W = window > 0 ? window : seq_len, S = W + 1 - n_prompt;
    const ContextPolicy policies[] = {CONTEXT_STOP, CONTEXT_DROP_OLDEST, CONTEXT_KEEP_PREFIX};
    for (size_t p = 0; p < sizeof policies / sizeof policies[0]; p++) {
        for (int more = 0; more < 2; more++) {
            GenerateOptions opt;
            generate_options_default(&opt);
            opt.steps = S + more, opt.context = window, opt.policy = policies[p];
            opt.context_drop = 2, opt.keep = policies[p] == CONTEXT_KEEP_PREFIX ? 1 : 0;
            Recorder rec;
            GenerateResult r = run(&m, prompt, n_prompt, &opt, &rec);
            const char *what = more ? "one step more" : "exactly full";
            if (!more || policies[p] != CONTEXT_STOP) {
                cr_expect_eq(r.stop_reason, STOP_STEPS, "W %d, P %d, policy %d, %s: stop %d", W,
                             n_prompt, (int)p, what, (int)r.stop_reason);
                cr_expect_eq(r.n_tokens, W + 1 + more, "W %d, policy %d, %s: %d ids", W, (int)p,
                             what, r.n_tokens);
                cr_expect_eq(rec.n_shifts, more, "W %d, policy %d, %s: %d shifts", W, (int)p, what,
                             rec.n_shifts);
            } else {
                cr_expect_eq(r.stop_reason, STOP_CONTEXT_FULL,
                             "W %d, P %d, stop, one step more: stop %d", W, n_prompt,
                             (int)r.stop_reason);
                cr_expect_eq(r.n_tokens, W + 1, "W %d, stop, one step more: %d ids", W, r.n_tokens);
            }
            if (!more) { /* every position fed, the last one last */
                cr_expect_eq(r.positions_filled, W, "W %d, policy %d: %d positions", W, (int)p,
                             r.positions_filled);
                int last = rec.n_passes - 1;
                cr_expect_eq(rec.pass_pos0[last] + rec.pass_tokens[last], W,
                             "W %d, policy %d: the last pass", W, (int)p);
                cr_expect_eq(rec.draw_pos[rec.n_draws - 1], W - 1);
            }
            generate_result_free(&r), recorder_free(&rec);
        }
    }
    /* a prompt one token longer than the window is refused, as documented */
    if (n_prompt < 16) {
        GenerateOptions opt;
        generate_options_default(&opt);
        opt.steps = 1, opt.context = window;
        GenerateResult r;
        StepError e;
        cr_expect_not(generate(&m, prompt, W + 1, &opt, NULL, NULL, &r, &e),
                      "a prompt of W + 1 ran");
        char want[96];
        snprintf(want, sizeof want, "the prompt has %d tokens but the context holds %d", W + 1, W);
        cr_expect_str_eq(e.message, want);
    }
    model_free(&m);
}

Test(kv_cache, a_run_that_exactly_fills_the_window) {
    expect_exact_fill(16, 0, 3);  /* the model's seq_len: 3 + 14 ids */
    expect_exact_fill(16, 6, 3);  /* --context 6 */
    expect_exact_fill(16, 6, 6);  /* a prompt of the whole window, one step */
    expect_exact_fill(16, 0, 16); /* the whole seq_len by prefill */
}

static char out[1 << 16], err_text[1 << 12];

static void expect_bad(const char *args, const char *fragment) {
    int status = run_stepwise(args, out, sizeof out, err_text, sizeof err_text);
    cr_expect_eq(status, 2, "'%s' exited %d", args, status);
    cr_expect(strstr(err_text, fragment) != NULL, "'%s': '%s' lacks '%s'", args, err_text,
              fragment);
}

Test(kv_cache, bad_window_and_shape_options) {
    const char *out_path = temp_path("never.bin");
    char args[1024];
    snprintf(args, sizeof args,
             "make-model --dim 16 --hidden 8 --layers 1 --heads 4 --kv-heads 3 --vocab 8 "
             "--seq-len 4 --out %s",
             out_path);
    expect_bad(args, "not a multiple of n_kv_heads");
    snprintf(args, sizeof args,
             "make-model --dim 0 --hidden 8 --layers 1 --heads 4 --vocab 8 --seq-len 4 --out %s",
             out_path);
    expect_bad(args, "dim must be positive");
    snprintf(args, sizeof args,
             "make-model --dim 16 --hidden 8 --layers -2 --heads 4 --vocab 8 --seq-len 4 --out %s",
             out_path);
    expect_bad(args, "n_layers must be positive");
    expect_bad("make-model --dim 16", "--out is required");
    cr_expect_neq(access(out_path, F_OK), 0, "a model file was written");
    expect_bad("generate --context 9", "--context 9 is outside [2, 8]");
    expect_bad("generate --context 4 --keep 4",
               "--keep 4 must be smaller than the context window 4");
    expect_bad("generate --context 8 --context-policy keep-prefix --keep 4",
               "--keep 4 leaves no recent tokens");
    expect_bad("generate --context-policy sideways", "unknown --context-policy 'sideways'");
    expect_bad("inspect --context 0", "--context must be in");
}

/* make-model: the same seed gives the same bytes; another seed others; the
 * untied flag writes a negative vocab_size and a classifier of its own. */
Test(kv_cache, make_model_is_reproducible) {
    char a[512], b[512], args[2048];
    snprintf(a, sizeof a, "%s", temp_path("a.bin"));
    snprintf(b, sizeof b, "%s", temp_path("b.bin"));
    const char *shape =
        "--dim 16 --hidden 24 --layers 2 --heads 4 --kv-heads 2 --vocab 40 --seq-len 32";
    snprintf(args, sizeof args, "make-model %s --seed 7 --out %s", shape, a);
    cr_assert_eq(run_stepwise(args, out, sizeof out, err_text, sizeof err_text), 0, "%s", err_text);
    snprintf(args, sizeof args, "make-model %s --seed 7 --out %s", shape, b);
    cr_assert_eq(run_stepwise(args, out, sizeof out, err_text, sizeof err_text), 0);
    snprintf(args, sizeof args, "cmp -s %s %s", a, b);
    cr_expect_eq(system(args), 0, "same seed, different bytes");
    snprintf(args, sizeof args, "make-model %s --seed 8 --out %s", shape, b);
    cr_assert_eq(run_stepwise(args, out, sizeof out, err_text, sizeof err_text), 0);
    snprintf(args, sizeof args, "cmp -s %s %s", a, b);
    cr_expect_neq(system(args), 0, "another seed, same bytes");
    snprintf(args, sizeof args, "make-model %s --untied --out %s", shape, b);
    cr_assert_eq(run_stepwise(args, out, sizeof out, err_text, sizeof err_text), 0);
    Model m;
    StepError e;
    cr_assert(model_load_checkpoint(&m, b, &e), "%s", e.message);
    cr_expect(!m.config.shared_classifier);
    cr_expect_eq(m.config.n_kv_heads, 2);
    cr_expect_str_eq(config_attention_kind(&m.config), "GQA");
    model_free(&m);
}

/* inspect --memory's capacity, requests = floor((memory - weights) /
 * bytes a request), at its edges, on the built-in tiny model (dim 2, one
 * layer, one head of width 2, vocabulary 13, context 8), worked by hand:
 *   weights: embedding 13 x 2 + classifier 13 x 2 + norms 2 + 2 + the
 *     layer's 7 matrices of 2 x 2 = 86 floats, 344 bytes of f32;
 *   a request's cache at 8 tokens: 8 x 1 layer x 1 KV head x 2 x (K, V)
 *     x 4 bytes = 128 (f32), x 2 bytes = 64 (f16), and int8's
 *     8 x (2 x 1 byte + a 4-byte scale) x 2 = 96.
 * So 344 + 5 x 128 = 984 bytes hold exactly 5 f32 requests and 983 four;
 * 984 hold 10 f16 (640 / 64) and 983 nine; int8's edge is 344 + 7 x 96 =
 * 1016 (7) against 1015 (6); the weights alone (344) or one byte more hold
 * none, and 344 + 64 one f16 request but no f32 one. The text says so too:
 * at 343 bytes the weights need 1 byte more, at 344 they fill every byte
 * (it said "need 0 bytes more"). */
static void expect_capacity(long long memory, int f32, int f16, int int8) {
    static char out[1 << 16], err[1 << 12];
    char args[128];
    snprintf(args, sizeof args, "inspect --memory %lld --json", memory);
    cr_assert_eq(run_stepwise(args, out, sizeof out, err, sizeof err), 0, "%s", err);
    cJSON *doc = cJSON_Parse(out);
    cr_assert_not_null(doc, "%s", out);
    const cJSON *cap = cJSON_GetObjectItem(doc, "capacity");
    cr_expect_eq(cJSON_GetObjectItem(cap, "weight_bytes")->valuedouble, 344.0);
    const cJSON *row = cJSON_GetArrayItem(cJSON_GetObjectItem(cap, "rows"), 0);
    cr_expect_eq(cJSON_GetObjectItem(row, "bytes_per_request_f32")->valuedouble, 128.0);
    cr_expect_eq(cJSON_GetObjectItem(row, "bytes_per_request_f16")->valuedouble, 64.0);
    cr_expect_eq(cJSON_GetObjectItem(row, "bytes_per_request_int8")->valuedouble, 96.0);
    cr_expect_eq(cJSON_GetObjectItem(row, "requests_f32")->valuedouble, f32, "%lld bytes", memory);
    cr_expect_eq(cJSON_GetObjectItem(row, "requests_f16")->valuedouble, f16, "%lld bytes", memory);
    cr_expect_eq(cJSON_GetObjectItem(row, "requests_int8")->valuedouble, int8, "%lld bytes",
                 memory);
    cJSON_Delete(doc);
    /* the text table says the same */
    snprintf(args, sizeof args, "inspect --memory %lld", memory);
    cr_assert_eq(run_stepwise(args, out, sizeof out, err, sizeof err), 0, "%s", err);
    char want[128];
    snprintf(want, sizeof want, "| 1 (this model) | MHA | %d (", f32);
    if (memory == 344) snprintf(want, sizeof want, "none: the weights alone fill every byte");
    if (memory < 344) snprintf(want, sizeof want, "need %lld bytes more", 344 - memory);
    cr_expect(strstr(out, want) != NULL, "%lld bytes: no '%s' in\n%s", memory, want, out);
}

Test(kv_cache, inspect_capacity_at_its_edges) {
    expect_capacity(984, 5, 10, 6);
    expect_capacity(983, 4, 9, 6);
    expect_capacity(1016, 5, 10, 7);
    expect_capacity(1015, 5, 10, 6);
    expect_capacity(343, 0, 0, 0);
    expect_capacity(344, 0, 0, 0);
    expect_capacity(345, 0, 0, 0);
    expect_capacity(344 + 64, 0, 1, 0);
    expect_capacity(344 + 64 - 1, 0, 0, 0);
}
