/* cli/sample.c: `stepwise sample`, the sampler on a logit vector typed on
 * the command line: the classroom's (2, 1, 0) table, and every stage of a
 * draw, with no model at all. */
#include <cjson/cJSON.h>
#include <stddef.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace/trace_show.h"
#include "ref/cli/commands.h"
#include "ref/cli/common.h"
#include "ref/cli/options.h"
#include "ref/formats/model_open.h"
#include "ref/layers.h"

/* The help's usage lines and what the command does. */
static const char SAMPLE_USAGE[] =
    "usage: stepwise sample --logits L1,L2,... [options]\n"
    "       stepwise sample --from-trace FILE (--step N | --pos N) [options]\n"
    "\n"
    "Apply the sampler to a logit vector given on the command line. Prints the\n"
    "softmax at each temperature as a table, then, for each temperature, what\n"
    "each stage kept, the renormalised probabilities, the uniform number u and\n"
    "the chosen token. Tokens are named A, B, C, ... (ids beyond 26).\n"
    "Each temperature's draw starts from the same seed, so u is the same.\n";

typedef struct {
    float *logits, *temperatures; /* owned */
    int n_logits, n_temperatures;
    SamplerParams params;
    bool json;
    const char *trace; /* --from-trace */
    const char *tokenizer;
    TraceStepAt at;
    char **pieces; /* [n_logits] from the trace (owned), or NULL */
} SampleArgs;

static void sample_args_free(SampleArgs *a) {
    free(a->logits);
    free(a->temperatures);
    trace_pieces_free(a->pieces, a->n_logits);
}

/* The logits (infinities allowed: -inf masks a token) and the
 * temperatures: lists of floats, dest the arguments. */
static bool parse_logits(const CliOption *o, const char *value, void *dest, StepError *err) {
    (void)o;
    SampleArgs *a = dest;
    free(a->logits), a->logits = NULL;
    return cli_parse_float_list(value, "--logits", true, &a->logits, &a->n_logits, err);
}
static bool parse_temperatures(const CliOption *o, const char *value, void *dest, StepError *err) {
    (void)o;
    SampleArgs *a = dest;
    free(a->temperatures), a->temperatures = NULL;
    return cli_parse_float_list(value, "--temperature", false, &a->temperatures, &a->n_temperatures,
                                err);
}

static const CliOption SAMPLE_OPTIONS[] = {
    {"logits", "LIST", OPTION_CUSTOM, .parse = parse_logits,
     .help = "comma-separated logits; -inf masks a token"},
    {"from-trace", "FILE", OPTION_TEXT, offsetof(SampleArgs, trace), .path = PATH_IN,
     .help = "the logits of one step of a trace instead (--trace-level\n"
             "logits or above): --step N, the N-th draw, or --pos N;\n"
             "tokens are named by the pieces the trace gives, and the\n"
             "table shows the 8 most likely"},
    {"step", "N", OPTION_INT, offsetof(SampleArgs, at.step), 1, 1 << 30,
     .help = "with --from-trace: the N-th draw (from 1)"},
    {"pos", "N", OPTION_INT, offsetof(SampleArgs, at.pos), 0, 1 << 30,
     .help = "with --from-trace: the draw at position N"},
    {"tokenizer", "T", OPTION_TEXT, offsetof(SampleArgs, tokenizer), .path = PATH_IN,
     .help = "with --from-trace: name the tokens the trace does not"},
    {"temperature", "LIST", OPTION_CUSTOM, .parse = parse_temperatures,
     .help = "comma-separated temperatures (default 1)"},
    CLI_OPTIONS_END};

static const CliOption SAMPLE_OUTPUT_OPTIONS[] = {
    {"json", NULL, OPTION_FLAG, offsetof(SampleArgs, json),
     .help = "print one JSON object instead (docs/sampling.md)"},
    CLI_OPTIONS_END};

static const CliCommandOptions SAMPLE_COMMAND = {
    .command = "sample",
    .after = "\nexample: stepwise sample --logits 2,1,0 --temperature 0.5,1,2\n",
    .options = SAMPLE_OPTIONS,
    .groups = (const CliOptionGroup[]){{.options = CLI_SAMPLER_OPTIONS,
                                        .base = offsetof(SampleArgs, params)},
                                       {.options = SAMPLE_OUTPUT_OPTIONS},
                                       {0}},
    .usage = SAMPLE_USAGE};

static int parse_sample_args(int argc, char **argv, SampleArgs *a, StepError *err) {
    *a = (SampleArgs){.at = {.pos = -1}};
    sampler_params_default(&a->params);
    int parsed = cli_options_parse(&SAMPLE_COMMAND, argc, argv, a, NULL, err);
    if (parsed <= 0) return parsed;
    if ((a->logits == NULL) == (a->trace == NULL)) {
        step_fail(err, "sample: give --logits or --from-trace (see --help)");
        return -1;
    }
    if (a->trace == NULL && (a->at.step > 0 || a->at.pos >= 0)) {
        step_fail(err, "sample: --step and --pos go with --from-trace");
        return -1;
    }
    if (a->trace != NULL && (a->at.step > 0) == (a->at.pos >= 0)) {
        step_fail(err, "sample: --from-trace needs --step N or --pos N");
        return -1;
    }
    if (a->trace == NULL && a->tokenizer != NULL) {
        step_fail(err, "sample: --tokenizer goes with --from-trace");
        return -1;
    }
    if (a->trace != NULL &&
        !trace_step_logits(a->trace, a->at, &a->logits, &a->n_logits, &a->pieces, err))
        return -1;
    Tokenizer tok;
    if (a->tokenizer != NULL && !tokenizer_open(a->tokenizer, a->n_logits, &tok, err)) return -1;
    for (int i = 0; a->tokenizer != NULL && i < a->n_logits; i++) /* the trace's own win */
        if (a->pieces[i] == NULL && (a->pieces[i] = strdup(tok.pieces[i])) == NULL) {
            tokenizer_free(&tok);
            step_fail(err, "sample: out of memory");
            return -1;
        }
    if (a->tokenizer != NULL) tokenizer_free(&tok);
    if (a->temperatures == NULL) {
        a->temperatures = malloc(sizeof(float));
        if (a->temperatures == NULL) {
            step_fail(err, "sample: out of memory");
            return -1;
        }
        a->temperatures[0] = 1.0f, a->n_temperatures = 1;
    }
    for (int i = 0; i < a->n_temperatures; i++) {
        a->params.temperature = a->temperatures[i];
        if (!sampler_params_validate(&a->params, err)) return -1;
    }
    return 1;
}

/* softmax(logits / t) into probs; t = 0 is the limit: all mass on the argmax. */
static void softmax_at(const float *logits, int n, float t, float *probs) {
    if (t == 0.0f) {
        int best = sample_argmax(logits, n);
        for (int i = 0; i < n; i++) probs[i] = i == best ? 1.0f : 0.0f;
        return;
    }
    for (int i = 0; i < n; i++) probs[i] = logits[i] / t;
    softmax_forward(probs, n);
}

/* A token's name in the tables: A, B, C, ... for a short vector, its
 * piece (from a trace) or its id otherwise. */
static void token_label(int id, int n, char **pieces, char buf[16]) {
    if (n <= 26)
        snprintf(buf, 16, "%c", 'A' + id);
    else if (pieces != NULL && pieces[id] != NULL && strlen(pieces[id]) < 10 &&
             strchr(pieces[id], '\n') == NULL)
        snprintf(buf, 16, "'%s'", pieces[id]);
    else
        snprintf(buf, 16, "%d", id);
}

/* The columns of the table: every token of a short vector, else the 8
 * most likely (highest logits, lower id first on ties) into cols. */
static int table_columns(const float *logits, int n, int *cols) {
    int k = n <= 26 ? n : 8;
    for (int i = 0; i < k; i++) {
        int best = -1;
        for (int j = 0; j < n; j++) {
            bool taken = false;
            for (int m = 0; m < i; m++) taken |= cols[m] == j;
            if (!taken && (best < 0 || logits[j] > logits[best])) best = j;
        }
        cols[i] = best;
    }
    return k;
}

/* The classroom table: one row per temperature, one column per token. */
static void print_table(const SampleArgs *a, float *probs) {
    int n = a->n_logits, cols[26], width[26];
    int k = table_columns(a->logits, n, cols);
    char label[16], cell[32];
    if (k < n) printf("the %d most likely of %d tokens:\n", k, n);
    printf("| T   |");
    for (int i = 0; i < k; i++) {
        token_label(cols[i], n, a->pieces, label);
        width[i] = strlen(label) > 6 ? (int)strlen(label) : 6;
        printf(" %-*s|", width[i], label);
    }
    printf("\n|-----|");
    for (int i = 0; i < k; i++) printf("%.*s|", width[i] + 1, "-----------------");
    putchar('\n');
    for (int r = 0; r < a->n_temperatures; r++) {
        softmax_at(a->logits, n, a->temperatures[r], probs);
        snprintf(cell, sizeof cell, "%g", (double)a->temperatures[r]);
        printf("| %-3s |", cell);
        for (int i = 0; i < k; i++) {
            snprintf(cell, sizeof cell, "%.1f%%", 100.0 * probs[cols[i]]);
            printf(" %-*s|", width[i], cell);
        }
        putchar('\n');
    }
}

/* At most 8 tokens, then how many in all. */
static void print_ids(const int *ids, int k, int n, char **pieces) {
    char label[16];
    for (int i = 0; i < k && i < 8; i++)
        token_label(ids[i], n, pieces, label), printf(" %s", label);
    if (k > 8) printf(" ... (%d in all)", k);
}

static void print_draw(const Sampler *s, float t, int n, char **pieces) {
    char label[16];
    printf("\nT = %g, order %s, seed %llu\n", (double)t, s->params.order_name,
           (unsigned long long)s->params.seed);
    if (s->greedy) {
        token_label(s->token, n, pieces, label);
        printf("  greedy (T = 0): the argmax, nothing drawn -> %s\n", label);
        return;
    }
    for (int i = 0; i < N_STAGES; i++) {
        const StageResult *r = &s->stages[i];
        const SamplerParams *p = &s->params;
        switch (r->stage) {
            case STAGE_TEMPERATURE:
                printf("  temperature  logits / %g\n", (double)t);
                continue;
            case STAGE_TOP_K:
            case STAGE_TOP_P:
            case STAGE_MIN_P: {
                char value[24] = "off";
                if (r->active && r->stage == STAGE_TOP_K)
                    snprintf(value, sizeof value, "%d", p->top_k);
                else if (r->active)
                    snprintf(value, sizeof value, "%g",
                             (double)(r->stage == STAGE_TOP_P ? p->top_p : p->min_p));
                printf("  %s %-6s kept", sampler_stage_name(r->stage), value);
                break;
            }
            case N_STAGES:
                break;
        }
        print_ids(r->kept, r->n_kept, n, pieces);
        if (r->stage == STAGE_TOP_P && r->active) printf("  (mass %.1f%%)", 100.0 * r->mass);
        putchar('\n');
    }
    printf("  renormalised");
    for (int i = 0; i < s->n_survivors && i < 6; i++) {
        token_label(s->survivors[i], n, pieces, label);
        printf(" %s %.1f%%", label, 100.0 * s->survivor_probs[i]);
    }
    if (s->n_survivors > 6) printf(" ... (%d in all)", s->n_survivors);
    token_label(s->token, n, pieces, label);
    printf("\n  u = %.6f -> %s\n", (double)s->u, label);
}

static cJSON *float_array(const float *v, int n) {
    cJSON *arr = cJSON_CreateArray();
    for (int i = 0; i < n; i++)
        cJSON_AddItemToArray(arr, isfinite(v[i]) ? cJSON_CreateNumber(v[i]) : cJSON_CreateNull());
    return arr;
}

static cJSON *draw_json(const Sampler *s, float t) {
    cJSON *d = cJSON_CreateObject();
    cJSON_AddNumberToObject(d, "temperature", t);
    cJSON_AddBoolToObject(d, "greedy", s->greedy);
    cJSON *stages = cJSON_AddArrayToObject(d, "stages");
    for (int i = 0; i < N_STAGES && !s->greedy; i++) {
        const StageResult *r = &s->stages[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "stage", sampler_stage_name(r->stage));
        cJSON_AddBoolToObject(o, "active", r->active);
        switch (r->stage) {
            case STAGE_TEMPERATURE:
                cJSON_AddNumberToObject(o, "t", t);
                break;
            case STAGE_TOP_K:
                cJSON_AddNumberToObject(o, "k", s->params.top_k);
                break;
            case STAGE_TOP_P:
                cJSON_AddNumberToObject(o, "p", s->params.top_p);
                if (r->active) cJSON_AddNumberToObject(o, "mass", r->mass);
                break;
            case STAGE_MIN_P:
                cJSON_AddNumberToObject(o, "min_p", s->params.min_p);
                break;
            case N_STAGES:
                break;
        }
        if (r->kept != NULL)
            cJSON_AddItemToObject(o, "kept", cJSON_CreateIntArray(r->kept, r->n_kept));
        cJSON_AddItemToArray(stages, o);
    }
    cJSON_AddItemToObject(d, "kept", cJSON_CreateIntArray(s->survivors, s->n_survivors));
    cJSON_AddItemToObject(d, "probs", float_array(s->survivor_probs, s->n_survivors));
    if (!s->greedy) cJSON_AddNumberToObject(d, "u", s->u);
    cJSON_AddNumberToObject(d, "token", s->token);
    return d;
}

static bool run_sample(const SampleArgs *a, StepError *err) {
    int n = a->n_logits;
    /* A logit of +inf, or one the temperature takes past the largest float
     * (5 / 1e-45), is the sampler's error; found before the table, which
     * would print a row of NaN first (a half-written output). */
    for (int i = 0; i < n; i++)
        if (a->logits[i] == INFINITY)
            return step_fail(err, "logit %d is +inf: no probability can be computed", i);
    for (int r = 0; r < a->n_temperatures; r++)
        for (int i = 0; a->temperatures[r] > 0 && i < n; i++)
            if (isfinite(a->logits[i]) && a->logits[i] / a->temperatures[r] == INFINITY)
                return step_fail(err,
                                 "logit %d / temperature %g overflows a float: no probability "
                                 "can be computed",
                                 i, (double)a->temperatures[r]);
    float *probs = malloc((size_t)n * sizeof(float));
    if (probs == NULL) return step_fail(err, "sample: out of memory");
    cJSON *root = cJSON_CreateObject(), *tables = NULL, *draws = NULL;
    if (a->json) {
        cJSON_AddItemToObject(root, "logits", float_array(a->logits, n));
        tables = cJSON_AddArrayToObject(root, "temperatures");
        draws = cJSON_AddArrayToObject(root, "draws");
    } else {
        print_table(a, probs);
    }
    bool ok = true;
    for (int r = 0; ok && r < a->n_temperatures; r++) {
        float t = a->temperatures[r];
        if (a->json) {
            cJSON *row = cJSON_CreateObject();
            cJSON_AddNumberToObject(row, "temperature", t);
            softmax_at(a->logits, n, t, probs);
            cJSON_AddItemToObject(row, "probs", float_array(probs, n));
            cJSON_AddItemToArray(tables, row);
        }
        SamplerParams p = a->params;
        p.temperature = t;
        Sampler s;
        int token;
        ok = sampler_init(&s, n, &p, err);
        if (!ok) break;
        s.record_survivors = s.record_every_stage = true;
        ok = sampler_sample(&s, a->logits, &token, err);
        if (ok && a->json)
            cJSON_AddItemToArray(draws, draw_json(&s, t));
        else if (ok)
            print_draw(&s, t, n, a->pieces);
        sampler_free(&s);
    }
    if (ok && a->json) {
        char *text = cJSON_PrintUnformatted(root);
        puts(text);
        cJSON_free(text);
    }
    cJSON_Delete(root);
    free(probs);
    return ok;
}

int cli_sample(int argc, char **argv) {
    SampleArgs a;
    StepError err;
    int parsed = parse_sample_args(argc, argv, &a, &err);
    bool ok = parsed > 0 ? run_sample(&a, &err) : parsed == 0;
    if (!ok) cli_print_error(&err);
    sample_args_free(&a);
    return ok ? 0 : EXIT_BAD_INPUT;
}
