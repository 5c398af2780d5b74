/* trace_show.h: `stepwise trace show`, one step of a trace the way a person
 * reads it: the top tokens with their probabilities as bars, what each
 * filter removed, the chosen token, and the size of the KV cache. */
#ifndef STEPWISE_TRACE_SHOW_H
#define STEPWISE_TRACE_SHOW_H

#include <stdio.h>

#include "ref/util/error.h"
#include "ref/text/tokenizer.h"

/* Which step to show: by_step the step'th draw (from 1: the first sample
 * event, unambiguous after a context shift repeats positions), else the
 * position pos (-1: the first draw); the first of several matches is shown
 * and the others are counted. */
typedef struct {
    int pos, step;
} TraceStepAt;

/* Show that step of the trace at path, in at most 80 columns. Token pieces
 * come from the trace itself, and from tok when not NULL (a path named
 * inside the trace is never opened: a trace may come from anywhere). top:
 * how many tokens to list. */
bool trace_show_step(const char *path, TraceStepAt at, const Tokenizer *tok, int top, FILE *out,
                     StepError *err);

/* The logits of that step (malloc'd, *n of them; caller frees) and, when
 * pieces is not NULL, a malloc'd table of the pieces the trace names
 * ([*n] strings or NULL; free with trace_pieces_free), for `sample
 * --from-trace`. */
bool trace_step_logits(const char *path, TraceStepAt at, float **logits, int *n, char ***pieces,
                       StepError *err);
void trace_pieces_free(char **pieces, int n);

#endif
