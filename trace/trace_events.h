/* trace_events.h: the events of a stepwise trace, one JSON object per line.
 * docs/trace-format.md is the reference for every field. */
#ifndef STEPWISE_TRACE_EVENTS_H
#define STEPWISE_TRACE_EVENTS_H

#include <cjson/cJSON.h>

#include "../ref/config.h"
#include "../ref/hooks.h"
#include "trace_writer.h"

#define TRACE_FORMAT_VERSION 1

/* What the trace records beyond its defaults. */
typedef struct {
    bool kv;                   /* one "kv" event per cache row written */
    const float *temperatures; /* --trace-temperatures: a full softmax at each, per draw */
    int n_temperatures;
} TraceOptions;

/* The observer's state: where events go and which are wanted. */
typedef struct {
    TraceWriter *writer;
    TraceOptions options;
} TraceObserver;

/* A StepObserver that writes "logits", "sample" and (with options.kv) "kv" events.
 * The observer points at `to`, which must outlive it. */
StepObserver trace_observer(TraceObserver *to);

/* The first event: {"event":"run", "format_version", "model":{config},
 * "prompt", "prompt_tokens", "steps"}. Caller owns the result. */
cJSON *trace_event_run(const Config *c, const SamplerParams *sampler, const char *prompt,
                       const int *prompt_tokens, int n_prompt, int steps);

/* {"event":"sample", "pos", ...}: the record of one draw (see
 * docs/trace-format.md). logits are the raw logits at pos. */
cJSON *trace_event_sample(int pos, const float *logits, const Sampler *s, const TraceOptions *opt);

/* {"temperature", "order", "stages", "top_k", "top_p", "min_p", "seed", "rng"}. */
cJSON *trace_sampler_params(const SamplerParams *p);

/* Timing of a run; every wall-clock figure of a trace sits under one key. */
typedef struct {
    double ttft_seconds, prefill_seconds, decode_seconds;
    int prefill_tokens, decode_tokens;
} TraceTiming;

/* The last event: {"event":"done", "stop_reason", "tokens", "text",
 * "completion", "timing":{...}}. Caller owns the result. */
cJSON *trace_event_done(const char *stop_reason, const int *tokens, int n_tokens, const char *text,
                        const char *completion, const TraceTiming *timing);

#endif
