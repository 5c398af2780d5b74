/* sequence.c: see sequence.h. */
#include "ref/sequence.h"

#include <stdlib.h>
#include <string.h>

#include "ref/util/clock.h"
#include "ref/nonfinite.h"
#include "ref/text/tokenizer.h"

/* The row of a pass over tokens[0..T) from pos0, announced to the observer. */
static ForwardRow begin_pass(Sequence *q, PassPhase phase, const int *tokens, int T, int pos0,
                             bool all_logits) {
    const StepObserver *obs = q->obs;
    if (obs != NULL && obs->forward != NULL) obs->forward(obs->ctx, phase, pos0, tokens, T);
    return (ForwardRow){.state = &q->s.seq,
                        .obs = obs,
                        .tokens = tokens,
                        .n_tokens = T,
                        .pos0 = pos0,
                        .all_logits = all_logits};
}

void sequence_end_pass(Sequence *q, const ForwardRow *row, PassPhase phase, const float *logits,
                       double seconds) {
    const StepObserver *obs = q->obs;
    work_add(&q->result->work, &q->s.seq.work);
    if (obs != NULL && obs->work != NULL)
        obs->work(obs->ctx, phase, row->pos0, row->n_tokens, &q->s.seq.work);
    if (row->all_logits) logits += (size_t)(row->n_tokens - 1) * q->m->config.vocab_size;
    q->logits = logits;
    q->last_pass = *row;
    if (phase != PASS_PREFILL) q->result->decode_seconds += seconds;
}

/* One pass of this sequence alone: its state is its own scratch. A pass
 * with no_logits fills cache rows only (a prefill chunk before the last). */
static void run_pass_rows(Sequence *q, PassPhase phase, const int *tokens, int T, int pos0,
                          bool all_logits, bool no_logits) {
    double t0 = clock_seconds();
    ForwardRow row = begin_pass(q, phase, tokens, T, pos0, all_logits);
    row.no_logits = no_logits;
    const float *logits = forward(q->m, &q->s.pass, &row, 1);
    sequence_end_pass(q, &row, phase, logits, clock_seconds() - t0);
}

static void run_pass(Sequence *q, PassPhase phase, const int *tokens, int T, int pos0,
                     bool all_logits) {
    run_pass_rows(q, phase, tokens, T, pos0, all_logits, false);
}

int sequence_capacity(const Config *c, int n_prompt, const GenerateOptions *opt) {
    long fed = (long)n_prompt + opt->steps - 1, window = generate_window(opt, c);
    long capacity = fed < window ? fed : window;
    return capacity < 1 ? 1 : capacity > c->seq_len ? c->seq_len : (int)capacity;
}

bool sequence_init(Sequence *q, const Model *m, const int *prompt, int n_prompt,
                   const GenerateOptions *opt, const StepObserver *obs, const TokenSink *sink,
                   GenerateResult *result, StepError *err) {
    const Config *c = &m->config;
    memset(q, 0, sizeof *q);
    *result = (GenerateResult){0};
    if (!generate_options_validate(opt, c, err)) return false;
    int window = generate_window(opt, c);
    if (n_prompt < 1) return step_fail(err, "the prompt has no tokens (not even BOS)");
    if (n_prompt > window)
        return step_fail(err, "the prompt has %d tokens but the context holds %d", n_prompt,
                         window);
    for (int i = 0; i < n_prompt; i++) {
        if (prompt[i] < 0 || prompt[i] >= c->vocab_size)
            return step_fail(err, "prompt token %d is outside the vocabulary [0, %d)", prompt[i],
                             c->vocab_size);
    }
    /* Passes of more than the prompt (recompute, rebuild) need scratch for
     * them all. */
    int capacity = sequence_capacity(c, n_prompt, opt);
    bool long_passes = opt->no_kv_cache || opt->policy != CONTEXT_STOP;
    *q = (Sequence){
        .m = m, .opt = opt, .obs = obs, .sink = sink, .window = window, .result = result};
    q->window_tokens = malloc((size_t)window * sizeof(int));
    /* Under the stop policy the window bounds the tokens, whatever steps
     * asks: the prompt and the generated ones, plus the last pick. */
    size_t most = (size_t)n_prompt + (size_t)opt->steps;
    if (opt->policy == CONTEXT_STOP && most > (size_t)window + 1) most = (size_t)window + 1;
    result->tokens = malloc(most * sizeof(int));
    if (q->window_tokens == NULL || result->tokens == NULL) {
        sequence_free(q);
        return step_fail(err, "out of memory for %zu tokens", most);
    }
    if (!sampler_init(&q->sampler, c->vocab_size, &opt->sampler, err)) {
        sequence_free(q);
        return false;
    }
    if (!run_state_init_kv(&q->s, c, capacity, long_passes ? capacity : n_prompt, &opt->quant,
                           m->run.kv, err)) {
        sequence_free(q);
        return false;
    }
    memcpy(result->tokens, prompt, (size_t)n_prompt * sizeof(int));
    memcpy(q->window_tokens, prompt, (size_t)n_prompt * sizeof(int));
    result->n_tokens = result->n_prompt = q->n = n_prompt;
    result->cache_capacity = capacity;
    result->kv_int8 = opt->quant.kv;
    return true;
}

void sequence_prefill(Sequence *q) {
    sequence_prefill_from(q, 0);
}

void sequence_prefill_from(Sequence *q, int reused) {
    sequence_prefill_chunk(q, reused, q->n);
}

void sequence_prefill_chunk(Sequence *q, int from, int to) {
    double t = clock_seconds();
    if (q->result->positions_filled == 0) q->t0 = t; /* the first chunk: TTFT's clock starts */
    bool last = to == q->n; /* earlier chunks want no logits, unless every position's */
    run_pass_rows(q, PASS_PREFILL, q->window_tokens + from, to - from, from, q->opt->all_logits,
                  !last && !q->opt->all_logits);
    q->result->prefill_seconds += clock_seconds() - t;
    q->result->positions_filled = to;
}

bool sequence_pick(Sequence *q, bool *failed, StepError *err) {
    GenerateResult *r = q->result;
    const GenerateOptions *opt = q->opt;
    *failed = false;
    int prev = r->tokens[r->n_tokens - 1], next;
    if (first_nonfinite(q->logits, (size_t)q->m->config.vocab_size) >= 0) {
        fail_nonfinite(q->m, &q->s.pass, &q->last_pass, "generate", err);
        return *failed = true;
    }
    if (!sampler_sample(&q->sampler, q->logits, &next, err)) return *failed = true;
    if (q->obs != NULL && q->obs->sample != NULL)
        q->obs->sample(q->obs->ctx, q->n - 1, q->logits, &q->sampler);
    r->tokens[r->n_tokens++] = next;
    if (++q->generated == 1) r->first_token_seconds = clock_seconds() - q->t0;
    if (next == opt->bos_id || next == opt->eos_id) {
        r->stop_reason = next == opt->bos_id ? STOP_BOS : STOP_EOS;
        return true;
    }
    if (q->sink != NULL && q->sink->on_token != NULL) q->sink->on_token(q->sink->ctx, prev, next);
    if (q->generated == opt->steps) {
        r->stop_reason = STOP_STEPS;
        return true;
    }
    if (q->n == q->window && opt->policy == CONTEXT_STOP) {
        r->stop_reason = STOP_CONTEXT_FULL;
        return true;
    }
    if (opt->interrupt != NULL && *opt->interrupt) {
        r->stop_reason = STOP_INTERRUPTED;
        return true;
    }
    return false;
}

/* What summarize or retrieve puts back at a shift, and the record of how
 * for the context event. Owns tokens, prompt, scored and order
 * (insert_free); summary and retrieval point into them. */
typedef struct {
    int *tokens; /* [n] the summary, or the chunks brought back */
    int n;
    int *prompt;         /* summarize: the summary's prompt */
    SummaryRun summary;  /* summarize */
    ScoredChunk *scored; /* retrieve: every stored chunk, scored */
    int *order;          /* retrieve: the chunks brought back, best first */
    Retrieval retrieval; /* retrieve */
} Insert;

static void insert_free(Insert *in) {
    free(in->tokens), free(in->prompt), free(in->scored), free(in->order);
    *in = (Insert){0};
}

/* summarize: ask the model to summarise the span. A second, separate
 * generation (its own KV cache and a greedy sampler, so that the main run's
 * random draws are untouched) over summary_before + span + summary_after, of
 * at most summary_tokens tokens. On failure (out of memory) the summary is
 * empty and stop_reason "failed": the span is dropped as drop-oldest would. */
static void summarize_span(const Model *m, const GenerateOptions *opt, const int *span, int n_span,
                           Insert *in) {
    SummaryRun *run = &in->summary;
    *run = (SummaryRun){.stop_reason = "failed"};
    int n_prompt = opt->n_summary_before + n_span + opt->n_summary_after;
    int *prompt = malloc((size_t)n_prompt * sizeof *prompt);
    if (prompt == NULL) return;
    memcpy(prompt, opt->summary_before, (size_t)opt->n_summary_before * sizeof *prompt);
    memcpy(prompt + opt->n_summary_before, span, (size_t)n_span * sizeof *prompt);
    memcpy(prompt + opt->n_summary_before + n_span, opt->summary_after,
           (size_t)opt->n_summary_after * sizeof *prompt);
    in->prompt = prompt, run->prompt = prompt, run->n_prompt = n_prompt;

    /* The nested run: the model's whole window, greedy, no policy of its own. */
    GenerateOptions nested = {.steps = generate_summary_tokens(opt, n_span),
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
    int n = r.n_tokens - r.n_prompt;
    if (r.stop_reason == STOP_BOS || r.stop_reason == STOP_EOS) n--; /* not summary text */
    if (!failed && (in->tokens = malloc((size_t)(n > 0 ? n : 1) * sizeof(int))) != NULL) {
        memcpy(in->tokens, r.tokens + r.n_prompt, (size_t)n * sizeof(int));
        in->n = n;
        run->tokens = in->tokens, run->n_tokens = n;
        run->stop_reason = stop_reason_name(r.stop_reason);
    }
    run->work = r.work;
    sequence_free(&q);
    generate_result_free(&r);
}

/* retrieve: put the span in the store as chunks of budget / k tokens (so
 * that k of them fit the budget), rank every chunk against the query, and
 * bring back the best that fit in budget tokens, best first. */
static void retrieve_for_span(Sequence *q, const int *span, int n_span, int budget, Insert *in) {
    const GenerateOptions *opt = q->opt;
    ChunkStore *st = &q->store;
    in->retrieval =
        (Retrieval){.query = opt->query, .n_query = opt->n_query, .k1 = BM25_K1, .b = BM25_B};
    int size = budget / opt->retrieve_k > 0 ? budget / opt->retrieve_k : 1;
    for (int at = 0; at < n_span; at += size)
        if (!chunk_store_add(st, span + at, n_span - at < size ? n_span - at : size)) return;
    double *scores = malloc((size_t)st->n * sizeof *scores);
    bool *returned = malloc((size_t)st->n * sizeof *returned);
    in->order = malloc((size_t)st->n * sizeof *in->order);
    in->scored = malloc((size_t)st->n * sizeof *in->scored);
    in->tokens = malloc((size_t)(budget > 0 ? budget : 1) * sizeof *in->tokens);
    if (scores != NULL && returned != NULL && in->order != NULL && in->scored != NULL &&
        in->tokens != NULL) {
        bm25_scores(st->chunks, st->n, opt->query, opt->n_query, BM25_K1, BM25_B, scores);
        int picked = retrieve_select(scores, st->chunks, st->n, opt->retrieve_k, budget, returned,
                                     in->order);
        for (int i = 0; i < picked; i++) {
            const Chunk *c = &st->chunks[in->order[i]];
            memcpy(in->tokens + in->n, c->tokens, (size_t)c->n * sizeof(int));
            in->n += c->n;
        }
        for (int i = 0; i < st->n; i++)
            in->scored[i] = (ScoredChunk){.id = i,
                                          .tokens = st->chunks[i].tokens,
                                          .n_tokens = st->chunks[i].n,
                                          .score = scores[i],
                                          .returned = returned[i]};
        in->retrieval.chunks = in->scored, in->retrieval.n_chunks = st->n;
        in->retrieval.returned = in->order, in->retrieval.n_returned = picked;
    }
    free(scores), free(returned);
}

/* The window is full: take tokens out by the policy, keeping the survivors
 * in order at positions 0..kept-1 (summarize and retrieve put a summary or
 * chunks in after the first `keep`). The cache cannot just be shifted: each
 * K row carries the RoPE rotation of the position it was computed at, and
 * every kept token moves to a new position, so they are all prefilled
 * again. */
static void shift_window(Sequence *q) {
    const GenerateOptions *opt = q->opt;
    int drop = generate_drop(opt, q->window);
    int first = opt->policy == CONTEXT_DROP_OLDEST ? 0 : opt->keep;
    /* retrieve: last time's chunks go too (they stay in the store) */
    int removed = opt->policy == CONTEXT_RETRIEVE ? q->retrieved : 0;
    const int *span = q->window_tokens + first + removed;
    Insert in = {0};
    if (opt->policy == CONTEXT_SUMMARIZE) {
        summarize_span(q->m, opt, span, drop, &in);
        work_add(&q->result->work, &in.summary.work);
    } else if (opt->policy == CONTEXT_RETRIEVE) {
        /* at most half the span comes back, so that every shift frees room */
        retrieve_for_span(q, span, drop, drop / 2, &in);
        q->retrieved = in.n;
    }
    int kept = q->n - drop - removed;
    ContextShift shift = {.policy = context_policy_name(opt->policy),
                          .window = q->window,
                          .first_dropped = first + removed,
                          .dropped = span,
                          .n_dropped = drop,
                          .kept = kept + in.n,
                          .positions_before = q->n,
                          .positions_after = kept + in.n + 1,
                          .inserted = in.tokens,
                          .n_inserted = in.n,
                          .inserted_at = first,
                          .removed_retrieved = removed,
                          .summary = opt->policy == CONTEXT_SUMMARIZE ? &in.summary : NULL,
                          .retrieval = opt->policy == CONTEXT_RETRIEVE ? &in.retrieval : NULL};
    if (q->obs != NULL && q->obs->context != NULL) q->obs->context(q->obs->ctx, &shift);
    /* [0, first) stays; then the inserted tokens; then what followed the span */
    int tail = first + removed + drop;
    memmove(q->window_tokens + first + in.n, q->window_tokens + tail,
            (size_t)(q->n - tail) * sizeof(int));
    if (in.n > 0) memcpy(q->window_tokens + first, in.tokens, (size_t)in.n * sizeof(int));
    q->n = kept + in.n;
    q->result->context_shifts++;
    insert_free(&in);
}

/* Put the token just picked at the next position; returns that position. */
static int push_picked(Sequence *q) {
    q->window_tokens[q->n++] = q->result->tokens[q->result->n_tokens - 1];
    if (q->n > q->result->positions_filled) q->result->positions_filled = q->n;
    q->result->n_decoded++;
    return q->n - 1;
}

ForwardRow sequence_begin_decode(Sequence *q) {
    int pos = push_picked(q);
    return begin_pass(q, PASS_DECODE, &q->window_tokens[pos], 1, pos, false);
}

void sequence_advance(Sequence *q) {
    PassPhase phase = PASS_DECODE;
    if (q->n == q->window) {
        shift_window(q);
        phase = PASS_REBUILD;
    } else if (q->opt->no_kv_cache) {
        phase = PASS_RECOMPUTE;
    }
    int pos = push_picked(q);
    if (phase == PASS_DECODE)
        run_pass(q, phase, &q->window_tokens[pos], 1, pos, false);
    else /* every token in the window, from position 0 */
        run_pass(q, phase, q->window_tokens, q->n, 0, false);
}

void sequence_free(Sequence *q) {
    chunk_store_free(&q->store);
    run_state_free(&q->s);
    sampler_free(&q->sampler);
    free(q->window_tokens);
    q->window_tokens = NULL;
}
