/* trace_events.h: the events of a stepwise trace, one JSON object per line.
 * Each builder returns a new cJSON object the caller owns.
 * docs/trace-format.md is the reference for every field. */
#ifndef STEPWISE_TRACE_EVENTS_H
#define STEPWISE_TRACE_EVENTS_H

#include <cjson/cJSON.h>

#include "ref/text/chat.h"
#include "ref/config.h"
#include "ref/context_shift.h"
#include "ref/hooks.h"
#include "ref/kernels/quant.h"
#include "ref/sampler.h"
#include "ref/run/run_options.h"
#include "ref/score.h"
#include "ref/text/tokenizer.h"
#include "trace/trace_options.h"

/* 2: the run's choices in the header's run_options block (version 1 had
 * them in model.arch); readers take both (docs/trace-format.md). */
#define TRACE_FORMAT_VERSION 2

/* What the run header describes beyond the model and sampler. */
typedef struct {
    const char *mode; /* "generate" or "score" */
    const char *prompt;
    const int *prompt_tokens;
    int n_prompt;
    int steps;
    const char *model_path;     /* NULL: the built-in tiny model */
    const char *tokenizer_path; /* NULL: the model's own */
    const char *model_source;   /* Model.source, or NULL */
    const cJSON *model_files;   /* the model's files and their SHA-256 (cli/identity.h), or NULL */
    int weight_group;           /* the weights' group when int8, else 0 */
    QuantRuntime quant;         /* activations and KV cache */
    RunOptions run;             /* the run's choices (Model.run): the run_options block */
} TraceRunInfo;

/* A model's shape as JSON: dim, hidden_dim, n_layers, n_heads, n_kv_heads,
 * vocab_size, seq_len, shared_classifier, head_dim, kv_dim (the run header's
 * "model" starts with these; `stepwise inspect --json` prints them). */
cJSON *trace_config_json(const Config *c);

/* The architecture's fields (config.h) beyond the shape: RoPE layout, theta
 * and scaling, q/k/v biases, q/k norms, norm epsilon. trace_config_json
 * adds it as "arch" when the model is not llama2.c's architecture. */
cJSON *trace_arch_json(const Config *c);

/* {"event":"run", ...}: format version, model and derived facts, the run's
 * choices (run_options: the cache's type, the rounding choices), KV-cache
 * sizes, sampler, prompt, trace settings; what varies between builds and
 * machines sits under "environment". The kernels are not recorded: they
 * never change a number. */
cJSON *trace_event_run(const Config *c, const SamplerParams *sampler, const TraceRunInfo *info,
                       const TraceOptions *opt);

/* {"event":"logprobs", "pos", "token", "next", "logprob", "top"}: one scored
 * position, its top tokens with their pieces. */
cJSON *trace_event_logprobs(const ScoredPosition *sp, const Tokenizer *tok);

/* {"event":"scored", ...}: the last line of a score file. measured may be
 * NULL (--reproducible). */
typedef struct {
    double total_seconds;
    uint64_t peak_rss_bytes;
} ScoreMeasured;
cJSON *trace_event_scored(const ScoreResult *r, const ScoreMeasured *measured);

/* {"event":"tokenize", "text", "ids", "pieces"}. */
cJSON *trace_event_tokenize(const Tokenizer *tok, const char *text, const int *ids, int n);

/* {"event":"chat", "template", "segments":[{"source","turn","start","end"}]}:
 * which tokens of an assembled conversation came from where. */
cJSON *trace_event_chat(const char *template_name, const ChatSegment *segments, int n);

/* {"event":"bpe_merge", "step", "left", "right", "piece", "id", "score", "sequence"}. */
cJSON *trace_event_bpe_merge(const BpeMerge *m);

/* {"event":"bpe_piece", "piece", "added"}: one piece a tokenizer.json's
 * pre-tokenizer cut, as the vocabulary spells it ("Ġthe"), before its
 * merges; added is the id of an added token matched whole, else null. */
cJSON *trace_event_bpe_piece(const char *piece, int len, int added_id);

/* {"event":"forward", "phase", "pos", "n_tokens", "tokens"}. */
cJSON *trace_event_forward(PassPhase phase, int pos0, const int *tokens, int n);

/* {"event":"work", "phase", "pos", "n_tokens", "macs", "weight_bytes",
 * "kv_bytes_read", "kv_bytes_written"}: what one forward pass did. */
cJSON *trace_event_work(PassPhase phase, int pos0, int n_tokens, const WorkCount *w);

/* {"event":"context", "policy", "window", "dropped", ...}: a context policy
 * dropping tokens at a full window; summarize and retrieve add "inserted"
 * (with its text and position), summarize its nested run as "summary",
 * retrieve its ranking as "retrieval". tok (may be NULL) decodes the text. */
cJSON *trace_event_context(const ContextShift *shift, uint64_t bytes_per_token,
                           const Tokenizer *tok);

/* {"event":"quant", "tensor", "group", "scale", "values", "codes",
 * "dequantized", "max_error", "collapsed"}: one quantized row, its first
 * values shown (the whole row counted). */
cJSON *trace_event_quant(const QuantRecord *r);

/* One token's routing in one MoE layer: the chosen experts and their
 * weights and probabilities; with all (the layers level and above) the
 * router's logits and the softmax over every expert too. */
cJSON *trace_event_routing(const RouteRecord *r, bool all);

/* "logits", "kv", "kv_snapshot" or "activation", by the tensor's point. */
cJSON *trace_event_tensor(const HookTensor *t);

/* {"event":"sample", "pos", ...}: the record of one draw. logits are the raw
 * logits at pos, needed only for temperatures (--trace-temperatures). */
cJSON *trace_event_sample(int pos, const float *logits, const Sampler *s, const float *temperatures,
                          int n_temperatures);

/* {"event":"token", "pos", "token", "piece"}: a token joining the sequence. */
cJSON *trace_event_token(const Tokenizer *tok, int pos, int token);

/* The sampler's settings: temperature, top_k, top_p, min_p, order, stages, seed, rng. */
cJSON *trace_sampler_params(const SamplerParams *p);

/* The end of a run. Measured figures (clock, memory) sit under "measured" only. */
typedef struct {
    const char *stop_reason;
    const int *tokens;
    int n_tokens;
    const char *text, *completion;
    int prefill_tokens, decode_tokens;
    int context_shifts;
    uint64_t kv_bytes_per_token, kv_allocated_bytes, kv_peak_bytes;
    WorkCount work; /* every pass together */
    bool measured;  /* false (--reproducible): leave out the measured figures below */
    double ttft_seconds, prefill_seconds, decode_seconds, total_seconds;
    uint64_t peak_rss_bytes; /* the process's peak resident memory */
} TraceDone;

cJSON *trace_event_done(const TraceDone *d);

/* {"event":"error", "kind", "message", "tokens"}: how a run that did not
 * finish ended. kind: "bad_input", "interrupted" or "engine". */
cJSON *trace_event_error(const char *kind, const char *message, const int *tokens, int n_tokens);

/* A JSON string of text[0..n): invalid UTF-8 and NUL become U+FFFD, so the
 * line stays valid JSON. */
cJSON *trace_text(const char *text, size_t n);

#endif
