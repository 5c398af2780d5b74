/* score.c: see score.h. */
#include "ref/score.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ref/nonfinite.h"

void log_softmax(const float *logits, int n, double *out) {
    double max = logits[0];
    for (int i = 1; i < n; i++) max = logits[i] > max ? logits[i] : max;
    double sum = 0.0;
    for (int i = 0; i < n; i++) sum += exp((double)logits[i] - max);
    double log_sum = log(sum);
    for (int i = 0; i < n; i++) out[i] = (double)logits[i] - max - log_sum;
}

/* The k best of lp[0..n) by value, lower id first on ties (k is small). */
static void top_k_of(const double *lp, int n, int k, int *ids, double *vals) {
    for (int j = 0; j < k; j++) ids[j] = -1;
    for (int i = 0; i < n; i++) {
        int slot = k;
        while (slot > 0 && (ids[slot - 1] < 0 || lp[i] > lp[ids[slot - 1]])) slot--;
        if (slot == k) continue;
        memmove(ids + slot + 1, ids + slot, (size_t)(k - slot - 1) * sizeof(int));
        ids[slot] = i;
    }
    for (int j = 0; j < k; j++) vals[j] = lp[ids[j]];
}

bool score_tokens(const Model *m, const int *tokens, int n, int top_n, const QuantRuntime *quant,
                  const StepObserver *obs, ScoreResult *result, StepError *err) {
    const Config *c = &m->config;
    bool keep_logits = result->keep_logits;
    memset(result, 0, sizeof *result);
    if (n < 2) return step_fail(err, "score: needs at least 2 tokens, got %d", n);
    if (n > c->seq_len)
        return step_fail(err, "score: %d tokens but the context holds %d", n, c->seq_len);
    for (int i = 0; i < n; i++) {
        if (tokens[i] < 0 || tokens[i] >= c->vocab_size)
            return step_fail(err, "score: token %d is outside the vocabulary [0, %d)", tokens[i],
                             c->vocab_size);
    }
    if (top_n > c->vocab_size) top_n = c->vocab_size;
    RunState s;
    if (!run_state_init_kv(&s, c, n, n, quant, m->run.kv, err)) return false;
    double *lp = malloc((size_t)c->vocab_size * sizeof(double));
    result->positions = calloc((size_t)n, sizeof(ScoredPosition));
    if (lp == NULL || result->positions == NULL) {
        free(lp), run_state_free(&s), score_result_free(result);
        return step_fail(err, "score: out of memory");
    }
    if (obs != NULL && obs->forward != NULL) obs->forward(obs->ctx, PASS_PREFILL, 0, tokens, n);
    ForwardRow row = {.state = &s.seq,
                      .obs = obs,
                      .tokens = tokens,
                      .n_tokens = n,
                      .pos0 = 0,
                      .all_logits = true};
    const float *logits = forward(m, &s.pass, &row, 1);
    if (first_nonfinite(logits, (size_t)n * c->vocab_size) >= 0) {
        free(lp), score_result_free(result);
        fail_nonfinite(m, &s.pass, &row, "score", err);
        run_state_free(&s);
        return false;
    }
    result->work = s.seq.work;
    if (keep_logits) {
        size_t bytes = (size_t)n * c->vocab_size * sizeof(float);
        result->logits = malloc(bytes);
        if (result->logits == NULL) {
            free(lp), run_state_free(&s), score_result_free(result);
            return step_fail(err, "score: out of memory");
        }
        memcpy(result->logits, logits, bytes);
    }
    if (obs != NULL && obs->work != NULL) obs->work(obs->ctx, PASS_PREFILL, 0, n, &s.seq.work);
    result->n = n;
    for (int p = 0; p < n; p++) {
        ScoredPosition *sp = &result->positions[p];
        log_softmax(logits + (size_t)p * c->vocab_size, c->vocab_size, lp);
        sp->pos = p, sp->token = tokens[p], sp->next = p + 1 < n ? tokens[p + 1] : -1;
        sp->logprob_next = sp->next >= 0 ? lp[sp->next] : 0.0;
        result->total_logprob += sp->logprob_next;
        sp->n_top = top_n;
        sp->top_ids = malloc((size_t)(top_n > 0 ? top_n : 1) * sizeof(int));
        sp->top_logprobs = malloc((size_t)(top_n > 0 ? top_n : 1) * sizeof(double));
        if (sp->top_ids == NULL || sp->top_logprobs == NULL) {
            free(lp), run_state_free(&s), score_result_free(result);
            return step_fail(err, "score: out of memory");
        }
        top_k_of(lp, c->vocab_size, top_n, sp->top_ids, sp->top_logprobs);
    }
    result->cross_entropy = -result->total_logprob / (n - 1);
    result->perplexity = exp(result->cross_entropy);
    free(lp);
    run_state_free(&s);
    return true;
}

void score_result_free(ScoreResult *r) {
    for (int p = 0; r->positions != NULL && p < r->n; p++) {
        free(r->positions[p].top_ids);
        free(r->positions[p].top_logprobs);
    }
    free(r->positions);
    free(r->logits);
    memset(r, 0, sizeof *r);
}
