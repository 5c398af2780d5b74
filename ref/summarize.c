/* summarize.c: see summarize.h. */
#include "summarize.h"

#include <stdlib.h>
#include <string.h>

#include "sequence.h"

void summarize_span(const Model *m, const GenerateOptions *opt, const int *span, int n_span,
                    SummaryRun *run) {
    *run = (SummaryRun){.stop_reason = "failed"};
    int n_prompt = opt->n_summary_before + n_span + opt->n_summary_after;
    int *prompt = malloc((size_t)n_prompt * sizeof *prompt);
    if (prompt == NULL) return;
    memcpy(prompt, opt->summary_before, (size_t)opt->n_summary_before * sizeof *prompt);
    memcpy(prompt + opt->n_summary_before, span, (size_t)n_span * sizeof *prompt);
    memcpy(prompt + opt->n_summary_before + n_span, opt->summary_after,
           (size_t)opt->n_summary_after * sizeof *prompt);
    run->prompt = prompt, run->n_prompt = n_prompt;

    /* The nested run: the model's whole window, greedy, no policy of its own. */
    GenerateOptions nested = {.steps = opt->summary_tokens,
                              .policy = CONTEXT_STOP,
                              .quant = opt->quant,
                              .bos_id = opt->bos_id,
                              .eos_id = opt->eos_id};
    sampler_params_default(&nested.sampler);
    Sequence q;
    GenerateResult r;
    StepError err;
    if (!sequence_init(&q, m, prompt, n_prompt, &nested, NULL, NULL, &r, &err)) {
        generate_result_free(&r);
        return;
    }
    sequence_prefill(&q);
    bool failed = false;
    while (!sequence_pick(&q, &failed, &err)) sequence_advance(&q);
    if (!failed) {
        int n = r.n_tokens - r.n_prompt;
        if (r.stop_reason == STOP_BOS || r.stop_reason == STOP_EOS) n--; /* not summary text */
        int *tokens = malloc((size_t)(n > 0 ? n : 1) * sizeof *tokens);
        if (tokens != NULL) {
            memcpy(tokens, r.tokens + r.n_prompt, (size_t)n * sizeof *tokens);
            run->tokens = tokens, run->n_tokens = n;
            run->stop_reason = stop_reason_name(r.stop_reason);
        }
    }
    run->work = r.work;
    sequence_free(&q);
    generate_result_free(&r);
}

void summary_run_free(SummaryRun *run) {
    free((void *)run->prompt);
    free((void *)run->tokens);
    *run = (SummaryRun){0};
}
