/* tensor_file.h: a run's numbers as named float32 tensors of [positions,
 * ...] in one safetensors file (`score --tensors FILE.safetensors`), beside
 * the JSON Lines file that keeps the events and refers to the tensors by
 * name (one "tensors" event, docs/trace-format.md).
 *
 * Rows arrive as the engine hands them over: a hook's rows of every
 * position in a pass, one tensor after another, or two tensors in turn (a
 * KV cache's K and V rows). They are appended to an unnamed temporary file
 * in that order, each tensor remembering its runs of rows; at the end the
 * safetensors header is written, then each tensor's rows gathered in
 * order, into a file that appears whole or not at all. Memory holds the
 * bookkeeping only, whatever the size. */
#ifndef STEPWISE_TENSOR_FILE_H
#define STEPWISE_TENSOR_FILE_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "ref/util/error.h"

typedef enum {
    TENSOR_LOGITS,
    TENSOR_ACTIVATION,
    TENSOR_KV_K,
    TENSOR_KV_V,
    TENSOR_HEADS /* a per-head attention hook: [positions, heads, keys] */
} TensorKind;

/* A run of a tensor's rows lying together in the temporary file. */
typedef struct {
    uint64_t offset; /* bytes into the temporary file */
    int rows;
} TensorRun;

typedef struct {
    char name[64]; /* "logits", "blocks.0.mlp_out", "kv.0.k", ... */
    TensorKind kind;
    int layer; /* -1 outside a block */
    int width; /* values a row */
    int first_pos, rows;
    TensorRun *runs;
    int n_runs, cap_runs;
    /* a per-head attention hook (heads > 0): a row is [heads, width / heads],
     * gathered head by head in stage before it is appended */
    int heads;
    float *stage;          /* [width] */
    int staged, stage_pos; /* heads gathered, and their position */
} TensorEntry;

typedef struct {
    FILE *data; /* the temporary file (tmpfile: gone when closed) */
    uint64_t data_bytes;
    TensorEntry *tensors;
    int n, cap;
    char problem[256]; /* the first row that could not be taken, or "" */
} TensorFile;

bool tensor_file_open(TensorFile *tf, StepError *err);

/* Append one row of tensor `name` at position pos. A tensor's rows must be
 * consecutive positions of one width; the first that is not is remembered
 * (tf->problem) and refused at commit. */
void tensor_file_row(TensorFile *tf, const char *name, TensorKind kind, int layer, int pos,
                     const float *x, int width);

/* One head's row of a per-head attention hook (attn.scores, attn.pattern)
 * at pos: its n values (the positions 0..pos it attends to) in head's
 * slot of the position's row [heads, keys], the rest of the slot `pad` (0
 * for the pattern, -inf for the scores: what the causal mask makes them).
 * The row is appended once every head of pos has come; the tensor is
 * [positions, heads, keys]. The first row that does not fit is remembered
 * and refused at commit, as in tensor_file_row. */
void tensor_file_head_row(TensorFile *tf, const char *name, int layer, int pos, int head, int heads,
                          int keys, const float *x, int n, float pad);

/* Write the safetensors file at path: the header (every tensor F32
 * [rows, width], and "__metadata__": the strings of metadata, a JSON object
 * of strings), then the data. */
bool tensor_file_commit(TensorFile *tf, const char *path, const cJSON *metadata, StepError *err);

/* The "tensors" event that names them: file (the safetensors file's name,
 * as the JSON Lines file refers to it), and each tensor's name, kind, layer,
 * first position and shape. */
cJSON *tensor_file_event(const TensorFile *tf, const char *file);

void tensor_file_free(TensorFile *tf);

#endif
