/* trace_events.c: building trace events with cJSON. */
#include "trace/trace_events.h"

#include <stdlib.h>
#include <string.h>

#include "ref/util/build_info.h"
#include "ref/layers.h"
#include "trace/trace_writer.h"

/* A field's value as the run header gives it: a bool, a whole number, or
 * a float32 in its shortest form (the zero read as what it stands for). */
static cJSON *field_json(const Config *c, const ConfigField *f) {
    double v = config_field_effective(c, f);
    if (f->type == CF_TYPE_BOOL) return cJSON_CreateBool(v != 0);
    if (f->type == CF_TYPE_INT) return cJSON_CreateNumber(v);
    return trace_float((float)v);
}

/* The table's fields of one group into o, each as its `show` says. */
static void fields_json(cJSON *o, const Config *c, ConfigGroup group) {
    bool shown = false;
    for (int i = 0; i < CONFIG_FIELD_COUNT; i++) {
        const ConfigField *f = &CONFIG_FIELD_LIST[i];
        if (f->group != group) continue;
        shown = config_field_shown(c, f, shown);
        if (shown) cJSON_AddItemToObject(o, f->trace, field_json(c, f));
    }
}

cJSON *trace_config_json(const Config *c) {
    cJSON *m = cJSON_CreateObject();
    fields_json(m, c, CF_SHAPE);
    cJSON_AddNumberToObject(m, "head_dim", config_head_dim(c));
    cJSON_AddNumberToObject(m, "kv_dim", config_kv_dim(c));
    if (!config_is_llama2c(c)) cJSON_AddItemToObject(m, "arch", trace_arch_json(c));
    return m;
}

/* RoPE's scaling: its type and factor, and what the type reads. */
static cJSON *rope_scaling_json(const Config *c) {
    const RopeScaling *s = &c->rope_scaling;
    cJSON *r = cJSON_CreateObject();
    cJSON_AddStringToObject(r, "type", config_rope_scaling_name(s->type));
    cJSON_AddItemToObject(r, "factor", trace_float(s->factor));
    if (s->type == ROPE_SCALING_FACTORS) {
        cJSON *f = cJSON_AddArrayToObject(r, "factors");
        for (int i = 0; i < config_head_dim(c) / 2; i++)
            cJSON_AddItemToArray(f, trace_float(s->factors[i]));
    }
    if (s->type == ROPE_SCALING_LLAMA3) {
        cJSON_AddItemToObject(r, "low_freq_factor", trace_float(s->low_freq_factor));
        cJSON_AddItemToObject(r, "high_freq_factor", trace_float(s->high_freq_factor));
        cJSON_AddNumberToObject(r, "original_context", s->original_context);
    }
    if (s->type == ROPE_SCALING_YARN) { /* DeepSeek-V2's: the ramp, and the two factors */
        cJSON_AddNumberToObject(r, "original_context", s->original_context);
        cJSON_AddItemToObject(r, "beta_fast", trace_float(s->beta_fast));
        cJSON_AddItemToObject(r, "beta_slow", trace_float(s->beta_slow));
        cJSON_AddItemToObject(r, "mscale", trace_float(s->mscale));
        cJSON_AddItemToObject(r, "mscale_all_dim", trace_float(s->mscale_all_dim));
        cJSON_AddItemToObject(r, "attention_factor", trace_float(s->attention_factor));
    }
    if (s->type == ROPE_SCALING_LONGROPE) { /* Phi-3's: both lists, and when each applies */
        cJSON *sf = cJSON_AddArrayToObject(r, "factors");
        cJSON *lf = cJSON_AddArrayToObject(r, "long_factors");
        for (int i = 0; i < config_rope_dims(c) / 2; i++) {
            cJSON_AddItemToArray(sf, trace_float(s->factors[i]));
            cJSON_AddItemToArray(lf, trace_float(s->long_factors[i]));
        }
        cJSON_AddNumberToObject(r, "original_context", s->original_context);
        cJSON_AddItemToObject(r, "attention_factor", trace_float(s->attention_factor));
    }
    return r;
}

cJSON *trace_arch_json(const Config *c) {
    cJSON *a = cJSON_CreateObject();
    cJSON_AddStringToObject(a, "family", config_family(c));
    cJSON_AddStringToObject(a, "rope_layout",
                            c->rope_layout == ROPE_HALVES ? "halves" : "interleaved");
    if (c->rope_scaling.type != ROPE_SCALING_NONE)
        cJSON_AddItemToObject(a, "rope_scaling", rope_scaling_json(c));
    /* the block's kinds, only where they are not Llama's */
    if (c->norm == NORM_LAYER) cJSON_AddStringToObject(a, "norm", "layernorm");
    if (c->mlp != MLP_SWIGLU)
        cJSON_AddStringToObject(a, "mlp", c->mlp == MLP_GELU ? "gelu_tanh" : "geglu_tanh");
    if (c->position == POS_LEARNED) cJSON_AddStringToObject(a, "position", "learned");
    const ConfigGroup groups[] = {CF_ATTENTION, CF_ROPE, CF_NORM, CF_MLP, CF_FILES};
    for (size_t i = 0; i < sizeof groups / sizeof groups[0]; i++) fields_json(a, c, groups[i]);
    if (c->n_experts > 0) { /* a mixture of experts (moe.h) */
        cJSON *moe = cJSON_AddObjectToObject(a, "moe");
        fields_json(moe, c, CF_MOE);
        cJSON *sparse = cJSON_AddArrayToObject(moe, "moe_layers");
        for (int l = 0; l < c->n_layers; l++)
            if (config_layer_moe(c, l)) cJSON_AddItemToArray(sparse, cJSON_CreateNumber(l));
        cJSON_AddNumberToObject(moe, "active_params", (double)config_active_param_count(c));
    }
    return a;
}

/* The run header's model: its shape, and what follows from it. */
static cJSON *model_json(const Config *c) {
    cJSON *m = trace_config_json(c);
    cJSON_AddStringToObject(m, "attention", config_attention_kind(c));
    cJSON_AddNumberToObject(m, "queries_per_kv_head", c->n_heads / c->n_kv_heads);
    cJSON_AddNumberToObject(m, "params", (double)config_param_count(c));
    cJSON_AddNumberToObject(m, "weight_bytes", (double)(config_param_count(c) * sizeof(float)));
    return m;
}

/* The cache of the type the run allocates (float32, or int8 with a scale
 * per KV head, or an engine's 16-bit cache). */
static cJSON *kv_cache_json(const Config *c, KvType type) {
    cJSON *k = cJSON_CreateObject();
    bool int8 = type == KV_INT8, half = kv_type_half(type);
    cJSON_AddStringToObject(k, "formula",
                            int8   ? "tokens x n_layers x 2 (K and V) x n_kv_heads x (head_dim x 1 "
                                     "byte + a 4-byte scale)"
                            : half ? "tokens x n_layers x n_kv_heads x head_dim x 2 (K and V) x 2 "
                                     "bytes"
                                   : "tokens x n_layers x n_kv_heads x head_dim x 2 (K and V) x 4 "
                                     "bytes");
    cJSON_AddNumberToObject(k, "bytes_per_token", (double)kv_cache_bytes_of(c, 1, type));
    cJSON_AddNumberToObject(k, "bytes_full_context",
                            (double)kv_cache_bytes_of(c, c->seq_len, type));
    return k;
}

/* The run's choices apart from the model (run/run_options.h): what the
 * model's files do not say and a run may change. */
static cJSON *run_options_json(const RunOptions *run, KvType type) {
    cJSON *r = cJSON_CreateObject();
    cJSON_AddStringToObject(r, "kv_cache", KV_TYPE_NAMES[type]);
    cJSON_AddStringToObject(r, "kv_rounding", run->kv_rounding_ggml ? "llama.cpp" : "none");
    cJSON_AddStringToObject(r, "gelu", run->gelu_f16_table ? "ggml" : "exact");
    return r;
}

static cJSON *trace_settings_json(const TraceOptions *o) {
    cJSON *t = cJSON_CreateObject();
    cJSON_AddStringToObject(t, "level", trace_level_name(o->level));
    cJSON_AddBoolToObject(t, "kv_rows", o->kv_rows);
    cJSON_AddBoolToObject(t, "kv_full", o->kv_full);
    cJSON_AddBoolToObject(t, "bpe", o->bpe);
    cJSON_AddBoolToObject(t, "reproducible", o->reproducible);
    if (o->layers != NULL)
        cJSON_AddItemToObject(t, "layers", cJSON_CreateIntArray(o->layers, o->n_layers));
    if (o->positions != NULL) {
        cJSON *ranges = cJSON_AddArrayToObject(t, "positions");
        for (int i = 0; i < o->n_positions; i++) {
            int r[2] = {o->positions[i].lo, o->positions[i].hi};
            cJSON_AddItemToArray(ranges, cJSON_CreateIntArray(r, 2));
        }
    }
    if (o->hooks != NULL)
        cJSON_AddItemToObject(t, "hooks",
                              cJSON_CreateStringArray((const char *const *)o->hooks, o->n_hooks));
    if (o->n_temperatures > 0)
        cJSON_AddItemToObject(t, "temperatures",
                              trace_float_array(o->temperatures, o->n_temperatures));
    return t;
}

cJSON *trace_event_run(const Config *c, const SamplerParams *sampler, const TraceRunInfo *info,
                       const TraceOptions *opt) {
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "event", "run");
    cJSON_AddNumberToObject(e, "format_version", TRACE_FORMAT_VERSION);
    cJSON_AddStringToObject(e, "mode", info->mode);
    cJSON_AddItemToObject(e, "model", model_json(c));
    KvType kv = kv_type_for(c, info->run.kv, info->quant.kv);
    cJSON_AddItemToObject(e, "run_options", run_options_json(&info->run, kv));
    cJSON_AddItemToObject(e, "kv_cache", kv_cache_json(c, kv));
    if (sampler != NULL) cJSON_AddItemToObject(e, "sampler", trace_sampler_params(sampler));
    cJSON_AddItemToObject(e, "prompt", trace_text(info->prompt, strlen(info->prompt)));
    cJSON_AddItemToObject(e, "prompt_tokens", trace_int_array(info->prompt_tokens, info->n_prompt));
    cJSON_AddNumberToObject(e, "steps", info->steps);
    cJSON_AddItemToObject(e, "trace", trace_settings_json(opt));
    cJSON *q = cJSON_AddObjectToObject(e, "quant");
    cJSON_AddStringToObject(q, "weights", info->weight_group > 0 ? "int8" : "float32");
    cJSON_AddStringToObject(q, "activations", info->quant.activations ? "int8" : "float32");
    cJSON_AddStringToObject(q, "kv", info->quant.kv ? "int8" : "float32");
    if (info->weight_group > 0) cJSON_AddNumberToObject(q, "weight_group", info->weight_group);
    if (info->quant.activations)
        cJSON_AddNumberToObject(q, "activation_group",
                                info->weight_group > 0 ? info->weight_group : info->quant.group);
    cJSON *env = cJSON_AddObjectToObject(e, "environment");
    cJSON_AddStringToObject(env, "program", "stepwise");
    cJSON_AddStringToObject(env, "version", STEPWISE_VERSION);
    cJSON_AddStringToObject(env, "compiler", build_compiler());
    cJSON_AddStringToObject(env, "cflags", build_cflags());
    cJSON_AddStringToObject(env, "model_path", info->model_path ? info->model_path : "(built-in)");
    cJSON_AddStringToObject(env, "tokenizer_path",
                            info->tokenizer_path ? info->tokenizer_path : "(model's own)");
    if (info->model_source != NULL && info->model_source[0] != '\0')
        cJSON_AddStringToObject(env, "model_source", info->model_source);
    if (info->model_files != NULL)
        cJSON_AddItemToObject(env, "model_files", cJSON_Duplicate(info->model_files, true));
    return e;
}

cJSON *trace_event_tokenize(const Tokenizer *tok, const char *text, const int *ids, int n) {
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "event", "tokenize");
    cJSON_AddItemToObject(e, "text", trace_text(text, strlen(text)));
    cJSON_AddItemToObject(e, "ids", trace_int_array(ids, n));
    cJSON *pieces = cJSON_AddArrayToObject(e, "pieces");
    for (int i = 0; i < n; i++) {
        const char *p = tok->pieces[ids[i]];
        cJSON_AddItemToArray(pieces, trace_text(p, strlen(p)));
    }
    return e;
}

cJSON *trace_event_chat(const char *template_name, const ChatSegment *segments, int n) {
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "event", "chat");
    cJSON_AddStringToObject(e, "template", template_name);
    cJSON *list = cJSON_AddArrayToObject(e, "segments");
    for (int i = 0; i < n; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "source", segments[i].source);
        cJSON_AddNumberToObject(o, "turn", segments[i].turn);
        cJSON_AddNumberToObject(o, "start", segments[i].start);
        cJSON_AddNumberToObject(o, "end", segments[i].end);
        cJSON_AddItemToArray(list, o);
    }
    return e;
}

cJSON *trace_event_bpe_merge(const BpeMerge *m) {
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "event", "bpe_merge");
    cJSON_AddNumberToObject(e, "step", m->step);
    cJSON_AddItemToObject(e, "left", trace_text(m->left, (size_t)m->left_len));
    cJSON_AddItemToObject(e, "right", trace_text(m->right, (size_t)m->right_len));
    cJSON_AddItemToObject(e, "piece", trace_text(m->left, (size_t)(m->left_len + m->right_len)));
    cJSON_AddNumberToObject(e, "id", m->id);
    cJSON_AddItemToObject(e, "score", trace_float(m->score));
    cJSON *seq = cJSON_AddArrayToObject(e, "sequence");
    for (int i = 0; i < m->n_symbols; i++)
        cJSON_AddItemToArray(seq, trace_text(m->symbols[i], (size_t)m->symbol_lens[i]));
    return e;
}

cJSON *trace_event_bpe_piece(const char *piece, int len, int added_id) {
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "event", "bpe_piece");
    cJSON_AddItemToObject(e, "piece", trace_text(piece, (size_t)len));
    cJSON_AddItemToObject(e, "added",
                          added_id >= 0 ? cJSON_CreateNumber(added_id) : cJSON_CreateNull());
    return e;
}

cJSON *trace_event_forward(PassPhase phase, int pos0, const int *tokens, int n) {
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "event", "forward");
    cJSON_AddStringToObject(e, "phase", pass_phase_name(phase));
    cJSON_AddNumberToObject(e, "pos", pos0);
    cJSON_AddNumberToObject(e, "n_tokens", n);
    cJSON_AddItemToObject(e, "tokens", trace_int_array(tokens, n));
    return e;
}

static cJSON *work_json(cJSON *o, const WorkCount *w) {
    cJSON_AddNumberToObject(o, "macs", (double)w->macs);
    cJSON_AddNumberToObject(o, "weight_bytes", (double)w->weight_bytes);
    cJSON_AddNumberToObject(o, "kv_bytes_read", (double)w->kv_bytes_read);
    cJSON_AddNumberToObject(o, "kv_bytes_written", (double)w->kv_bytes_written);
    return o;
}

cJSON *trace_event_work(PassPhase phase, int pos0, int n_tokens, const WorkCount *w) {
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "event", "work");
    cJSON_AddStringToObject(e, "phase", pass_phase_name(phase));
    cJSON_AddNumberToObject(e, "pos", pos0);
    cJSON_AddNumberToObject(e, "n_tokens", n_tokens);
    return work_json(e, w);
}

#define QUANT_SHOWN 8 /* values of a row shown in a quant event */

cJSON *trace_event_routing(const RouteRecord *r, bool all) {
    cJSON *e = cJSON_CreateObject();
    float chosen[4096];
    for (int j = 0; j < r->k; j++) chosen[j] = r->probs[r->experts[j]];
    cJSON_AddStringToObject(e, "event", "routing");
    cJSON_AddNumberToObject(e, "layer", r->layer);
    cJSON_AddNumberToObject(e, "pos", r->pos);
    cJSON_AddNumberToObject(e, "token", r->token);
    cJSON_AddItemToObject(e, "experts", trace_int_array(r->experts, r->k));
    cJSON_AddItemToObject(e, "weights", trace_float_array(r->weights, r->k));
    cJSON_AddItemToObject(e, "probs", trace_float_array(chosen, r->k));
    if (all) {
        cJSON_AddItemToObject(e, "router_logits", trace_float_array(r->logits, r->n_experts));
        cJSON_AddItemToObject(e, "router_probs", trace_float_array(r->probs, r->n_experts));
    }
    return e;
}

cJSON *trace_event_quant(const QuantRecord *r) {
    cJSON *e = cJSON_CreateObject();
    int shown = r->n < QUANT_SHOWN ? r->n : QUANT_SHOWN;
    float deq[QUANT_SHOWN];
    int codes[QUANT_SHOWN];
    dequantize_row(r->codes, r->scales, shown, r->group, deq);
    for (int i = 0; i < shown; i++) codes[i] = r->codes[i];
    cJSON_AddStringToObject(e, "event", "quant");
    cJSON_AddStringToObject(e, "tensor", r->tensor);
    if (r->layer >= 0) cJSON_AddNumberToObject(e, "layer", r->layer);
    if (r->pos >= 0) cJSON_AddNumberToObject(e, "pos", r->pos);
    cJSON_AddNumberToObject(e, "rows", r->rows);
    cJSON_AddNumberToObject(e, "n", r->n);
    cJSON_AddNumberToObject(e, "group", r->group);
    cJSON_AddItemToObject(e, "scale", trace_float(r->scales[0]));
    if (r->values != NULL) cJSON_AddItemToObject(e, "values", trace_float_array(r->values, shown));
    cJSON_AddItemToObject(e, "codes", trace_int_array(codes, shown));
    cJSON_AddItemToObject(e, "dequantized", trace_float_array(deq, shown));
    if (r->values != NULL) { /* over every row of the tensor */
        float max_error = 0.0f;
        long collapsed = 0;
        int gpr = quant_groups(r->n, r->group);
        for (int row = 0; row < r->rows; row++) {
            size_t off = (size_t)row * r->n;
            QuantStats st = quant_row_stats(r->values + off, r->codes + off,
                                            r->scales + (size_t)row * gpr, r->n, r->group);
            max_error = st.max_error > max_error ? st.max_error : max_error;
            collapsed += st.collapsed;
        }
        cJSON_AddItemToObject(e, "max_error", trace_float(max_error));
        cJSON_AddNumberToObject(e, "collapsed", (double)collapsed);
    }
    return e;
}

cJSON *trace_event_tensor(const HookTensor *t) {
    cJSON *e = cJSON_CreateObject();
    int n = t->rows * t->cols;
    switch (t->point) {
        case HOOK_LOGITS:
            cJSON_AddStringToObject(e, "event", "logits");
            cJSON_AddNumberToObject(e, "pos", t->pos);
            cJSON_AddNumberToObject(e, "token", t->token);
            cJSON_AddItemToObject(e, "logits", trace_float_array(t->a, n));
            return e;
        case HOOK_KV_ROW:
            cJSON_AddStringToObject(e, "event", "kv");
            cJSON_AddNumberToObject(e, "layer", t->layer);
            cJSON_AddNumberToObject(e, "pos", t->pos);
            cJSON_AddItemToObject(e, "k", trace_float_array(t->a, n));
            cJSON_AddItemToObject(e, "v", trace_float_array(t->b, n));
            return e;
        case HOOK_KV_SNAPSHOT:
            cJSON_AddStringToObject(e, "event", "kv_snapshot");
            cJSON_AddNumberToObject(e, "layer", t->layer);
            cJSON_AddNumberToObject(e, "pos", t->pos);
            cJSON_AddNumberToObject(e, "n_pos", t->rows);
            cJSON_AddItemToObject(e, "k", trace_float_matrix(t->a, t->rows, t->cols));
            cJSON_AddItemToObject(e, "v", trace_float_matrix(t->b, t->rows, t->cols));
            return e;
        default:
            break;
    }
    char name[64];
    cJSON_AddStringToObject(e, "event", "activation");
    cJSON_AddStringToObject(e, "hook", hook_name(t->point, t->layer, name, sizeof name));
    if (t->layer >= 0) cJSON_AddNumberToObject(e, "layer", t->layer);
    cJSON_AddNumberToObject(e, "pos", t->pos);
    if (t->head >= 0) cJSON_AddNumberToObject(e, "head", t->head);
    cJSON_AddNumberToObject(e, "token", t->token);
    int shape[2] = {t->rows, t->cols};
    cJSON_AddItemToObject(e, "shape",
                          t->rows == 1 ? cJSON_CreateIntArray(&t->cols, 1)
                                       : cJSON_CreateIntArray(shape, 2));
    cJSON_AddItemToObject(e, "data", trace_float_array(t->a, n));
    return e;
}

cJSON *trace_sampler_params(const SamplerParams *p) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToObject(o, "temperature", trace_float(p->temperature));
    cJSON_AddNumberToObject(o, "top_k", p->top_k);
    cJSON_AddItemToObject(o, "top_p", trace_float(p->top_p));
    cJSON_AddItemToObject(o, "min_p", trace_float(p->min_p));
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
            cJSON_AddItemToObject(o, "t", trace_float(p->temperature));
            break;
        case STAGE_TOP_K:
            cJSON_AddNumberToObject(o, "k", p->top_k);
            break;
        case STAGE_TOP_P:
            cJSON_AddItemToObject(o, "p", trace_float(p->top_p));
            break;
        case STAGE_MIN_P:
            cJSON_AddItemToObject(o, "min_p", trace_float(p->min_p));
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
static void add_softmax_at_temperatures(cJSON *e, const float *logits, int n, const float *temps,
                                        int n_temps) {
    float *probs = malloc((size_t)n * sizeof(float));
    if (probs == NULL) return;
    cJSON *list = cJSON_AddArrayToObject(e, "softmax");
    for (int i = 0; i < n_temps; i++) {
        for (int j = 0; j < n; j++) probs[j] = logits[j] / temps[i];
        softmax_forward(probs, n);
        cJSON *o = cJSON_CreateObject();
        cJSON_AddItemToObject(o, "temperature", trace_float(temps[i]));
        cJSON_AddItemToObject(o, "probs", trace_float_array(probs, n));
        cJSON_AddItemToArray(list, o);
    }
    free(probs);
}

cJSON *trace_event_sample(int pos, const float *logits, const Sampler *s, const float *temperatures,
                          int n_temperatures) {
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
        cJSON_AddNumberToObject(e, "n_survivors", s->n_candidates);
        /* With every filter off the survivors are the whole vocabulary and
         * their probabilities are softmax(logits / T): not repeated. */
        if (s->n_survivors > 0) {
            cJSON_AddItemToObject(e, "survivors", trace_int_array(s->survivors, s->n_survivors));
            cJSON_AddItemToObject(e, "probs", trace_float_array(s->survivor_probs, s->n_survivors));
        }
        cJSON_AddItemToObject(e, "u", trace_float(s->u));
    }
    cJSON_AddNumberToObject(e, "token", s->token);
    if (n_temperatures > 0)
        add_softmax_at_temperatures(e, logits, s->vocab_size, temperatures, n_temperatures);
    return e;
}

cJSON *trace_event_token(const Tokenizer *tok, int pos, int token) {
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "event", "token");
    cJSON_AddNumberToObject(e, "pos", pos);
    cJSON_AddNumberToObject(e, "token", token);
    const char *piece = tok->pieces[token];
    cJSON_AddItemToObject(e, "piece", trace_text(piece, strlen(piece)));
    return e;
}

cJSON *trace_event_done(const TraceDone *d) {
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "event", "done");
    cJSON_AddStringToObject(e, "stop_reason", d->stop_reason);
    cJSON_AddItemToObject(e, "tokens", trace_int_array(d->tokens, d->n_tokens));
    cJSON_AddItemToObject(e, "text", trace_text(d->text, strlen(d->text)));
    cJSON_AddItemToObject(e, "completion", trace_text(d->completion, strlen(d->completion)));
    cJSON_AddNumberToObject(e, "prefill_tokens", d->prefill_tokens);
    cJSON_AddNumberToObject(e, "decode_tokens", d->decode_tokens);
    cJSON_AddNumberToObject(e, "context_shifts", d->context_shifts);
    work_json(cJSON_AddObjectToObject(e, "work"), &d->work);
    cJSON *kv = cJSON_AddObjectToObject(e, "kv_cache");
    cJSON_AddNumberToObject(kv, "bytes_per_token", (double)d->kv_bytes_per_token);
    cJSON_AddNumberToObject(kv, "allocated_bytes", (double)d->kv_allocated_bytes);
    cJSON_AddNumberToObject(kv, "peak_bytes", (double)d->kv_peak_bytes);
    if (!d->measured) return e;
    cJSON *t = cJSON_AddObjectToObject(e, "measured");
    cJSON_AddNumberToObject(t, "ttft_seconds", d->ttft_seconds);
    cJSON_AddNumberToObject(t, "prefill_seconds", d->prefill_seconds);
    cJSON_AddNumberToObject(t, "decode_seconds", d->decode_seconds);
    cJSON_AddNumberToObject(t, "total_seconds", d->total_seconds);
    cJSON_AddNumberToObject(t, "prefill_tokens_per_second",
                            d->prefill_seconds > 0 ? d->prefill_tokens / d->prefill_seconds : 0);
    cJSON_AddNumberToObject(t, "decode_tokens_per_second",
                            d->decode_seconds > 0 ? d->decode_tokens / d->decode_seconds : 0);
    cJSON_AddNumberToObject(t, "peak_rss_bytes", (double)d->peak_rss_bytes);
    return e;
}

cJSON *trace_event_logprobs(const ScoredPosition *sp, const Tokenizer *tok) {
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "event", "logprobs");
    cJSON_AddNumberToObject(e, "pos", sp->pos);
    cJSON_AddNumberToObject(e, "token", sp->token);
    if (sp->next >= 0) {
        cJSON_AddNumberToObject(e, "next", sp->next);
        cJSON_AddNumberToObject(e, "logprob", sp->logprob_next);
    }
    cJSON *top = cJSON_AddArrayToObject(e, "top");
    for (int i = 0; i < sp->n_top; i++) {
        cJSON *t = cJSON_CreateObject();
        int id = sp->top_ids[i];
        cJSON_AddNumberToObject(t, "token", id);
        const char *piece = tok != NULL ? tok->pieces[id] : "";
        cJSON_AddItemToObject(t, "piece", trace_text(piece, strlen(piece)));
        cJSON_AddNumberToObject(t, "logprob", sp->top_logprobs[i]);
        cJSON_AddItemToArray(top, t);
    }
    return e;
}

cJSON *trace_event_scored(const ScoreResult *r, const ScoreMeasured *measured) {
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "event", "scored");
    cJSON_AddNumberToObject(e, "n_tokens", r->n);
    cJSON_AddNumberToObject(e, "n_predicted", r->n - 1);
    cJSON *ids = cJSON_AddArrayToObject(e, "token_ids");
    for (int i = 0; i < r->n; i++)
        cJSON_AddItemToArray(ids, cJSON_CreateNumber(r->positions[i].token));
    cJSON_AddNumberToObject(e, "total_logprob", r->total_logprob);
    cJSON_AddNumberToObject(e, "cross_entropy", r->cross_entropy);
    cJSON_AddNumberToObject(e, "perplexity", r->perplexity);
    work_json(cJSON_AddObjectToObject(e, "work"), &r->work);
    if (measured != NULL) {
        cJSON *m = cJSON_AddObjectToObject(e, "measured");
        cJSON_AddNumberToObject(m, "total_seconds", measured->total_seconds);
        cJSON_AddNumberToObject(m, "peak_rss_bytes", (double)measured->peak_rss_bytes);
    }
    return e;
}

cJSON *trace_event_error(const char *kind, const char *message, const int *tokens, int n_tokens) {
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "event", "error");
    cJSON_AddStringToObject(e, "kind", kind);
    cJSON_AddItemToObject(e, "message", trace_text(message, strlen(message)));
    cJSON_AddItemToObject(e, "tokens", trace_int_array(tokens, n_tokens));
    return e;
}

/* Length of the valid UTF-8 sequence at s (0 if invalid or NUL). */
static size_t valid_utf8_len(const unsigned char *s, size_t avail) {
    if (s[0] == 0) return 0;
    if (s[0] < 0x80) return 1;
    size_t n = (s[0] >> 5) == 0x6 ? 2 : (s[0] >> 4) == 0xE ? 3 : (s[0] >> 3) == 0x1E ? 4 : 0;
    if (n == 0 || n > avail) return 0;
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0;
    }
    return n;
}

cJSON *trace_text(const char *text, size_t n) {
    char *clean = malloc(n * 3 + 1); /* each bad byte may become 3 bytes of U+FFFD */
    if (clean == NULL) return cJSON_CreateString("");
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        size_t k = valid_utf8_len((const unsigned char *)text + i, n - i);
        if (k == 0) {
            memcpy(clean + o, "\xEF\xBF\xBD", 3), o += 3, i++;
        } else {
            memcpy(clean + o, text + i, k), o += k, i += k;
        }
    }
    clean[o] = '\0';
    cJSON *s = cJSON_CreateString(clean);
    free(clean);
    return s;
}
