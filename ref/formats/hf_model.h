/* hf_model.h: loading a Hugging Face model directory: config.json and the
 * weights in model.safetensors, or in the shards that
 * model.safetensors.index.json lists.
 *
 * Supported architectures (config.json's "architectures"):
 * LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM,
 * Phi3ForCausalLM (its fused qkv_proj and gate_up_proj read as rows of
 * those) and GPT2LMHeadModel (hf_gpt2.h).
 * Their differences become the architecture struct's fields (config.h).
 * Hugging Face's checkpoints rotate the two halves of each head; the loader
 * moves q's and k's rows back to interleaved pairs (hf_interleave_heads), as
 * llama.cpp's converter does, so that q·k sums in llama2.c's order. Every
 * tensor the
 * architecture needs must be present with the shape the config implies;
 * F32, F16 and BF16 are converted to float32 exactly. */
#ifndef STEPWISE_HF_MODEL_H
#define STEPWISE_HF_MODEL_H

#include "ref/formats/hf_config.h"
#include "ref/model/model.h"

/* What a load found that does not stop it: tensors no part of the
 * architecture reads (unused), and the dtype of every file. */
typedef struct {
    int unused; /* tensors left unread */
    char first_unused[128];
    char dtypes[256]; /* "model.safetensors: BF16", one entry a file */
    int files;
} HfLoadReport;

/* One tensor of a layer under its Hugging Face name (after
 * "model.layers.L.") and its GGUF name (after "blk.L."): where it lies in
 * the model's storage, its shape (rows 0: a vector of cols), and for q's
 * and k's the heads whose rows RoPE pairs (0 for the others). The Hugging
 * Face reader and writer and the GGUF reader share it. */
typedef struct {
    const char *name;
    const char *gguf_name;
    const float *view; /* NULL for a matrix held otherwise (as stored, packed) */
    size_t rows, cols;
    int heads;
    int kind; /* a matrix's MatrixKind, or -1: a vector */
} HfLayerTensor;

#define HF_LAYER_TENSORS 25

/* The tensors layer l of m has (its architecture's), in a fixed order;
 * returns how many. The seven matrices are always listed. */
int hf_layer_tensors(const Model *m, int l, HfLayerTensor out[HF_LAYER_TENSORS]);

/* Layer l's matrix p, read through view (the file's rows, bytes long):
 * held as stored (p->view NULL: m takes view) or widened into its float32
 * slot (view freed). False with err naming path when view cannot be
 * aligned. */
bool hf_layer_matrix_place(Model *m, int l, const HfLayerTensor *p, Matrix *view, size_t bytes,
                           const char *path, StepError *err);

/* Hugging Face's q and k rows, and llama.cpp's for qwen2 and qwen3, keep
 * each head's dimensions as two halves, (i, i + head_dim/2) rotated
 * together. Move them to interleaved pairs (2i, 2i+1) in place: row
 * j·half + i of each of `heads` blocks of head_dim rows of `cols` values
 * becomes row 2i + j. False when out of memory. */
bool hf_interleave_heads(float *x, int heads, int head_dim, size_t cols);

/* Phi-3's files (Config.fused_files) fuse q, k and v in one [q_dim +
 * 2 kv_dim, dim] tensor and gate and up in one [2 hidden, dim], gate first:
 * whether matrix kind lies in one of them, and where (*attn: the q/k/v one;
 * its first row, and the fused tensor's rows). Hugging Face's and
 * llama.cpp's files agree on it. */
bool hf_fused_rows(const Config *c, int kind, bool *attn, int *row0, int *total);

/* Layer l's two fused tensors, as a writer writes them, into buf
 * [q_dim + 2 kv_dim + 2 hidden, dim]: q, k and v (q's and k's rows moved by
 * `rotated`), then gate and up. */
void hf_fuse_layer(const Model *m, int l, RowOrder rotated, float *buf);

/* The floats hf_fuse_layer writes a layer: (q_dim + 2 kv_dim + 2 hidden) · dim. */
size_t hf_fused_layer_floats(const Config *c);

/* Whether path is a directory (a Hugging Face model directory, perhaps). */
bool hf_is_model_dir(const char *path);

/* Load the model in dir into m. WEIGHTS_F32: every tensor widened into
 * float32 storage (owned). WEIGHTS_STORED: the files stay mapped read-only
 * (owned by m) and the matrices point into them in their own dtype, q's and
 * k's rows read in interleaved order; only the vectors (norms, biases) are
 * widened. The logits are the same bits. progress (may be NULL) is told how
 * many layers have been read; it is left in m->progress. */
bool hf_model_load(Model *m, const char *dir, WeightsMode mode, const ProgressSink *progress,
                   HfLoadReport *report, StepError *err);

#endif
