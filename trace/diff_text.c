/* diff_text.c: see diff_text.h. */
#include "trace/diff_text.h"

#include <math.h>
#include <string.h>

#include "ref/hooks.h"

const char *diff_rule_name(DiffRule r) {
    return r == RULE_ROW ? "row" : r == RULE_ELEMENT ? "elementwise" : "by distribution";
}

/* "blocks.2.mlp_out", "logits", "kv" of a compared tensor. */
const char *diff_point_name(const DiffPoint *p, char *buf, size_t size) {
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

static void print_inputs(FILE *out, const DiffRun *ref, const DiffRun *cand, const DiffReport *r) {
    char a[96], b[96];
    if (!r->inputs_checked)
        fprintf(out,
                "inputs     not checked: the %s states no input tokens (a .f32 sidecar may give "
                "\"token_ids\")\n",
                ref->inputs_stated ? "candidate" : "reference");
    else if (r->inputs_differ_pos < 0)
        fprintf(out, "inputs     the same token at all %d positions both state\n",
                r->inputs_compared);
    else
        fprintf(out,
                "inputs     differ from position %d: ref %s, cand %s; positions from %d on are "
                "not compared (a fail)\n",
                r->inputs_differ_pos, token_text(ref, cand, r->ref_token, a, sizeof a),
                token_text(ref, cand, r->cand_token, b, sizeof b), r->inputs_differ_pos);
}

void diff_name_hint(const DiffReport *r, const HookNames *names, DiffNameHint *h) {
    *h = (DiffNameHint){.found = r->diverged && r->first_is_other_hook};
    if (!h->found) return;
    char ours[64];
    diff_point_name(&r->first, ours, sizeof ours);
    diff_point_name(&r->first_other, h->other, sizeof h->other);
    if (names == NULL || !hook_names_theirs(names, ours, h->theirs, sizeof h->theirs))
        snprintf(h->theirs, sizeof h->theirs, "%s", ours);
    hook_names_fitting(h->theirs, h->other, h->fitting, sizeof h->fitting);
}

static void print_hint(FILE *out, const DiffNameHint *h) {
    if (!h->found) return;
    fprintf(out,
            "                    the candidate's %s matches %s: is the name map right for this "
            "engine version?",
            h->theirs, h->other);
    if (h->fitting[0] != '\0') fprintf(out, " (it is %s's name for it: --names)", h->fitting);
    fprintf(out, "\n");
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
static void print_routing(FILE *out, const DiffRouting *g) {
    if (g->compared == 0) return;
    if (!g->diverged) {
        fprintf(out, "routing             the same experts at all %d tokens x MoE layers\n",
                g->compared);
        return;
    }
    char ref[96], cand[96];
    experts_text(g->ref, g->k, ref, sizeof ref);
    experts_text(g->cand, g->k, cand, sizeof cand);
    fprintf(out,
            "routing             position %d, layer %d: reference chose experts %s; candidate %s\n",
            g->pos, g->layer, ref, cand);
}

static void print_first(FILE *out, const DiffReport *r) {
    char name[64];
    const DiffPoint *p = &r->first;
    if (!r->diverged && r->n == 0 && r->acts_compared == 0 && r->kv_compared == 0) {
        fprintf(out,
                "first divergence    none: nothing was compared (the inputs differ from "
                "position %d)\n",
                r->inputs_differ_pos);
        return;
    }
    if (!r->diverged) {
        fprintf(out, "first divergence    none: every compared tensor is within tolerance\n");
        return;
    }
    fprintf(out, "first divergence    %s", diff_point_name(p, name, sizeof name));
    if (p->layer >= 0 && p->point != HOOK_KV_ROW) fprintf(out, ", layer %d", p->layer);
    fprintf(out, ", pos %d", p->pos);
    if (p->head >= 0 && p->point != HOOK_KV_ROW) fprintf(out, ", head %d", p->head);
    if (p->index < 0) {
        fprintf(out, ": the candidate's tensor has another size\n");
        return;
    }
    fprintf(out,
            ": max |d| %.3g (%.3g of the tensor's max |ref| %.3g) at index %d: reference %.9g, "
            "candidate %.9g; allowed %.3g\n",
            p->max_abs, p->rel, p->scale, p->index, p->ref, p->cand, p->allowed);
}

/* The part of a block hook's name after "blocks.L.". */
static const char *short_name(int point, char *buf, size_t size) {
    hook_name((HookPoint)point, 0, buf, size);
    return strchr(buf + 7, '.') + 1;
}

/* A hook kind's name: "mlp_out" for one in a block, "final_norm" outside. */
const char *diff_hook_label(int point, char *buf, size_t size) {
    return hook_in_block((HookPoint)point) ? short_name(point, buf, size)
                                           : hook_name((HookPoint)point, -1, buf, size);
}

/* Each layer's max |d| / max |ref| for every hook either file has there. */
static void print_table(FILE *out, const DiffReport *r) {
    if (r->table_layers == 0) return;
    bool col[N_HOOKS] = {false};
    for (int l = 0; l < r->table_layers; l++)
        for (int h = 0; h < N_HOOKS; h++) col[h] |= r->table_has[l][h];
    fprintf(
        out,
        "\nper layer: max |d| / max |ref| of each hook (its error against the tensor's scale)\n");
    fprintf(out, "layer");
    char name[64];
    for (int h = 0; h < N_HOOKS; h++)
        if (col[h])
            fprintf(out, " %10s", short_name(h, name, sizeof name)); /* wider names: their width */
    fprintf(out, "\n");
    for (int l = 0; l < r->table_layers; l++) {
        fprintf(out, "%5d", l);
        for (int h = 0; h < N_HOOKS; h++) {
            if (!col[h]) continue; /* a block's hooks only: short_name needs "blocks.L." */
            int width = (int)strlen(short_name(h, name, sizeof name));
            width = width > 10 ? width : 10;
            if (r->table_has[l][h])
                fprintf(out, " %*.3g", width, r->table_rel[l][h]);
            else
                fprintf(out, " %*s", width, "-");
        }
        fprintf(out, "\n");
    }
}

static void print_logits(FILE *out, const DiffReport *r) {
    if (r->n == 0) return;
    const char *what = r->logprobs ? "logprob" : "logit";
    fprintf(out, "\nmax |d%s|        %.9g at pos %d, token %d (reference %.9g, candidate %.9g)\n",
            r->logprobs ? "lp" : "logit", r->max_abs, r->max_abs_pos, r->max_abs_id, r->max_abs_ref,
            r->max_abs_cand);
    (void)what;
    fprintf(out, "NMSE                mean %.3g, max %.3g at pos %d\n", r->nmse_mean, r->nmse_max,
            r->nmse_max_pos);
    fprintf(out, "KL(ref||cand), T=1  mean %.3g, p99 %.3g, max %.3g at pos %d\n", r->kl_mean,
            r->kl_p99, r->kl_max, r->kl_max_pos);
    fprintf(out, "top-1 agreement     %d of %d (%.1f%%)\n", r->top1_agree, r->n,
            100.0 * r->top1_agree / r->n);
    fprintf(out, "dp of ref's top     RMS %.3g\n", r->dp_top_rms);
    if (r->first_argmax_pos < 0)
        fprintf(out, "first argmax diff   none\n");
    else
        fprintf(
            out,
            "first argmax diff   pos %d: reference %d, candidate %d; reference's in candidate's "
            "top-5: %s; candidate's in reference's top-5: %s\n",
            r->first_argmax_pos, r->ref_argmax, r->cand_argmax, r->ref_in_cand_top5 ? "yes" : "no",
            r->cand_in_ref_top5 ? "yes" : "no");
}

static void print_missing(FILE *out, const DiffRun *ref, const DiffReport *r) {
    if (!r->cand_has_logits && ref->n > 0)
        fprintf(out, "not compared        logits: the candidate has none\n");
    else if (r->missing_logits > 0)
        fprintf(out, "missing             logits at %d positions the reference has\n",
                r->missing_logits);
    if (!r->cand_has_kv && ref->n_kv > 0)
        fprintf(out, "not compared        KV rows: the candidate has none\n");
    else if (r->missing_kv > 0)
        fprintf(out, "missing             %ld KV rows the reference has\n", r->missing_kv);
    if (!r->cand_has_acts && ref->n_acts > 0) {
        fprintf(out, "not compared        activations: the candidate has none\n");
    } else {
        bool any = false;
        for (int h = 0; h < N_HOOKS; h++) {
            char name[64];
            if (!r->hook_absent[h]) continue;
            fprintf(out, "%s%s",
                    any ? ", " : "not compared        hooks the candidate has none of: ",
                    diff_hook_label(h, name, sizeof name));
            any = true;
        }
        if (any) fprintf(out, "\n");
    }
    if (r->missing_acts > 0)
        fprintf(out, "missing             %ld activations the reference has (first %s at pos %d)\n",
                r->missing_acts, r->first_missing_hook, r->first_missing_pos);
}

void diff_text_write(FILE *out, const char *ref_path, const char *cand_path, const DiffRun *ref,
                     const DiffRun *cand, const DiffTolerance *t, const DiffReport *r,
                     const DiffNameHint *hint) {
    fprintf(out, "reference  %s\ncandidate  %s\n", ref_path, cand_path);
    print_inputs(out, ref, cand, r);
    fprintf(out, "compared   %d positions x %d %s", r->n, r->vocab_size,
            r->logprobs ? "log-probabilities" : "logits");
    if (r->acts_compared > 0) fprintf(out, ", %ld activations", r->acts_compared);
    if (r->kv_compared > 0) fprintf(out, ", %ld KV rows", r->kv_compared);
    fprintf(out, "\n\n");
    print_routing(out, &r->routing);
    print_first(out, r);
    print_hint(out, hint);
    print_table(out, r);
    print_logits(out, r);
    if (r->kv_compared > 0) {
        for (int l = 0; l < r->n_layers_kv; l++)
            fprintf(out, "KV layer %-2d         max |dK| %.3g, max |dV| %.3g\n", l, r->kv_max_k[l],
                    r->kv_max_v[l]);
        if (r->kv_first_layer >= 0)
            fprintf(out, "KV outside          first at layer %d, pos %d\n", r->kv_first_layer,
                    r->kv_first_pos);
    }
    print_missing(out, ref, r);
    if (t->rule == RULE_KL) {
        fprintf(out, "\ntolerance (%s): mean KL <= %g and top-1 agreement >= %.0f%%\n", t->preset,
                t->kl_mean_max, 100 * t->top1_min);
    } else {
        fprintf(out, "\ntolerance (%s, %s): |d| <= %g + %g x %s: %ld of %ld %s outside\n",
                t->preset, diff_rule_name(t->rule), t->atol, t->rtol,
                t->rule == RULE_ROW ? "the tensor's max |ref|" : "|ref|", r->outside,
                (long)r->n * r->vocab_size, r->logprobs ? "log-probabilities" : "logits");
        if (r->logits_outside) {
            const DiffPoint *p = &r->first_logits;
            fprintf(out,
                    "first outside       pos %d, token %d: reference %.9g, candidate %.9g, "
                    "|d| %.9g > %.3g\n",
                    p->pos, p->index, p->ref, p->cand, fabs(p->cand - p->ref), p->allowed);
        }
    }
    if (r->pass)
        fprintf(out, "verdict: PASS (within tolerance)\n");
    else
        fprintf(out, "verdict: FAIL (%s)\n", r->fail_reason);
}
