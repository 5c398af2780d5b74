/* trace_diff.h: comparing another engine's run with the reference's: first
 * that both saw the same tokens, then every hook in execution order to the
 * first number outside tolerance, then the logits with the statistics
 * engine developers use (max |Δlogit|, NMSE, KL(ref‖candidate), top-1
 * agreement, the first diverging argmax) and the KV rows. What the
 * candidate lacks is reported, never passed over. */
#ifndef STEPWISE_TRACE_DIFF_H
#define STEPWISE_TRACE_DIFF_H

#include <stdbool.h>

#include "ref/util/error.h"
#include "ref/hooks.h"
#include "trace/diff_input.h"
#include "trace/diff_routing.h"

/* Layers whose errors are tabled; deeper ones are compared all the same. */
#define DIFF_TABLE_LAYERS 64

/* How a tensor (a row of logits, a hook's values at one position, a KV
 * row) is judged. */
typedef enum {
    RULE_ROW,     /* |c_i - r_i| <= atol + rtol · max_j |r_j|: error against the row's scale */
    RULE_ELEMENT, /* |c_i - r_i| <= atol + rtol · |r_i| (torch.testing.assert_close) */
    RULE_KL,      /* logits by distribution: mean KL and top-1 agreement */
} DiffRule;

typedef struct {
    char preset[32]; /* "fp32", "fp32-elementwise", "f16-kv", "fp16", "bf16", "int8", "custom" */
    DiffRule rule;
    double atol, rtol;
    double kl_mean_max, top1_min; /* RULE_KL */
    double walk_rtol;             /* RULE_KL: the row rule the hook walk uses */
} DiffTolerance;

/* The presets (docs/oracle.md gives their calibration):
 *   fp32              row rule, atol 1e-6, rtol 3e-5 (the default)
 *   fp32-elementwise  element rule, atol 1e-5, rtol 1.3e-6 (assert_close's float32)
 *   f16-kv            row rule, atol 1e-5, rtol 3e-2 (a float16 KV cache)
 *   fp16, bf16        element rule, atol 1e-5, rtol 1e-3 and 1.6e-2
 *   int8              mean KL <= 0.05 and top-1 >= 90%; hooks by the row rule at 0.1 */
bool diff_tolerance_preset(DiffTolerance *t, const char *name, StepError *err);

/* An absolute and/or relative tolerance set by hand (a negative one: not
 * given), in the preset's rule (the element rule for int8's KL rule):
 * reported as "custom". False (err says why) for a NaN. */
bool diff_tolerance_custom(DiffTolerance *t, double atol, double rtol, StepError *err);

/* One compared tensor's worst element. */
typedef struct {
    int point, layer, pos, head; /* point HOOK_LOGITS for logits, HOOK_KV_ROW for KV (head 0: K,
                                    1: V) */
    int index;                   /* the worst element */
    double max_abs, scale, rel;  /* max |Δ|, max |ref| of the tensor, and their ratio */
    double ref, cand, allowed;   /* at the worst index */
} DiffPoint;

typedef struct {
    int n, vocab_size;
    bool logprobs; /* compared as log-probabilities */
    /* inputs: the tokens at every position both sides state */
    bool inputs_checked;
    int inputs_compared;       /* positions whose tokens were compared */
    int inputs_differ_pos;     /* the first position whose tokens differ, or -1 */
    int ref_token, cand_token; /* there */
    /* what the candidate lacks (reference positions, rows, tensors) */
    int missing_logits;
    long missing_kv, missing_acts;
    char first_missing_hook[64];
    int first_missing_pos;
    bool cand_has_logits, cand_has_kv, cand_has_acts;
    bool hook_absent[N_HOOKS]; /* hooks the reference has and the candidate has none of */
    /* the walk through the hooks, in execution order */
    long acts_compared;
    bool diverged;
    DiffPoint first; /* the first tensor outside tolerance */
    /* When that is an activation and the candidate's tensor there equals,
     * within tolerance, the reference's tensor of another hook at the same
     * layer and position: that hook. Most likely the name map does not fit
     * the engine's version (a name that moved), not the numbers. */
    bool first_is_other_hook;
    DiffPoint first_other; /* point and layer of that hook, its worst element */
    int table_layers;
    double table_abs[DIFF_TABLE_LAYERS][N_HOOKS]; /* per layer and hook: max |Δ| */
    double table_rel[DIFF_TABLE_LAYERS][N_HOOKS]; /* and max |Δ| / max |ref| */
    bool table_has[DIFF_TABLE_LAYERS][N_HOOKS];
    double outside_abs[N_HOOKS]; /* hooks outside a block (embed, final_norm): max |Δ| */
    bool outside_has[N_HOOKS];
    /* logits */
    double max_abs, mean_abs;
    int max_abs_pos, max_abs_id;
    double max_abs_ref, max_abs_cand;
    double nmse_mean, nmse_max;
    int nmse_max_pos;
    double kl_mean, kl_p99, kl_max;
    int kl_max_pos;
    int top1_agree;
    double dp_top_rms; /* RMS over positions of p_cand - p_ref at the ref's top token */
    int first_argmax_pos, ref_argmax, cand_argmax; /* the first argmax difference (-1: none) */
    bool ref_in_cand_top5, cand_in_ref_top5;
    long outside; /* logits outside the tolerance */
    bool logits_outside;
    DiffPoint first_logits; /* the first logits row outside */
    /* KV rows, when both sides have them */
    int n_layers_kv;
    double kv_max_k[DIFF_TABLE_LAYERS], kv_max_v[DIFF_TABLE_LAYERS];
    int kv_first_layer, kv_first_pos; /* first row outside, or -1 */
    long kv_compared;
    DiffRouting routing; /* a mixture of experts: where the two first chose other experts */
    bool pass;
    char fail_reason[160];
} DiffReport;

/* Compare cand against ref. Fails (err set) when they cannot be compared:
 * different vocabulary sizes, nothing in common, or, with teacher_forced
 * (or two score files), inputs that differ. Inputs that differ otherwise
 * are compared up to the first such position, and the verdict fails. */
bool trace_diff(const DiffRun *ref, const DiffRun *cand, const DiffTolerance *tol,
                bool teacher_forced, DiffReport *r, StepError *err);

/* What the tolerance allows an element r_i of a tensor whose max |r_j| is
 * scale, at hook point. */
double diff_allowed(const DiffTolerance *t, int point, double r_i, double scale);

#endif
