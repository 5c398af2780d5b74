/* cli/golden.c: `stepwise golden`, a self-describing set of reference
 * outputs for one model: scored sequences, greedy and seeded generations,
 * and the KV cache after a prompt, with a manifest naming the model by its
 * SHA-256 and each file by the command that made it. The same command makes
 * the same bytes. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <dirent.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ref/util/build_info.h"
#include "ref/cli/command.h"
#include "ref/cli/commands.h"
#include "ref/cli/common.h"
#include "ref/cli/options.h"
#include "ref/formats/model_open.h"
#include "ref/cli/golden_folder.h"
#include "ref/cli/identity.h"
#include "ref/cli/progress.h"
#include "ref/cli/signals.h"
#include "ref/util/file_util.h"
#include "ref/formats/hf_model.h"
#include "ref/text/tokenizer_json.h"
#include "ref/util/sha256.h"
#include "ref/kernels/threads.h"

static const char GOLDEN_USAGE[] =
    "usage: stepwise golden --model M [--tokenizer T] --out DIR [--kernels plain|fast]\n"
    "                       [--hooks P] [--tensors] [--threads N] [--shard K/N]\n"
    "       stepwise golden merge PART... --out DIR\n"
    "\n"
    "Write a golden set into DIR: manifest.json, scored\n"
    "sequences (score-*.jsonl, with activations: --hooks default, the residual\n"
    "stream of every block, attn_out, mlp_out and final_norm at every position;\n"
    "or hook globs, or none), greedy generations (greedy-*.jsonl), seeded\n"
    "generations (seeded-*.jsonl) and the KV cache after a prompt (kv-*.jsonl).\n"
    "The set is written beside DIR and moved into place whole. An existing DIR\n"
    "is replaced only when it is empty or an older golden set: a manifest.json\n"
    "of format stepwise-golden, version 1, beside nothing but the regular files\n"
    "it lists. Any other DIR (a symlink, a file, a folder of anything else) is\n"
    "refused and left untouched.\n"
    "--tensors puts the numbers of every score and kv file into a safetensors\n"
    "file beside it (score-00.jsonl and score-00.safetensors: `score --tensors`);\n"
    "the manifest lists each with its SHA-256 and size under the entry's\n"
    "\"tensors\".\n"
    "--tokenizer is needed for a llama2.c checkpoint; a Hugging Face folder or a\n"
    "GGUF file brings its own. Where the tokenizer adds no BOS (Qwen's), the\n"
    "generations from BOS alone start from the first prompt instead.\n"
    "Every file leaves out measured figures, so the set is byte-identical run\n"
    "to run, whatever --threads. docs/oracle.md says how to compare another\n"
    "engine against it.\n"
    "\n"
    "--shard K/N writes part K of N: the files whose number in the set is K-1\n"
    "modulo N, with a manifest of its own (each file's SHA-256, the part's\n"
    "number). `golden merge` checks that the parts are one set (the same model,\n"
    "tokenizer, stepwise build and options; every part once; every file once,\n"
    "its checksum right) and writes the set, byte for byte what one run without\n"
    "--shard writes. docs/oracle.md shows GNU parallel and Slurm running parts.\n";

/* The prompts scored and generated from; short stories-style text. */
static const char *const PROMPTS[] = {
    "Once upon a time",
    "Lily and Ben went to the park. They saw a big dog.",
    "One day, a little boy named Tim found a shiny red ball in the garden.",
    "The cat sat on the mat and looked at the moon.",
};
#define N_PROMPTS (int)(sizeof PROMPTS / sizeof PROMPTS[0])

/* One file of the set: the subcommand and its arguments after the model's. */
typedef struct {
    const char *file, *kind, *what;
    const char *args[24];
} GoldenFile;

/* Run `stepwise <argv>` in this process; returns its exit status. */
static int run_command(int argc, char **argv) {
    if (strcmp(argv[0], "score") == 0) return cli_score(argc, argv);
    return cli_generate(argc, argv);
}

/* Where the set is made: the model, its tokenizer (NULL: the model's own),
 * the kernels (NULL: the default), and the prompt that stands in for BOS
 * alone when the tokenizer adds none (Qwen's), else NULL. */
typedef struct {
    const char *model, *tokenizer, *kernels, *no_bos_prompt;
    const char *hooks;   /* score files' --hooks */
    const char *threads; /* --threads for every command, or NULL */
    bool tensors;        /* score files with --tensors: a .safetensors beside each */
    int shard, shards;   /* this part (1..shards) of the set; 1 of 1: the whole set */
} GoldenRun;

/* The last part of a path: what the manifest names a file by. */
static const char *base_name(const char *path) {
    const char *slash = strrchr(path, '/');
    return slash != NULL && slash[1] != '\0' ? slash + 1 : path;
}

/* A file's SHA-256 (hex) and size, as the manifest lists them. */
static bool file_sum(const char *path, char sha[65], double *bytes, StepError *err) {
    struct stat st;
    if (!sha256_file(path, sha, err)) return false;
    if (stat(path, &st) != 0) return step_fail(err, "golden: %s: cannot stat", path);
    *bytes = (double)st.st_size;
    return true;
}

/* score-00.jsonl's tensors file, score-00.safetensors (into name [32]). */
static void tensors_name(const char *file, char *name) {
    size_t stem = strcspn(file, ".");
    snprintf(name, 32, "%.*s.safetensors", (int)(stem < 16 ? stem : 16), file);
}

static bool make_file(const GoldenFile *g, int index, const GoldenRun *run, const char *dir,
                      cJSON *files, StepError *err) {
    char path[PATH_MAX + 64], tensors_path[PATH_MAX + 64], tensors_file[32];
    snprintf(path, sizeof path, "%s/%s", dir, g->file);
    bool with_tensors = run->tensors && strcmp(g->args[0], "score") == 0;
    tensors_name(g->file, tensors_file);
    snprintf(tensors_path, sizeof tensors_path, "%s/%s", dir, tensors_file);
    char *argv[40];
    int argc = 0;
    argv[argc++] = (char *)g->args[0];
    argv[argc++] = "--model", argv[argc++] = (char *)run->model;
    if (run->tokenizer != NULL) argv[argc++] = "--tokenizer", argv[argc++] = (char *)run->tokenizer;
    bool has_prompt = strcmp(g->args[0], "score") == 0;
    for (int i = 1; g->args[i] != NULL; i++) {
        has_prompt = has_prompt || strcmp(g->args[i], "--prompt") == 0;
        argv[argc++] = (char *)g->args[i];
    }
    if (!has_prompt && run->no_bos_prompt != NULL)
        argv[argc++] = "--prompt", argv[argc++] = (char *)run->no_bos_prompt;
    const char *out_flag = strcmp(g->args[0], "score") == 0 ? "--out" : "--trace";
    argv[argc++] = (char *)out_flag, argv[argc++] = path;
    if (with_tensors) argv[argc++] = "--tensors", argv[argc++] = tensors_path;
    argv[argc++] = "--reproducible";
    if (run->kernels != NULL) argv[argc++] = "--kernels", argv[argc++] = (char *)run->kernels;
    if (strcmp(g->kind, "score") == 0 && strcmp(run->hooks, "none") != 0)
        argv[argc++] = "--hooks", argv[argc++] = (char *)run->hooks;
    /* the command as a person would type it in a folder holding the model
     * and the set: every path relative (the file within DIR, the model and
     * tokenizer by name), so the manifest reads the same anywhere; without
     * the options added below, which change no byte of the file */
    char command[4096] = "stepwise";
    for (int i = 0; i < argc; i++) {
        const char *word = argv[i] == path             ? g->file
                           : argv[i] == tensors_path   ? tensors_file
                           : argv[i] == run->model     ? base_name(run->model)
                           : argv[i] == run->tokenizer ? base_name(run->tokenizer)
                                                       : argv[i];
        bool quote = strchr(word, ' ') != NULL || strchr(word, ',') != NULL;
        size_t len = strlen(command);
        snprintf(command + len, sizeof command - len, quote ? " '%s'" : " %s", word);
    }
    if (run->threads != NULL) argv[argc++] = "--threads", argv[argc++] = (char *)run->threads;
    argv[argc++] = "--quiet"; /* the set's own progress line is the one shown */
    argv[argc] = NULL;
    if (run_command(argc, argv) != 0)
        return step_fail(err, "golden: making %s failed (see above)", g->file);
    char sha[65], tensors_sha[65] = "";
    double bytes = 0, tensors_bytes = 0;
    if (!file_sum(path, sha, &bytes, err) ||
        (with_tensors && !file_sum(tensors_path, tensors_sha, &tensors_bytes, err)))
        return false;
    cJSON *entry = cJSON_CreateObject();
    cJSON_AddNumberToObject(entry, "index", index);
    cJSON_AddStringToObject(entry, "file", g->file);
    cJSON_AddStringToObject(entry, "kind", g->kind);
    cJSON_AddStringToObject(entry, "what", g->what);
    if (!has_prompt && run->no_bos_prompt != NULL)
        cJSON_AddStringToObject(entry, "note", "the tokenizer adds no BOS: from the first prompt");
    cJSON_AddStringToObject(entry, "command", command);
    cJSON_AddStringToObject(entry, "sha256", sha);
    cJSON_AddNumberToObject(entry, "bytes", bytes);
    if (with_tensors) {
        cJSON *t = cJSON_AddObjectToObject(entry, "tensors");
        cJSON_AddStringToObject(t, "file", tensors_file);
        cJSON_AddStringToObject(t, "sha256", tensors_sha);
        cJSON_AddNumberToObject(t, "bytes", tensors_bytes);
    }
    cJSON_AddItemToArray(files, entry);
    return true;
}

/* The tokenizer's identity: --tokenizer's file, a folder's tokenizer.json,
 * or (a GGUF's, embedded) the model's own. */
static cJSON *tokenizer_identity(const GoldenRun *run, StepError *err) {
    if (run->tokenizer != NULL) return cli_file_identity(run->tokenizer, err);
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/tokenizer.json", run->model);
    if (hf_is_model_dir(run->model)) return cli_file_identity(path, err);
    return cJSON_CreateString("the model's own");
}

/* Whether the tokenizer the set runs with puts BOS first: only a
 * tokenizer.json may not (Qwen's has none). */
static bool tokenizer_adds_bos(const char *model, const char *tokenizer) {
    const char *json = tokenizer != NULL ? (path_is_tokenizer_json(tokenizer) ? tokenizer : NULL)
                                         : (hf_is_model_dir(model) ? model : NULL);
    Tokenizer t;
    StepError ignored; /* a tokenizer that does not load fails in the first command */
    if (json == NULL || !tokenizer_load_json(&t, json, 0, &ignored)) return true;
    bool adds = t.add_bos;
    tokenizer_free(&t);
    return adds;
}

/* The files of a set, in their order: every part of a sharded set numbers
 * them the same way. names: storage for the score files' names. */
static int golden_files(GoldenFile *out, char names[N_PROMPTS][32]) {
    int n = 0;
    for (int i = 0; i < N_PROMPTS; i++) {
        snprintf(names[i], sizeof names[i], "score-%02d.jsonl", i);
        out[n++] = (GoldenFile){.file = names[i],
                                .kind = "score",
                                .what = "teacher-forced logits and log-probabilities of a prompt",
                                .args = {"score", "--text", PROMPTS[i], "--top-n", "5", NULL}};
    }
    const GoldenFile rest[] = {
        {.file = "greedy-00.jsonl",
         .kind = "greedy",
         .what = "greedy generation from BOS, every logit",
         .args = {"generate", "--steps", "64", "--trace-level", "logits", "--quiet", NULL}},
        {.file = "greedy-01.jsonl",
         .kind = "greedy",
         .what = "greedy generation from a prompt, every logit",
         .args = {"generate", "--prompt", PROMPTS[0], "--steps", "64", "--trace-level", "logits",
                  "--all-logits", "--quiet", NULL}},
        {.file = "seeded-00.jsonl",
         .kind = "seeded",
         .what = "llama2.c's defaults: temperature 1, top-p 0.9",
         .args = {"generate", "--steps", "64", "--temperature", "1", "--top-p", "0.9", "--seed",
                  "133742", "--quiet", NULL}},
        {.file = "seeded-01.jsonl",
         .kind = "seeded",
         .what = "temperature 0.8, top-k 40, min-p 0.05 in vllm's order",
         .args = {"generate", "--prompt", PROMPTS[1], "--steps", "64", "--temperature", "0.8",
                  "--top-k", "40", "--min-p", "0.05", "--sampler-order", "vllm", "--seed", "42",
                  "--quiet", NULL}},
        {.file = "kv-00.jsonl",
         .kind = "kv",
         .what = "the KV cache after a prompt: every row, every layer",
         .args = {"score", "--text", PROMPTS[1], "--top-n", "0", "--trace-kv", NULL}},
    };
    for (size_t i = 0; i < sizeof rest / sizeof rest[0]; i++) out[n++] = rest[i];
    return n;
}

static cJSON *golden_manifest_new(const GoldenRun *run, StepError *err) {
    cJSON *manifest = cJSON_CreateObject();
    cJSON_AddStringToObject(manifest, "format", "stepwise-golden");
    cJSON_AddNumberToObject(manifest, "version", 1);
    cJSON_AddStringToObject(manifest, "stepwise_version", STEPWISE_VERSION);
    cJSON *build = cJSON_AddObjectToObject(manifest, "build");
    cJSON_AddStringToObject(build, "compiler", build_compiler());
    cJSON_AddStringToObject(build, "cflags", build_cflags());
    cJSON *model_id = cli_file_identity(run->model, err),
          *tok_id = model_id ? tokenizer_identity(run, err) : NULL;
    if (model_id == NULL || tok_id == NULL) {
        cJSON_Delete(model_id);
        cJSON_Delete(manifest);
        return NULL;
    }
    cJSON_AddItemToObject(manifest, "model", model_id);
    cJSON_AddItemToObject(manifest, "tokenizer", tok_id);
    cJSON *options = cJSON_AddObjectToObject(manifest, "options");
    cJSON_AddStringToObject(options, "hooks", run->hooks);
    if (run->tensors) cJSON_AddStringToObject(options, "tensors", "safetensors");
    cJSON_AddStringToObject(manifest, "how_to_compare",
                            "stepwise diff FILE CANDIDATE: see docs/oracle.md");
    return manifest;
}

/* Write the run's part of the set (the whole set for 1 of 1) into dir:
 * file i belongs to part (i mod shards) + 1. */
static bool write_set(void *ctx, const char *dir, StepError *err) {
    const GoldenRun *run = ctx;
    cJSON *manifest = golden_manifest_new(run, err);
    if (manifest == NULL) return false;
    cJSON *files = cJSON_AddArrayToObject(manifest, "files");
    bool ok = true;
    GoldenFile all[N_PROMPTS + 8];
    char names[N_PROMPTS][32];
    int n = golden_files(all, names);
    CliProgress progress;
    cli_progress_init(&progress, false);
    int mine = 0, made = 0;
    for (int i = 0; i < n; i++) mine += i % run->shards == run->shard - 1;
    for (int i = 0; ok && i < n && !cli_signal_caught(); i++) {
        if (i % run->shards != run->shard - 1) continue;
        cli_progress_update(&progress, "golden set (files)", (uint64_t)made, (uint64_t)mine);
        ok = make_file(&all[i], i, run, dir, files, err);
        made++;
    }
    cli_progress_clear(&progress);
    if (ok && run->shards > 1) {
        cJSON *shard = cJSON_AddObjectToObject(manifest, "shard");
        cJSON_AddNumberToObject(shard, "index", run->shard);
        cJSON_AddNumberToObject(shard, "count", run->shards);
        cJSON_AddNumberToObject(shard, "files_in_set", n);
    }
    if (ok) ok = golden_manifest_write(manifest, dir, err);
    cJSON_Delete(manifest);
    return ok;
}

/* --shard K/N: part K of N, 1 <= K <= N <= 10000. */
static bool parse_shard(const char *arg, int *k, int *n, StepError *err) {
    char *end;
    errno = 0;
    long a = strtol(arg, &end, 10), b = 0;
    bool ok = errno == 0 && end != arg && *end == '/';
    if (ok) {
        const char *rest = end + 1;
        b = strtol(rest, &end, 10);
        ok = errno == 0 && end != rest && *end == '\0' && b >= 1 && b <= 10000 && a >= 1 && a <= b;
    }
    if (!ok)
        return step_fail(err, "golden: --shard takes K/N with 1 <= K <= N <= 10000, got '%.40s'",
                         arg);
    *k = (int)a, *n = (int)b;
    return true;
}

/* The command line: the run and where it goes. */
typedef struct {
    GoldenRun run;
    const char *out;
} GoldenArgs;

static bool parse_shard_option(const CliOption *o, const char *value, void *dest, StepError *err) {
    (void)o;
    GoldenRun *run = dest;
    return parse_shard(value, &run->shard, &run->shards, err);
}
/* --threads N and --kernels K: checked here, passed on to each command as
 * given */
static bool parse_passed_on(const CliOption *o, const char *value, void *dest, StepError *err) {
    int unused_int;
    bool unused_bool;
    *(const char **)dest = value;
    if (strcmp(o->name, "threads") == 0)
        return cli_parse_int(value, "--threads", 1, THREADS_MAX, &unused_int, err);
    return cli_parse_either(value, "--kernels", "fast", "plain", &unused_bool, err);
}

#define RUN_FIELD(f) offsetof(GoldenArgs, run.f)
static const CliOption GOLDEN_OPTIONS[] = {
    {"model", "M", OPTION_TEXT, RUN_FIELD(model), .required = true, .path = PATH_IN,
     .help = "the model (any stepwise loads)"},
    {"tokenizer", "T", OPTION_TEXT, RUN_FIELD(tokenizer), .path = PATH_IN,
     .help = "its tokenizer (needed for a llama2.c checkpoint)"},
    {"out", "DIR", OPTION_TEXT, offsetof(GoldenArgs, out), .required = true,
     .path = PATH_OUT_FOLDER, .help = "where the set goes (moved into place whole)"},
    {"hooks", "P", OPTION_TEXT, RUN_FIELD(hooks),
     .help = "activations in the score files: default, globs, or none"},
    {"tensors", NULL, OPTION_FLAG, RUN_FIELD(tensors),
     .help = "each score and kv file's numbers as safetensors beside it"},
    {"kernels", "K", OPTION_CUSTOM, RUN_FIELD(kernels), .parse = parse_passed_on,
     .help = "fast (default) or plain; the same bytes"},
    {"threads", "N", OPTION_CUSTOM, RUN_FIELD(threads), .parse = parse_passed_on,
     .help = "threads the fast kernels use; the same bytes"},
    {"shard", "K/N", OPTION_CUSTOM, offsetof(GoldenArgs, run), .parse = parse_shard_option,
     .help = "write part K of N (golden merge joins the parts)"},
    CLI_OPTIONS_END};

static const CliCommandOptions GOLDEN_COMMAND = {
    .command = "golden", .options = GOLDEN_OPTIONS, .usage = GOLDEN_USAGE};

static int golden(void *golden_args, int n, char **operands, StepError *err) {
    GoldenArgs *args = golden_args;
    GoldenRun *run = &args->run;
    (void)n, (void)operands;
    run->no_bos_prompt = tokenizer_adds_bos(run->model, run->tokenizer) ? NULL : PROMPTS[0];
    if (!golden_folder_replace(args->out, write_set, run, err)) return EXIT_BAD_INPUT;
    if (run->shards > 1)
        fprintf(stderr,
                "part %d of %d of a golden set written to %s (stepwise golden merge joins them)\n",
                run->shard, run->shards, args->out);
    else
        fprintf(stderr, "golden set written to %s (manifest.json lists its files)\n", args->out);
    return 0;
}

int cli_golden(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "merge") == 0) return cli_golden_merge(argc - 1, argv + 1);
    GoldenArgs args = {.run = {.hooks = "default", .shard = 1, .shards = 1}};
    return cli_command_run(&GOLDEN_COMMAND, argc, argv, &args, golden);
}
