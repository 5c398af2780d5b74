/* trace_observer.c: which engine events become trace lines. */
#include "trace/trace_observer.h"

#include "trace/trace_events.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "ref/model/model_quant.h"

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

/* A hook's values as rows of the tensor file: the logits, a KV row's K and
 * V, an activation under its hook name, or one head's attention scores or
 * pattern (its positions 0..pos, padded to the run's: -inf scores, 0
 * pattern, as the causal mask makes them). */
static void tensor_rows(const TraceObserver *to, const HookTensor *t) {
    TensorFile *tf = to->tensors;
    char name[64];
    int width = t->rows * t->cols;
    if (t->head >= 0) {
        hook_name(t->point, t->layer, name, sizeof name);
        tensor_file_head_row(tf, name, t->layer, t->pos, t->head, to->tensor_heads, to->tensor_keys,
                             t->a, width, t->point == HOOK_ATTN_SCORES ? -INFINITY : 0.0f);
    } else if (t->point == HOOK_LOGITS) {
        tensor_file_row(tf, "logits", TENSOR_LOGITS, -1, t->pos, t->a, width);
    } else if (t->point == HOOK_KV_ROW) {
        snprintf(name, sizeof name, "kv.%d.k", t->layer);
        tensor_file_row(tf, name, TENSOR_KV_K, t->layer, t->pos, t->a, width);
        snprintf(name, sizeof name, "kv.%d.v", t->layer);
        tensor_file_row(tf, name, TENSOR_KV_V, t->layer, t->pos, t->b, width);
    } else {
        hook_name(t->point, t->layer, name, sizeof name);
        tensor_file_row(tf, name, TENSOR_ACTIVATION, t->layer, t->pos, t->a, width);
    }
}

static void observer_emit(void *ctx, const HookTensor *t) {
    TraceObserver *to = ctx;
    bool per_head = t->head >= 0 && (t->point == HOOK_ATTN_SCORES || t->point == HOOK_ATTN_PATTERN);
    if (to->tensors != NULL && (t->head < 0 || per_head) && t->point != HOOK_KV_SNAPSHOT)
        tensor_rows(to, t);
    else
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

/* One int8 matrix as a quant event: its codes and scales gathered row by
 * row (from either layout), beside the float32 originals when the model
 * still holds them (src [rows, cols], or NULL). */
static void write_matrix_quant(TraceObserver *to, const char *name, int layer, const Matrix *q,
                               const float *src) {
    size_t groups = (size_t)quant_groups(q->cols, q->group);
    int8_t *codes = malloc((size_t)q->rows * (size_t)q->cols);
    float *scales = malloc((size_t)q->rows * groups * sizeof(float));
    if (codes == NULL || scales == NULL) { /* the trace goes without it; the run does not */
        free(codes), free(scales);
        return;
    }
    for (int r = 0; r < q->rows; r++)
        matrix_q8_row(q, r, codes + (size_t)r * q->cols, scales + (size_t)r * groups);
    QuantRecord rec = {.tensor = name,
                       .layer = layer,
                       .pos = -1,
                       .rows = q->rows,
                       .n = q->cols,
                       .group = q->group,
                       .values = src,
                       .codes = codes,
                       .scales = scales};
    trace_observer_write(to, trace_event_quant(&rec));
    free(codes), free(scales);
}

void trace_weight_quant_events(TraceObserver *to, const Model *m) {
    if (m->weight_group == 0 || to->options->level < TRACE_LAYERS) return;
    const Config *c = &m->config;
    int n = model_matrix_count(m);
    write_matrix_quant(to, "token_embedding", -1, &m->embedding, model_matrix_original(m, n));
    /* each kind over every layer that has it, then the experts; each beside
     * its float32 original where the model holds it */
    int layer_ones = c->n_layers * LAYER_MATRICES;
    for (int r = 0; r < n; r++) {
        int i = r < layer_ones ? r % c->n_layers * LAYER_MATRICES + r / c->n_layers : r;
        MatrixPlace p = model_matrix_place(m, i);
        if (p.rows == 0 || model_matrix_at(m, i)->rows == 0) continue;
        char name[64];
        model_matrix_name(m, i, name, sizeof name);
        write_matrix_quant(to, name, p.layer, model_matrix_at(m, i), model_matrix_original(m, i));
    }
    if (!c->shared_classifier) /* a tied classifier is the embedding */
        write_matrix_quant(to, "classifier", -1, &m->classifier, model_matrix_original(m, n + 1));
}

/* Each token's routing (MoE): the choice from the tokens level, every
 * expert's logit and probability from the layers level. */
static void observer_route(void *ctx, const RouteRecord *r) {
    TraceObserver *to = ctx;
    const TraceOptions *o = to->options;
    if (o->level < TRACE_TOKENS || !trace_position_selected(o, r->pos)) return;
    trace_observer_write(to, trace_event_routing(r, o->level >= TRACE_LAYERS));
}

StepObserver trace_step_observer(TraceObserver *to) {
    return (StepObserver){to,
                          observer_wants,
                          observer_emit,
                          observer_forward,
                          observer_sample,
                          observer_work,
                          observer_context,
                          observer_quant,
                          observer_route};
}

BpeObserver trace_bpe_observer(TraceObserver *to) {
    return (BpeObserver){to, observer_merge, observer_piece};
}
