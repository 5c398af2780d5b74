/* score.h: teacher-forced scoring. One prefill over a fixed sequence gives
 * the logits at every position; from them, each position's log-probabilities,
 * the cross-entropy of the token that actually comes next, and the
 * sequence's perplexity. Two engines can be compared on identical inputs
 * this way, even where their sampling would diverge. */
#ifndef STEPWISE_SCORE_H
#define STEPWISE_SCORE_H

#include "ref/forward.h"
#include "ref/hooks.h"
#include "ref/model/model.h"

/* One position of a scored sequence. */
typedef struct {
    int pos;
    int token;           /* the input at pos */
    int next;            /* the token at pos + 1, or -1 at the last position */
    double logprob_next; /* log p(next | tokens 0..pos), natural log; 0 when next < 0 */
    int n_top;
    int *top_ids;         /* [n_top] most likely next tokens, best first (lower id on ties) */
    double *top_logprobs; /* [n_top] their log-probabilities */
} ScoredPosition;

typedef struct {
    int n; /* positions (= tokens) */
    ScoredPosition *positions;
    double total_logprob; /* Σ logprob_next over the n - 1 predicted tokens */
    double cross_entropy; /* -total / (n - 1): mean nats per predicted token */
    double perplexity;    /* exp(cross_entropy) */
    WorkCount work;
    bool keep_logits; /* set before scoring to keep: */
    float *logits;    /* [n, vocab_size] every position's logits, or NULL */
} ScoreResult;

/* Log-probabilities of logits[0..n) into out, in double:
 * z_i - max - log Σ_j exp(z_j - max). */
void log_softmax(const float *logits, int n, double *out);

/* Score tokens[0..n) (BOS first, n in [2, seq_len]) in one prefill with the
 * logits of every position, keeping the top_n most likely next tokens of each,
 * with activations and KV cache quantized as quant says (NULL: float32).
 * Hooks fire as in generation (the logits events among them). When
 * result->logits is wanted, keep_logits copies them [n, vocab_size]. */
bool score_tokens(const Model *m, const int *tokens, int n, int top_n, const QuantRuntime *quant,
                  const StepObserver *obs, ScoreResult *result, StepError *err);

void score_result_free(ScoreResult *r);

#endif
