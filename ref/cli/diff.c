/* cli/diff.c: `stepwise diff REF CANDIDATE`, where and how much another
 * engine's numbers differ from the reference: the inputs first, then the
 * first hook outside tolerance, then the logits and the KV rows. */
#include <cjson/cJSON.h>
#include <stddef.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "trace/diff_pair.h"
#include "trace/diff_text.h"
#include "trace/trace_diff.h"
#include "ref/cli/command.h"
#include "ref/cli/commands.h"
#include "ref/cli/common.h"
#include "ref/cli/options.h"

/* The help's usage lines and what the command does. */
static const char DIFF_USAGE[] =
    "usage: stepwise diff REF CANDIDATE [--preset P] [--atol A] [--rtol R] [--json]\n"
    "                     [--teacher-forced] [--names ENGINE [--rope-halves]]\n"
    "\n"
    "Compare another engine's run with the reference's (docs/oracle.md):\n"
    "  1. inputs: both sides must have seen the same token at every position; from\n"
    "     the first that differs on, nothing is compared and the verdict is a fail\n"
    "     (an error with --teacher-forced, or when both files are score files);\n"
    "  2. the hooks in execution order (position by position; in each layer\n"
    "     resid_pre, ln1, attn.q/k/v, scores, pattern, z, attn_out, resid_mid, ln2,\n"
    "     mlp.gate/up/hidden, mlp_out, resid_post; then final_norm and logits): the\n"
    "     first tensor outside tolerance, and each layer's error per hook;\n"
    "  3. the logits: max |dlogit|, NMSE, KL(ref||cand) at T = 1, top-1 agreement,\n"
    "     the first argmax difference; and the KV rows per layer.\n"
    "What the candidate lacks (positions, KV rows, activations) is reported; a\n"
    "kind it has none of is not compared; a value it gives twice (a hook at a\n"
    "position and head, a KV row, a logits row) is an error.\n"
    "\n"
    "REF and CANDIDATE: traces or score files (logits, kv and activation events),\n"
    "raw float32 FILE.f32 with a FILE.f32.json sidecar, or numpy FILE.npy (a 2-D\n"
    "float32 array [positions, vocab], optional FILE.npy.json); rows may be\n"
    "log-probabilities (\"logprobs\" events, or \"values\": \"logprobs\").\n";

/* A figure as JSON, which has no NaN nor inf: an infinite one as 1e308, a
 * NaN as null (cJSON writes a NaN so), never as a number. */
static double json_figure(double x) {
    return isinf(x) ? 1e308 : x;
}

static cJSON *point_json(const DiffPoint *p) {
    cJSON *o = cJSON_CreateObject();
    char name[64];
    cJSON_AddStringToObject(o, "hook", diff_point_name(p, name, sizeof name));
    if (p->layer >= 0) cJSON_AddNumberToObject(o, "layer", p->layer);
    cJSON_AddNumberToObject(o, "pos", p->pos);
    if (p->head >= 0 && p->point != HOOK_KV_ROW) cJSON_AddNumberToObject(o, "head", p->head);
    cJSON_AddNumberToObject(o, "index", p->index);
    cJSON_AddNumberToObject(o, "max_abs", json_figure(p->max_abs));
    cJSON_AddNumberToObject(o, "relative", json_figure(p->rel));
    cJSON_AddNumberToObject(o, "scale", p->scale);
    cJSON_AddNumberToObject(o, "reference", p->ref);
    cJSON_AddNumberToObject(o, "candidate", p->cand);
    cJSON_AddNumberToObject(o, "allowed", p->allowed);
    return o;
}

/* The first position where the two runs differ (-1: none) under pos_key
 * and, when there is one, what each side has there. */
static void add_first_difference(cJSON *o, const char *pos_key, int pos, const char *ref_key,
                                 int ref, const char *cand_key, int cand) {
    cJSON_AddNumberToObject(o, pos_key, pos);
    if (pos < 0) return;
    cJSON_AddNumberToObject(o, ref_key, ref);
    cJSON_AddNumberToObject(o, cand_key, cand);
}

static void print_json(const char *ref_path, const char *cand_path, const DiffRun *ref,
                       const DiffTolerance *t, const DiffReport *r, const DiffNameHint *hint) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "reference", ref_path);
    cJSON_AddStringToObject(o, "candidate", cand_path);
    cJSON *in = cJSON_AddObjectToObject(o, "inputs");
    cJSON_AddBoolToObject(in, "checked", r->inputs_checked);
    cJSON_AddNumberToObject(in, "positions", r->inputs_compared);
    add_first_difference(in, "differ_from", r->inputs_differ_pos, "reference_token", r->ref_token,
                         "candidate_token", r->cand_token);
    cJSON_AddNumberToObject(o, "positions", r->n);
    cJSON_AddNumberToObject(o, "vocab_size", r->vocab_size);
    cJSON_AddBoolToObject(o, "logprobs", r->logprobs);
    cJSON_AddNumberToObject(o, "activations", (double)r->acts_compared);
    cJSON *first = r->diverged ? point_json(&r->first) : cJSON_CreateNull();
    if (hint->found) {
        cJSON *other = cJSON_AddObjectToObject(first, "matches_other_hook");
        cJSON_AddStringToObject(other, "candidate_name", hint->theirs);
        cJSON_AddStringToObject(other, "hook", hint->other);
        cJSON_AddNumberToObject(other, "max_abs", r->first_other.max_abs);
        cJSON *fit = cJSON_AddArrayToObject(other, "maps_that_fit");
        char list[sizeof hint->fitting];
        snprintf(list, sizeof list, "%s", hint->fitting);
        for (char *save = NULL, *tok = strtok_r(list, ", ", &save); tok != NULL;
             tok = strtok_r(NULL, ", ", &save))
            cJSON_AddItemToArray(fit, cJSON_CreateString(tok));
    }
    cJSON_AddItemToObject(o, "first_divergence", first);
    if (r->routing.compared > 0) { /* a mixture of experts */
        const DiffRouting *g = &r->routing;
        cJSON *routing = cJSON_AddObjectToObject(o, "routing");
        cJSON_AddNumberToObject(routing, "compared", g->compared);
        if (!g->diverged) {
            cJSON_AddNullToObject(routing, "first_divergence");
        } else {
            cJSON *d = cJSON_AddObjectToObject(routing, "first_divergence");
            int k = g->k < DIFF_ROUTE_SHOWN ? g->k : DIFF_ROUTE_SHOWN;
            cJSON_AddNumberToObject(d, "pos", g->pos);
            cJSON_AddNumberToObject(d, "layer", g->layer);
            cJSON_AddItemToObject(d, "reference", cJSON_CreateIntArray(g->ref, k));
            cJSON_AddItemToObject(d, "candidate", cJSON_CreateIntArray(g->cand, k));
        }
    }
    cJSON *layers = cJSON_AddArrayToObject(o, "layers");
    for (int l = 0; l < r->table_layers; l++) {
        cJSON *row = cJSON_CreateObject();
        cJSON_AddNumberToObject(row, "layer", l);
        for (int h = 0; h < N_HOOKS; h++) {
            if (!r->table_has[l][h]) continue;
            char name[64];
            cJSON *cell = cJSON_AddObjectToObject(
                row, strchr(hook_name((HookPoint)h, 0, name, sizeof name) + 7, '.') + 1);
            cJSON_AddNumberToObject(cell, "max_abs", json_figure(r->table_abs[l][h]));
            cJSON_AddNumberToObject(cell, "relative", json_figure(r->table_rel[l][h]));
        }
        cJSON_AddItemToArray(layers, row);
    }
    if (r->n > 0) {
        cJSON *m = cJSON_AddObjectToObject(o, "max_abs");
        cJSON_AddNumberToObject(m, "value", r->max_abs);
        cJSON_AddNumberToObject(m, "pos", r->max_abs_pos);
        cJSON_AddNumberToObject(m, "token", r->max_abs_id);
        cJSON_AddNumberToObject(m, "reference", r->max_abs_ref);
        cJSON_AddNumberToObject(m, "candidate", r->max_abs_cand);
        cJSON *nmse = cJSON_AddObjectToObject(o, "nmse");
        cJSON_AddNumberToObject(nmse, "mean", r->nmse_mean);
        cJSON_AddNumberToObject(nmse, "max", r->nmse_max);
        cJSON_AddNumberToObject(nmse, "max_pos", r->nmse_max_pos);
        cJSON *kl = cJSON_AddObjectToObject(o, "kl");
        cJSON_AddNumberToObject(kl, "mean", r->kl_mean);
        cJSON_AddNumberToObject(kl, "p99", r->kl_p99);
        cJSON_AddNumberToObject(kl, "max", r->kl_max);
        cJSON_AddNumberToObject(kl, "max_pos", r->kl_max_pos);
        cJSON_AddNumberToObject(o, "top1_agreement", (double)r->top1_agree / r->n);
        cJSON_AddNumberToObject(o, "dp_top_rms", r->dp_top_rms);
        cJSON *fa = cJSON_AddObjectToObject(o, "first_argmax_diff");
        add_first_difference(fa, "pos", r->first_argmax_pos, "reference", r->ref_argmax,
                             "candidate", r->cand_argmax);
        if (r->first_argmax_pos >= 0) {
            cJSON_AddBoolToObject(fa, "reference_in_candidate_top5", r->ref_in_cand_top5);
            cJSON_AddBoolToObject(fa, "candidate_in_reference_top5", r->cand_in_ref_top5);
        }
    }
    cJSON *kv = cJSON_AddArrayToObject(o, "kv_layers");
    for (int l = 0; l < r->n_layers_kv; l++) {
        cJSON *row = cJSON_CreateObject();
        cJSON_AddNumberToObject(row, "layer", l);
        cJSON_AddNumberToObject(row, "max_abs_k", r->kv_max_k[l]);
        cJSON_AddNumberToObject(row, "max_abs_v", r->kv_max_v[l]);
        cJSON_AddItemToArray(kv, row);
    }
    cJSON *miss = cJSON_AddObjectToObject(o, "missing");
    cJSON_AddNumberToObject(miss, "logits", r->cand_has_logits ? r->missing_logits : 0);
    cJSON_AddNumberToObject(miss, "kv_rows", (double)r->missing_kv);
    cJSON_AddNumberToObject(miss, "activations", (double)r->missing_acts);
    if (r->missing_acts > 0)
        cJSON_AddStringToObject(miss, "first_activation", r->first_missing_hook);
    cJSON *nc = cJSON_AddArrayToObject(o, "not_compared");
    if (!r->cand_has_logits && ref->n > 0) cJSON_AddItemToArray(nc, cJSON_CreateString("logits"));
    if (!r->cand_has_kv && ref->n_kv > 0) cJSON_AddItemToArray(nc, cJSON_CreateString("kv"));
    if (!r->cand_has_acts && ref->n_acts > 0)
        cJSON_AddItemToArray(nc, cJSON_CreateString("activations"));
    for (int h = 0; h < N_HOOKS && r->cand_has_acts; h++) {
        char name[64];
        if (r->hook_absent[h])
            cJSON_AddItemToArray(nc, cJSON_CreateString(diff_hook_label(h, name, sizeof name)));
    }
    cJSON *tol = cJSON_AddObjectToObject(o, "tolerance");
    cJSON_AddStringToObject(tol, "preset", t->preset);
    cJSON_AddStringToObject(tol, "rule", diff_rule_name(t->rule));
    if (t->rule == RULE_KL) {
        cJSON_AddNumberToObject(tol, "kl_mean_max", t->kl_mean_max);
        cJSON_AddNumberToObject(tol, "top1_min", t->top1_min);
    } else {
        cJSON_AddNumberToObject(tol, "atol", t->atol);
        cJSON_AddNumberToObject(tol, "rtol", t->rtol);
        cJSON_AddNumberToObject(tol, "outside", (double)r->outside);
        if (r->logits_outside) {
            cJSON *f = cJSON_AddObjectToObject(tol, "first_outside");
            cJSON_AddNumberToObject(f, "pos", r->first_logits.pos);
            cJSON_AddNumberToObject(f, "token", r->first_logits.index);
            cJSON_AddNumberToObject(f, "reference", r->first_logits.ref);
            cJSON_AddNumberToObject(f, "candidate", r->first_logits.cand);
        }
    }
    cJSON_AddStringToObject(o, "verdict", r->pass ? "pass" : "fail");
    if (!r->pass) cJSON_AddStringToObject(o, "reason", r->fail_reason);
    char *s = cJSON_Print(o);
    puts(s);
    cJSON_free(s);
    cJSON_Delete(o);
}

/* A tolerance given on the command line, and whether it was. */
typedef struct {
    float value;
    bool set;
} GivenTolerance;

typedef struct {
    DiffTolerance tol;
    GivenTolerance atol, rtol;
    bool json, forced, halves;
    const char *engine;
} DiffArgs;

static bool parse_preset(const CliOption *o, const char *value, void *dest, StepError *err) {
    (void)o;
    return diff_tolerance_preset(dest, value, err);
}
/* --atol A or --rtol R: the value, and that it was given. */
static bool parse_tolerance(const CliOption *o, const char *value, void *dest, StepError *err) {
    GivenTolerance *t = dest;
    char name[16];
    snprintf(name, sizeof name, "--%s", o->name);
    return t->set = cli_parse_float(value, name, false, &t->value, err);
}

static const CliOption DIFF_OPTIONS[] = {
    {"preset", "P", OPTION_CUSTOM, offsetof(DiffArgs, tol), .parse = parse_preset,
     .help = "fp32 (default: |d| <= 1e-6 + 3e-5 x the tensor's max |ref|),\n"
             "fp32-elementwise (assert_close's float32: 1e-5 + 1.3e-6 x |ref|),\n"
             "f16-kv (an engine with a float16 KV cache: 1e-5 + 3e-2 x max\n"
             "|ref|), fp16 (1e-5 + 1e-3 x |ref|), bf16 (1e-5 + 1.6e-2 x\n"
             "|ref|), or int8 (mean KL <= 0.05 and top-1 agreement >= 90%)"},
    {"atol", "A", OPTION_CUSTOM, offsetof(DiffArgs, atol), .parse = parse_tolerance,
     .help = "a custom absolute tolerance, in the preset's rule (reported as\n"
             "custom)"},
    {"rtol", "R", OPTION_CUSTOM, offsetof(DiffArgs, rtol), .parse = parse_tolerance,
     .help = "a custom relative tolerance, in the preset's rule (reported as\n"
             "custom)"},
    {"teacher-forced", NULL, OPTION_FLAG, offsetof(DiffArgs, forced),
     .help = "inputs that differ are an error (exit 2)"},
    {"names", "ENGINE", OPTION_TEXT, offsetof(DiffArgs, engine),
     .help = "the candidate's activations carry ENGINE's names: hf\n"
             "(transformers module outputs; hf-gpt2 and hf-gemma for those\n"
             "families' modules), llama.cpp (its graph tensors,\n"
             "as llama-eval-callback prints them, since its 2025 graph\n"
             "rework) or llama.cpp-2025-02 (the builds before it, whose\n"
             "kqv_out is after wo); data/hook-names.json maps them and\n"
             "says which versions each map holds for, and q/k rows in\n"
             "RoPE's halves are moved to pairs. A first divergence whose\n"
             "tensor equals another hook's is reported as a name to check"},
    {"rope-halves", NULL, OPTION_FLAG, offsetof(DiffArgs, halves),
     .help = "with --names llama.cpp: its Qcur/Kcur rotate halves (qwen2,\n"
             "qwen3), not pairs (llama)"},
    {"json", NULL, OPTION_FLAG, offsetof(DiffArgs, json),
     .help = "print the report as one JSON object"},
    CLI_OPTIONS_END};

/* The help's closing lines, after the options. */
static const char DIFF_EXIT_STATUS[] =
    "\n"
    "exit status: 0 within tolerance, 1 outside or incomplete, 2 when the files\n"
    "cannot be read or compared.\n";

static const CliCommandOptions DIFF_COMMAND = {.command = "diff",
                                               .options = DIFF_OPTIONS,
                                               .min_operands = 2,
                                               .max_operands = 2,
                                               .operands = "REF and CANDIDATE",
                                               .operand_input = "trace",
                                               .after = DIFF_EXIT_STATUS,
                                               .usage = DIFF_USAGE};

static int diff(void *diff_args, int n, char **paths, StepError *err) {
    DiffArgs *args = diff_args;
    (void)n; /* REF and CANDIDATE, as the table says */
    bool ok = true, json = args->json, forced = args->forced, halves = args->halves;
    if (args->atol.value < 0 || args->rtol.value < 0)
        ok = step_fail(err, "--atol and --rtol must be >= 0");
    /* explicit tolerances: the preset's rule (elementwise for int8), reported as custom */
    if (ok && (args->atol.set || args->rtol.set))
        ok = diff_tolerance_custom(&args->tol, args->atol.set ? args->atol.value : -1,
                                   args->rtol.set ? args->rtol.value : -1, err);
    HookNames names = {0};
    DiffRun ref = {0}, cand = {0};
    DiffReport report;
    if (ok)
        ok = diff_pair_read(&ref, &cand, paths[0], paths[1], NULL, args->engine, halves, &names,
                            err);
    if (ok) ok = trace_diff(&ref, &cand, &args->tol, forced, &report, err);
    DiffNameHint hint = {0};
    if (ok) diff_name_hint(&report, args->engine != NULL ? &names : NULL, &hint);
    hook_names_free(&names);
    if (ok && json)
        print_json(paths[0], paths[1], &ref, &args->tol, &report, &hint);
    else if (ok)
        diff_text_write(stdout, paths[0], paths[1], &ref, &cand, &args->tol, &report, &hint);
    diff_run_free(&ref), diff_run_free(&cand);
    if (!ok) return EXIT_BAD_INPUT;
    return report.pass ? 0 : 1;
}

int cli_diff(int argc, char **argv) {
    DiffArgs args = {0};
    StepError err;
    diff_tolerance_preset(&args.tol, "fp32", &err);
    return cli_command_run(&DIFF_COMMAND, argc, argv, &args, diff);
}
