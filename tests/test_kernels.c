/* test_kernels.c: `--kernels plain` (the row-by-row loops of
 * docs/forward-pass.md, on the weights as loaded) and `--kernels fast` (the
 * packed layouts) give the same bits, from the command line: the same trace
 * files, byte for byte, with every logit, every KV-cache row and every
 * token. On stories260K: greedy 256 tokens, a sampled run, a prefill with
 * --all-logits and a batch, in float32 and with each int8 switch; and on a
 * generated model of the 15M benchmark shape. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/helpers.h"

static char out[1 << 16], err[1 << 14];

/* Whether two files hold the same bytes (and both exist). */
static bool same_file(const char *a, const char *b) {
    FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
    bool same = fa != NULL && fb != NULL;
    int ca = 0, cb = 0;
    while (same && (ca = fgetc(fa)) != EOF) same = ca == (cb = fgetc(fb));
    if (same) same = fgetc(fb) == EOF;
    if (fa) fclose(fa);
    if (fb) fclose(fb);
    return same;
}

/* Run `stepwise <args> --kernels K --trace|--out FILE` for plain and fast
 * and require the same trace bytes. flag: the option naming the output. */
static void expect_same(const char *what, const char *args, const char *flag) {
    char plain[512], fast[512], cmd[8192];
    snprintf(plain, sizeof plain, "%s", temp_path("plain.out"));
    snprintf(fast, sizeof fast, "%s", temp_path("fast.out"));
    const char *kernels[] = {"plain", "fast"}, *files[] = {plain, fast};
    for (int k = 0; k < 2; k++) {
        snprintf(cmd, sizeof cmd, "%s --kernels %s --reproducible %s %s", args, kernels[k], flag,
                 files[k]);
        cr_assert_eq(run_stepwise(cmd, out, sizeof out, err, sizeof err), 0, "%s: %s", cmd, err);
    }
    cr_expect(same_file(plain, fast), "%s: --kernels plain and fast differ (%s)", what, args);
}

static const char *const QUANT[] = {
    "",
    "--quant-weights int8",
    "--quant-activations int8",
    "--quant-kv int8",
    "--quant-weights int8 --quant-activations int8 --quant-kv int8 --quant-group 16",
    /* a group that is not a multiple of four: the int8 kernel's tail runs */
    "--quant-weights int8 --quant-activations int8 --quant-group 7",
};

Test(kernels, plain_equals_fast_on_stories260k, .timeout = 300) {
    const char *model = model_file("stories260K.bin");
    if (model == NULL) cr_skip_test("stories260K not found");
    char m[2048], args[4096], requests[512], dir_plain[512], dir_fast[512];
    snprintf(m, sizeof m, "--model %s --tokenizer %s", model, model_file("tok512.bin"));
    snprintf(requests, sizeof requests, "%s", temp_path("requests.jsonl"));
    FILE *f = fopen(requests, "w");
    cr_assert_not_null(f);
    fputs("{\"id\":\"a\",\"prompt\":\"Once upon a time\",\"max_tokens\":40}\n"
          "{\"id\":\"b\",\"prompt\":\"Lily\",\"max_tokens\":30,\"temperature\":1,\"seed\":5}\n"
          "{\"id\":\"c\",\"prompt\":\"The cat sat on the mat\",\"max_tokens\":20,"
          "\"arrival_ms\":1}\n",
          f);
    fclose(f);
    for (size_t i = 0; i < sizeof QUANT / sizeof QUANT[0]; i++) {
        snprintf(args, sizeof args,
                 "generate %s %s --steps 256 --quiet --trace-level logits "
                 "--trace-kv",
                 m, QUANT[i]);
        expect_same("greedy 256 from BOS", args, "--trace");
        snprintf(args, sizeof args,
                 "generate %s %s --steps 120 --temperature 1 --top-p 0.9 "
                 "--seed 133742 --quiet --trace-kv",
                 m, QUANT[i]);
        expect_same("sampled", args, "--trace");
        snprintf(args, sizeof args,
                 "generate %s %s --prompt 'Once upon a time, there was a "
                 "little girl named Lily. She loved to play outside.' --steps 2 --all-logits "
                 "--quiet --trace-level logits --trace-kv",
                 m, QUANT[i]);
        expect_same("prefill with --all-logits", args, "--trace");
        /* a batch: one trace per request in a folder */
        snprintf(dir_plain, sizeof dir_plain, "%s", temp_path("batch-plain"));
        snprintf(dir_fast, sizeof dir_fast, "%s", temp_path("batch-fast"));
        const char *dirs[] = {dir_plain, dir_fast}, *kernels[] = {"plain", "fast"};
        for (int k = 0; k < 2; k++) {
            snprintf(args, sizeof args,
                     "batch %s %s --requests %s --kernels %s --reproducible "
                     "--quiet --trace-kv --trace %s",
                     m, QUANT[i], requests, kernels[k], dirs[k]);
            cr_assert_eq(run_stepwise(args, out, sizeof out, err, sizeof err), 0, "%s", err);
        }
        const char *ids[] = {"a", "b", "c"};
        for (int r = 0; r < 3; r++) {
            char a[1024], b[1024];
            snprintf(a, sizeof a, "%s/%s.jsonl", dir_plain, ids[r]);
            snprintf(b, sizeof b, "%s/%s.jsonl", dir_fast, ids[r]);
            cr_expect(same_file(a, b), "batch request %s differs (%s)", ids[r], QUANT[i]);
        }
    }
}

/* The 15M benchmark shape: the fast kernels' tiles and tails, on a model
 * big enough to use them all. */
Test(kernels, plain_equals_fast_on_the_15m_shape, .timeout = 300) {
    const char *tok = model_file("tokenizer.bin");
    if (tok == NULL) cr_skip_test("tokenizer.bin (32000 tokens) not found");
    char path[512], args[4096], m[2048];
    snprintf(path, sizeof path, "%s", temp_path("m15.bin"));
    snprintf(args, sizeof args,
             "make-model --dim 288 --hidden 768 --layers 6 --heads 6 "
             "--vocab 32000 --seq-len 256 --out %s",
             path);
    cr_assert_eq(run_stepwise(args, out, sizeof out, err, sizeof err), 0, "%s", err);
    snprintf(m, sizeof m, "--model %s --tokenizer %s", path, tok);
    for (size_t i = 0; i < sizeof QUANT / sizeof QUANT[0]; i += 4) { /* float, then all int8 */
        snprintf(args, sizeof args,
                 "generate %s %s --prompt 'Once upon a time, there was a "
                 "little girl' --steps 6 --all-logits --quiet --trace-level logits --trace-kv",
                 m, QUANT[i]);
        expect_same("15M shape", args, "--trace");
    }
    remove(path);
}

/* golden and compare-quant take --kernels too, and give the same bytes. */
Test(kernels, golden_and_compare_quant_are_the_same_with_plain_and_fast, .timeout = 300) {
    if (model_file("stories260K.bin") == NULL) cr_skip_test("stories260K not found");
    char model[1024], tok[1024], args[4096], dirs[2][512], tables[2][512];
    snprintf(model, sizeof model, "%s", model_file("stories260K.bin"));
    snprintf(tok, sizeof tok, "%s", model_file("tok512.bin"));
    const char *kernels[] = {"plain", "fast"};
    for (int k = 0; k < 2; k++) {
        snprintf(dirs[k], sizeof dirs[k], "%s", temp_path(k ? "golden-fast" : "golden-plain"));
        snprintf(args, sizeof args, "golden --model %s --tokenizer %s --kernels %s --out %s", model,
                 tok, kernels[k], dirs[k]);
        cr_assert_eq(run_stepwise(args, out, sizeof out, err, sizeof err), 0, "%s", err);
        snprintf(tables[k], sizeof tables[k], "%s", temp_path(k ? "cq-fast" : "cq-plain"));
        snprintf(args, sizeof args,
                 "compare-quant --model %s --tokenizer %s --text data/text/prompt-100.txt "
                 "--kernels %s --json > %s",
                 model, tok, kernels[k], tables[k]);
        cr_assert_eq(run_stepwise(args, out, sizeof out, err, sizeof err), 0, "%s", err);
    }
    const char *files[] = {"score-00.jsonl",  "greedy-00.jsonl", "greedy-01.jsonl",
                           "seeded-00.jsonl", "seeded-01.jsonl", "kv-00.jsonl"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char a[1024], b[1024];
        snprintf(a, sizeof a, "%s/%s", dirs[0], files[i]);
        snprintf(b, sizeof b, "%s/%s", dirs[1], files[i]);
        cr_expect(same_file(a, b), "golden %s differs between plain and fast", files[i]);
    }
    cr_expect(same_file(tables[0], tables[1]), "compare-quant differs between plain and fast");
}
