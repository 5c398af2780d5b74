/* cli/compare_quant.c: `stepwise compare-quant`, what int8 costs. One text
 * is teacher-forced through the float32 model and through each quantized
 * configuration, and the logits are compared position by position with the
 * statistics of llama.cpp's KL-divergence mode. */
#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace/trace_diff.h"
#include "ref/cli/command.h"
#include "ref/cli/commands.h"
#include "ref/cli/common.h"
#include "ref/cli/options.h"
#include "ref/kernels/threads.h"
#include "ref/util/file_util.h"
#include "ref/model/model_quant.h"
#include "ref/score.h"

/* The help's usage lines and what the command does. */
static const char COMPARE_QUANT_USAGE[] =
    "usage: stepwise compare-quant --model M --tokenizer T --text FILE [--group G] "
    "[--json]\n"
    "                              [--kernels plain|fast] [--threads N]\n"
    "\n"
    "Teacher-force the text of FILE (BOS first, cut to the model's seq_len) through\n"
    "the float32 model and through int8 weights (W), activations (A), KV cache (KV),\n"
    "W+A and W+A+KV, and print for each: max and mean |dlogit|, Mean KLD and\n"
    "99.0% KLD (KL of the quantized distribution from float32's), Same top p (the\n"
    "share of positions whose argmax matches), and the perplexity of both.\n";

typedef struct {
    const char *model, *tokenizer, *text;
    int group, threads;
    bool json, plain;
} CompareQuantArgs;

static bool parse_kernels(const CliOption *o, const char *value, void *dest, StepError *err) {
    (void)o;
    return cli_parse_either(value, "--kernels", "fast", "plain", dest, err);
}

static const CliOption COMPARE_QUANT_OPTIONS[] = {
    {"model", "M", OPTION_TEXT, offsetof(CompareQuantArgs, model), .path = PATH_IN,
     .help = "the float32 model"},
    {"tokenizer", "T", OPTION_TEXT, offsetof(CompareQuantArgs, tokenizer), .path = PATH_IN,
     .help = "its tokenizer (default: the model's own)"},
    {"text", "FILE", OPTION_TEXT, offsetof(CompareQuantArgs, text), .required = true,
     .path = PATH_IN, .help = "the text to teacher-force (required)"},
    {"group", "G", OPTION_INT, offsetof(CompareQuantArgs, group), 1, 1 << 20,
     .help = "values per scale (default 32)"},
    {"json", NULL, OPTION_FLAG, offsetof(CompareQuantArgs, json),
     .help = "print the table as JSON"},
    {"kernels", "K", OPTION_CUSTOM, offsetof(CompareQuantArgs, plain), .parse = parse_kernels,
     .help = "fast (default: the int8 weights packed) or plain (row by row)"},
    {"threads", "N", OPTION_INT, offsetof(CompareQuantArgs, threads), 1, THREADS_MAX,
     .help = "threads the fast kernels split rows and heads over (default: every\n"
             "online processor); the same numbers for any N"},
    CLI_OPTIONS_END};

static const CliCommandOptions COMPARE_QUANT_COMMAND = {
    .command = "compare-quant", .options = COMPARE_QUANT_OPTIONS, .usage = COMPARE_QUANT_USAGE};

typedef struct {
    const char *name;
    bool weights;
    QuantRuntime run;
} QuantConfig;

/* Wrap scored logits as a LogitsSet (borrowing, not copying). */
static DiffRun as_set(const ScoreResult *r, int vocab, int *pos) {
    DiffRun s = {0};
    s.vocab_size = vocab, s.n = r->n, s.pos = pos, s.logits = r->logits;
    return s;
}

static int compare_quant(void *args, int n_operands, char **operands, StepError *err) {
    const CompareQuantArgs *cq = args;
    (void)n_operands, (void)operands;
    bool ok;
    /* The float32 model, and the same file loaded again for its int8
     * weights (a mapped file's pages are shared between the two). Every
     * step below either succeeds or says why in err, then goes to done. */
    Model m = {0}, mq = {0};
    Tokenizer tok = {0};
    char *text = NULL;
    int *ids = NULL, n = 0, *pos = NULL;
    ScoreResult base = {.keep_logits = true};
    cJSON *rows = NULL;
    DiffTolerance tol;
    if (!(ok = cli_load_model(cq->model, cq->tokenizer, &m, &tok, NULL, err))) goto done;
    if (m.weight_group > 0) {
        ok = step_fail(err, "compare-quant: the model must be float32");
        goto done;
    }
    ok = file_read_text(cq->text, "text", &text, err) &&
         tokenizer_encode(&tok, text, true, &ids, &n, err);
    if (!ok) goto done;
    if (n > m.config.seq_len) n = m.config.seq_len; /* the window: the rest is not scored */
    if (n < 2) {
        ok = step_fail(err, "compare-quant: %s has no text to score", cq->text);
        goto done;
    }
    pos = malloc((size_t)n * sizeof(int));
    rows = cJSON_CreateArray();
    if (pos == NULL || rows == NULL) {
        ok = step_fail(err, "compare-quant: out of memory");
        goto done;
    }
    for (int i = 0; i < n; i++) pos[i] = i;
    ok = score_tokens(&m, ids, n, 0, NULL, NULL, &base, err) &&
         cli_load_model(cq->model, NULL, &mq, NULL, NULL, err) &&
         model_quantize(&mq, cq->group, err) && (cq->plain || model_pack_q8(&mq, false, err)) &&
         (cq->plain || model_use_threads(&mq, cq->threads, err)) &&
         diff_tolerance_preset(&tol, "int8", err);
    if (!ok) goto done;
    const QuantConfig configs[] = {
        {"W", true, {false, false, cq->group}},    {"A", false, {true, false, cq->group}},
        {"KV", false, {false, true, cq->group}},   {"W+A", true, {true, false, cq->group}},
        {"W+A+KV", true, {true, true, cq->group}},
    };
    if (!cq->json) {
        printf("%s: %d tokens scored, float32 perplexity %.4f, group %d\n\n", cq->text, n,
               base.perplexity, cq->group);
        printf("| config | max abs dlogit | mean abs dlogit | Mean KLD | 99.0%% KLD | Same top p "
               "| PPL(Q) | PPL(base) |\n|---|---|---|---|---|---|---|---|\n");
    }
    for (size_t i = 0; ok && i < sizeof configs / sizeof configs[0]; i++) {
        ScoreResult q = {.keep_logits = true};
        DiffReport r;
        ok = score_tokens(configs[i].weights ? &mq : &m, ids, n, 0, &configs[i].run, NULL, &q, err);
        DiffRun a = as_set(&base, m.config.vocab_size, pos),
                b = as_set(&q, m.config.vocab_size, pos);
        if (ok) ok = trace_diff(&a, &b, &tol, false, &r, err);
        if (ok && !cq->json) {
            printf("| %s | %.4f | %.5f | %.6f | %.6f | %.2f%% | %.4f | %.4f |\n", configs[i].name,
                   r.max_abs, r.mean_abs, r.kl_mean, r.kl_p99, 100.0 * r.top1_agree / r.n,
                   q.perplexity, base.perplexity);
        } else if (ok) {
            cJSON *row = cJSON_CreateObject();
            if (row != NULL && !cJSON_AddItemToArray(rows, row)) cJSON_Delete(row), row = NULL;
            ok = row != NULL && /* rows owns it */
                 cJSON_AddStringToObject(row, "config", configs[i].name) &&
                 cJSON_AddNumberToObject(row, "max_abs_dlogit", r.max_abs) &&
                 cJSON_AddNumberToObject(row, "mean_abs_dlogit", r.mean_abs) &&
                 cJSON_AddNumberToObject(row, "kl_mean", r.kl_mean) &&
                 cJSON_AddNumberToObject(row, "kl_p99", r.kl_p99) &&
                 cJSON_AddNumberToObject(row, "top1_agreement", (double)r.top1_agree / r.n) &&
                 cJSON_AddNumberToObject(row, "ppl_quant", q.perplexity) &&
                 cJSON_AddNumberToObject(row, "ppl_base", base.perplexity);
            if (!ok) step_fail(err, "compare-quant: out of memory");
        }
        score_result_free(&q);
    }
    if (ok && cq->json) {
        cJSON *o = cJSON_CreateObject();
        char *printed = NULL;
        ok = o != NULL && cJSON_AddStringToObject(o, "text", cq->text) &&
             cJSON_AddNumberToObject(o, "tokens", n) &&
             cJSON_AddNumberToObject(o, "group", cq->group) &&
             cJSON_AddItemToObject(o, "configs", rows);
        if (ok) rows = NULL; /* o owns it */
        ok = ok && (printed = cJSON_Print(o)) != NULL;
        if (ok)
            puts(printed);
        else
            step_fail(err, "compare-quant: out of memory");
        cJSON_free(printed);
        cJSON_Delete(o);
    }
done:
    cJSON_Delete(rows);
    score_result_free(&base);
    free(pos), free(ids), free(text);
    model_free(&m), model_free(&mq);
    tokenizer_free(&tok);
    return ok ? 0 : EXIT_BAD_INPUT;
}

int cli_compare_quant(int argc, char **argv) {
    CompareQuantArgs a = {.group = 32};
    return cli_command_run(&COMPARE_QUANT_COMMAND, argc, argv, &a, compare_quant);
}
