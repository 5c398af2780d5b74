/* stepwise.h: libstepwise, the reference engine as a C library, for an
 * engine's own test suite (C, C++, or Python through python/stepwise).
 *
 *   sw_model *m;
 *   sw_error e;
 *   if (sw_model_open("model.gguf", NULL, NULL, &m, &e) != SW_OK) ... e.message ...
 *   int ids[64], n;
 *   sw_tokenize(m, "Once upon a time", 1, ids, 64, &n, &e);
 *   sw_scores *s;
 *   sw_score(m, ids, n, NULL, &s, &e);
 *   const float *logits = sw_scores_logits(s);   // [n, vocab], the CLI's bits
 *   sw_scores_free(s);
 *   sw_model_free(m);
 *
 * Handles are opaque and owned by whoever opened them: each has its free.
 * Arrays a function returns a pointer to belong to the handle and live as
 * long as it does. Nothing prints and nothing exits: every function that
 * can fail returns an sw_status and, when err is not NULL, fills it with a
 * one-line message. No function keeps state between calls but in the
 * handles it is given.
 *
 * Threads: every function may be called from any thread. A model may be
 * shared by any number of threads: each call that runs it (sw_score,
 * sw_generate) holds the model's lock for its whole length, so such calls
 * on one model run one at a time, each with the model's own threads
 * (sw_open_options.threads) and the same bits as from one thread; sw_tokenize
 * only reads the tokenizer and needs no lock. For calls
 * that run side by side, open one model per thread. An sw_scores or sw_run
 * handle is read-only once returned: any number of threads may read it; a
 * free must come after every other use of its handle, on any thread.
 *
 * Signals: the library installs no signal handler. A model opened mapped
 * (the default: the file's pages are read when needed, so a large model
 * costs no memory until it runs) reads its file for as long as it is open;
 * if another process truncates that file meanwhile, the next read of a lost
 * page raises SIGBUS in the caller's process, as for any mapped file. Open
 * with sw_open_options.copy_weights = 1 to read the weights into the
 * process's own memory at open instead: the file may then change or go. */
#ifndef STEPWISE_API_H
#define STEPWISE_API_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The API's version: 2 added sw_open_options.copy_weights and the diff
 * report's inputs; 3 sw_diff_with, sw_diff_arrays, sw_diff_text and the open options'
 * gelu_ggml, kv_dtype and kv_rounding_ggml; 4 sw_diff_arrays_text and the
 * diff report's max_abs_pos and max_abs_token (at its end: a caller built
 * against 3 allocates a shorter report, so rebuild against this header). */
#define STEPWISE_API_VERSION 4

/* What libstepwise.so exports (it is built -fvisibility=hidden). */
#if defined(__GNUC__)
#define STEPWISE_EXPORT __attribute__((visibility("default")))
#else
#define STEPWISE_EXPORT
#endif

typedef enum {
    SW_OK = 0,
    SW_ERR_INPUT = 2,  /* a file, an id, an argument that is not right: the message says which */
    SW_ERR_MEMORY = 3, /* out of memory */
    SW_ERR_SMALL = 4,  /* the caller's array is too small: *n says how many it needs */
} sw_status;

typedef struct {
    sw_status code;
    char message[512];
} sw_error;

/* "stepwise 0.3.0 (api 4)": the library's version (the CLI's, the trace's and the
 * soname's, libstepwise.so.0.3: 0.3 for api 4's longer diff report, which a
 * program built against 0.2's header must not be handed) and its API's
 * (STEPWISE_API_VERSION). */
STEPWISE_EXPORT const char *stepwise_version(void);

/* ---- a model ---- */

typedef struct sw_model sw_model;

typedef struct {
    int threads;       /* threads the fast kernels split rows over (0: one) */
    int plain_kernels; /* 1: the reader's loops, one thread (the same bits either way) */
    int weights_f32;   /* 1: widen every weight to float32 at load (the same bits) */
    int copy_weights;  /* 1: read the weight files into memory at open, so that nothing is
                          read from them afterwards (see Signals above); 0: map them */
    /* to compute as llama.cpp does (docs/oracle.md), the command line's: */
    int gelu_ggml;        /* 1: GELU through ggml's float16 table (--gelu ggml) */
    int kv_dtype;         /* 1: K and V rounded to float16 as cached, 2: bfloat16 (--kv-dtype) */
    int kv_rounding_ggml; /* 1: with kv_dtype 1, llama.cpp's other rounding points (--kv-rounding)
                           */
} sw_open_options;

/* Open the model at path, any format stepwise reads (a GGUF file, a Hugging
 * Face folder, a llama2.c checkpoint, a .q8 file, a JSON model; NULL: the
 * built-in tiny model), with its own tokenizer or the one at tokenizer
 * (NULL: its own; a checkpoint without one opens for sw_score and
 * sw_generate, not sw_tokenize). options NULL: the defaults. */
STEPWISE_EXPORT sw_status sw_model_open(const char *path, const char *tokenizer,
                                        const sw_open_options *options, sw_model **out,
                                        sw_error *err);
STEPWISE_EXPORT void sw_model_free(sw_model *m);

typedef struct {
    int vocab_size, dim, hidden_dim, n_layers, n_heads, n_kv_heads, head_dim, seq_len;
} sw_model_shape;

/* m's shape; all zero for m NULL. */
STEPWISE_EXPORT sw_model_shape sw_model_get_shape(const sw_model *m);

/* ---- tokens ---- */

/* The ids of text (BOS first when add_bos and the tokenizer puts one), into
 * ids[0..capacity); *n is how many there are (SW_ERR_SMALL when more than
 * capacity: nothing else is written, and a second call with capacity *n
 * succeeds). ids may be NULL with capacity 0, to ask for the count. */
STEPWISE_EXPORT sw_status sw_tokenize(const sw_model *m, const char *text, int add_bos, int *ids,
                                      int capacity, int *n, sw_error *err);

/* ---- scoring: every position's logits, and hooks ---- */

typedef struct sw_scores sw_scores;

/* Teacher-force ids[0..n) (n from 2 to the model's seq_len) in one prefill: the logits of every
 * position, as `stepwise score` computes them, and with hooks (a glob of
 * hook names, "blocks.*.mlp_out" say, or several separated by commas; NULL:
 * none) the activations there. A glob that matches no hook this model
 * fires is an error that lists the hooks it fires ("logits" is not a hook
 * here: every position's logits come whole). */
STEPWISE_EXPORT sw_status sw_score(sw_model *m, const int *ids, int n, const char *hooks,
                                   sw_scores **out, sw_error *err);
STEPWISE_EXPORT void sw_scores_free(sw_scores *s);

STEPWISE_EXPORT int sw_scores_positions(const sw_scores *s);
STEPWISE_EXPORT int sw_scores_vocab_size(const sw_scores *s);
STEPWISE_EXPORT const float *sw_scores_logits(const sw_scores *s); /* [positions, vocab_size] */
/* Mean nats a token of the tokens after the first. */
STEPWISE_EXPORT double sw_scores_cross_entropy(const sw_scores *s);

/* The getters of an sw_scores, an sw_run and an sw_model give 0 (or NULL)
 * for a NULL handle, as the frees accept NULL.
 *
 * The hooks captured, in the order they fired at the first position
 * ("embed", "blocks.0.resid_pre", ...): hook i's name, and its values
 * [positions, width] (width: the hook's values at one position). The
 * per-head attention hooks (attn.scores, attn.pattern) are [positions,
 * n_heads, positions]: width n_heads × positions, each head's row padded
 * past its position with what the causal mask makes it (-inf scores, 0
 * pattern). */
STEPWISE_EXPORT int sw_scores_hook_count(const sw_scores *s);
STEPWISE_EXPORT const char *sw_scores_hook_name(const sw_scores *s, int i);
STEPWISE_EXPORT const float *sw_scores_hook_values(const sw_scores *s, int i, int *width);

/* ---- generating ---- */

typedef struct {
    float temperature; /* 0: greedy */
    int top_k;         /* 0: off */
    float top_p;       /* 1: off */
    float min_p;       /* 0: off */
    uint64_t seed;     /* the draws' seed: not 0 (xorshift's state 0 never moves), even for
                          a greedy sampler, as the CLI's --seed; 42 is the CLI's default */
} sw_sampler;

/* prompt[0..n_prompt) (1 to seq_len ids) then up to max_new drawn tokens,
 * all of them into out[0..capacity): *n_out is how many. It stops early at
 * EOS, or when the context is full (the command line's default, the stop
 * policy): *n_out <= min(n_prompt + max_new, seq_len + 1), whatever max_new
 * asks, and nothing larger is allocated. sampler NULL: greedy. */
STEPWISE_EXPORT sw_status sw_generate(sw_model *m, const int *prompt, int n_prompt,
                                      const sw_sampler *sampler, int max_new, int *out,
                                      int capacity, int *n_out, sw_error *err);

/* ---- reading and comparing runs ---- */

typedef struct sw_run sw_run;

/* A run as `stepwise diff` reads it: a trace or score file (JSON Lines,
 * with the tensors file it names, if any), a golden set's score file, raw
 * .f32 logits with their sidecar, .npy, or a .safetensors file. */
STEPWISE_EXPORT sw_status sw_run_read(const char *path, sw_run **out, sw_error *err);
STEPWISE_EXPORT void sw_run_free(sw_run *r);
STEPWISE_EXPORT int sw_run_positions(const sw_run *r);
STEPWISE_EXPORT int sw_run_vocab_size(const sw_run *r);
STEPWISE_EXPORT const float *sw_run_logits(const sw_run *r); /* [positions, vocab_size] */
STEPWISE_EXPORT int sw_run_logprobs(const sw_run *r);        /* 1: the rows are log-probabilities */
STEPWISE_EXPORT const int *
sw_run_position_ids(const sw_run *r); /* [positions]: the position of each row */
/* The input token at pos, or -1 when the file states none there. */
STEPWISE_EXPORT int sw_run_token(const sw_run *r, int pos);

typedef struct {
    int passed;
    int positions;             /* logits rows compared */
    int inputs_checked;        /* 1: both runs state their input tokens, and they were compared */
    int inputs_compared;       /* positions whose input tokens both runs state */
    int inputs_differ_pos;     /* the first position fed another token, or -1: when >= 0 the
                                  verdict is a fail (nothing from there on is compared) */
    int ref_token, cand_token; /* the two tokens there */
    long activations;          /* compared */
    double max_abs_logit;      /* max |dlogit|: NaN when a candidate's logit is NaN (the first
                                  such, at max_abs_pos), inf when one is infinite */
    double kl_mean;            /* mean KL(ref || candidate) */
    double top1_agreement;     /* share of positions whose argmax agrees */
    int diverged;              /* a tensor outside tolerance: */
    char first_hook[64];       /* the first ("logits", "blocks.3.mlp_out", ...), */
    int first_layer;           /* its layer (-1: none), */
    int first_pos;             /* its position */
    char other_hook[64];       /* the reference hook the candidate's tensor there equals, or "" */
    char fail_reason[160];     /* "" when passed */
    int max_abs_pos;           /* the position of max_abs_logit, or -1 (no logits compared) */
    int max_abs_token;         /* and the token (the logits row's index) there */
} sw_diff_report;

/* Compare a candidate run with a reference run as `stepwise diff` does,
 * with a preset (NULL: "fp32"; "f16-kv", "bf16", "int8", ...). A verdict
 * either way is SW_OK: report->passed says which. Runs fed other tokens
 * fail: from the first such position on there is nothing to compare (two
 * teacher-forced score files with other tokens are an error, as in the
 * CLI). */
STEPWISE_EXPORT sw_status sw_diff(const char *reference, const char *candidate, const char *preset,
                                  sw_diff_report *report, sw_error *err);

/* What `stepwise diff`'s options say, for sw_diff_with; zeroed, with atol
 * and rtol -1, it is sw_diff's fp32. */
typedef struct {
    const char *preset; /* NULL: "fp32" (--preset) */
    double atol, rtol;  /* < 0: the preset's; else this tolerance in the preset's rule, reported
                           as custom (--atol, --rtol) */
    const char *names;  /* the candidate's activations carry this engine's names ("hf",
                           "llama.cpp", ...: data/hook-names.json), or NULL: stepwise's (--names) */
    int rope_halves;    /* 1: with names, q/k rows in RoPE's halves for this model too
                           (--rope-halves) */
    int teacher_forced; /* 1: inputs that differ are an error, SW_ERR_INPUT (--teacher-forced) */
} sw_diff_options;

/* sw_diff with the command line's options: the same verdict, first divergence
 * and figures as `stepwise diff` with them. options NULL: sw_diff's. */
STEPWISE_EXPORT sw_status sw_diff_with(const char *reference, const char *candidate,
                                       const sw_diff_options *options, sw_diff_report *report,
                                       sw_error *err);

/* One tensor of a candidate in memory: a hook's values at every position,
 * row-major [positions, width] (borrowed), under stepwise's name
 * ("blocks.3.mlp_out") or, with sw_diff_options.names, that engine's. */
typedef struct {
    const char *hook;
    const float *data;
    int width;
} sw_diff_tensor;

/* sw_diff_with of a candidate held in memory: logits [positions, vocab_size]
 * (NULL: none), the input token at each position (NULL: not stated), and
 * n_tensors tensors. The per-head hooks (attn.scores, attn.pattern) are
 * [positions, heads, positions] (width heads x positions), each head's row
 * padded past its position as sw_score gives them: each position and head
 * is compared on the keys up to that position, as the command line compares
 * a trace's per-head events; another width is an error naming the hook.
 * Each hook is given once: two tensors of one hook (one name twice, or two
 * names the name map maps to it) are an error naming both. Everything is
 * copied before the comparison; every count is checked first (positions
 * from 1, a vocabulary or a width from 1). */
STEPWISE_EXPORT sw_status sw_diff_arrays(const char *reference, const float *logits, int positions,
                                         int vocab_size, const int *token_ids,
                                         const sw_diff_tensor *tensors, int n_tensors,
                                         const sw_diff_options *options, sw_diff_report *report,
                                         sw_error *err);

/* sw_diff_with, and its report as `stepwise diff` prints it too: report (may
 * be NULL) as sw_diff_with fills it; the text into text[0..size)
 * (NUL-terminated; cut short when it does not fit), and into *needed (may be
 * NULL) the size that holds it whole (its length + 1). size 0: no text. One
 * comparison gives both. */
STEPWISE_EXPORT sw_status sw_diff_text(const char *reference, const char *candidate,
                                       const sw_diff_options *options, sw_diff_report *report,
                                       char *text, size_t size, size_t *needed, sw_error *err);

/* sw_diff_arrays with its text as sw_diff_text gives it (the candidate
 * named "(arrays)" there): one comparison of a candidate in memory, with
 * no file written. */
STEPWISE_EXPORT sw_status sw_diff_arrays_text(const char *reference, const float *logits,
                                              int positions, int vocab_size, const int *token_ids,
                                              const sw_diff_tensor *tensors, int n_tensors,
                                              const sw_diff_options *options,
                                              sw_diff_report *report, char *text, size_t size,
                                              size_t *needed, sw_error *err);

#ifdef __cplusplus
}
#endif

#endif
