/* trace_options.h: what a trace records. A level sets the defaults; flags add
 * to it; filters (layers, positions, hook names) keep it small. The engine
 * asks trace_wants before it copies anything. */
#ifndef STEPWISE_TRACE_OPTIONS_H
#define STEPWISE_TRACE_OPTIONS_H

#include <stdbool.h>

#include "ref/util/error.h"
#include "ref/hooks.h"

/* Each level records everything of the levels before it, and more
 * (docs/trace-format.md, "Levels"). */
typedef enum {
    TRACE_SUMMARY,  /* run header, tokenization, done */
    TRACE_TOKENS,   /* + one forward event per pass and one token event per new token */
    TRACE_LOGITS,   /* + the logits of every computed position */
    TRACE_SAMPLING, /* + one sample event per draw (the default) */
    TRACE_LAYERS,   /* + KV rows and the main activations of every block */
    TRACE_FULL,     /* + every hook (attention scores and patterns, MLP gate/up, norms),
                       BPE merges, and snapshots of one layer's whole cache */
} TraceLevel;

typedef struct {
    int lo, hi; /* inclusive */
} PosRange;

typedef struct {
    TraceLevel level;
    bool kv_rows;        /* --trace-kv: kv events at any level */
    bool kv_full;        /* --trace-kv=full: also kv_snapshot events */
    bool bpe;            /* --trace-bpe: bpe_merge events at any level */
    bool reproducible;   /* --reproducible: leave out every measured figure */
    bool no_hash;        /* --no-hash: leave out the model files' SHA-256 */
    float *temperatures; /* --trace-temperatures (owned) */
    int n_temperatures;
    int *layers; /* --trace-layers (owned); NULL: every layer */
    int n_layers;
    PosRange *positions; /* --trace-positions (owned); NULL: every position */
    int n_positions;
    char **hooks; /* --trace-hooks glob patterns (owned); NULL: the level's */
    int n_hooks;
} TraceOptions;

/* The default: level sampling, no filters. */
void trace_options_default(TraceOptions *o);
void trace_options_free(TraceOptions *o);

/* "summary", "tokens", "logits", "sampling", "layers", "full". */
bool trace_level_parse(const char *text, TraceLevel *level, StepError *err);
const char *trace_level_name(TraceLevel level);

/* "0,3" */
bool trace_layers_parse(TraceOptions *o, const char *text, StepError *err);
/* "5-9,12" */
bool trace_positions_parse(TraceOptions *o, const char *text, StepError *err);
/* The activations a golden set holds unless told otherwise (score and
 * golden --hooks default): the residual stream entering, inside and leaving
 * every block, the attention and MLP outputs, and the final norm. */
#define TRACE_DEFAULT_HOOKS                                                                        \
    "blocks.*.resid_pre,blocks.*.attn_out,blocks.*.resid_mid,blocks.*.mlp_out,"                    \
    "blocks.*.resid_post,final_norm"

/* "blocks.*.attn.pattern,final_norm": comma-separated fnmatch patterns. */
bool trace_hooks_parse(TraceOptions *o, const char *text, StepError *err);

/* Whether every --trace-layers entry names one of the model's n_layers
 * layers (a layer the model lacks would silently trace nothing). */
bool trace_layers_check(const TraceOptions *o, int n_layers, StepError *err);

/* Whether the trace records this point at (layer, pos). */
bool trace_wants(const TraceOptions *o, HookPoint point, int layer, int pos);

/* Whether an event at pos passes the position filter. */
bool trace_position_selected(const TraceOptions *o, int pos);

/* The layer whose whole cache kv_snapshot events show: the first of
 * --trace-layers, else 0. */
int trace_snapshot_layer(const TraceOptions *o);

#endif
