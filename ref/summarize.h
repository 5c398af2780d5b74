/* summarize.h: the summarize context policy's nested run. When the window
 * is full, the model is asked to summarise the oldest span: a second,
 * separate generation (its own KV cache and a greedy sampler, so the main
 * run's random draws are untouched) over summary_before + span +
 * summary_after, of at most summary_tokens tokens. The summary replaces
 * the span, and the window is prefilled again. */
#ifndef STEPWISE_SUMMARIZE_H
#define STEPWISE_SUMMARIZE_H

#include "generate_options.h"
#include "hooks.h"
#include "model.h"

/* The summary of span[0..n_span) under opt's summary prompt. run->prompt
 * and run->tokens are malloc'd (summary_run_free). On failure (out of
 * memory) the summary is empty and stop_reason "failed": the span is
 * dropped as drop-oldest would. */
void summarize_span(const Model *m, const GenerateOptions *opt, const int *span, int n_span,
                    SummaryRun *run);

void summary_run_free(SummaryRun *run);

#endif
