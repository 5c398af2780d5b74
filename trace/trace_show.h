/* trace_show.h: `stepwise trace show`, one step of a trace the way a person
 * reads it: the top tokens with their probabilities as bars, what each
 * filter removed, the chosen token, and the size of the KV cache. */
#ifndef STEPWISE_TRACE_SHOW_H
#define STEPWISE_TRACE_SHOW_H

#include <stdio.h>

#include "../ref/error.h"
#include "../ref/tokenizer.h"

/* Show the step at position pos (-1: the first draw) of the trace at path.
 * Token pieces come from the trace itself, and from tok when not NULL (a
 * path named inside the trace is never opened: a trace may come from
 * anywhere). top: how many tokens to list.
 * top: how many tokens to list. */
bool trace_show_step(const char *path, int pos, const Tokenizer *tok, int top, FILE *out,
                     StepError *err);

#endif
