/* test_trace.c: the trace's guarantees: deterministic, filtered as asked,
 * within its size budget, its hook points consistent with the cache, its
 * BPE merges as traced by hand, and the reading tools honest. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tests/helpers.h"

static char out[1 << 16], err[1 << 16];

typedef struct {
    cJSON **lines;
    int n;
} Trace;

static Trace read_trace(const char *path) {
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "no trace %s", path);
    Trace t = {NULL, 0};
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, f) > 0) {
        t.lines = realloc(t.lines, (size_t)(t.n + 1) * sizeof(cJSON *));
        t.lines[t.n] = cJSON_Parse(line);
        cr_assert_not_null(t.lines[t.n], "%s line %d is not JSON", path, t.n + 1);
        t.n++;
    }
    free(line);
    fclose(f);
    return t;
}

static void free_trace(Trace *t) {
    for (int i = 0; i < t->n; i++) cJSON_Delete(t->lines[i]);
    free(t->lines);
}

static const char *ev(const cJSON *e) {
    return cJSON_GetObjectItem(e, "event")->valuestring;
}

static void generate_trace(const char *options, const char *path) {
    char args[4096];
    snprintf(args, sizeof args, "generate %s --trace %s", options, path);
    cr_assert_eq(run_stepwise(args, out, sizeof out, err, sizeof err), 0, "%s: %s", args, err);
}

static const char *stories_args(void) {
    static char args[2048];
    const char *m = model_file("stories260K.bin");
    if (m == NULL || model_file("tok512.bin") == NULL) cr_skip_test("stories260K not found");
    snprintf(args, sizeof args, "--model %s", m);
    snprintf(args + strlen(args), sizeof args - strlen(args), " --tokenizer %s",
             model_file("tok512.bin"));
    return args;
}

/* Same command, seed and model: every line identical, except the done
 * line's "measured", which carries wall-clock time. */
Test(trace, same_run_gives_the_same_trace_but_for_timing) {
    char options[4096];
    snprintf(options, sizeof options,
             "%s --prompt 'Once upon a time' --steps 30 --temperature 0.9 --top-k 30 --top-p 0.9 "
             "--seed 5 --trace-level full --trace-kv=full --trace-temperatures 1",
             stories_args());
    char a_path[512], b_path[512];
    snprintf(a_path, sizeof a_path, "%s", temp_path("det-a.jsonl"));
    snprintf(b_path, sizeof b_path, "%s", temp_path("det-b.jsonl"));
    generate_trace(options, a_path);
    generate_trace(options, b_path);
    Trace a = read_trace(a_path), b = read_trace(b_path);
    cr_assert_eq(a.n, b.n);
    cr_assert_gt(a.n, 1000);
    for (int i = 0; i < a.n; i++) {
        cJSON_DeleteItemFromObject(a.lines[i], "measured");
        cJSON_DeleteItemFromObject(b.lines[i], "measured");
        char *x = cJSON_PrintUnformatted(a.lines[i]), *y = cJSON_PrintUnformatted(b.lines[i]);
        cr_expect_str_eq(x, y, "line %d differs", i + 1);
        free(x), free(y);
    }
    free_trace(&a), free_trace(&b);
}

/* docs/trace-format.md: at the default level a stories260K run costs at
 * most 8 KiB per generated token (the 512 logits are most of it). */
Test(trace, default_level_stays_within_its_budget) {
    const char *modes[] = {"", "--temperature 1 --top-p 0.9"};
    for (int i = 0; i < 2; i++) {
        char options[4096];
        snprintf(options, sizeof options, "%s --steps 256 %s", stories_args(), modes[i]);
        const char *path = temp_path("budget.jsonl");
        generate_trace(options, path);
        struct stat st;
        cr_assert_eq(stat(path, &st), 0);
        Trace t = read_trace(path);
        int tokens = 0;
        for (int j = 0; j < t.n; j++) tokens += strcmp(ev(t.lines[j]), "token") == 0;
        cr_assert_gt(tokens, 0);
        double per_token = (double)st.st_size / tokens;
        cr_expect_leq(per_token, 8192.0, "[%s] %.0f bytes per generated token", modes[i],
                      per_token);
        free_trace(&t);
    }
}

/* Filters: only layer 0, only positions 1-2, only the named hooks. */
Test(trace, filters_keep_only_what_was_asked) {
    char options[4096];
    snprintf(options, sizeof options,
             "%s --prompt 'Once upon a time' --steps 6 --trace-level full --trace-layers 0 "
             "--trace-positions 1-2,6 --trace-hooks 'blocks.*.attn.pattern,final_norm'",
             stories_args());
    const char *path = temp_path("filtered.jsonl");
    generate_trace(options, path);
    Trace t = read_trace(path);
    int patterns = 0, norms = 0;
    for (int i = 0; i < t.n; i++) {
        const cJSON *layer = cJSON_GetObjectItem(t.lines[i], "layer");
        const cJSON *pos = cJSON_GetObjectItem(t.lines[i], "pos");
        const char *name = ev(t.lines[i]);
        if (layer != NULL)
            cr_expect_eq(layer->valueint, 0, "line %d: layer %d", i + 1, layer->valueint);
        bool positional = strcmp(name, "forward") && strcmp(name, "token") && strcmp(name, "work");
        if (pos != NULL && positional) {
            int p = pos->valueint;
            cr_expect((p >= 1 && p <= 2) || p == 6, "line %d: %s at pos %d", i + 1, name, p);
        }
        if (strcmp(name, "activation") == 0) {
            const char *hook = cJSON_GetObjectItem(t.lines[i], "hook")->valuestring;
            patterns += strcmp(hook, "blocks.0.attn.pattern") == 0;
            norms += strcmp(hook, "final_norm") == 0;
            cr_expect(strcmp(hook, "blocks.0.attn.pattern") == 0 || strcmp(hook, "final_norm") == 0,
                      "line %d: hook %s", i + 1, hook);
        }
    }
    /* pattern at pos 1, 2 (prefill) and 6 (decode), 8 heads each; the final
     * norm only where logits are computed: pos 4 (not selected) and 6 */
    cr_expect_eq(patterns, 3 * 8);
    cr_expect_eq(norms, 1);
    free_trace(&t);
}

/* At the full level: q has [n_heads, head_dim] = [8, 8]; k equals the kv
 * row at the same place; every attention pattern row sums to 1 and has
 * pos + 1 entries; the kv snapshot grows by one row a step. */
Test(trace, hook_points_have_their_documented_shapes) {
    char options[4096];
    snprintf(options, sizeof options, "%s --prompt 'Once upon a time' --steps 4 --trace-level full",
             stories_args());
    const char *path = temp_path("full.jsonl");
    generate_trace(options, path);
    Trace t = read_trace(path);
    int checked_q = 0, checked_k = 0, patterns = 0, snapshots = 0, last_n_pos = 0;
    cJSON *kv_rows[5][16] = {{0}};
    for (int i = 0; i < t.n; i++) {
        cJSON *e = t.lines[i];
        if (strcmp(ev(e), "kv") != 0) continue;
        int l = cJSON_GetObjectItem(e, "layer")->valueint,
            p = cJSON_GetObjectItem(e, "pos")->valueint;
        if (l < 5 && p < 16) kv_rows[l][p] = cJSON_GetObjectItem(e, "k");
    }
    for (int i = 0; i < t.n; i++) {
        cJSON *e = t.lines[i];
        const char *name = ev(e);
        if (strcmp(name, "kv_snapshot") == 0) {
            int n_pos = cJSON_GetObjectItem(e, "n_pos")->valueint;
            cr_expect_gt(n_pos, last_n_pos);
            last_n_pos = n_pos;
            snapshots++;
        }
        if (strcmp(name, "activation") != 0) continue;
        const char *hook = cJSON_GetObjectItem(e, "hook")->valuestring;
        const cJSON *shape = cJSON_GetObjectItem(e, "shape"),
                    *data = cJSON_GetObjectItem(e, "data");
        int pos = cJSON_GetObjectItem(e, "pos")->valueint;
        if (strcmp(hook, "blocks.0.attn.q") == 0) {
            cr_expect_eq(cJSON_GetArraySize(shape), 2);
            cr_expect_eq(cJSON_GetArrayItem(shape, 0)->valueint, 8);
            cr_expect_eq(cJSON_GetArrayItem(shape, 1)->valueint, 8);
            checked_q++;
        }
        if (strcmp(hook, "blocks.2.attn.k") == 0 && kv_rows[2][pos] != NULL) {
            cr_expect(cJSON_Compare(data, kv_rows[2][pos], true), "attn.k differs from kv at %d",
                      pos);
            checked_k++;
        }
        if (strstr(hook, "attn.pattern") != NULL) {
            cr_expect_eq(cJSON_GetArraySize(data), pos + 1);
            cr_expect(cJSON_GetObjectItem(e, "head") != NULL);
            double sum = 0;
            const cJSON *v;
            cJSON_ArrayForEach(v, data) sum += v->valuedouble;
            cr_expect(fabs(sum - 1) < 1e-5, "%s at %d sums to %f", hook, pos, sum);
            patterns++;
        }
    }
    /* 5 prompt positions + 3 decoded = 8 positions with q */
    cr_expect_eq(checked_q, 8);
    cr_expect_eq(checked_k, 8);
    cr_expect_eq(patterns, 8 * 5 * 8); /* positions × layers × heads */
    cr_expect_eq(snapshots, 4);        /* after the prefill and each of 3 decodes */
    free_trace(&t);
}

/* The tiny vocabulary's merges of "cat sat" (traced by hand in
 * test_tokenizer.c): at, at, " c", " s", " cat", " sat". */
Test(trace, bpe_merges_are_traced_step_by_step) {
    const char *path = temp_path("bpe.jsonl");
    generate_trace("--prompt 'cat sat' --trace-bpe --trace-level summary", path);
    Trace t = read_trace(path);
    const char *pieces[] = {"at", "at", " c", " s", " cat", " sat"};
    const char *after_first[] = {" ", "c", "at", " ", "s", "a", "t"};
    int step = 0;
    for (int i = 0; i < t.n; i++) {
        if (strcmp(ev(t.lines[i]), "bpe_merge") != 0) continue;
        cr_assert_lt(step, 6);
        cr_expect_str_eq(cJSON_GetObjectItem(t.lines[i], "piece")->valuestring, pieces[step]);
        cr_expect_eq(cJSON_GetObjectItem(t.lines[i], "step")->valueint, step + 1);
        if (step == 0) {
            const cJSON *seq = cJSON_GetObjectItem(t.lines[i], "sequence");
            cr_assert_eq(cJSON_GetArraySize(seq), 7);
            for (int k = 0; k < 7; k++)
                cr_expect_str_eq(cJSON_GetArrayItem(seq, k)->valuestring, after_first[k]);
            cr_expect_eq(cJSON_GetObjectItem(t.lines[i], "score")->valuedouble, -1.0);
        }
        step++;
    }
    cr_expect_eq(step, 6);
    free_trace(&t);
}

static void write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
}

/* A valid tiny trace, then the same with one thing broken at a time: each
 * is reported with its line number and exit status 1. */
Test(trace, validate_names_the_line_of_each_violation) {
    const char *good = temp_path("good.jsonl");
    generate_trace("--prompt cat --temperature 1 --top-k 2 --seed 3", good);
    cr_assert_eq(run_stepwise("trace validate build/tmp/does-not-exist.jsonl", out, sizeof out, err,
                              sizeof err),
                 2);
    char args[1024];
    snprintf(args, sizeof args, "trace validate %s", good);
    cr_assert_eq(run_stepwise(args, out, sizeof out, err, sizeof err), 0, "%s%s", out, err);
    Trace t = read_trace(good);
    int sample_line = -1;
    for (int i = 0; i < t.n; i++)
        sample_line = sample_line < 0 && strcmp(ev(t.lines[i]), "sample") == 0 ? i : sample_line;
    cr_assert_geq(sample_line, 0);
    struct {
        const char *what, *fragment;
    } cases[] = {{"probs", "probs sum to"},
                 {"token", "did not survive top_k"},
                 {"drop-done", "does not end with a done, scored or error line"},
                 {"not-json", "not valid JSON"},
                 {"unknown", "unknown event"},
                 {"extra-field", "is not allowed here"}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const char *bad = temp_path("bad.jsonl");
        FILE *f = fopen(bad, "w");
        int broken_line = sample_line + 1;
        for (int i = 0; i < t.n; i++) {
            cJSON *e = cJSON_Duplicate(t.lines[i], true);
            if (i == sample_line && strcmp(cases[c].what, "probs") == 0)
                cJSON_ReplaceItemInArray(cJSON_GetObjectItem(e, "probs"), 0,
                                         cJSON_CreateNumber(0.9));
            if (i == sample_line && strcmp(cases[c].what, "token") == 0) {
                cJSON_ReplaceItemInObject(e, "token", cJSON_CreateNumber(0));
                cJSON_DeleteItemFromObject(e, "survivors");
                cJSON_DeleteItemFromObject(e, "probs");
            }
            if (i == sample_line && strcmp(cases[c].what, "extra-field") == 0)
                cJSON_AddNumberToObject(e, "surprise", 1);
            if (i == sample_line && strcmp(cases[c].what, "unknown") == 0)
                cJSON_ReplaceItemInObject(e, "event", cJSON_CreateString("mystery"));
            char *s = cJSON_PrintUnformatted(e);
            if (i == sample_line && strcmp(cases[c].what, "not-json") == 0) s[strlen(s) / 2] = '\0';
            bool drop = i == t.n - 1 && strcmp(cases[c].what, "drop-done") == 0;
            if (!drop) fprintf(f, "%s\n", s);
            free(s);
            cJSON_Delete(e);
        }
        fclose(f);
        if (strcmp(cases[c].what, "drop-done") == 0) broken_line = t.n - 1;
        snprintf(args, sizeof args, "trace validate %s", bad);
        int status = run_stepwise(args, out, sizeof out, err, sizeof err);
        cr_expect_eq(status, 1, "%s: exit %d", cases[c].what, status);
        char where[600];
        snprintf(where, sizeof where, "%s:%d: ", bad, broken_line);
        cr_expect(strstr(out, where) != NULL, "%s: '%s' lacks '%s'", cases[c].what, out, where);
        cr_expect(strstr(out, cases[c].fragment) != NULL, "%s: '%s'", cases[c].what, out);
    }
    free_trace(&t);
    const char *empty = temp_path("empty.jsonl");
    write_file(empty, "");
    snprintf(args, sizeof args, "trace validate %s", empty);
    cr_expect_eq(run_stepwise(args, out, sizeof out, err, sizeof err), 1);
    cr_expect(strstr(out, "empty") != NULL, "%s", out);
}

/* The tiny model at position 0 (BOS), T = 1: logits 2.548268 (" cat"),
 * 0.520972 (" sat"), -2.174524 (EOS), ten zeros. e^2.548268 = 12.7855,
 * e^0.520972 = 1.6837, e^-2.174524 = 0.1137; total 24.5829:
 * " cat" 52.0%, " sat" 6.8%, each zero-logit token 4.1%. */
Test(trace, show_draws_the_step_as_a_person_reads_it) {
    const char *path = temp_path("show.jsonl");
    generate_trace("--temperature 1 --top-k 2 --seed 9 --steps 3", path);
    char args[1024];
    snprintf(args, sizeof args, "trace show %s --pos 0", path);
    cr_assert_eq(run_stepwise(args, out, sizeof out, err, sizeof err), 0, "%s", err);
    cr_expect(strstr(out, "position 0") != NULL, "%s", out);
    cr_expect(strstr(out, "11 \" cat\"") != NULL, "%s", out);
    cr_expect(strstr(out, " 52.0%") != NULL, "%s", out);
    cr_expect(strstr(out, "  6.8%") != NULL, "%s", out);
    cr_expect(strstr(out, "  4.1% cut: top_k") != NULL, "%s", out);
    cr_expect(strstr(out, "top_k        kept 2") != NULL, "%s", out);
    cr_expect(strstr(out, "-> chosen") != NULL, "%s", out);
    /* 1 position × 1 layer × kv_dim 2 × 2 × 4 bytes */
    cr_expect(strstr(out, "KV cache after this step: 1 positions x 16 bytes = 16 bytes") != NULL,
              "%s", out);
    snprintf(args, sizeof args, "trace show %s --pos 99", path);
    cr_expect_eq(run_stepwise(args, out, sizeof out, err, sizeof err), 2);
    cr_expect(strstr(err, "nothing recorded at position 99") != NULL, "%s", err);
}

/* Format version 2: the run's choices (run/run_options.h) sit in the
 * header's run_options block, not in the model's arch, and the cache's
 * bytes are those of the type chosen: stories260K's row is 5 layers x 2 (K,
 * V) x 32 values, 4 bytes each in float32 (1280 a token), 2 in f16 and bf16
 * (640), and 32 codes + 4 scales of 4 bytes in int8 (480). */
Test(trace, the_header_records_the_run_s_choices) {
    char gpt2[512], opts[4096], path[512];
    snprintf(gpt2, sizeof gpt2, "%s", temp_path("gpt2-run-options"));
    snprintf(opts, sizeof opts,
             "make-model --format hf --dim 32 --hidden 48 --layers 1 --heads 2 --vocab 512 "
             "--seq-len 16 --arch gpt2 --out %s",
             gpt2);
    cr_assert_eq(run_stepwise(opts, out, sizeof out, err, sizeof err), 0, "%s", err);
    const struct {
        const char *options, *kv_cache, *kv_rounding, *gelu;
        double bytes_per_token;
    } cases[] = {
        {"", "f32", "none", "exact", 1280},
        {"--kv-dtype f16 --kv-rounding llama.cpp", "f16", "llama.cpp", "exact", 640},
        {"--kv-dtype bf16", "bf16", "none", "exact", 640},
        {"--quant-kv int8", "int8", "none", "exact", 480},
        {"--gelu ggml", "f32", "none", "ggml", 0}, /* the GPT-2 model */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        bool gelu = cases[i].bytes_per_token == 0;
        snprintf(path, sizeof path, "%s", temp_path("run-options.jsonl"));
        snprintf(opts, sizeof opts, "%s %s --steps 3 --quiet", cases[i].options,
                 gelu ? "" : stories_args());
        if (gelu)
            snprintf(opts + strlen(opts), sizeof opts - strlen(opts), " --model %s --tokenizer %s",
                     gpt2, model_file("tok512.bin"));
        generate_trace(opts, path);
        Trace t = read_trace(path);
        const cJSON *run = t.lines[0];
        cr_expect_eq(cJSON_GetObjectItem(run, "format_version")->valuedouble, 2.0);
        const cJSON *r = cJSON_GetObjectItem(run, "run_options");
        cr_assert_not_null(r, "%s: no run_options", cases[i].options);
        cr_expect_str_eq(cJSON_GetObjectItem(r, "kv_cache")->valuestring, cases[i].kv_cache);
        cr_expect_str_eq(cJSON_GetObjectItem(r, "kv_rounding")->valuestring, cases[i].kv_rounding);
        cr_expect_str_eq(cJSON_GetObjectItem(r, "gelu")->valuestring, cases[i].gelu);
        const cJSON *arch = cJSON_GetObjectItem(cJSON_GetObjectItem(run, "model"), "arch");
        cr_expect(!cJSON_HasObjectItem(arch, "kv_dtype") &&
                      !cJSON_HasObjectItem(arch, "kv_rounding_ggml") &&
                      !cJSON_HasObjectItem(arch, "gelu_f16_table"),
                  "%s: a run's choice in the model's arch", cases[i].options);
        if (i == 1) { /* an older trace: version 1, no run_options, still valid */
            cJSON *old = cJSON_Duplicate(run, true);
            cJSON_ReplaceItemInObject(old, "format_version", cJSON_CreateNumber(1));
            cJSON_DeleteItemFromObject(old, "run_options");
            char *line = cJSON_PrintUnformatted(old);
            char v1[512], args[1024];
            snprintf(v1, sizeof v1, "%s", temp_path("run-options-v1.jsonl"));
            FILE *f = fopen(v1, "w");
            cr_assert_not_null(f);
            fprintf(f, "%s\n", line);
            for (int k = 1; k < t.n; k++) {
                char *rest = cJSON_PrintUnformatted(t.lines[k]);
                fprintf(f, "%s\n", rest);
                free(rest);
            }
            fclose(f);
            free(line), cJSON_Delete(old);
            snprintf(args, sizeof args, "trace validate %s", v1);
            cr_expect_eq(run_stepwise(args, out, sizeof out, err, sizeof err), 0,
                         "a version 1 trace refused: %s%s", out, err);
        }
        if (!gelu)
            cr_expect_eq(
                cJSON_GetObjectItem(cJSON_GetObjectItem(run, "kv_cache"), "bytes_per_token")
                    ->valuedouble,
                cases[i].bytes_per_token, "%s", cases[i].options);
        free_trace(&t);
    }
}
