/* gguf_mla.h: DeepSeek-V2's kv_b as llama.cpp's converter writes it since
 * its MLA support: split per head into attn_k_b [H, rank, nope] (each
 * head's key rows transposed; GGUF ne [nope, rank, H]) and attn_v_b [H,
 * v_head_dim, rank] (ne [rank, v_head_dim, H]), with no attn_kv_b. The
 * block reads kv_b whole, [H x (nope + v_head_dim), rank], as Hugging Face
 * stores kv_b_proj: it is put back together from the two. */
#ifndef STEPWISE_GGUF_MLA_H
#define STEPWISE_GGUF_MLA_H

#include <stdbool.h>

#include "ref/config.h"
#include "ref/formats/gguf.h"
#include "ref/util/error.h"

/* Whether layer l's kv_b is split (attn_k_b and attn_v_b). */
bool gguf_mla_split(const GgufFile *f, int l);

/* False (err names the layer) when layer l holds kv_b in both forms,
 * attn_kv_b beside attn_k_b or attn_v_b: which one llama.cpp would run
 * depends on its version, and the two need not agree. */
bool gguf_mla_one_form(const GgufFile *f, int l, StepError *err);

/* Layer l's kv_b rebuilt from attn_k_b and attn_v_b into dst [n_heads x
 * (head_dim - qk_rope_head_dim + v_head_dim), kv_lora_rank], as float32
 * (their values exactly: a float16 or bfloat16 widens, a block type
 * dequantizes). False (err names the tensor) when one is missing or not of
 * c's shape, or out of memory. */
bool gguf_mla_kv_b(const GgufFile *f, int l, const Config *c, float *dst, StepError *err);

#endif
