/* trace_events.c: building trace events with cJSON. */
#include "trace_events.h"

static bool observer_wants(void *ctx, HookPoint point, int layer, int pos) {
    const TraceObserver *to = ctx;
    (void)layer, (void)pos;
    switch (point) {
        case HOOK_LOGITS:
            return true;
        case HOOK_KV_ROW:
            return to->options.kv;
    }
    return false;
}

static void observer_emit(void *ctx, const HookTensor *t) {
    TraceObserver *to = ctx;
    cJSON *e = cJSON_CreateObject();
    switch (t->point) {
        case HOOK_LOGITS:
            cJSON_AddStringToObject(e, "event", "logits");
            cJSON_AddNumberToObject(e, "pos", t->pos);
            cJSON_AddNumberToObject(e, "token", t->token);
            cJSON_AddItemToObject(e, "logits", trace_float_array(t->a, t->na));
            break;
        case HOOK_KV_ROW:
            cJSON_AddStringToObject(e, "event", "kv");
            cJSON_AddNumberToObject(e, "layer", t->layer);
            cJSON_AddNumberToObject(e, "pos", t->pos);
            cJSON_AddItemToObject(e, "k", trace_float_array(t->a, t->na));
            cJSON_AddItemToObject(e, "v", trace_float_array(t->b, t->nb));
            break;
    }
    trace_writer_write(to->writer, e);
    cJSON_Delete(e);
}

StepObserver trace_observer(TraceObserver *to) {
    return (StepObserver){to, observer_wants, observer_emit};
}

cJSON *trace_event_run(const Config *c, const char *prompt, const int *prompt_tokens, int n_prompt,
                       int steps) {
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "event", "run");
    cJSON_AddNumberToObject(e, "format_version", TRACE_FORMAT_VERSION);
    cJSON *m = cJSON_AddObjectToObject(e, "model");
    cJSON_AddNumberToObject(m, "dim", c->dim);
    cJSON_AddNumberToObject(m, "hidden_dim", c->hidden_dim);
    cJSON_AddNumberToObject(m, "n_layers", c->n_layers);
    cJSON_AddNumberToObject(m, "n_heads", c->n_heads);
    cJSON_AddNumberToObject(m, "n_kv_heads", c->n_kv_heads);
    cJSON_AddNumberToObject(m, "vocab_size", c->vocab_size);
    cJSON_AddNumberToObject(m, "seq_len", c->seq_len);
    cJSON_AddBoolToObject(m, "shared_classifier", c->shared_classifier);
    cJSON_AddStringToObject(e, "prompt", prompt);
    cJSON_AddItemToObject(e, "prompt_tokens", trace_int_array(prompt_tokens, n_prompt));
    cJSON_AddNumberToObject(e, "steps", steps);
    return e;
}

cJSON *trace_event_done(const char *stop_reason, const int *tokens, int n_tokens, const char *text,
                        const char *completion, const TraceTiming *timing) {
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "event", "done");
    cJSON_AddStringToObject(e, "stop_reason", stop_reason);
    cJSON_AddItemToObject(e, "tokens", trace_int_array(tokens, n_tokens));
    cJSON_AddStringToObject(e, "text", text);
    cJSON_AddStringToObject(e, "completion", completion);
    cJSON *t = cJSON_AddObjectToObject(e, "timing");
    cJSON_AddNumberToObject(t, "ttft_seconds", timing->ttft_seconds);
    cJSON_AddNumberToObject(t, "prefill_seconds", timing->prefill_seconds);
    cJSON_AddNumberToObject(t, "decode_seconds", timing->decode_seconds);
    cJSON_AddNumberToObject(t, "prefill_tokens", timing->prefill_tokens);
    cJSON_AddNumberToObject(t, "decode_tokens", timing->decode_tokens);
    return e;
}
