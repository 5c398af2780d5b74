/* forward.h: the transformer forward pass over a run of tokens (the
 * sequences' state and the pass's scratch it reads and writes are
 * run_state.h's).
 *
 * Prefill and decode are the same function: prefill passes the whole prompt
 * (T tokens, one [T, dim] activation per layer, causal attention inside it);
 * decode passes T = 1, the new token, against the cached K and V. */
#ifndef STEPWISE_FORWARD_H
#define STEPWISE_FORWARD_H

#include "ref/util/error.h"
#include "ref/forward_jobs.h"
#include "ref/hooks.h"
#include "ref/layers.h"
#include "ref/model/model.h"
#include "ref/run_state.h"

/* The transformer over rows[0..n_rows): the matmuls take every row's tokens
 * at once (each weight row read once for all of them); RoPE, the cache and
 * attention are each row's own (rows[r].state, a SeqState). scratch holds
 * the activations of all the tokens (its max_tokens >= their number), the
 * quantization of activations, and the room attention works in, one row
 * at a time (its capacity >= every row's cache's). Each row's logits, cache
 * rows, hooks and work (rows[r].state->work) are bitwise what it would get
 * alone. Returns the logits [wanted, vocab_size]: row by row, each row's
 * wanted tokens (all of them, or its last). */
const float *forward(const Model *m, PassScratch *scratch, const ForwardRow *rows, int n_rows);

/* forward() of one row, s's sequence with s's own scratch: tokens[0..T) at
 * positions pos0..pos0+T-1; returns the first computed row of logits (the
 * last token's, or all T when all_logits). */
const float *forward_tokens(const Model *m, RunState *s, const int *tokens, int T, int pos0,
                            bool all_logits, const StepObserver *obs);

#endif
