/* gguf_convert.h: a loaded model, and its tokenizer, written as a GGUF
 * file that llama.cpp and its kin load, and that gguf_model.h reads back.
 *
 * The architecture is llama (llama2.c's and Mistral's too), qwen2 (q/k/v
 * biases) or qwen3 (q/k norms), chosen from the architecture struct. q's
 * and k's rows are written as llama.cpp's converter writes them: llama's in
 * interleaved pairs (the "permute" of convert_hf_to_gguf.py, which is how
 * stepwise holds them), qwen's in Hugging Face's halves. Matrices are F32,
 * F16 or Q8_0 as asked (a Q8_0 matrix whose rows are not a multiple of 32
 * falls back to F16, as llama.cpp does); norms stay F32. Linear RoPE
 * scaling goes into <arch>.rope.scaling.*; Llama 3's, and per-frequency
 * factors, into a rope_freqs.weight tensor as llama.cpp's converter writes
 * it. */
#ifndef STEPWISE_GGUF_CONVERT_H
#define STEPWISE_GGUF_CONVERT_H

#include "ref/model/model.h"
#include "ref/text/tokenizer.h"

typedef enum { GGUF_OUT_F32, GGUF_OUT_F16, GGUF_OUT_Q8_0, GGUF_OUT_BF16 } GgufOutType;

/* "f32", "f16", "q8_0", "bf16" -> *t; false for anything else. */
bool gguf_out_type_parse(const char *name, GgufOutType *t);

/* What was written, for the report. */
typedef struct {
    const char *arch;
    int tensors, f32, f16, q8_0, bf16;
    int q8_0_fallbacks; /* matrices asked for Q8_0 but written F16 */
} GgufSaveReport;

/* Whether gguf_model_save writes c's matrices as a file stores them (a
 * model loaded WEIGHTS_STORED), each widened a row at a time as it is
 * written, so that the whole model is never float32 in memory: every
 * family but those whose tensors it rearranges (Phi-3's fused q/k/v and
 * gate/up, GPT-2's split qkv, a mixture's stacked experts), which need the
 * weights as float32 in storage. */
bool gguf_save_streams(const Config *c);

/* Write m (float32 weights as loaded, or, where gguf_save_streams, the
 * matrices as a file stores them; not int8, not packed) with tok (NULL: no
 * tokenizer) into the GGUF file at path, general.name `name`. */
bool gguf_model_save(const Model *m, const Tokenizer *tok, GgufOutType type, const char *name,
                     const char *path, GgufSaveReport *report, StepError *err);

#endif
