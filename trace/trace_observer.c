/* trace_observer.c: which engine events become trace lines. */
#include "trace_observer.h"

#include "trace_events.h"

void trace_observer_write(TraceObserver *to, cJSON *event) {
    if (to->held != NULL) {
        cJSON_AddItemToArray(to->held, event);
        return;
    }
    trace_writer_write(to->writer, event);
    cJSON_Delete(event);
}

static bool observer_wants(void *ctx, HookPoint point, int layer, int pos) {
    const TraceObserver *to = ctx;
    return trace_wants(to->options, point, layer, pos);
}

static void observer_emit(void *ctx, const HookTensor *t) {
    trace_observer_write(ctx, trace_event_tensor(t));
}

static void observer_forward(void *ctx, const char *phase, int pos0, const int *tokens, int n) {
    TraceObserver *to = ctx;
    if (to->options->level >= TRACE_TOKENS)
        trace_observer_write(to, trace_event_forward(phase, pos0, tokens, n));
}

static void observer_sample(void *ctx, int pos, const float *logits, const Sampler *sampler) {
    TraceObserver *to = ctx;
    const TraceOptions *o = to->options;
    if (o->level >= TRACE_SAMPLING && trace_position_selected(o, pos))
        trace_observer_write(
            to, trace_event_sample(pos, logits, sampler, o->temperatures, o->n_temperatures));
    if (o->level >= TRACE_TOKENS)
        trace_observer_write(to, trace_event_token(to->tokenizer, pos + 1, sampler->token));
}

static void observer_merge(void *ctx, const BpeMerge *m) {
    TraceObserver *to = ctx;
    if (to->options->bpe || to->options->level == TRACE_FULL)
        trace_observer_write(to, trace_event_bpe_merge(m));
}

static void observer_work(void *ctx, const char *phase, int pos0, int n, const WorkCount *work) {
    TraceObserver *to = ctx;
    if (to->options->level >= TRACE_TOKENS)
        trace_observer_write(to, trace_event_work(phase, pos0, n, work));
}

static void observer_context(void *ctx, const ContextShift *shift) {
    TraceObserver *to = ctx;
    trace_observer_write(to, trace_event_context(shift, to->bytes_per_token));
}

static void observer_quant(void *ctx, const QuantRecord *r) {
    TraceObserver *to = ctx;
    const TraceOptions *o = to->options;
    if (o->level < TRACE_LAYERS || (r->pos >= 0 && !trace_position_selected(o, r->pos))) return;
    trace_observer_write(to, trace_event_quant(r));
}

StepObserver trace_step_observer(TraceObserver *to) {
    return (StepObserver){to,
                          observer_wants,
                          observer_emit,
                          observer_forward,
                          observer_sample,
                          observer_work,
                          observer_context,
                          observer_quant};
}

BpeObserver trace_bpe_observer(TraceObserver *to) {
    return (BpeObserver){to, observer_merge};
}
