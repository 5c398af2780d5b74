/* cli/diff.c: `stepwise diff REF CANDIDATE`, where and how much another
 * engine's numbers differ from the reference: the inputs first, then the
 * first hook outside tolerance, then the logits and the KV rows. */
#include <cjson/cJSON.h>
#include <stddef.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "trace/diff_pair.h"
#include "trace/trace_diff.h"
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
    "kind it has none of is not compared.\n"
    "\n"
    "REF and CANDIDATE: traces or score files (logits, kv and activation events),\n"
    "raw float32 FILE.f32 with a FILE.f32.json sidecar, or numpy FILE.npy (a 2-D\n"
    "float32 array [positions, vocab], optional FILE.npy.json); rows may be\n"
    "log-probabilities (\"logprobs\" events, or \"values\": \"logprobs\").\n";

static const char *rule_name(DiffRule r) {
    return r == RULE_ROW ? "row" : r == RULE_ELEMENT ? "elementwise" : "by distribution";
}

/* "blocks.2.mlp_out", "logits", "kv" of a compared tensor. */
static const char *point_name(const DiffPoint *p, char *buf, size_t size) {
    if (p->point == HOOK_KV_ROW)
        snprintf(buf, size, "kv %s", p->head ? "V" : "K");
    else
        hook_name((HookPoint)p->point, p->layer, buf, size);
    return buf;
}

/* A token as "403 ' Once'" (the piece when either file names it). */
static const char *token_text(const DiffRun *a, const DiffRun *b, int id, char *buf, size_t size) {
    const char *piece = diff_run_piece(a, id);
    if (piece == NULL) piece = diff_run_piece(b, id);
    if (piece == NULL)
        snprintf(buf, size, "%d", id);
    else
        snprintf(buf, size, "%d '%s'", id, piece);
    return buf;
}

static void print_inputs(const DiffRun *ref, const DiffRun *cand, const DiffReport *r) {
    char a[96], b[96];
    if (!r->inputs_checked)
        printf("inputs     not checked: the %s states no input tokens (a .f32 sidecar may give "
               "\"token_ids\")\n",
               ref->inputs_stated ? "candidate" : "reference");
    else if (r->inputs_differ_pos < 0)
        printf("inputs     the same token at all %d positions both state\n", r->inputs_compared);
    else
        printf("inputs     differ from position %d: ref %s, cand %s; positions from %d on are "
               "not compared (a fail)\n",
               r->inputs_differ_pos, token_text(ref, cand, r->ref_token, a, sizeof a),
               token_text(ref, cand, r->cand_token, b, sizeof b), r->inputs_differ_pos);
}

/* When the first divergence is the candidate's tensor of another hook:
 * the candidate's own name for the failing hook, that other hook, and the
 * name maps under which their name means that hook. */
typedef struct {
    bool found;
    char theirs[96], other[64], fitting[160];
} NameHint;

static void name_hint(const DiffReport *r, const HookNames *names, NameHint *h) {
    *h = (NameHint){.found = r->diverged && r->first_is_other_hook};
    if (!h->found) return;
    char ours[64];
    point_name(&r->first, ours, sizeof ours);
    point_name(&r->first_other, h->other, sizeof h->other);
    if (names == NULL || !hook_names_theirs(names, ours, h->theirs, sizeof h->theirs))
        snprintf(h->theirs, sizeof h->theirs, "%s", ours);
    hook_names_fitting(h->theirs, h->other, h->fitting, sizeof h->fitting);
}

static void print_hint(const NameHint *h) {
    if (!h->found) return;
    printf("                    the candidate's %s matches %s: is the name map right for this "
           "engine version?",
           h->theirs, h->other);
    if (h->fitting[0] != '\0') printf(" (it is %s's name for it: --names)", h->fitting);
    printf("\n");
}

/* "2,5": the first k experts of a routing, for the report. */
static void experts_text(const int *e, int k, char *buf, size_t size) {
    size_t at = 0;
    buf[0] = '\0';
    for (int j = 0; j < k && j < DIFF_ROUTE_SHOWN && at < size; j++)
        at += (size_t)snprintf(buf + at, size - at, "%s%d", j ? "," : "", e[j]);
}

/* A mixture of experts: where the candidate first routes a token otherwise,
 * before the numbers that follow from it. */
static void print_routing(const DiffRouting *g) {
    if (g->compared == 0) return;
    if (!g->diverged) {
        printf("routing             the same experts at all %d tokens x MoE layers\n", g->compared);
        return;
    }
    char ref[96], cand[96];
    experts_text(g->ref, g->k, ref, sizeof ref);
    experts_text(g->cand, g->k, cand, sizeof cand);
    printf("routing             position %d, layer %d: reference chose experts %s; candidate %s\n",
           g->pos, g->layer, ref, cand);
}

static void print_first(const DiffReport *r) {
    char name[64];
    const DiffPoint *p = &r->first;
    if (!r->diverged) {
        printf("first divergence    none: every compared tensor is within tolerance\n");
        return;
    }
    printf("first divergence    %s", point_name(p, name, sizeof name));
    if (p->layer >= 0 && p->point != HOOK_KV_ROW) printf(", layer %d", p->layer);
    printf(", pos %d", p->pos);
    if (p->head >= 0 && p->point != HOOK_KV_ROW) printf(", head %d", p->head);
    if (p->index < 0) {
        printf(": the candidate's tensor has another size\n");
        return;
    }
    printf(": max |d| %.3g (%.3g of the tensor's max |ref| %.3g) at index %d: reference %.9g, "
           "candidate %.9g; allowed %.3g\n",
           p->max_abs, p->rel, p->scale, p->index, p->ref, p->cand, p->allowed);
}

/* The part of a block hook's name after "blocks.L.". */
static const char *short_name(int point, char *buf, size_t size) {
    hook_name((HookPoint)point, 0, buf, size);
    return strchr(buf + 7, '.') + 1;
}

/* A hook kind's name: "mlp_out" for one in a block, "final_norm" outside. */
static const char *point_label(int point, char *buf, size_t size) {
    return hook_in_block((HookPoint)point) ? short_name(point, buf, size)
                                           : hook_name((HookPoint)point, -1, buf, size);
}

/* Each layer's max |d| / max |ref| for every hook either file has there. */
static void print_table(const DiffReport *r) {
    if (r->table_layers == 0) return;
    bool col[N_HOOKS] = {false};
    for (int l = 0; l < r->table_layers; l++)
        for (int h = 0; h < N_HOOKS; h++) col[h] |= r->table_has[l][h];
    printf(
        "\nper layer: max |d| / max |ref| of each hook (its error against the tensor's scale)\n");
    printf("layer");
    char name[64];
    for (int h = 0; h < N_HOOKS; h++)
        if (col[h])
            printf(" %10s", short_name(h, name, sizeof name)); /* wider names: their width */
    printf("\n");
    for (int l = 0; l < r->table_layers; l++) {
        printf("%5d", l);
        for (int h = 0; h < N_HOOKS; h++) {
            if (!col[h]) continue; /* a block's hooks only: short_name needs "blocks.L." */
            int width = (int)strlen(short_name(h, name, sizeof name));
            width = width > 10 ? width : 10;
            if (r->table_has[l][h])
                printf(" %*.3g", width, r->table_rel[l][h]);
            else
                printf(" %*s", width, "-");
        }
        printf("\n");
    }
}

static void print_logits(const DiffReport *r) {
    if (r->n == 0) return;
    const char *what = r->logprobs ? "logprob" : "logit";
    printf("\nmax |d%s|        %.9g at pos %d, token %d (reference %.9g, candidate %.9g)\n",
           r->logprobs ? "lp" : "logit", r->max_abs, r->max_abs_pos, r->max_abs_id, r->max_abs_ref,
           r->max_abs_cand);
    (void)what;
    printf("NMSE                mean %.3g, max %.3g at pos %d\n", r->nmse_mean, r->nmse_max,
           r->nmse_max_pos);
    printf("KL(ref||cand), T=1  mean %.3g, p99 %.3g, max %.3g at pos %d\n", r->kl_mean, r->kl_p99,
           r->kl_max, r->kl_max_pos);
    printf("top-1 agreement     %d of %d (%.1f%%)\n", r->top1_agree, r->n,
           100.0 * r->top1_agree / r->n);
    printf("dp of ref's top     RMS %.3g\n", r->dp_top_rms);
    if (r->first_argmax_pos < 0)
        printf("first argmax diff   none\n");
    else
        printf("first argmax diff   pos %d: reference %d, candidate %d; reference's in candidate's "
               "top-5: %s; candidate's in reference's top-5: %s\n",
               r->first_argmax_pos, r->ref_argmax, r->cand_argmax,
               r->ref_in_cand_top5 ? "yes" : "no", r->cand_in_ref_top5 ? "yes" : "no");
}

static void print_missing(const DiffRun *ref, const DiffReport *r) {
    if (!r->cand_has_logits && ref->n > 0)
        printf("not compared        logits: the candidate has none\n");
    else if (r->missing_logits > 0)
        printf("missing             logits at %d positions the reference has\n", r->missing_logits);
    if (!r->cand_has_kv && ref->n_kv > 0)
        printf("not compared        KV rows: the candidate has none\n");
    else if (r->missing_kv > 0)
        printf("missing             %ld KV rows the reference has\n", r->missing_kv);
    if (!r->cand_has_acts && ref->n_acts > 0) {
        printf("not compared        activations: the candidate has none\n");
    } else {
        bool any = false;
        for (int h = 0; h < N_HOOKS; h++) {
            char name[64];
            if (!r->hook_absent[h]) continue;
            printf("%s%s", any ? ", " : "not compared        hooks the candidate has none of: ",
                   point_label(h, name, sizeof name));
            any = true;
        }
        if (any) printf("\n");
    }
    if (r->missing_acts > 0)
        printf("missing             %ld activations the reference has (first %s at pos %d)\n",
               r->missing_acts, r->first_missing_hook, r->first_missing_pos);
}

static void print_text(const char *ref_path, const char *cand_path, const DiffRun *ref,
                       const DiffRun *cand, const DiffTolerance *t, const DiffReport *r,
                       const NameHint *hint) {
    printf("reference  %s\ncandidate  %s\n", ref_path, cand_path);
    print_inputs(ref, cand, r);
    printf("compared   %d positions x %d %s", r->n, r->vocab_size,
           r->logprobs ? "log-probabilities" : "logits");
    if (r->acts_compared > 0) printf(", %ld activations", r->acts_compared);
    if (r->kv_compared > 0) printf(", %ld KV rows", r->kv_compared);
    printf("\n\n");
    print_routing(&r->routing);
    print_first(r);
    print_hint(hint);
    print_table(r);
    print_logits(r);
    if (r->kv_compared > 0) {
        for (int l = 0; l < r->n_layers_kv; l++)
            printf("KV layer %-2d         max |dK| %.3g, max |dV| %.3g\n", l, r->kv_max_k[l],
                   r->kv_max_v[l]);
        if (r->kv_first_layer >= 0)
            printf("KV outside          first at layer %d, pos %d\n", r->kv_first_layer,
                   r->kv_first_pos);
    }
    print_missing(ref, r);
    if (t->rule == RULE_KL) {
        printf("\ntolerance (%s): mean KL <= %g and top-1 agreement >= %.0f%%\n", t->preset,
               t->kl_mean_max, 100 * t->top1_min);
    } else {
        printf("\ntolerance (%s, %s): |d| <= %g + %g x %s: %ld of %ld %s outside\n", t->preset,
               rule_name(t->rule), t->atol, t->rtol,
               t->rule == RULE_ROW ? "the tensor's max |ref|" : "|ref|", r->outside,
               (long)r->n * r->vocab_size, r->logprobs ? "log-probabilities" : "logits");
        if (r->logits_outside) {
            const DiffPoint *p = &r->first_logits;
            printf("first outside       pos %d, token %d: reference %.9g, candidate %.9g, "
                   "|d| %.9g > %.3g\n",
                   p->pos, p->index, p->ref, p->cand, fabs(p->cand - p->ref), p->allowed);
        }
    }
    if (r->pass)
        printf("verdict: PASS (within tolerance)\n");
    else
        printf("verdict: FAIL (%s)\n", r->fail_reason);
}

static cJSON *point_json(const DiffPoint *p) {
    cJSON *o = cJSON_CreateObject();
    char name[64];
    cJSON_AddStringToObject(o, "hook", point_name(p, name, sizeof name));
    if (p->layer >= 0) cJSON_AddNumberToObject(o, "layer", p->layer);
    cJSON_AddNumberToObject(o, "pos", p->pos);
    if (p->head >= 0 && p->point != HOOK_KV_ROW) cJSON_AddNumberToObject(o, "head", p->head);
    cJSON_AddNumberToObject(o, "index", p->index);
    cJSON_AddNumberToObject(o, "max_abs", isfinite(p->max_abs) ? p->max_abs : 1e308);
    cJSON_AddNumberToObject(o, "relative", isfinite(p->rel) ? p->rel : 1e308);
    cJSON_AddNumberToObject(o, "scale", p->scale);
    cJSON_AddNumberToObject(o, "reference", p->ref);
    cJSON_AddNumberToObject(o, "candidate", p->cand);
    cJSON_AddNumberToObject(o, "allowed", p->allowed);
    return o;
}

static void print_json(const char *ref_path, const char *cand_path, const DiffRun *ref,
                       const DiffTolerance *t, const DiffReport *r, const NameHint *hint) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "reference", ref_path);
    cJSON_AddStringToObject(o, "candidate", cand_path);
    cJSON *in = cJSON_AddObjectToObject(o, "inputs");
    cJSON_AddBoolToObject(in, "checked", r->inputs_checked);
    cJSON_AddNumberToObject(in, "positions", r->inputs_compared);
    cJSON_AddNumberToObject(in, "differ_from", r->inputs_differ_pos);
    if (r->inputs_differ_pos >= 0) {
        cJSON_AddNumberToObject(in, "reference_token", r->ref_token);
        cJSON_AddNumberToObject(in, "candidate_token", r->cand_token);
    }
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
            cJSON_AddNumberToObject(cell, "max_abs",
                                    isfinite(r->table_abs[l][h]) ? r->table_abs[l][h] : 1e308);
            cJSON_AddNumberToObject(cell, "relative",
                                    isfinite(r->table_rel[l][h]) ? r->table_rel[l][h] : 1e308);
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
        cJSON_AddNumberToObject(fa, "pos", r->first_argmax_pos);
        if (r->first_argmax_pos >= 0) {
            cJSON_AddNumberToObject(fa, "reference", r->ref_argmax);
            cJSON_AddNumberToObject(fa, "candidate", r->cand_argmax);
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
            cJSON_AddItemToArray(nc, cJSON_CreateString(point_label(h, name, sizeof name)));
    }
    cJSON *tol = cJSON_AddObjectToObject(o, "tolerance");
    cJSON_AddStringToObject(tol, "preset", t->preset);
    cJSON_AddStringToObject(tol, "rule", rule_name(t->rule));
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

static const char DIFF_EXIT_STATUS[] =
    "\n"
    "exit status: 0 within tolerance, 1 outside or incomplete, 2 when the files\n"
    "cannot be read or compared.\n";

static const CliCommandOptions DIFF_COMMAND = {.command = "diff",
                                               .options = DIFF_OPTIONS,
                                               .min_operands = 2,
                                               .max_operands = 2,
                                               .operands = "REF and CANDIDATE",
                                               .after = DIFF_EXIT_STATUS,
                                               .usage = DIFF_USAGE};

/* The help's closing lines, after the options. */

int cli_diff(int argc, char **argv) {
    DiffArgs args = {0};
    StepError err;
    diff_tolerance_preset(&args.tol, "fp32", &err);
    int first, parsed = cli_options_parse(&DIFF_COMMAND, argc, argv, &args, &first, &err);
    if (parsed == 0) return 0;
    bool ok = parsed > 0, json = args.json, forced = args.forced, halves = args.halves;
    if (ok && (args.atol.value < 0 || args.rtol.value < 0))
        ok = step_fail(&err, "--atol and --rtol must be >= 0");
    /* explicit tolerances: the preset's rule (elementwise for int8), reported as custom */
    if (ok && (args.atol.set || args.rtol.set))
        ok = diff_tolerance_custom(&args.tol, args.atol.set ? args.atol.value : -1,
                                   args.rtol.set ? args.rtol.value : -1, &err);
    HookNames names = {0};
    DiffRun ref = {0}, cand = {0};
    DiffReport report;
    if (ok)
        ok = diff_pair_read(&ref, &cand, argv[first], argv[first + 1], args.engine, halves, &names,
                            &err);
    if (ok) ok = trace_diff(&ref, &cand, &args.tol, forced, &report, &err);
    NameHint hint = {0};
    if (ok) name_hint(&report, args.engine != NULL ? &names : NULL, &hint);
    hook_names_free(&names);
    if (ok && json)
        print_json(argv[first], argv[first + 1], &ref, &args.tol, &report, &hint);
    else if (ok)
        print_text(argv[first], argv[first + 1], &ref, &cand, &args.tol, &report, &hint);
    diff_run_free(&ref), diff_run_free(&cand);
    if (!ok) {
        cli_print_error(&err);
        return EXIT_BAD_INPUT;
    }
    return report.pass ? 0 : 1;
}
