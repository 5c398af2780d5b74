/* trace_options.c: levels, filters, and the decision of what to record. */
#include "trace/trace_options.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

static const char *const LEVEL_NAMES[] = {"summary",  "tokens", "logits",
                                          "sampling", "layers", "full"};

void trace_options_default(TraceOptions *o) {
    *o = (TraceOptions){.level = TRACE_SAMPLING};
}

void trace_options_free(TraceOptions *o) {
    free(o->temperatures);
    free(o->layers);
    free(o->positions);
    for (int i = 0; i < o->n_hooks; i++) free(o->hooks[i]);
    free(o->hooks);
    trace_options_default(o);
}

bool trace_level_parse(const char *text, TraceLevel *level, StepError *err) {
    for (int i = 0; i <= TRACE_FULL; i++) {
        if (strcmp(text, LEVEL_NAMES[i]) == 0) {
            *level = (TraceLevel)i;
            return true;
        }
    }
    return step_fail(
        err, "unknown --trace-level '%s' (summary, tokens, logits, sampling, layers, full)", text);
}

const char *trace_level_name(TraceLevel level) {
    return LEVEL_NAMES[level];
}

/* A whole non-negative decimal number from s[0..n). */
static bool parse_index(const char *s, size_t n, int *out) {
    if (n == 0 || n > 9) return false;
    int v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return false;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return true;
}

/* Count the comma-separated items of text (at least one). */
static int count_items(const char *text) {
    int n = 1;
    for (const char *c = text; *c; c++) n += *c == ',';
    return n;
}

bool trace_layers_parse(TraceOptions *o, const char *text, StepError *err) {
    free(o->layers);
    o->n_layers = 0;
    o->layers = malloc((size_t)count_items(text) * sizeof(int));
    if (o->layers == NULL) return step_fail(err, "--trace-layers: out of memory");
    for (const char *item = text;; item++) {
        const char *end = strchr(item, ',');
        size_t n = end ? (size_t)(end - item) : strlen(item);
        if (!parse_index(item, n, &o->layers[o->n_layers++]))
            return step_fail(err, "--trace-layers expects layer numbers like 0,3, got '%s'", text);
        if (end == NULL) return true;
        item = end;
    }
}

bool trace_positions_parse(TraceOptions *o, const char *text, StepError *err) {
    free(o->positions);
    o->n_positions = 0;
    o->positions = malloc((size_t)count_items(text) * sizeof(PosRange));
    if (o->positions == NULL) return step_fail(err, "--trace-positions: out of memory");
    for (const char *item = text;; item++) {
        const char *end = strchr(item, ',');
        size_t n = end ? (size_t)(end - item) : strlen(item);
        const char *dash = memchr(item, '-', n);
        PosRange r;
        bool ok = dash == NULL ? parse_index(item, n, &r.lo) && (r.hi = r.lo, true)
                               : parse_index(item, (size_t)(dash - item), &r.lo) &&
                                     parse_index(dash + 1, n - (size_t)(dash - item) - 1, &r.hi);
        if (!ok || r.hi < r.lo)
            return step_fail(err, "--trace-positions expects ranges like 5-9,12, got '%s'", text);
        o->positions[o->n_positions++] = r;
        if (end == NULL) return true;
        item = end;
    }
}

bool trace_hooks_parse(TraceOptions *o, const char *text, StepError *err) {
    for (int i = 0; i < o->n_hooks; i++) free(o->hooks[i]);
    free(o->hooks);
    o->n_hooks = 0;
    o->hooks = calloc((size_t)count_items(text), sizeof(char *));
    if (o->hooks == NULL) return step_fail(err, "--trace-hooks: out of memory");
    for (const char *item = text;; item++) {
        const char *end = strchr(item, ',');
        size_t n = end ? (size_t)(end - item) : strlen(item);
        if (n == 0) return step_fail(err, "--trace-hooks has an empty pattern in '%s'", text);
        o->hooks[o->n_hooks] = strndup(item, n);
        if (o->hooks[o->n_hooks++] == NULL) return step_fail(err, "--trace-hooks: out of memory");
        if (end == NULL) return true;
        item = end;
    }
}

bool trace_position_selected(const TraceOptions *o, int pos) {
    if (o->positions == NULL) return true;
    for (int i = 0; i < o->n_positions; i++) {
        if (pos >= o->positions[i].lo && pos <= o->positions[i].hi) return true;
    }
    return false;
}

static bool layer_selected(const TraceOptions *o, int layer) {
    if (o->layers == NULL) return true;
    for (int i = 0; i < o->n_layers; i++) {
        if (o->layers[i] == layer) return true;
    }
    return false;
}

int trace_snapshot_layer(const TraceOptions *o) {
    return o->layers != NULL ? o->layers[0] : 0;
}

/* The activations the layers level records; full records every hook. */
static bool in_layers_level(HookPoint point) {
    switch (point) {
        case HOOK_RESID_PRE:
        case HOOK_ATTN_Q:
        case HOOK_ATTN_K:
        case HOOK_ATTN_V:
        case HOOK_ATTN_LATENT: /* MLA's cache rows */
        case HOOK_ATTN_K_ROPE:
        case HOOK_ATTN_Z:
        case HOOK_ATTN_OUT:
        case HOOK_ATTN_POST_NORM:
        case HOOK_RESID_MID:
        case HOOK_MLP_HIDDEN:
        case HOOK_MLP_OUT:
        case HOOK_MLP_POST_NORM:
        case HOOK_RESID_POST:
        case HOOK_FINAL_NORM:
            return true;
        default:
            return false;
    }
}

static bool activation_wanted(const TraceOptions *o, HookPoint point, int layer) {
    if (o->hooks == NULL)
        return o->level == TRACE_FULL || (o->level == TRACE_LAYERS && in_layers_level(point));
    char name[64];
    hook_name(point, layer, name, sizeof name);
    for (int i = 0; i < o->n_hooks; i++) {
        if (fnmatch(o->hooks[i], name, 0) == 0) return true;
    }
    return false;
}

bool trace_wants(const TraceOptions *o, HookPoint point, int layer, int pos) {
    if (!trace_position_selected(o, pos)) return false;
    bool has_layer = hook_in_block(point) || point == HOOK_KV_ROW || point == HOOK_KV_SNAPSHOT;
    if (has_layer && !layer_selected(o, layer)) return false;
    switch (point) {
        case HOOK_LOGITS:
            return o->level >= TRACE_LOGITS;
        case HOOK_KV_ROW:
            return o->kv_rows || o->kv_full || o->level >= TRACE_LAYERS;
        case HOOK_KV_SNAPSHOT:
            return (o->kv_full || o->level == TRACE_FULL) && layer == trace_snapshot_layer(o);
        case N_HOOKS:
            return false;
        default:
            return activation_wanted(o, point, layer);
    }
}

bool trace_layers_check(const TraceOptions *o, int n_layers, StepError *err) {
    for (int i = 0; i < o->n_layers; i++) {
        if (o->layers[i] >= n_layers)
            return step_fail(err, "--trace-layers %d: the model has layers 0 to %d", o->layers[i],
                             n_layers - 1);
    }
    return true;
}
