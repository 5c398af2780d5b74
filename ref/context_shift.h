/* context_shift.h: what a context policy did when the window was full
 * (sequence.h runs the policies), as an observer's `context` callback
 * receives it (hooks.h): the tokens dropped and kept, and for summarize
 * and retrieve the nested run or the ranked chunks. Kept beside the
 * sequence, not in hooks.h, whose one concern is the observer. */
#ifndef STEPWISE_CONTEXT_SHIFT_H
#define STEPWISE_CONTEXT_SHIFT_H

#include <stdbool.h>

#include "ref/work.h"

/* summarize: the nested run that wrote a summary. */
typedef struct {
    const int *prompt; /* [n_prompt] the summary prompt around the span */
    int n_prompt;
    const int *tokens; /* [n_tokens] the summary (a stop token left out) */
    int n_tokens;
    const char *stop_reason; /* "steps", "eos", "bos", "context_full", or "failed" */
    WorkCount work;          /* its prefill and decodes */
} SummaryRun;

/* retrieve: one stored chunk and its BM25 score against the query. */
typedef struct {
    int id; /* chunk number, in the order stored (0-based) */
    const int *tokens;
    int n_tokens;
    double score;
    bool returned; /* brought back into the window */
} ScoredChunk;

typedef struct {
    const int *query; /* [n_query] the user's message */
    int n_query;
    double k1, b;
    const ScoredChunk *chunks; /* [n_chunks] in the order stored */
    int n_chunks;
    const int *returned; /* [n_returned] the chunks brought back, best first */
    int n_returned;
} Retrieval;

/* What a context policy did when the window was full (see generate.h). */
typedef struct ContextShift {
    const char *policy; /* "drop-oldest", "keep-prefix", "summarize" or "retrieve" */
    int window;         /* positions the window holds */
    int first_dropped;  /* position of the first dropped token */
    const int *dropped; /* [n_dropped] the tokens dropped */
    int n_dropped;
    int kept;             /* tokens kept, re-prefilled at positions 0..kept-1 */
    int positions_before; /* cache positions filled before (= window) */
    int positions_after;  /* after the rebuild: kept + the new token */
    /* summarize and retrieve: tokens put in at position inserted_at (a
     * summary, or the chunks brought back), else NULL */
    const int *inserted;
    int n_inserted, inserted_at;
    int removed_retrieved;      /* retrieve: the chunks brought back last time, taken out */
    const SummaryRun *summary;  /* summarize, else NULL */
    const Retrieval *retrieval; /* retrieve, else NULL */
} ContextShift;

#endif
