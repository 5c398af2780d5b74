/* trace_events.c: building trace events with cJSON. */
#include "trace_events.h"

#include <stdlib.h>
#include <string.h>

#include "../ref/layers.h"

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

static void observer_sample(void *ctx, int pos, const float *logits, const Sampler *sampler) {
    TraceObserver *to = ctx;
    cJSON *e = trace_event_sample(pos, logits, sampler, &to->options);
    trace_writer_write(to->writer, e);
    cJSON_Delete(e);
}

StepObserver trace_observer(TraceObserver *to) {
    return (StepObserver){to, observer_wants, observer_emit, observer_sample};
}

cJSON *trace_sampler_params(const SamplerParams *p) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "temperature", p->temperature);
    cJSON_AddNumberToObject(o, "top_k", p->top_k);
    cJSON_AddNumberToObject(o, "top_p", p->top_p);
    cJSON_AddNumberToObject(o, "min_p", p->min_p);
    cJSON_AddStringToObject(o, "order", p->order_name);
    cJSON *stages = cJSON_AddArrayToObject(o, "stages");
    for (int i = 0; i < N_STAGES; i++)
        cJSON_AddItemToArray(stages, cJSON_CreateString(sampler_stage_name(p->order[i])));
    cJSON_AddNumberToObject(o, "seed", (double)p->seed);
    cJSON_AddStringToObject(o, "rng", "xorshift");
    return o;
}

/* One stage's record: its parameter, and what it kept when it removed any. */
static void add_stage(cJSON *e, const SamplerParams *p, const StageResult *r) {
    cJSON *o = cJSON_AddObjectToObject(e, sampler_stage_name(r->stage));
    switch (r->stage) {
        case STAGE_TEMPERATURE:
            cJSON_AddNumberToObject(o, "t", p->temperature);
            break;
        case STAGE_TOP_K:
            cJSON_AddNumberToObject(o, "k", p->top_k);
            break;
        case STAGE_TOP_P:
            cJSON_AddNumberToObject(o, "p", p->top_p);
            break;
        case STAGE_MIN_P:
            cJSON_AddNumberToObject(o, "min_p", p->min_p);
            break;
        case N_STAGES:
            break;
    }
    if (!r->active) return;
    cJSON_AddNumberToObject(o, "n_kept", r->n_kept);
    if (r->kept != NULL) cJSON_AddItemToObject(o, "kept", trace_int_array(r->kept, r->n_kept));
    if (r->stage == STAGE_TOP_P) cJSON_AddItemToObject(o, "mass", trace_float(r->mass));
}

/* softmax(logits / t) over the whole vocabulary, for each listed t. */
static void add_softmax_at_temperatures(cJSON *e, const float *logits, int n,
                                        const TraceOptions *opt) {
    float *probs = malloc((size_t)n * sizeof(float));
    if (probs == NULL) return;
    cJSON *list = cJSON_AddArrayToObject(e, "softmax");
    for (int i = 0; i < opt->n_temperatures; i++) {
        for (int j = 0; j < n; j++) probs[j] = logits[j] / opt->temperatures[i];
        softmax_forward(probs, n);
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "temperature", opt->temperatures[i]);
        cJSON_AddItemToObject(o, "probs", trace_float_array(probs, n));
        cJSON_AddItemToArray(list, o);
    }
    free(probs);
}

cJSON *trace_event_sample(int pos, const float *logits, const Sampler *s, const TraceOptions *opt) {
    const SamplerParams *p = &s->params;
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "event", "sample");
    cJSON_AddNumberToObject(e, "pos", pos);
    cJSON_AddBoolToObject(e, "greedy", s->greedy);
    if (!s->greedy) {
        cJSON *order = cJSON_AddArrayToObject(e, "stages");
        for (int i = 0; i < N_STAGES; i++) {
            cJSON_AddItemToArray(order, cJSON_CreateString(sampler_stage_name(s->stages[i].stage)));
            add_stage(e, p, &s->stages[i]);
        }
        cJSON_AddItemToObject(e, "survivors", trace_int_array(s->survivors, s->n_survivors));
        cJSON_AddItemToObject(e, "probs", trace_float_array(s->survivor_probs, s->n_survivors));
        cJSON_AddItemToObject(e, "u", trace_float(s->u));
    }
    cJSON_AddNumberToObject(e, "token", s->token);
    if (opt != NULL && opt->n_temperatures > 0)
        add_softmax_at_temperatures(e, logits, s->vocab_size, opt);
    return e;
}

cJSON *trace_event_run(const Config *c, const SamplerParams *sampler, const char *prompt,
                       const int *prompt_tokens, int n_prompt, int steps) {
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
    cJSON_AddItemToObject(e, "sampler", trace_sampler_params(sampler));
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
