/* diff_text.h: `stepwise diff`'s report as text, written to any stream:
 * the command line's standard output, or the library's buffer (sw_diff_text). */
#ifndef STEPWISE_DIFF_TEXT_H
#define STEPWISE_DIFF_TEXT_H

#include <stdbool.h>
#include <stdio.h>

#include "trace/diff_run.h"
#include "trace/hook_names.h"
#include "trace/trace_diff.h"

/* "row", "elementwise" or "by distribution". */
const char *diff_rule_name(DiffRule r);

/* "blocks.2.mlp_out", "logits", "kv K" of a compared tensor, into buf. */
const char *diff_point_name(const DiffPoint *p, char *buf, size_t size);

/* A hook kind's name: "mlp_out" for one in a block, "final_norm" outside. */
const char *diff_hook_label(int point, char *buf, size_t size);

/* When the first divergence is the candidate's tensor of another hook:
 * the candidate's own name for the failing hook, that other hook, and the
 * name maps under which their name means that hook. */
typedef struct {
    bool found;
    char theirs[96], other[64], fitting[160];
} DiffNameHint;

/* The hint for report r (names: the candidate's map, or NULL). */
void diff_name_hint(const DiffReport *r, const HookNames *names, DiffNameHint *h);

/* The whole report, as `stepwise diff` prints it, to out. */
void diff_text_write(FILE *out, const char *ref_path, const char *cand_path, const DiffRun *ref,
                     const DiffRun *cand, const DiffTolerance *t, const DiffReport *r,
                     const DiffNameHint *hint);

#endif
