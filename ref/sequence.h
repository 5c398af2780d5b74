/* sequence.h: one request's generation, step by step: its window of tokens,
 * its KV cache, its sampler and its result. `generate` drives one sequence;
 * `batch` drives many, decoding them together (batch.h). */
#ifndef STEPWISE_SEQUENCE_H
#define STEPWISE_SEQUENCE_H

#include "ref/context_shift.h"
#include "ref/forward.h"
#include "ref/generate_options.h"
#include "ref/hooks.h"
#include "ref/model/model.h"
#include "ref/retrieve.h"

typedef struct {
    const Model *m;
    const GenerateOptions *opt;
    const StepObserver *obs;
    const TokenSink *sink;
    RunState s;
    Sampler sampler;
    int window;         /* positions the window holds */
    int *window_tokens; /* [window] the tokens at positions 0..n-1 */
    int n;
    GenerateResult *result;
    const float *logits;  /* [vocab_size] of the last position fed */
    ForwardRow last_pass; /* the pass that gave them (to find where a NaN came in) */
    int generated;
    double t0;        /* when the prefill began */
    ChunkStore store; /* retrieve: every span dropped */
    int retrieved;    /* retrieve: chunk tokens at [keep, keep + retrieved) */
} Sequence;

/* The positions a run of an n_prompt-token prompt with opt can feed: the
 * prompt, then every generated token but the last, capped by the window;
 * its cache (and a pass serving it) is sized for exactly that. In [1,
 * seq_len] whatever opt says. */
int sequence_capacity(const Config *c, int n_prompt, const GenerateOptions *opt);

/* Check the prompt and options and allocate the state (the cache for the
 * positions this run can feed: sequence_capacity). */
bool sequence_init(Sequence *q, const Model *m, const int *prompt, int n_prompt,
                   const GenerateOptions *opt, const StepObserver *obs, const TokenSink *sink,
                   GenerateResult *result, StepError *err);

/* The whole prompt in one pass. */
void sequence_prefill(Sequence *q);

/* The prefill when the cache already holds the rows of the first `reused`
 * prompt positions (copied from a prefix cache: prefix_cache.h): only the
 * rest is computed, from that position. 0 <= reused < the prompt's length;
 * with all_logits, prompt logits start at `reused`. */
void sequence_prefill_from(Sequence *q, int reused);

/* One chunk of a prefill split into passes (batch --prefill-chunk): prompt
 * positions [from, to), where from is the first position the cache does not
 * hold yet. The first chunk starts the clock of the time to first token; the
 * last (to == the prompt's length) leaves the logits to pick from; after
 * each, result->positions_filled is `to`. Each position's sums are those of
 * one pass, so the bits are the same; the trace has one prefill event a
 * chunk. */
void sequence_prefill_chunk(Sequence *q, int from, int to);

/* Draw the next token from the last logits, append it, and check the stop
 * conditions. Returns true when the sequence is finished (result->stop_reason
 * set); false (with *failed false) when it goes on. *failed: the sampler
 * refused the logits (err set). */
bool sequence_pick(Sequence *q, bool *failed, StepError *err);

/* Feed the token just picked: a decode pass, or, without a cache, a
 * recompute of the window, or, at a full window, a context shift and a
 * rebuild. */
void sequence_advance(Sequence *q);

/* For a batch step, which runs many sequences' decodes in one forward():
 * put the picked token at the next position and return this sequence's row
 * (announced to its observer); after the pass, sequence_end_pass takes its
 * logits row, its work and the pass's seconds. sequence_advance does the
 * same for one sequence alone. */
ForwardRow sequence_begin_decode(Sequence *q);
void sequence_end_pass(Sequence *q, const ForwardRow *row, PassPhase phase, const float *logits,
                       double seconds);

void sequence_free(Sequence *q);

#endif
