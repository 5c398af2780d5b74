/* trace_observer.c: which engine events become trace lines. */
#include "trace/trace_observer.h"

#include "trace/trace_events.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "ref/kernels/quant_model.h"

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
    const Weights *w = &m->weights;
    write_matrix_quant(to, "token_embedding", -1, &m->embedding, w->token_embedding);
    /* the float32 originals of each kind, every layer's after another */
    static const char *const names[LAYER_MATRICES] = {
        [MAT_WQ] = "attn.wq", [MAT_WK] = "attn.wk", [MAT_WV] = "attn.wv", [MAT_WO] = "attn.wo",
        [MAT_W1] = "mlp.w1",  [MAT_W2] = "mlp.w2",  [MAT_W3] = "mlp.w3"};
    const float *originals[LAYER_MATRICES] = {w->wq, w->wk, w->wv, w->wo, w->w1, w->w2, w->w3};
    for (int k = 0; k < LAYER_MATRICES; k++) {
        int rows, cols;
        layer_matrix_shape(c, (MatrixKind)k, &rows, &cols);
        bool mlp = k == MAT_W1 || k == MAT_W2 || k == MAT_W3;
        for (int l = 0; rows > 0 && l < c->n_layers; l++) {
            if (m->layers[l].m[k].rows == 0) continue; /* an MoE layer's MLP: its experts */
            char name[64];
            snprintf(name, sizeof name, "blocks.%d.%s", l, names[k]);
            const float *src = originals[k];
            size_t slot = (size_t)(mlp ? config_dense_slot(c, l) : l);
            write_matrix_quant(to, name, l, &m->layers[l].m[k],
                               src != NULL ? src + slot * rows * cols : NULL);
        }
    }
    /* a mixture's experts, each beside its original where it is held */
    static const char *const parts[EXPERT_MATRICES] = {"gate", "down", "up"};
    const float *experts[EXPERT_MATRICES] = {w->expert_w1, w->expert_w2, w->expert_w3};
    for (int l = 0; m->experts != NULL && l < c->n_layers; l++)
        for (int e = 0; config_layer_moe(c, l) && e < c->n_experts; e++)
            for (int k = 0; k < EXPERT_MATRICES; k++) {
                int rows, cols;
                expert_matrix_shape(c, (ExpertKind)k, &rows, &cols);
                size_t at = (size_t)config_moe_slot(c, l) * (size_t)c->n_experts + (size_t)e;
                char name[64];
                snprintf(name, sizeof name, "blocks.%d.moe.expert.%d.%s", l, e, parts[k]);
                write_matrix_quant(to, name, l, model_expert(m, l, e, (ExpertKind)k),
                                   experts[k] != NULL ? experts[k] + at * rows * cols : NULL);
            }
    if (!c->shared_classifier) /* a tied classifier is the embedding */
        write_matrix_quant(to, "classifier", -1, &m->classifier, w->wcls);
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
