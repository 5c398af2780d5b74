/* trace_observer.h: the trace as an observer of the engine. It implements
 * the engine's StepObserver (and the tokenizer's BpeObserver), decides with
 * TraceOptions what to record, and writes the events. */
#ifndef STEPWISE_TRACE_OBSERVER_H
#define STEPWISE_TRACE_OBSERVER_H

#include "ref/hooks.h"
#include "ref/model/model.h"
#include "ref/text/tokenizer.h"
#include "trace/tensor_file.h"
#include "trace/trace_options.h"
#include "trace/trace_writer.h"

typedef struct {
    TraceWriter *writer;
    const TraceOptions *options;
    const Tokenizer *tokenizer;    /* for the pieces of token events */
    uint64_t bytes_per_token;      /* of the KV cache, for context events */
    cJSON *held;                   /* when not NULL, events are appended here instead of written */
    TensorFile *tensors;           /* when not NULL, the logits, KV rows and the activations go
                                      here as tensors, not as events */
    int tensor_heads, tensor_keys; /* with tensors: the query heads, and the positions a per-head
                                      attention row spans (the run's last position + 1) */
} TraceObserver;

/* Observers pointing at `to`, which must outlive them. */
StepObserver trace_step_observer(TraceObserver *to);
BpeObserver trace_bpe_observer(TraceObserver *to);

/* One quant event per quantized weight tensor of m (per layer for the
 * block matrices), at level layers and above. */
void trace_weight_quant_events(TraceObserver *to, const Model *m);

/* Write one event and delete it (or hold it, see `held`). */
/* (quant events: at level layers and above, within the position filter) */
void trace_observer_write(TraceObserver *to, cJSON *event);

#endif
