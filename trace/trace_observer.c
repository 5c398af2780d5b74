/* trace_observer.c: which engine events become trace lines. */
#include "trace_observer.h"

#include "trace_events.h"

#include <stdio.h>

#include "../ref/quant_model.h"

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

static void observer_forward(void *ctx, PassPhase phase, int pos0, const int *tokens, int n) {
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

static void observer_piece(void *ctx, const char *piece, int len, int added_id) {
    TraceObserver *to = ctx;
    if (to->options->bpe || to->options->level == TRACE_FULL)
        trace_observer_write(to, trace_event_bpe_piece(piece, len, added_id));
}

static void observer_work(void *ctx, PassPhase phase, int pos0, int n, const WorkCount *work) {
    TraceObserver *to = ctx;
    if (to->options->level >= TRACE_TOKENS)
        trace_observer_write(to, trace_event_work(phase, pos0, n, work));
}

static void observer_context(void *ctx, const ContextShift *shift) {
    TraceObserver *to = ctx;
    trace_observer_write(to, trace_event_context(shift, to->bytes_per_token, to->tokenizer));
}

static void observer_quant(void *ctx, const QuantRecord *r) {
    TraceObserver *to = ctx;
    const TraceOptions *o = to->options;
    if (o->level < TRACE_LAYERS || (r->pos >= 0 && !trace_position_selected(o, r->pos))) return;
    trace_observer_write(to, trace_event_quant(r));
}

void trace_weight_quant_events(TraceObserver *to, const Model *m) {
    const QuantWeights *q = m->quant;
    if (q == NULL || to->options->level < TRACE_LAYERS) return;
    const Config *c = &m->config;
    const Weights *w = &m->weights;
    int d = c->dim, h = c->hidden_dim, kv = config_kv_dim(c);
    struct {
        const char *name;
        const QuantMatrix *qm;
        const float *src;
        int out; /* rows per layer, 0: not per layer */
    } tensors[] = {{"token_embedding", &q->token_embedding, w->token_embedding, 0},
                   {"attn.wq", &q->wq, w->wq, d},
                   {"attn.wk", &q->wk, w->wk, kv},
                   {"attn.wv", &q->wv, w->wv, kv},
                   {"attn.wo", &q->wo, w->wo, d},
                   {"mlp.w1", &q->w1, w->w1, h},
                   {"mlp.w2", &q->w2, w->w2, d},
                   {"mlp.w3", &q->w3, w->w3, h},
                   {"classifier", &q->wcls, c->shared_classifier ? NULL : w->wcls, 0}};
    for (size_t i = 0; i < sizeof tensors / sizeof tensors[0]; i++) {
        const QuantMatrix *qm = tensors[i].qm;
        if (qm->q == NULL) continue; /* a tied classifier is the embedding */
        int layers = tensors[i].out > 0 ? c->n_layers : 1;
        int rows = tensors[i].out > 0 ? tensors[i].out : qm->rows;
        for (int l = 0; l < layers; l++) {
            char name[64];
            if (tensors[i].out > 0)
                snprintf(name, sizeof name, "blocks.%d.%s", l, tensors[i].name);
            else
                snprintf(name, sizeof name, "%s", tensors[i].name);
            size_t row0 = (size_t)l * rows;
            QuantRecord r = {.tensor = name,
                             .layer = tensors[i].out > 0 ? l : -1,
                             .pos = -1,
                             .rows = rows,
                             .n = qm->cols,
                             .group = qm->group,
                             .values = tensors[i].src ? tensors[i].src + row0 * qm->cols : NULL,
                             .codes = qm->q + row0 * qm->cols,
                             .scales = qm->scales + row0 * qm->groups_per_row};
            trace_observer_write(to, trace_event_quant(&r));
        }
    }
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
    return (BpeObserver){to, observer_merge, observer_piece};
}
