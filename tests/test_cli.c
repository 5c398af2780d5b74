/* test_cli.c: the stepwise program as a user runs it: clear one-line errors
 * with exit status 2 for bad input, never a crash or a half-written trace. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tests/helpers.h"

static char out[1 << 16], err[1 << 16];

/* Exit status 2 and exactly one line on stderr that contains `fragment`. */
static void expect_bad_input(const char *args, const char *fragment) {
    int status = run_stepwise(args, out, sizeof out, err, sizeof err);
    cr_expect_eq(status, 2, "'%s' exited %d: %s", args, status, err);
    cr_expect(strstr(err, fragment) != NULL, "'%s': stderr '%s' lacks '%s'", args, err, fragment);
    const char *nl = strchr(err, '\n');
    cr_expect(nl != NULL && nl[1] == '\0', "'%s': stderr is not one line: '%s'", args, err);
}

Test(cli, help_and_version) {
    cr_expect_eq(run_stepwise("--help", out, sizeof out, err, sizeof err), 0);
    cr_expect(strstr(out, "generate") != NULL);
    cr_expect_eq(run_stepwise("generate --help", out, sizeof out, err, sizeof err), 0);
    cr_expect(strstr(out, "--steps") != NULL);
    cr_expect_eq(run_stepwise("--version", out, sizeof out, err, sizeof err), 0);
    cr_expect(strncmp(out, "stepwise ", 9) == 0);
}

/* Every command the help lists runs: its own --help exits 0 and starts
 * with its usage line, and the help lists every command it dispatches. */
Test(cli, every_listed_command_has_its_help) {
    static char listed[1 << 12];
    cr_assert_eq(run_stepwise("--help", listed, sizeof listed, err, sizeof err), 0);
    const char *at = strstr(listed, "commands:\n");
    cr_assert(at != NULL);
    int commands = 0;
    for (const char *line = at + 10; line[0] == ' ' && line[1] == ' ' && line[2] != ' ';
         line = strchr(line, '\n') + 1) {
        char name[32], args[64], want[48];
        cr_assert(sscanf(line, " %31s", name) == 1);
        snprintf(args, sizeof args, "%s --help", name);
        snprintf(want, sizeof want, "usage: stepwise %s", name);
        cr_expect_eq(run_stepwise(args, out, sizeof out, err, sizeof err), 0, "%s", args);
        cr_expect(strncmp(out, want, strlen(want)) == 0, "%s: '%.60s'", args, out);
        commands++;
    }
    cr_expect_eq(commands, 15, "the help lists %d commands", commands);
    expect_bad_input("frobnicate", "unknown command 'frobnicate'");
}

Test(cli, built_in_model_generates_without_any_file) {
    int status = run_stepwise("generate --prompt cat", out, sizeof out, err, sizeof err);
    cr_assert_eq(status, 0, "%s", err);
    cr_expect_str_eq(out, "cat sat\n");
    cr_expect(strstr(err, "stop: eos") != NULL, "%s", err);
    cr_expect(strstr(err, "ttft") != NULL && strstr(err, "tokens/s") != NULL, "%s", err);
}

Test(cli, bad_options) {
    expect_bad_input("generate --frobnicate", "unknown option '--frobnicate'");
    expect_bad_input("generate --steps", "needs a value");
    expect_bad_input("generate --steps ten", "--steps expects a whole number, got 'ten'");
    expect_bad_input("generate --steps 12x", "whole number");
    expect_bad_input("generate --steps 0", "--steps must be in");
    expect_bad_input("generate --steps 99999999999999999999", "whole number");
    expect_bad_input("generate stray", "unexpected argument 'stray'");
    expect_bad_input("frobnicate", "unknown command 'frobnicate'");
}

Test(cli, bad_model_files) {
    expect_bad_input("generate --model build/tmp/missing.bin --tokenizer x", "cannot open");
    expect_bad_input("generate --model build/tmp/missing.bin", "--tokenizer is required");
    const char *empty = temp_path("empty.bin");
    fclose(fopen(empty, "wb"));
    char args[1024];
    snprintf(args, sizeof args, "generate --model %s --tokenizer x", empty);
    expect_bad_input(args, "too short");
    const char *bad_json = temp_path("bad.json");
    FILE *f = fopen(bad_json, "w");
    fputs("{\"stepwise_model\": 1, \"config\": {\"dim\": 2}", f);
    fclose(f);
    snprintf(args, sizeof args, "generate --model %s", bad_json);
    expect_bad_input(args, "not valid JSON");
}

Test(cli, tokenizer_that_does_not_match_the_model) {
    const char *model = model_file("stories260K.bin");
    if (model == NULL || model_file("tokenizer.bin") == NULL) cr_skip_test("models not found");
    char args[4096];
    snprintf(args, sizeof args, "generate --model %s --tokenizer %s", model,
             model_file("tokenizer.bin"));
    expect_bad_input(args, "has 32000 tokens but the model's vocabulary has 512");
}

/* Read a JSON Lines file into at most `cap` parsed lines; returns the count. */
static int read_jsonl(const char *path, cJSON **lines, int cap) {
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "no file %s", path);
    static char line[1 << 16];
    int n = 0;
    while (n < cap && fgets(line, sizeof line, f) != NULL) {
        lines[n] = cJSON_Parse(line);
        cr_assert_not_null(lines[n], "line %d is not JSON", n + 1);
        n++;
    }
    fclose(f);
    return n;
}

static const char *event_of(const cJSON *line) {
    return cJSON_GetObjectItem(line, "event")->valuestring;
}

/* The tiny model's window is 8 positions: BOS + 9 pieces cannot fit. The
 * trace is still complete: header, tokenization, and an error line. */
Test(cli, prompt_longer_than_the_context_ends_the_trace_with_an_error) {
    const char *trace = temp_path("long.jsonl");
    char args[1024];
    snprintf(args, sizeof args,
             "generate --prompt 'cat sat cat sat cat sat cat sat cat' --trace %s", trace);
    expect_bad_input(args, "the prompt has 10 tokens but the context holds 8");
    cJSON *lines[8];
    int n = read_jsonl(trace, lines, 8);
    cr_assert_eq(n, 3);
    cr_expect_str_eq(event_of(lines[0]), "run");
    cr_expect_str_eq(event_of(lines[1]), "tokenize");
    cr_expect_str_eq(event_of(lines[2]), "error");
    cr_expect_str_eq(cJSON_GetObjectItem(lines[2], "kind")->valuestring, "bad_input");
    for (int i = 0; i < n; i++) cJSON_Delete(lines[i]);
}

/* Options are checked before anything is written: no trace at all. */
Test(cli, bad_options_leave_no_trace) {
    const char *trace = temp_path("none.jsonl");
    char args[1024];
    snprintf(args, sizeof args, "generate --steps zero --trace %s", trace);
    expect_bad_input(args, "--steps expects a whole number");
    cr_expect_neq(access(trace, F_OK), 0, "a trace file was written");
}

Test(cli, trace_of_the_tiny_model) {
    const char *trace = temp_path("tiny.jsonl");
    char args[1024];
    snprintf(args, sizeof args, "generate --prompt cat --trace %s --trace-kv --all-logits", trace);
    cr_assert_eq(run_stepwise(args, out, sizeof out, err, sizeof err), 0, "%s", err);
    cJSON *lines[32];
    int n = read_jsonl(trace, lines, 32);
    /* prompt [BOS, " cat"]: prefill writes kv rows 0 and 1 and (all logits)
     * logits at 0 and 1; the draw at pos 1 picks " sat" (token at pos 2),
     * which is decoded at pos 2; the draw there picks EOS. */
    const char *want[] = {"run",    "tokenize", "forward", "kv",    "kv",      "logits",
                          "logits", "work",     "sample",  "token", "forward", "kv",
                          "logits", "work",     "sample",  "token", "done"};
    cr_assert_eq(n, 17);
    for (int i = 0; i < 17; i++) cr_expect_str_eq(event_of(lines[i]), want[i], "line %d", i + 1);
    cr_expect_str_eq(cJSON_GetObjectItem(lines[2], "phase")->valuestring, "prefill");
    cr_expect_str_eq(cJSON_GetObjectItem(lines[10], "phase")->valuestring, "decode");
    cr_expect_eq(cJSON_GetObjectItem(lines[8], "pos")->valueint, 1);
    cr_expect_eq(cJSON_GetObjectItem(lines[8], "token")->valueint, 12);
    cr_expect(cJSON_IsTrue(cJSON_GetObjectItem(lines[8], "greedy")));
    cr_expect_eq(cJSON_GetObjectItem(lines[9], "pos")->valueint, 2);
    cr_expect_str_eq(cJSON_GetObjectItem(lines[9], "piece")->valuestring, " sat");
    cr_expect_eq(cJSON_GetObjectItem(lines[14], "token")->valueint, 2);
    /* the prefill's work: 2 tokens, 1 layer, d = 2, kv_dim 2, hidden 2, vocab 13,
     * 1 head of 2: matmuls 2 tokens × (wq 4 + wk 4 + wv 4 + wo 4 + w1 4 + w3 4 + w2 4) = 56;
     * classifier (--all-logits: both rows) 2 × 2 × 13 = 52; attention: positions
     * seen 1 + 2 = 3, × 1 head × 2 (scores and mix) × head_dim 2 = 12. 120 in all. */
    cr_expect_eq(cJSON_GetObjectItem(lines[7], "macs")->valueint, 120);
    const cJSON *logits0 = cJSON_GetObjectItem(lines[5], "logits");
    cr_expect_eq(cJSON_GetArraySize(logits0), 13);
    /* pos 0 is BOS: the hand-computed 2.548268 for " cat" (test_tiny.c) */
    cr_expect(fabs(cJSON_GetArrayItem(logits0, 11)->valuedouble - 2.548268) < 2e-5);
    const cJSON *done = lines[16];
    cr_expect_str_eq(cJSON_GetObjectItem(done, "stop_reason")->valuestring, "eos");
    cr_expect_str_eq(cJSON_GetObjectItem(done, "text")->valuestring, "cat sat");
    cr_expect_str_eq(cJSON_GetObjectItem(done, "completion")->valuestring, " sat");
    /* 3 positions fed (BOS, " cat", " sat") × 1 layer × kv_dim 2 × 2 × 4 bytes */
    const cJSON *kv = cJSON_GetObjectItem(done, "kv_cache");
    cr_expect_eq(cJSON_GetObjectItem(kv, "bytes_per_token")->valueint, 16);
    cr_expect_eq(cJSON_GetObjectItem(kv, "peak_bytes")->valueint, 48);
    for (int i = 0; i < n; i++) cJSON_Delete(lines[i]);
}

/* A header with a zero size, and a header whose weights are missing, through
 * the whole program: exit status 2 and one line. */
Test(cli, bad_checkpoint_headers) {
    const char *path = temp_path("zero-dim.bin");
    int32_t header[7] = {0, 4, 1, 1, 1, 8, 4};
    FILE *f = fopen(path, "wb");
    fwrite(header, sizeof header, 1, f);
    fclose(f);
    char args[1024];
    snprintf(args, sizeof args, "generate --model %s --tokenizer x", path);
    expect_bad_input(args, "dim must be positive, got 0");
    header[0] = 4;
    f = fopen(path, "wb");
    fwrite(header, sizeof header, 1, f);
    fclose(f);
    expect_bad_input(args, "(truncated)");
}

/* A generated checkpoint has no tokenizer of its own; the tiny model's JSON
 * lends it one when the vocabularies agree (13 tokens), and is refused with
 * one line when they do not. */
Test(cli, json_model_lends_its_tokenizer_to_a_checkpoint) {
    /* temp_path's buffer is static: each name copied before the next (the
     * three were one file, the trace written over the model it ran) */
    char v13[512], v20[512], trace[512];
    snprintf(v13, sizeof v13, "%s", temp_path("v13.bin"));
    snprintf(v20, sizeof v20, "%s", temp_path("v20.bin"));
    snprintf(trace, sizeof trace, "%s", temp_path("v13.jsonl"));
    char args[4096];
    snprintf(args, sizeof args,
             "make-model --dim 16 --hidden 16 --layers 1 --heads 4 --kv-heads 2 --vocab 13 "
             "--seq-len 16 --out %s",
             v13);
    cr_assert_eq(run_stepwise(args, out, sizeof out, err, sizeof err), 0, "%s", err);
    snprintf(args, sizeof args,
             "generate --model %s --tokenizer data/tiny-model.json --prompt cat --steps 2 "
             "--trace %s",
             v13, trace);
    cr_assert_eq(run_stepwise(args, out, sizeof out, err, sizeof err), 0, "%s", err);
    cJSON *lines[16];
    int n = read_jsonl(trace, lines, 16);
    cr_assert_gt(n, 2);
    /* " cat" is piece 11 of the tiny model (data/tiny-model.json) */
    cr_expect_str_eq(event_of(lines[1]), "tokenize");
    const cJSON *ids = cJSON_GetObjectItem(lines[1], "ids");
    cr_expect_eq(cJSON_GetArraySize(ids), 2);
    cr_expect_eq(cJSON_GetArrayItem(ids, 0)->valueint, 1);
    cr_expect_eq(cJSON_GetArrayItem(ids, 1)->valueint, 11);
    for (int i = 0; i < n; i++) cJSON_Delete(lines[i]);
    snprintf(args, sizeof args,
             "make-model --dim 16 --hidden 16 --layers 1 --heads 4 --vocab 20 --seq-len 16 "
             "--out %s",
             v20);
    cr_assert_eq(run_stepwise(args, out, sizeof out, err, sizeof err), 0, "%s", err);
    snprintf(args, sizeof args, "generate --model %s --tokenizer data/tiny-model.json", v20);
    expect_bad_input(args, "has 13 tokens but the model's vocabulary has 20");
    expect_bad_input("generate --model data/tiny-model.json --tokenizer build/no-such.json",
                     "--tokenizer: ");
    unlink(v13), unlink(v20), unlink(trace);
}

/* The run header and inspect name the model's file by its SHA-256, the one
 * data/models.sha256 pins for stories260K (--no-hash leaves it out). */
Test(cli, run_header_and_inspect_record_the_model_sha256) {
    if (model_file("stories260K.bin") == NULL) cr_skip_test("stories260K not found");
    const char *pinned = "b0a507e7ad0f626624f17112325e66691f9076d622e1d3274d103d00299f2696";
    char model[1024], tok[1024], trace[512], args[4096];
    snprintf(model, sizeof model, "%s", model_file("stories260K.bin"));
    snprintf(tok, sizeof tok, "%s", model_file("tok512.bin"));
    snprintf(trace, sizeof trace, "%s", temp_path("hash.jsonl"));
    for (int no_hash = 0; no_hash < 2; no_hash++) {
        snprintf(args, sizeof args,
                 "generate --model %s --tokenizer %s --steps 2 --quiet %s --trace %s", model, tok,
                 no_hash ? "--no-hash" : "", trace);
        cr_assert_eq(run_stepwise(args, out, sizeof out, err, sizeof err), 0, "%s", err);
        FILE *f = fopen(trace, "r");
        static char line[1 << 16];
        cr_assert(f != NULL && fgets(line, sizeof line, f) != NULL);
        fclose(f);
        cJSON *run = cJSON_Parse(line);
        const cJSON *files =
            cJSON_GetObjectItem(cJSON_GetObjectItem(run, "environment"), "model_files");
        if (no_hash) {
            cr_expect_null(files);
        } else {
            cr_assert_not_null(files);
            cr_expect_str_eq(cJSON_GetObjectItem(files, "sha256")->valuestring, pinned);
            cr_expect_str_eq(cJSON_GetObjectItem(files, "file")->valuestring, "stories260K.bin");
        }
        cJSON_Delete(run);
    }
    snprintf(args, sizeof args, "inspect --model %s --json", model);
    cr_assert_eq(run_stepwise(args, out, sizeof out, err, sizeof err), 0, "%s", err);
    cJSON *doc = cJSON_Parse(out);
    cr_assert_not_null(doc);
    cr_expect_str_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "files"), "sha256")->valuestring,
                     pinned);
    cJSON_Delete(doc);
}

/* The option table's kinds do what their names say: an OPTION_UNSET
 * (--no-norm-topk) clears its field, which make-model writes as Qwen3-MoE's
 * norm_topk_prob false (true without it), and a float option takes the
 * lower end of its range (--attn-softcap 0: no cap, written as null). */
static cJSON *made_config(const char *name, const char *extra) {
    char dir[512], args[2048], path[600];
    snprintf(dir, sizeof dir, "%s", temp_path(name));
    snprintf(args, sizeof args,
             "make-model --format hf --dim 16 --hidden 32 --layers 1 --heads 2 --kv-heads 1 "
             "--vocab 32 --seq-len 16 --out %s %s",
             dir, extra);
    cr_assert_eq(run_stepwise(args, out, sizeof out, err, sizeof err), 0, "%s: %s", args, err);
    snprintf(path, sizeof path, "%s/config.json", dir);
    cJSON *c = read_json_file(path);
    cr_assert_not_null(c, "%s", path);
    return c;
}

Test(cli, option_kinds_set_what_they_say) {
    cJSON *c = made_config("made-norm", "--arch qwen3moe --experts 4");
    cr_expect(cJSON_IsTrue(cJSON_GetObjectItem(c, "norm_topk_prob")));
    cJSON_Delete(c);
    c = made_config("made-no-norm", "--arch qwen3moe --experts 4 --no-norm-topk");
    cr_expect(cJSON_IsFalse(cJSON_GetObjectItem(c, "norm_topk_prob")), "--no-norm-topk");
    cJSON_Delete(c);
    c = made_config("made-softcap", "--arch gemma2 --attn-softcap 0");
    cr_expect(cJSON_IsNull(cJSON_GetObjectItem(c, "attn_logit_softcapping")), "--attn-softcap 0");
    cJSON_Delete(c);
}
