/* generate.h: the generation loop. Prefill the prompt in one pass, take the
 * distribution at its last position, pick a token, append it, decode it
 * against the cache, and repeat until a stop condition. When the context
 * window is full a policy decides: stop, or drop tokens and rebuild the cache. */
#ifndef STEPWISE_GENERATE_H
#define STEPWISE_GENERATE_H

#include "ref/generate_options.h"
#include "ref/hooks.h"
#include "ref/model/model.h"

/* Run the loop on prompt[0..n_prompt). The caller frees result->tokens with
 * generate_result_free. Fails (with err) if the prompt is empty or does not
 * fit in the context. */
bool generate(const Model *m, const int *prompt, int n_prompt, const GenerateOptions *opt,
              const StepObserver *obs, const TokenSink *sink, GenerateResult *result,
              StepError *err);

#endif
