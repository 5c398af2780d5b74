/* hf_gpt2.h: GPT-2 (GPT2LMHeadModel) in a Hugging Face folder, the
 * classroom's model of nanoGPT and llm.c, as the architecture struct holds
 * it: LayerNorm with weight and bias, learned position embeddings and no
 * RoPE, biases on every projection, a GELU MLP (tanh approximation) and a
 * classifier tied to the token embedding.
 *
 * Its config.json names the shape n_embd, n_layer, n_head, n_positions
 * and n_inner (null: 4 · n_embd). Its projections are Conv1D modules,
 * stored [in, out] (y = x · W + b), and attention's q, k and v are one
 * c_attn of [dim, 3 · dim]: the loader splits and transposes them into
 * stepwise's [out, in] matrices, widened to float32 (there is no [out, in]
 * view of a transposed file), and the writer does the reverse. Tensor names
 * carry "transformer." (a GPT2LMHeadModel's save) or not (the original
 * checkpoints, converted from GPT2Model): both are read. */
#ifndef STEPWISE_HF_GPT2_H
#define STEPWISE_HF_GPT2_H

#include <cjson/cJSON.h>

#include "ref/model/model.h"
#include "ref/formats/safetensors.h"

/* c from a GPT2LMHeadModel's config.json (root), the GPT-2 fields set. */
bool hf_gpt2_config(const cJSON *root, Config *c, const char *what, StepError *err);

/* Every GPT-2 tensor of files into m's float32 storage (allocated). */
bool hf_gpt2_take(Model *m, SafetensorsFile *files, int n, const char *dir, StepError *err);

/* One tensor of a GPT-2 folder, as the writer lists it: its name, and its
 * values [rows, cols] (rows 0: a vector) in the file's layout, owned. */
typedef struct {
    char name[96];
    float *values;
    int64_t rows, cols;
} Gpt2Tensor;

/* m's tensors in a GPT-2 folder's names and layout (Conv1D [in, out],
 * q, k and v fused); returns how many (into *out, malloc'd), or -1 when out
 * of memory. Free with hf_gpt2_tensors_free. */
int hf_gpt2_tensors(const Model *m, Gpt2Tensor **out);
void hf_gpt2_tensors_free(Gpt2Tensor *t, int n);

/* config.json of a GPT-2 folder of m's shape (torch_dtype as named). */
cJSON *hf_gpt2_config_json(const Config *c, const char *torch_dtype);

#endif
