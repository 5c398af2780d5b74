/* generate.c: the prefill / pick / append / decode loop. */
#include "ref/generate.h"

#include "ref/sequence.h"

bool generate(const Model *m, const int *prompt, int n_prompt, const GenerateOptions *opt,
              const StepObserver *obs, const TokenSink *sink, GenerateResult *result,
              StepError *err) {
    Sequence q;
    if (!sequence_init(&q, m, prompt, n_prompt, opt, obs, sink, result, err)) {
        generate_result_free(result);
        return false;
    }
    sequence_prefill(&q);
    bool failed;
    while (!sequence_pick(&q, &failed, err)) sequence_advance(&q);
    sequence_free(&q);
    if (failed) generate_result_free(result);
    return !failed;
}
