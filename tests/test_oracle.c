/* test_oracle.c: score, golden and diff, the oracle for other engines. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ref/util/rng.h"
#include "ref/util/sha256.h"
#include "tests/helpers.h"

static char out[1 << 16], err[1 << 14];

/* Lines of a JSONL file, parsed. */
typedef struct {
    cJSON **e;
    int n;
} Lines;

static Lines read_lines(const char *path) {
    Lines l = {NULL, 0};
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "%s", path);
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, f) > 0) {
        l.e = realloc(l.e, (size_t)(l.n + 1) * sizeof(cJSON *));
        l.e[l.n] = cJSON_Parse(line);
        cr_assert_not_null(l.e[l.n]);
        l.n++;
    }
    free(line);
    fclose(f);
    return l;
}

static void write_lines(const char *path, const Lines *l) {
    FILE *f = fopen(path, "w");
    for (int i = 0; i < l->n; i++) {
        if (l->e[i] == NULL) continue;
        char *s = cJSON_PrintUnformatted(l->e[i]);
        fprintf(f, "%s\n", s);
        free(s);
    }
    fclose(f);
}

static void free_lines(Lines *l) {
    for (int i = 0; i < l->n; i++) cJSON_Delete(l->e[i]);
    free(l->e);
}

static const char *name_of(const cJSON *e) {
    return cJSON_GetObjectItem(e, "event")->valuestring;
}

static cJSON *logits_at(const Lines *l, int pos) {
    for (int i = 0; i < l->n; i++) {
        if (l->e[i] && strcmp(name_of(l->e[i]), "logits") == 0 &&
            cJSON_GetObjectItem(l->e[i], "pos")->valueint == pos)
            return cJSON_GetObjectItem(l->e[i], "logits");
    }
    cr_assert_fail("no logits at pos %d", pos);
    return NULL;
}

/* Score the 48 tokens of llama2.c's golden run. */
static const char *score_golden_tokens(cJSON **golden) {
    const char *model = model_file("stories260K.bin");
    if (model == NULL) cr_skip_test("stories260K not found");
    *golden = read_json_file(golden_file("stories260K/once_upon_a_time.json"));
    cr_assert_not_null(*golden);
    char tokens[2048] = "";
    const cJSON *step;
    cJSON_ArrayForEach(step, cJSON_GetObjectItem(*golden, "steps")) {
        size_t n = strlen(tokens);
        snprintf(tokens + n, sizeof tokens - n, "%s%d", n ? "," : "",
                 cJSON_GetObjectItem(step, "token")->valueint);
    }
    static char path[512];
    snprintf(path, sizeof path, "%s", temp_path("golden-score.jsonl"));
    char args[8192];
    snprintf(args, sizeof args,
             "score --model %s --tokenizer %s --tokens %s --out %s --reproducible", model,
             model_file("tok512.bin"), tokens, path);
    cr_assert_eq(run_stepwise(args, out, sizeof out, err, sizeof err), 0, "%s", err);
    return path;
}

/* score's logits are run.c's, within 1e-5, at all 48 positions; and its
 * log-probability of the next token is the golden logit minus the log-sum-exp
 * of the golden logits, computed here from the golden file. */
Test(oracle, score_matches_run_c_and_its_logprobs_follow_from_the_logits) {
    cJSON *golden;
    Lines l = read_lines(score_golden_tokens(&golden));
    const cJSON *steps = cJSON_GetObjectItem(golden, "steps");
    cr_assert_eq(cJSON_GetArraySize(steps), 48);
    double total = 0;
    for (int p = 0; p < 48; p++) {
        const cJSON *gl = cJSON_GetObjectItem(cJSON_GetArrayItem(steps, p), "logits");
        const cJSON *ours = logits_at(&l, p);
        double max_d = 0, max_z = -1e30, sum = 0;
        for (int i = 0; i < 512; i++) {
            double g = cJSON_GetArrayItem(gl, i)->valuedouble;
            max_d = fmax(max_d, fabs(cJSON_GetArrayItem(ours, i)->valuedouble - g));
            max_z = fmax(max_z, g);
        }
        cr_expect_leq(max_d, 1e-5, "pos %d: max |dlogit| %g", p, max_d);
        if (p == 47) continue;
        for (int i = 0; i < 512; i++) sum += exp(cJSON_GetArrayItem(gl, i)->valuedouble - max_z);
        int next = cJSON_GetObjectItem(cJSON_GetArrayItem(steps, p + 1), "token")->valueint;
        double want = cJSON_GetArrayItem(gl, next)->valuedouble - max_z - log(sum);
        total += want;
        for (int i = 0; i < l.n; i++) {
            if (strcmp(name_of(l.e[i]), "logprobs") != 0 ||
                cJSON_GetObjectItem(l.e[i], "pos")->valueint != p)
                continue;
            cr_expect_eq(cJSON_GetObjectItem(l.e[i], "next")->valueint, next);
            cr_expect(fabs(cJSON_GetObjectItem(l.e[i], "logprob")->valuedouble - want) < 1e-4,
                      "pos %d logprob", p);
        }
    }
    const cJSON *scored = l.e[l.n - 1];
    cr_assert_str_eq(name_of(scored), "scored");
    double ce = -total / 47;
    cr_expect(fabs(cJSON_GetObjectItem(scored, "cross_entropy")->valuedouble - ce) < 1e-5);
    cr_expect(fabs(cJSON_GetObjectItem(scored, "perplexity")->valuedouble - exp(ce)) < 1e-4);
    cr_expect_null(cJSON_GetObjectItem(scored, "measured"), "--reproducible leaves it out");
    free_lines(&l);
    cJSON_Delete(golden);
}

static cJSON *run_diff_json(const char *ref, const char *cand, const char *extra, int want_status) {
    char args[2048];
    snprintf(args, sizeof args, "diff %s %s --json %s", ref, cand, extra);
    int status = run_stepwise(args, out, sizeof out, err, sizeof err);
    cr_assert_eq(status, want_status, "diff exited %d: %s %s", status, out, err);
    cJSON *doc = cJSON_Parse(out);
    cr_assert_not_null(doc, "%s", out);
    return doc;
}

static double num(const cJSON *o, const char *path1, const char *path2) {
    const cJSON *x = cJSON_GetObjectItem(o, path1);
    if (path2 != NULL) x = cJSON_GetObjectItem(x, path2);
    cr_assert_not_null(x, "no %s.%s", path1, path2 ? path2 : "");
    return x->valuedouble;
}

Test(oracle, identical_candidate_passes_with_zero_statistics) {
    cJSON *golden;
    const char *ref = score_golden_tokens(&golden);
    cJSON *d = run_diff_json(ref, ref, "", 0);
    cr_expect_eq(num(d, "max_abs", "value"), 0);
    cr_expect_eq(num(d, "kl", "mean"), 0);
    cr_expect_eq(num(d, "kl", "max"), 0);
    cr_expect_eq(num(d, "nmse", "max"), 0);
    cr_expect_eq(num(d, "top1_agreement", NULL), 1);
    cr_expect_eq(num(d, "first_argmax_diff", "pos"), -1);
    cr_expect_str_eq(cJSON_GetObjectItem(d, "verdict")->valuestring, "pass");
    cJSON_Delete(d), cJSON_Delete(golden);
}

/* A logit lowered by 0.5: the text report gives |d| as 0.5, not -0.5. */
Test(oracle, lowered_logit_reports_its_absolute_difference) {
    cJSON *golden;
    const char *ref = score_golden_tokens(&golden);
    Lines l = read_lines(ref);
    cJSON *a = cJSON_GetArrayItem(logits_at(&l, 3), 11);
    cJSON_SetNumberValue(a, (double)((float)a->valuedouble - 0.5f));
    const char *cand = temp_path("lowered.jsonl");
    write_lines(cand, &l);
    char args[2048];
    snprintf(args, sizeof args, "diff %s %s", ref, cand);
    cr_expect_eq(run_stepwise(args, out, sizeof out, err, sizeof err), 1);
    cr_expect(strstr(out, "first outside       pos 3, token 11") != NULL, "%s", out);
    cr_expect(strstr(out, "|d| 0.5 > ") != NULL, "%s", out);
    free_lines(&l), cJSON_Delete(golden);
}

/* +0.5 at (pos 2, token 7) and -0.25 at (pos 9, token 100): reported with
 * exactly those amounts (as the float32 the file holds) and places. */
Test(oracle, perturbed_candidate_is_reported_exactly) {
    cJSON *golden;
    const char *ref = score_golden_tokens(&golden);
    Lines l = read_lines(ref);
    cJSON *a = cJSON_GetArrayItem(logits_at(&l, 2), 7),
          *b = cJSON_GetArrayItem(logits_at(&l, 9), 100);
    float ra = (float)a->valuedouble, rb = (float)b->valuedouble;
    float ca = ra + 0.5f, cb = rb - 0.25f;
    cJSON_SetNumberValue(a, ca);
    cJSON_SetNumberValue(b, cb);
    const char *cand = temp_path("perturbed.jsonl");
    write_lines(cand, &l);
    cJSON *d = run_diff_json(ref, cand, "", 1);
    cr_expect_eq(num(d, "max_abs", "value"), (double)ca - (double)ra);
    cr_expect_eq(num(d, "max_abs", "pos"), 2);
    cr_expect_eq(num(d, "max_abs", "token"), 7);
    const cJSON *tol = cJSON_GetObjectItem(d, "tolerance");
    cr_expect_eq(num(tol, "outside", NULL), 2);
    cr_expect_eq(num(tol, "first_outside", "pos"), 2);
    cr_expect_eq(num(tol, "first_outside", "token"), 7);
    cr_expect_eq(num(tol, "first_outside", "candidate"), (double)ca);
    cr_expect_str_eq(cJSON_GetObjectItem(d, "verdict")->valuestring, "fail");
    /* the text report names the place too, and its last line is the verdict */
    char args[2048];
    snprintf(args, sizeof args, "diff %s %s", ref, cand);
    cr_expect_eq(run_stepwise(args, out, sizeof out, err, sizeof err), 1);
    cr_expect(strstr(out, "first outside       pos 2, token 7") != NULL, "%s", out);
    const char *last = strstr(out, "verdict: FAIL");
    cr_expect(last != NULL && strchr(last, '\n')[1] == '\0', "%s", out);
    cJSON_Delete(d), free_lines(&l), cJSON_Delete(golden);
}

/* Lower the reference's top token at pos 3 by 20: the candidate's argmax
 * becomes the reference's runner-up; diff names the position and both ids. */
Test(oracle, wrong_argmax_is_named) {
    cJSON *golden;
    const char *ref = score_golden_tokens(&golden);
    Lines l = read_lines(ref);
    cJSON *row = logits_at(&l, 3);
    int best = 0, second = -1;
    for (int i = 1; i < 512; i++)
        if (cJSON_GetArrayItem(row, i)->valuedouble > cJSON_GetArrayItem(row, best)->valuedouble)
            best = i;
    for (int i = 0; i < 512; i++)
        if (i != best && (second < 0 || cJSON_GetArrayItem(row, i)->valuedouble >
                                            cJSON_GetArrayItem(row, second)->valuedouble))
            second = i;
    cJSON *top = cJSON_GetArrayItem(row, best);
    cJSON_SetNumberValue(top, top->valuedouble - 20);
    const char *cand = temp_path("argmax.jsonl");
    write_lines(cand, &l);
    cJSON *d = run_diff_json(ref, cand, "", 1);
    const cJSON *fa = cJSON_GetObjectItem(d, "first_argmax_diff");
    cr_expect_eq(num(fa, "pos", NULL), 3);
    cr_expect_eq(num(fa, "reference", NULL), best);
    cr_expect_eq(num(fa, "candidate", NULL), second);
    cr_expect(cJSON_IsTrue(cJSON_GetObjectItem(fa, "candidate_in_reference_top5")));
    cr_expect_eq(num(d, "top1_agreement", NULL), 47.0 / 48);
    cJSON_Delete(d), free_lines(&l), cJSON_Delete(golden);
}

static void expect_diff_error(const char *ref, const char *cand, const char *fragment) {
    char args[2048];
    snprintf(args, sizeof args, "diff %s %s", ref, cand);
    int status = run_stepwise(args, out, sizeof out, err, sizeof err);
    cr_expect_eq(status, 2, "exit %d: %s", status, err);
    cr_expect(strstr(err, fragment) != NULL, "'%s' lacks '%s'", err, fragment);
}

Test(oracle, malformed_truncated_or_mismatched_candidates_are_errors) {
    cJSON *golden;
    const char *ref = score_golden_tokens(&golden);
    Lines l = read_lines(ref);
    /* truncated mid-line */
    const char *trunc = temp_path("truncated.jsonl");
    write_lines(trunc, &l);
    FILE *f = fopen(trunc, "r+");
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fclose(f);
    cr_assert_eq(truncate(trunc, size / 2), 0);
    expect_diff_error(ref, trunc, "not valid JSON");
    /* one logit fewer at pos 5: another vocabulary */
    Lines v = read_lines(ref);
    cJSON_DeleteItemFromArray(logits_at(&v, 5), 0);
    const char *vocab = temp_path("vocab.jsonl");
    write_lines(vocab, &v);
    expect_diff_error(ref, vocab, "logits has 511 values");
    /* a whole position missing */
    for (int i = 0; i < l.n; i++) {
        if (strcmp(name_of(l.e[i]), "logits") == 0 &&
            cJSON_GetObjectItem(l.e[i], "pos")->valueint == 47) {
            cJSON_Delete(l.e[i]);
            l.e[i] = NULL;
        }
    }
    const char *shorter = temp_path("shorter.jsonl");
    write_lines(shorter, &l);
    /* not an error but never a pass: reported as missing */
    cJSON *d = run_diff_json(ref, shorter, "", 1);
    cr_expect_eq(num(d, "missing", "logits"), 1);
    cr_expect_str_eq(cJSON_GetObjectItem(d, "verdict")->valuestring, "fail");
    cJSON_Delete(d);
    expect_diff_error(ref, "build/tmp/no-such-file.jsonl", "cannot open");
    free_lines(&l), free_lines(&v), cJSON_Delete(golden);
}

/* The raw alternative: float32 [positions, vocab] with a JSON sidecar. */
Test(oracle, raw_float32_candidate_compares_like_a_trace) {
    cJSON *golden;
    const char *ref = score_golden_tokens(&golden);
    Lines l = read_lines(ref);
    char raw[512], sidecar[600];
    snprintf(raw, sizeof raw, "%s", temp_path("cand.f32"));
    snprintf(sidecar, sizeof sidecar, "%s.json", raw);
    FILE *f = fopen(raw, "wb");
    for (int p = 0; p < 48; p++) {
        const cJSON *v;
        cJSON_ArrayForEach(v, logits_at(&l, p)) {
            float x = (float)v->valuedouble;
            fwrite(&x, sizeof x, 1, f);
        }
    }
    fclose(f);
    f = fopen(sidecar, "w");
    fputs("{\"format\": \"stepwise-logits-f32\", \"vocab_size\": 512, \"positions\": 48}\n", f);
    fclose(f);
    cJSON *d = run_diff_json(ref, raw, "", 0);
    cr_expect_eq(num(d, "max_abs", "value"), 0);
    cJSON_Delete(d);
    /* a short raw file is an error, not a crash */
    cr_assert_eq(truncate(raw, 1000), 0);
    expect_diff_error(ref, raw, "the sidecar promises");
    free_lines(&l), cJSON_Delete(golden);
}

/* The golden set, made twice, is the same bytes. */
Test(oracle, golden_set_is_byte_identical_run_to_run, .timeout = 120) {
    const char *model = model_file("stories260K.bin");
    if (model == NULL) cr_skip_test("stories260K not found");
    char a[512], b[512], args[4096];
    snprintf(a, sizeof a, "%s", temp_path("golden-a"));
    snprintf(b, sizeof b, "%s", temp_path("golden-b"));
    for (int i = 0; i < 2; i++) {
        snprintf(args, sizeof args, "golden --model %s --tokenizer %s --out %s", model,
                 model_file("tok512.bin"), i == 0 ? a : b);
        cr_assert_eq(run_stepwise(args, out, sizeof out, err, sizeof err), 0, "%s", err);
    }
    snprintf(args, sizeof args, "diff -r %s %s > /dev/null", a, b);
    cr_expect_eq(system(args), 0, "the two golden sets differ");
    char manifest[600];
    snprintf(manifest, sizeof manifest, "%s/manifest.json", a);
    cJSON *m = read_json_file(manifest);
    cr_assert_not_null(m);
    /* the model's sha256 is the one ../shared/models/README.md publishes */
    cr_expect_str_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(m, "model"), "sha256")->valuestring,
                     "b0a507e7ad0f626624f17112325e66691f9076d622e1d3274d103d00299f2696");
    cr_expect_geq(cJSON_GetArraySize(cJSON_GetObjectItem(m, "files")), 9);
    cJSON_Delete(m);
    snprintf(args, sizeof args, "rm -rf %s %s", a, b);
    cr_expect_eq(system(args), 0);
}

/* The digest of data [n] fed in pieces of at most `piece` bytes, on the
 * SHA extensions or the portable rounds. */
static void sha256_in_pieces(const void *data, size_t n, size_t piece, bool hardware,
                             char hex[65]) {
    Sha256 s;
    sha256_init(&s);
    s.hardware = hardware;
    for (size_t at = 0; at < n; at += piece)
        sha256_update(&s, (const char *)data + at, n - at < piece ? n - at : piece);
    sha256_hex(&s, hex);
}

/* FIPS 180-4's examples (and its million a's), on the portable rounds and,
 * where the processor has them, the SHA extensions, whole and a few bytes
 * at a time. */
Test(oracle, sha256_of_the_standard_examples) {
    static const struct {
        const char *text;
        const char *digest;
    } examples[] = {
        {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
        {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
        {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
         "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
    };
    char *million = malloc(1000000);
    cr_assert_not_null(million);
    memset(million, 'a', 1000000);
    char hex[65];
    for (int hardware = 0; hardware <= (int)sha256_hardware_available(); hardware++) {
        for (size_t i = 0; i < sizeof examples / sizeof examples[0]; i++)
            for (size_t piece = 1; piece <= 65; piece += 64) {
                const char *t = examples[i].text;
                sha256_in_pieces(t, strlen(t), piece, hardware, hex);
                cr_expect_str_eq(hex, examples[i].digest, "%s, pieces of %zu, hardware %d", t,
                                 piece, hardware);
            }
        for (size_t piece = 1000; piece <= 1000000; piece *= 1000) {
            sha256_in_pieces(million, 1000000, piece, hardware, hex);
            cr_expect_str_eq(hex,
                             "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0",
                             "a million a's, pieces of %zu, hardware %d", piece, hardware);
        }
    }
    free(million);
}

/* The SHA extensions give the portable rounds' digest on every length from
 * 0 to 300 bytes and on 1 MiB, fed whole or in pieces of 7 and 64; init
 * takes them where the processor has them. */
Test(oracle, sha256_on_the_extensions_is_the_portable_digest) {
    if (!sha256_hardware_available()) {
        cr_skip_test("this processor has no SHA extensions");
    }
    Sha256 s;
    sha256_init(&s);
    cr_expect(s.hardware, "init takes the extensions where the processor has them");
    size_t big = (size_t)1 << 20;
    uint8_t *data = malloc(big);
    cr_assert_not_null(data);
    XorshiftRng rng = {12345};
    for (size_t i = 0; i < big; i++) data[i] = (uint8_t)xorshift_u32(&rng);
    char want[65], got[65];
    for (size_t n = 0; n <= 300; n++) {
        sha256_in_pieces(data, n, n > 0 ? n : 1, false, want);
        for (size_t piece = 7; piece <= 64; piece += 57) {
            sha256_in_pieces(data, n, piece, true, got);
            cr_expect_str_eq(got, want, "%zu bytes in pieces of %zu", n, piece);
        }
    }
    sha256_in_pieces(data, big, big, false, want);
    sha256_in_pieces(data, big, big, true, got);
    cr_expect_str_eq(got, want, "1 MiB");
    free(data);
}

/* The KL divergence is in nats (natural logarithms), on a pair worked by
 * hand: reference logits (0, ln 3) give p = (1/4, 3/4), candidate (0, 0)
 * gives q = (1/2, 1/2); KL(p || q) = 1/4 ln(1/2) + 3/4 ln(3/2) =
 * 0.13081204 nats (numpy, from the float32 ln 3 the file holds:
 * 0.130812040). In bits it would be 0.18872. A second position with
 * equal logits has KL 0, so the mean is half the max. */
Test(oracle, kl_divergence_is_in_nats) {
    char ref[512], cand[512]; /* temp_path's buffer is its own: copied */
    snprintf(ref, sizeof ref, "%s", temp_path("kl-ref.jsonl"));
    snprintf(cand, sizeof cand, "%s", temp_path("kl-cand.jsonl"));
    FILE *f = fopen(ref, "w");
    cr_assert_not_null(f);
    fprintf(f,
            "{\"event\":\"logits\",\"pos\":0,\"logits\":[0,%.9g]}\n"
            "{\"event\":\"logits\",\"pos\":1,\"logits\":[1,2]}\n",
            (double)logf(3.0f));
    fclose(f);
    f = fopen(cand, "w");
    cr_assert_not_null(f);
    fprintf(f, "{\"event\":\"logits\",\"pos\":0,\"logits\":[0,0]}\n"
               "{\"event\":\"logits\",\"pos\":1,\"logits\":[1,2]}\n");
    fclose(f);
    cJSON *d = run_diff_json(ref, cand, "", 1);
    cr_expect(fabs(num(d, "kl", "max") - 0.130812040) < 1e-7, "KL max %.9g nats",
              num(d, "kl", "max"));
    cr_expect(fabs(num(d, "kl", "mean") - 0.130812040 / 2) < 1e-7, "KL mean %.9g nats",
              num(d, "kl", "mean"));
    cJSON_Delete(d);
}

/* fp32's tolerance by hand: a row's allowed |d| is 1e-6 + 3e-5 × its
 * largest |reference| (the "row" rule). Reference (10, 0): 3.01e-4. A
 * candidate 6e-4 off fails; one 1.5e-4 off passes. */
static int diff_status_of_offset(const char *offset) {
    char ref[512], cand[512];
    snprintf(ref, sizeof ref, "%s", temp_path("tol-ref.jsonl"));
    snprintf(cand, sizeof cand, "%s", temp_path("tol-cand.jsonl"));
    FILE *f = fopen(ref, "w");
    cr_assert_not_null(f);
    fprintf(f, "{\"event\":\"logits\",\"pos\":0,\"logits\":[10,0]}\n");
    fclose(f);
    f = fopen(cand, "w");
    cr_assert_not_null(f);
    fprintf(f, "{\"event\":\"logits\",\"pos\":0,\"logits\":[10,%s]}\n", offset);
    fclose(f);
    char args[2048];
    snprintf(args, sizeof args, "diff %s %s", ref, cand);
    return run_stepwise(args, out, sizeof out, err, sizeof err);
}

Test(oracle, fp32_tolerance_is_its_row_rule) {
    cr_expect_eq(diff_status_of_offset("6e-4"), 1, "6e-4 > 3.01e-4: %s", out);
    cr_expect_eq(diff_status_of_offset("1.5e-4"), 0, "1.5e-4 <= 3.01e-4: %s", out);
}

/* ---- issue 67: inputs that differ from position 0, non-finite figures, a value given twice ----
 */

/* text written to a fresh file named name; its path into path[512]. */
static void write_text(char path[512], const char *name, const char *text) {
    snprintf(path, 512, "%s", temp_path(name));
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "%s", path);
    fputs(text, f);
    fclose(f);
}

/* Three positions of three logits, fed the tokens t0, t1, t2. */
static void write_fed(char path[512], const char *name, int t0, int t1, int t2) {
    char text[512];
    snprintf(text, sizeof text,
             "{\"event\":\"logits\",\"pos\":0,\"token\":%d,\"logits\":[1,2,3]}\n"
             "{\"event\":\"logits\",\"pos\":1,\"token\":%d,\"logits\":[1,2,3]}\n"
             "{\"event\":\"logits\",\"pos\":2,\"token\":%d,\"logits\":[1,2,3]}\n",
             t0, t1, t2);
    write_text(path, name, text);
}

/* A candidate fed another token at position 0 (only there, or at every
 * position) has nothing in common with the reference before the inputs
 * differ: a FAIL naming position 0 and both tokens (exit 1), with the same
 * logits on both sides, never an error that hides where, nor a pass. With
 * --teacher-forced it is the error the option promises. */
Test(oracle, inputs_that_differ_from_position_0_fail_naming_it) {
    char ref[512], first[512], every[512];
    write_fed(ref, "fed-ref.jsonl", 1, 2, 3);
    write_fed(first, "fed-first.jsonl", 5, 2, 3);
    write_fed(every, "fed-every.jsonl", 5, 6, 7);
    const char *cands[] = {first, every};
    for (int i = 0; i < 2; i++) {
        char args[2048];
        snprintf(args, sizeof args, "diff %s %s", ref, cands[i]);
        cr_expect_eq(run_stepwise(args, out, sizeof out, err, sizeof err), 1, "%s", err);
        cr_expect(strstr(out, "inputs     differ from position 0: ref 1, cand 5; positions from "
                              "0 on are not compared (a fail)\n") != NULL,
                  "%s", out);
        cr_expect(strstr(out, "compared   0 positions x 3 logits\n") != NULL, "%s", out);
        cr_expect(strstr(out, "first divergence    none: nothing was compared (the inputs "
                              "differ from position 0)\n") != NULL,
                  "%s", out);
        cr_expect(strstr(out, "0 of 0 logits outside\n") != NULL, "%s", out);
        const char *last = strstr(out, "verdict: FAIL (the candidate was fed other tokens");
        cr_expect(last != NULL && strchr(last, '\n')[1] == '\0', "%s", out);
        cr_expect(strstr(out, "PASS") == NULL, "%s", out);
        cJSON *d = run_diff_json(ref, cands[i], "", 1);
        const cJSON *in = cJSON_GetObjectItem(d, "inputs");
        cr_expect_eq(num(in, "differ_from", NULL), 0);
        cr_expect_eq(num(in, "reference_token", NULL), 1);
        cr_expect_eq(num(in, "candidate_token", NULL), 5);
        cr_expect_eq(num(d, "positions", NULL), 0);
        cr_expect_str_eq(cJSON_GetObjectItem(d, "verdict")->valuestring, "fail");
        cJSON_Delete(d);
        snprintf(args, sizeof args, "diff %s %s --teacher-forced", ref, cands[i]);
        cr_expect_eq(run_stepwise(args, out, sizeof out, err, sizeof err), 2);
        cr_expect(strstr(err, "inputs differ from position 0 (reference token 1, candidate 5)") !=
                      NULL,
                  "%s", err);
    }
}

/* Raw float32 logits [3, 3] with their sidecar. */
static void write_f32(char path[512], const char *name, const float *x) {
    snprintf(path, 512, "%s", temp_path(name));
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(x, sizeof(float), 9, f), 9);
    fclose(f);
    char side[600];
    snprintf(side, sizeof side, "%s.json", path);
    f = fopen(side, "w");
    fputs("{\"format\":\"stepwise-logits-f32\",\"vocab_size\":3,\"positions\":3}\n", f);
    fclose(f);
}

/* A NaN or infinite candidate logit: the figures say NaN or inf, where it
 * is (a NaN at pos 1, token 2 outranks a finite 5 after it; an inf at pos
 * 2, token 1 outranks a 5 before it), never 0 nor the finite number.
 * Before issue 67, max |dlogit| kept the first number after a NaN. A NaN
 * in an activation is the first divergence's max |d| as NaN too. */
Test(oracle, nonfinite_candidate_values_are_reported_as_such) {
    char ref[512], nan_c[512], inf_c[512];
    float r[9] = {1, 2, 3, 1, 2, 3, 1, 2, 3};
    write_f32(ref, "nf-ref.f32", r);
    float a[9] = {1, 2, 3, 1, 2, NAN, 6, 2, 3}; /* NaN at (1, 2), then |d| 5 at (2, 0) */
    write_f32(nan_c, "nf-nan.f32", a);
    float b[9] = {6, 2, 3, 1, 2, 3, 1, INFINITY, 3}; /* |d| 5 at (0, 0), then inf at (2, 1) */
    write_f32(inf_c, "nf-inf.f32", b);
    char args[2048];
    snprintf(args, sizeof args, "diff %s %s", ref, nan_c);
    cr_expect_eq(run_stepwise(args, out, sizeof out, err, sizeof err), 1, "%s", err);
    cr_expect(strstr(out, "max |dlogit|        nan at pos 1, token 2 (reference 3, candidate "
                          "nan)\n") != NULL,
              "%s", out);
    cr_expect(strstr(out, "KL(ref||cand), T=1  mean nan, p99 nan, max nan at pos 1\n") != NULL,
              "%s", out);
    cr_expect(strstr(out, "first divergence    logits, pos 1: max |d| nan") != NULL, "%s", out);
    /* --json has no NaN: null, never a number (it was 1e308); its place stays */
    cJSON *d = run_diff_json(ref, nan_c, "", 1);
    const cJSON *first = cJSON_GetObjectItem(d, "first_divergence");
    cr_expect(cJSON_IsNull(cJSON_GetObjectItem(first, "max_abs")));
    cr_expect(cJSON_IsNull(cJSON_GetObjectItem(cJSON_GetObjectItem(d, "max_abs"), "value")));
    cr_expect_eq(num(d, "max_abs", "pos"), 1);
    cr_expect_eq(num(d, "max_abs", "token"), 2);
    cJSON_Delete(d);
    snprintf(args, sizeof args, "diff %s %s", ref, inf_c);
    cr_expect_eq(run_stepwise(args, out, sizeof out, err, sizeof err), 1, "%s", err);
    cr_expect(strstr(out, "max |dlogit|        inf at pos 2, token 1 (reference 2, candidate "
                          "inf)\n") != NULL,
              "%s", out);
    char aref[512], acand[512];
    write_text(aref, "nf-act-ref.jsonl",
               "{\"event\":\"activation\",\"hook\":\"final_norm\",\"pos\":0,\"data\":[1,2,3]}\n");
    write_text(
        acand, "nf-act-cand.jsonl",
        "{\"event\":\"activation\",\"hook\":\"final_norm\",\"pos\":0,\"data\":[1,null,9]}\n");
    snprintf(args, sizeof args, "diff %s %s", aref, acand);
    cr_expect_eq(run_stepwise(args, out, sizeof out, err, sizeof err), 1, "%s", err);
    cr_expect(strstr(out, "first divergence    final_norm, pos 0: max |d| nan (nan of the "
                          "tensor's max |ref| 3) at index 1: reference 2, candidate nan") != NULL,
              "%s", out);
    /* two NaNs: the first is the one named (a later NaN is no worse) */
    write_text(
        acand, "nf-act-cand2.jsonl",
        "{\"event\":\"activation\",\"hook\":\"final_norm\",\"pos\":0,\"data\":[1,null,null]}\n");
    snprintf(args, sizeof args, "diff %s %s", aref, acand);
    cr_expect_eq(run_stepwise(args, out, sizeof out, err, sizeof err), 1, "%s", err);
    cr_expect(strstr(out, "at index 1: reference 2, candidate nan") != NULL, "%s", out);
}

/* A candidate that gives a hook at a position twice (in one file, by one
 * name or by two that --names maps to one hook), a per-head row twice, or a
 * KV row twice: an error naming it (only one copy could be compared, the
 * verdict would follow the file's order). */
Test(oracle, a_value_given_twice_is_refused_by_name) {
    char ref[512];
    write_text(ref, "twice-ref.jsonl",
               "{\"event\":\"activation\",\"hook\":\"blocks.0.mlp_out\",\"pos\":0,\"data\":[1]}\n"
               "{\"event\":\"activation\",\"hook\":\"blocks.0.attn.pattern\",\"pos\":1,\"head\":1,"
               "\"data\":[0.5,0.5]}\n"
               "{\"event\":\"kv\",\"layer\":0,\"pos\":1,\"k\":[1],\"v\":[1]}\n");
    static const struct {
        const char *cand, *names, *words;
    } cases[] = {
        {"{\"event\":\"activation\",\"hook\":\"blocks.0.mlp_out\",\"pos\":0,\"data\":[1]}\n"
         "{\"event\":\"activation\",\"hook\":\"blocks.0.mlp_out\",\"pos\":0,\"data\":[2]}\n",
         "", "the candidate gives blocks.0.mlp_out at pos 0 twice"},
        {"{\"event\":\"activation\",\"hook\":\"ffn_out-0\",\"pos\":0,\"data\":[2]}\n"
         "{\"event\":\"activation\",\"hook\":\"blocks.0.mlp_out\",\"pos\":0,\"data\":[1]}\n",
         "--names llama.cpp", "the candidate gives blocks.0.mlp_out at pos 0 twice"},
        {"{\"event\":\"activation\",\"hook\":\"blocks.0.attn.pattern\",\"pos\":1,\"head\":1,"
         "\"data\":[0.5,0.5]}\n"
         "{\"event\":\"activation\",\"hook\":\"blocks.0.attn.pattern\",\"pos\":1,\"head\":1,"
         "\"data\":[0,1]}\n",
         "", "blocks.0.attn.pattern at pos 1, head 1 twice"},
        {"{\"event\":\"kv\",\"layer\":0,\"pos\":1,\"k\":[1],\"v\":[1]}\n"
         "{\"event\":\"kv\",\"layer\":0,\"pos\":1,\"k\":[2],\"v\":[1]}\n"
         "{\"event\":\"activation\",\"hook\":\"blocks.0.mlp_out\",\"pos\":0,\"data\":[1]}\n",
         "", "the KV row of layer 0 at pos 1 twice"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char cand[512], args[2048];
        write_text(cand, "twice-cand.jsonl", cases[i].cand);
        snprintf(args, sizeof args, "diff %s %s %s", ref, cand, cases[i].names);
        cr_expect_eq(run_stepwise(args, out, sizeof out, err, sizeof err), 2, "case %zu: %s%s", i,
                     out, err);
        cr_expect(strstr(err, cases[i].words) != NULL, "case %zu: %s", i, err);
        cr_expect(strchr(err, '\n') == err + strlen(err) - 1, "one line: %s", err);
    }
}
