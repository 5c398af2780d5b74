/* diff_run.h: the numbers of one run that `stepwise diff` compares, as
 * its readers fill them (diff_input.h: JSON Lines, raw float32 and numpy;
 * diff_tensors.h: safetensors), and what asks them. */
#ifndef STEPWISE_DIFF_RUN_H
#define STEPWISE_DIFF_RUN_H

#include <stdbool.h>

/* One activation: a hook's values at one position (and head). */
typedef struct {
    int point;     /* HookPoint (ref/hooks.h) */
    int layer;     /* -1 outside a block */
    int pos, head; /* head -1 where none applies */
    int n;         /* values */
    float *data;   /* [n], owned */
    bool halves;   /* each head's rows in RoPE's halves layout (another engine's) */
} DiffActivation;

typedef struct {
    int vocab_size;
    int n;         /* positions with logits */
    int *pos;      /* [n] increasing */
    float *logits; /* [n, vocab_size] */
    bool logprobs; /* the rows are log-probabilities, not logits */
    bool scored;   /* a score run (teacher-forced: its inputs were given) */
    int head_dim;  /* as its run event states it, or 0 */
    /* the input token at each position that states one, by position */
    int n_inputs;
    int *input_pos, *input_token; /* [n_inputs] increasing positions */
    bool inputs_stated;           /* false: the file gives no tokens (a bare .f32) */
    int kv_dim, n_kv;
    int *kv_layer, *kv_pos; /* [n_kv] */
    float *k, *v;           /* [n_kv, kv_dim] */
    DiffActivation *acts;   /* [n_acts] */
    int n_acts;
    /* pieces the file names (tokenize and token events), for messages */
    int n_pieces;
    int *piece_ids;
    char **pieces;
} DiffRun;

void diff_run_free(DiffRun *r);

/* The piece of token id, as the file names it, or NULL. */
const char *diff_run_piece(const DiffRun *r, int id);

/* The input token the run states at pos, or -1. */
int diff_run_input(const DiffRun *r, int pos);

/* Bounds on what a file may claim: far beyond any model, small enough that
 * no product of two of them overflows. */
#define DIFF_MAX_VOCAB (1 << 24)
#define DIFF_MAX_POS   (1 << 30)
#define DIFF_MAX_LAYER (1 << 20)

#endif
