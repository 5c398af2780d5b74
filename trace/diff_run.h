/* diff_run.h: the numbers of one run that `stepwise diff` compares, as
 * its readers fill them (diff_input.h: JSON Lines, raw float32 and numpy;
 * diff_tensors.h: safetensors), and what asks them. */
#ifndef STEPWISE_DIFF_RUN_H
#define STEPWISE_DIFF_RUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* A row stored in one of the run's files: values of a SafetensorsDtype
 * (ref/formats/safetensors.h) from offset, read when asked for (diff_run_*_row). */
typedef struct {
    uint64_t offset;
    int file;  /* in the run's files */
    int dtype; /* SafetensorsDtype */
} DiffStored;

/* One activation: a hook's values at one position (and head). */
typedef struct {
    int point;         /* HookPoint (ref/hooks.h) */
    int layer;         /* -1 outside a block */
    int pos, head;     /* head -1 where none applies */
    int n;             /* values */
    float *data;       /* [n], owned (from JSON Lines), or NULL: */
    DiffStored stored; /* then where its values are */
    bool halves;       /* each head's rows in RoPE's halves layout (another engine's) */
} DiffActivation;

/* A run's numbers are held one of two ways. Read from JSON Lines they are
 * in memory, as float32. Read from a file that stores them as binary
 * (safetensors, .f32, .npy) they stay in the file, which is kept open, and
 * each row is read (pread) and converted when it is compared
 * (diff_run_logits_row and its kin): so the memory a diff of such files
 * takes does not grow with their size. */
typedef struct {
    int vocab_size;
    int n;                    /* positions with logits */
    int *pos;                 /* [n] increasing */
    float *logits;            /* [n, vocab_size] in memory, or NULL: */
    DiffStored logits_stored; /* then [n, vocab_size] from here */
    bool logprobs;            /* the rows are log-probabilities, not logits */
    bool scored;              /* a score run (teacher-forced: its inputs were given) */
    int head_dim;             /* as its run event states it, or 0 */
    /* the input token at each position that states one, by position */
    int n_inputs;
    int *input_pos, *input_token; /* [n_inputs] increasing positions */
    bool inputs_stated;           /* false: the file gives no tokens (a bare .f32) */
    int kv_dim, n_kv;
    int *kv_layer, *kv_pos;          /* [n_kv] */
    float *k, *v;                    /* [n_kv, kv_dim] in memory, or NULL: */
    DiffStored *k_stored, *v_stored; /* then [n_kv], each row's place in a file */
    DiffActivation *acts;            /* [n_acts] */
    int n_acts;
    /* a mixture of experts' routing events: each (layer, pos)'s experts in
     * their order (most probable first), route_k of them */
    int n_routes, route_k;
    int *route_layer, *route_pos; /* [n_routes] */
    int *route_experts;           /* [n_routes, route_k] */
    int unhalve_head_dim;         /* > 0: activations in halves are read back interleaved */
    /* pieces the file names (tokenize and token events), for messages */
    int n_pieces;
    int *piece_ids;
    char **pieces;
    /* the files the stored rows are in, open, owned */
    int n_files;
    FILE **files;
    bool *short_read; /* owned: a row came short (the file shrank since it was checked) */
} DiffRun;

/* Row i of the logits [vocab_size]: in memory, or read into scratch
 * [2 vocab_size] (its second half room for the stored bytes). A row that
 * cannot be read whole reads as NaN, and diff_run_read_short says so. */
const float *diff_run_logits_row(const DiffRun *r, int i, float *scratch);

/* KV row i's K (v false) or V [kv_dim], the same way (scratch [2 kv_dim]). */
const float *diff_run_kv_row(const DiffRun *r, int i, bool v, float *scratch);

/* An activation's values [a->n], the same way (scratch [2 a->n]), halves
 * put back in order when diff_run_unhalve asked for it. */
const float *diff_run_activation(const DiffRun *r, const DiffActivation *a, float *scratch);

/* n values stored at s, read into room [2 n] (a row that cannot be read
 * whole reads as NaN, as for the others). */
const float *diff_run_stored_row(const DiffRun *r, DiffStored s, size_t n, float *room);

/* Whether a stored row came short: its file changed after it was checked. */
bool diff_run_read_short(const DiffRun *r);

/* The whole logits [n, vocab_size] in one array (malloc'd, the caller's),
 * or NULL when out of memory; for the library, whose callers ask for it. */
float *diff_run_logits_copy(const DiffRun *r);

/* Keep f open for the run's stored rows (fclose'd by diff_run_free); its
 * index into *file. False when out of memory (f is then closed). */
bool diff_run_keep_file(DiffRun *r, FILE *f, int *file);

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
