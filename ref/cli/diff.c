/* cli/diff.c: `stepwise diff REF CANDIDATE`, where and how much another
 * engine's numbers differ from the reference. */
#include <cjson/cJSON.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../../trace/trace_diff.h"
#include "commands.h"
#include "common.h"

static const char DIFF_USAGE[] =
    "usage: stepwise diff REF CANDIDATE [--preset P] [--atol A] [--rtol R] [--json]\n"
    "\n"
    "Compare the logits (and KV rows) of two files position by position: traces or\n"
    "score files (their logits and kv events), or raw float32 FILE.f32 with a\n"
    "FILE.f32.json sidecar (docs/oracle.md). Prints max |dlogit|, NMSE, KL(ref||cand)\n"
    "at T = 1, top-1 agreement, the RMS change of the reference's top probability,\n"
    "the first position whose argmax differs, KV differences per layer, and last\n"
    "the verdict.\n"
    "\n"
    "  --preset P   fp32 (default: atol 1e-5, rtol 1.3e-6, torch.testing.assert_close's\n"
    "               float32), fp16 (rtol 1e-3), bf16 (rtol 1.6e-2), or int8 (by KL:\n"
    "               mean KL <= 0.05 and top-1 agreement >= 90%)\n"
    "  --atol A     absolute tolerance: |cand - ref| <= atol + rtol * |ref|\n"
    "  --rtol R     relative tolerance\n"
    "  --json       print the report as one JSON object\n"
    "\n"
    "exit status: 0 within tolerance, 1 outside, 2 when the files cannot be\n"
    "read or compared (malformed, truncated, other vocabulary or positions).\n";

enum { OPT_PRESET = 256, OPT_ATOL, OPT_RTOL, OPT_JSON };

static void print_text(const char *ref, const char *cand, const DiffTolerance *t,
                       const DiffReport *r) {
    printf("reference  %s\ncandidate  %s\n", ref, cand);
    printf("compared   %d positions x %d logits\n\n", r->n, r->vocab_size);
    printf("max |dlogit|        %.9g at pos %d, token %d (reference %.9g, candidate %.9g)\n",
           r->max_abs, r->max_abs_pos, r->max_abs_id, r->max_abs_ref, r->max_abs_cand);
    printf("NMSE                mean %.3g, max %.3g at pos %d\n", r->nmse_mean, r->nmse_max,
           r->nmse_max_pos);
    printf("KL(ref||cand), T=1  mean %.3g, p99 %.3g, max %.3g at pos %d\n", r->kl_mean, r->kl_p99,
           r->kl_max, r->kl_max_pos);
    printf("top-1 agreement     %d of %d (%.1f%%)\n", r->top1_agree, r->n,
           100.0 * r->top1_agree / r->n);
    printf("dp of ref's top     RMS %.3g\n", r->dp_top_rms);
    if (r->first_argmax_pos < 0) {
        printf("first argmax diff   none\n");
    } else {
        printf("first argmax diff   pos %d: reference %d, candidate %d; reference's in candidate's "
               "top-5: %s; candidate's in reference's top-5: %s\n",
               r->first_argmax_pos, r->ref_argmax, r->cand_argmax,
               r->ref_in_cand_top5 ? "yes" : "no", r->cand_in_ref_top5 ? "yes" : "no");
    }
    if (r->kv_compared > 0) {
        for (int l = 0; l < r->n_layers_kv; l++)
            printf("KV layer %-2d         max |dK| %.3g, max |dV| %.3g\n", l, r->kv_max_k[l],
                   r->kv_max_v[l]);
        if (r->kv_first_layer >= 0)
            printf("KV over tolerance   first at layer %d, pos %d\n", r->kv_first_layer,
                   r->kv_first_pos);
    }
    if (t->by_kl) {
        printf("\ntolerance (%s): mean KL <= %g and top-1 agreement >= %.0f%%\n", t->preset,
               t->kl_mean_max, 100 * t->top1_min);
    } else {
        printf("\ntolerance (%s): |dlogit| <= %g + %g x |ref|: %ld of %ld logits outside\n",
               t->preset, t->atol, t->rtol, r->outside, (long)r->n * r->vocab_size);
        if (r->outside > 0)
            printf("first outside       pos %d, token %d: reference %.9g, candidate %.9g, "
                   "|d| %.9g > %.3g\n",
                   r->first_outside_pos, r->first_outside_id, r->first_outside_ref,
                   r->first_outside_cand, fabs(r->first_outside_cand - r->first_outside_ref),
                   r->first_outside_allowed);
    }
    printf("verdict: %s\n", r->pass ? "PASS (within tolerance)" : "FAIL (outside tolerance)");
}

static void print_json(const char *ref, const char *cand, const DiffTolerance *t,
                       const DiffReport *r) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "reference", ref);
    cJSON_AddStringToObject(o, "candidate", cand);
    cJSON_AddNumberToObject(o, "positions", r->n);
    cJSON_AddNumberToObject(o, "vocab_size", r->vocab_size);
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
    cJSON_AddNumberToObject(fa, "pos", r->first_argmax_pos);
    if (r->first_argmax_pos >= 0) {
        cJSON_AddNumberToObject(fa, "reference", r->ref_argmax);
        cJSON_AddNumberToObject(fa, "candidate", r->cand_argmax);
        cJSON_AddBoolToObject(fa, "reference_in_candidate_top5", r->ref_in_cand_top5);
        cJSON_AddBoolToObject(fa, "candidate_in_reference_top5", r->cand_in_ref_top5);
    }
    cJSON *kv = cJSON_AddArrayToObject(o, "kv_layers");
    for (int l = 0; l < r->n_layers_kv; l++) {
        cJSON *row = cJSON_CreateObject();
        cJSON_AddNumberToObject(row, "layer", l);
        cJSON_AddNumberToObject(row, "max_abs_k", r->kv_max_k[l]);
        cJSON_AddNumberToObject(row, "max_abs_v", r->kv_max_v[l]);
        cJSON_AddItemToArray(kv, row);
    }
    cJSON *tol = cJSON_AddObjectToObject(o, "tolerance");
    cJSON_AddStringToObject(tol, "preset", t->preset);
    if (t->by_kl) {
        cJSON_AddNumberToObject(tol, "kl_mean_max", t->kl_mean_max);
        cJSON_AddNumberToObject(tol, "top1_min", t->top1_min);
    } else {
        cJSON_AddNumberToObject(tol, "atol", t->atol);
        cJSON_AddNumberToObject(tol, "rtol", t->rtol);
        cJSON_AddNumberToObject(tol, "outside", (double)r->outside);
        if (r->outside > 0) {
            cJSON *f = cJSON_AddObjectToObject(tol, "first_outside");
            cJSON_AddNumberToObject(f, "pos", r->first_outside_pos);
            cJSON_AddNumberToObject(f, "token", r->first_outside_id);
            cJSON_AddNumberToObject(f, "reference", r->first_outside_ref);
            cJSON_AddNumberToObject(f, "candidate", r->first_outside_cand);
        }
    }
    cJSON_AddStringToObject(o, "verdict", r->pass ? "pass" : "fail");
    char *s = cJSON_Print(o);
    puts(s);
    cJSON_free(s);
    cJSON_Delete(o);
}

int cli_diff(int argc, char **argv) {
    static const struct option options[] = {{"preset", required_argument, NULL, OPT_PRESET},
                                            {"atol", required_argument, NULL, OPT_ATOL},
                                            {"rtol", required_argument, NULL, OPT_RTOL},
                                            {"json", no_argument, NULL, OPT_JSON},
                                            {"help", no_argument, NULL, 'h'},
                                            {NULL, 0, NULL, 0}};
    DiffTolerance tol;
    StepError err;
    diff_tolerance_preset(&tol, "fp32", &err);
    float atol = 0, rtol = 0;
    bool atol_set = false, rtol_set = false, json = false, ok = true;
    opterr = 0;
    optind = 1;
    int c;
    while (ok && (c = getopt_long(argc, argv, ":h", options, NULL)) != -1) {
        switch (c) {
            case OPT_PRESET:
                ok = diff_tolerance_preset(&tol, optarg, &err);
                break;
            case OPT_ATOL:
                ok = atol_set = cli_parse_float(optarg, "--atol", false, &atol, &err);
                break;
            case OPT_RTOL:
                ok = rtol_set = cli_parse_float(optarg, "--rtol", false, &rtol, &err);
                break;
            case OPT_JSON:
                json = true;
                break;
            case 'h':
                fputs(DIFF_USAGE, stdout);
                return 0;
            default:
                ok = cli_option_error("diff", c, optopt, argv, optind, &err);
        }
    }
    if (ok && (atol < 0 || rtol < 0)) ok = step_fail(&err, "--atol and --rtol must be >= 0");
    /* explicit tolerances judge elementwise, whatever the preset */
    if (atol_set) tol.atol = atol, tol.by_kl = false;
    if (rtol_set) tol.rtol = rtol, tol.by_kl = false;
    if (ok && argc - optind != 2)
        ok = step_fail(&err, "diff: expects REF and CANDIDATE (see --help)");
    LogitsSet ref = {0}, cand = {0};
    DiffReport report;
    if (ok) ok = logits_set_read(&ref, argv[optind], &err);
    if (ok) ok = logits_set_read(&cand, argv[optind + 1], &err);
    if (ok) ok = trace_diff(&ref, &cand, &tol, &report, &err);
    if (ok && json)
        print_json(argv[optind], argv[optind + 1], &tol, &report);
    else if (ok)
        print_text(argv[optind], argv[optind + 1], &tol, &report);
    logits_set_free(&ref), logits_set_free(&cand);
    if (!ok) {
        cli_print_error(&err);
        return EXIT_BAD_INPUT;
    }
    return report.pass ? 0 : 1;
}
