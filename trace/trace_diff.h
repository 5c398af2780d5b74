/* trace_diff.h: comparing two engines' logits (and KV rows) position by
 * position, with the statistics engine developers use: max |Δlogit|, NMSE,
 * KL(ref‖candidate), top-1 agreement, the first diverging argmax. */
#ifndef STEPWISE_TRACE_DIFF_H
#define STEPWISE_TRACE_DIFF_H

#include <stdbool.h>

#include "../ref/error.h"

/* The logits (and KV rows) of one file: a trace or score file (its "logits"
 * and "kv" events; other lines are ignored), or raw float32 with a JSON
 * sidecar (docs/oracle.md). */
typedef struct {
    int vocab_size;
    int n;         /* positions */
    int *pos;      /* [n] their positions, increasing */
    float *logits; /* [n, vocab_size] */
    int kv_dim, n_kv;
    int *kv_layer, *kv_pos; /* [n_kv] */
    float *k, *v;           /* [n_kv, kv_dim] */
} LogitsSet;

bool logits_set_read(LogitsSet *s, const char *path, StepError *err);
void logits_set_free(LogitsSet *s);

/* Layers whose largest K and V differences are tabled; rows of deeper
 * layers are compared all the same. */
#define DIFF_KV_LAYERS 64

/* When a candidate counts as matching. */
typedef struct {
    const char *preset; /* "fp32", "fp16", "bf16" or "int8" */
    double atol, rtol;  /* elementwise: |c - r| <= atol + rtol·|r| (assert_close) */
    bool by_kl;         /* int8: judge by KL and top-1 instead of elementwise */
    double kl_mean_max, top1_min;
} DiffTolerance;

/* fp32 (atol 1e-5, rtol 1.3e-6: torch.testing.assert_close's float32),
 * fp16 (1e-5, 1e-3), bf16 (1e-5, 1.6e-2), int8 (mean KL <= 0.05 and top-1
 * agreement >= 90%). */
bool diff_tolerance_preset(DiffTolerance *t, const char *name, StepError *err);

typedef struct {
    int n, vocab_size;
    /* largest elementwise difference */
    double max_abs, mean_abs;
    int max_abs_pos, max_abs_id;
    double max_abs_ref, max_abs_cand;
    double nmse_mean, nmse_max;
    int nmse_max_pos;
    double kl_mean, kl_p99, kl_max;
    int kl_max_pos;
    int top1_agree;
    double dp_top_rms; /* RMS over positions of p_cand - p_ref at the ref's top token */
    /* the first position whose argmax differs (-1: none) */
    int first_argmax_pos, ref_argmax, cand_argmax;
    bool ref_in_cand_top5, cand_in_ref_top5;
    /* elementwise tolerance */
    long outside; /* logits outside it */
    int first_outside_pos, first_outside_id;
    double first_outside_ref, first_outside_cand, first_outside_allowed;
    /* KV rows, when both sides have them */
    int n_layers_kv;                                           /* rows in the table below */
    double kv_max_k[DIFF_KV_LAYERS], kv_max_v[DIFF_KV_LAYERS]; /* per layer, the first 64 */
    int kv_first_layer, kv_first_pos;                          /* first row over tolerance, or -1 */
    long kv_compared;
    bool pass;
} DiffReport;

/* Compare cand against ref. Fails (err set) when they cannot be compared:
 * different vocabulary sizes or positions. */
bool trace_diff(const LogitsSet *ref, const LogitsSet *cand, const DiffTolerance *tol,
                DiffReport *r, StepError *err);

#endif
