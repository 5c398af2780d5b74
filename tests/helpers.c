/* helpers.c: see helpers.h. */
#include "tests/helpers.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ref/util/file_util.h"
#include "ref/formats/checkpoint.h"
#include "ref/formats/model_json.h"

static const char *models_dir(void) {
    const char *env = getenv("STEPWISE_MODELS");
    return env != NULL && env[0] != '\0' ? env : "../shared/models";
}

const char *model_file(const char *name) {
    static char ring[4][4096]; /* several paths may be in use at once */
    static int next;
    char *path = ring[next++ % 4];
    snprintf(path, sizeof ring[0], "%s/%s", models_dir(), name);
    return access(path, R_OK) == 0 ? path : NULL;
}

const char *golden_file(const char *name) {
    static char path[4096];
    snprintf(path, sizeof path, "%s/../golden/%s", models_dir(), name);
    if (access(path, R_OK) == 0) return path;
    snprintf(path, sizeof path, "../shared/golden/%s", name);
    return access(path, R_OK) == 0 ? path : NULL;
}

cJSON *read_json_file(const char *path) {
    char *text;
    StepError err;
    if (path == NULL || !file_read_text(path, "json", &text, &err)) return NULL;
    cJSON *root = cJSON_Parse(text);
    free(text);
    return root;
}

void load_stories260k(Model *m, Tokenizer *tok) {
    const char *model = model_file("stories260K.bin");
    if (model == NULL || model_file("tok512.bin") == NULL) cr_skip_test("stories260K not found");
    StepError err;
    cr_assert(model_load_checkpoint(m, model, &err), "%s", err.message);
    cr_assert(tokenizer_load_bin(tok, model_file("tok512.bin"), m->config.vocab_size, &err), "%s",
              err.message);
}

void load_tiny(Model *m, Tokenizer *tok) {
    StepError err;
    cr_assert(model_load_json_file(m, tok, "data/tiny-model.json", &err), "%s", err.message);
}

static void read_all(const char *path, char *buf, int cap) {
    if (buf == NULL) return;
    FILE *f = fopen(path, "rb");
    size_t n = f ? fread(buf, 1, (size_t)cap - 1, f) : 0;
    buf[n] = '\0';
    if (f) fclose(f);
}

int run_stepwise(const char *args, char *out, int out_cap, char *err, int err_cap) {
    char out_path[256], err_path[256], cmd[8192];
    snprintf(out_path, sizeof out_path, "build/tmp/run-%d.out", (int)getpid());
    snprintf(err_path, sizeof err_path, "build/tmp/run-%d.err", (int)getpid());
    mkdir("build/tmp", 0755);
    /* STEPWISE_BIN: the sanitizer run (make sanitize) tests its own build */
    const char *bin = getenv("STEPWISE_BIN") ? getenv("STEPWISE_BIN") : "build/stepwise";
    snprintf(cmd, sizeof cmd, "%s %s >%s 2>%s", bin, args, out_path, err_path);
    int status = system(cmd);
    read_all(out_path, out, out_cap);
    read_all(err_path, err, err_cap);
    unlink(out_path);
    unlink(err_path);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

const char *temp_path(const char *name) {
    static char path[512];
    mkdir("build/tmp", 0755);
    snprintf(path, sizeof path, "build/tmp/%d-%s", (int)getpid(), name);
    unlink(path);
    return path;
}

GenerateResult greedy_from_bos(const Model *m, int steps) {
    int bos = TOKEN_BOS;
    GenerateOptions opt;
    generate_options_default(&opt);
    opt.steps = steps;
    GenerateResult r;
    StepError err;
    cr_assert(generate(m, &bos, 1, &opt, NULL, NULL, &r, &err), "%s", err.message);
    return r;
}
