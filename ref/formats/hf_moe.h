/* hf_moe.h: a mixture of experts in a Hugging Face folder: Mixtral
 * (MixtralForCausalLM) and Qwen3-MoE (Qwen3MoeForCausalLM), as the
 * architecture struct holds them (config.h's n_experts and the fields after
 * it; the block in moe.h).
 *
 *   Mixtral:   num_local_experts, num_experts_per_tok; each expert as wide
 *              as intermediate_size; every layer sparse; the k weights
 *              always renormalised. Tensors block_sparse_moe.gate (the
 *              router, [E, dim]) and block_sparse_moe.experts.E.gate (gate),
 *              w2 (down), w3 (up).
 *   Qwen3-MoE: num_experts, num_experts_per_tok, moe_intermediate_size,
 *              norm_topk_prob, decoder_sparse_step and mlp_only_layers (the
 *              dense layers, of intermediate_size); Qwen3's attention.
 *              Tensors mlp.gate and mlp.experts.E.gate_proj, down_proj,
 *              up_proj; a dense layer's mlp.gate_proj, up_proj, down_proj.
 *
 * The experts are read into float32 (moe.h's kernel reads them so). */
#ifndef STEPWISE_HF_MOE_H
#define STEPWISE_HF_MOE_H

#include <cjson/cJSON.h>
#include <stddef.h>

#include "ref/config.h"
#include "ref/util/error.h"
#include "ref/model/model.h"

/* What an MoE's config.json says beyond the field table's keys (read
 * already, hf_config.h): the experts (num_local_experts for Mixtral, qwen
 * false, num_experts for Qwen3MoeForCausalLM), the experts a token runs
 * (at most those), Qwen3-MoE's required moe_intermediate_size and its
 * mlp_only_layers (Mixtral's expert width is family_apply (family.h)'s). */
bool hf_moe_config(const cJSON *root, bool qwen, Config *c, const char *what, StepError *err);

/* Whether c's experts are Mixtral's (block_sparse_moe.*, w1/w2/w3), not
 * Qwen3-MoE's and DeepSeek-V2's (mlp.*, gate_proj/down_proj/up_proj). */
bool hf_moe_mixtral(const Config *c);

/* The routed experts (config.json's key `experts`: each family names it
 * apart), those a token runs (num_experts_per_tok, at most those), and
 * (width) their moe_intermediate_size, read with the table's keys already. */
bool hf_moe_routed_experts(const cJSON *root, const char *experts, bool width, Config *c,
                           const char *what, StepError *err);

/* A part of layer l's mixture: the router (expert -1, part EXPERT_GATE)
 * or expert e's gate, down or up projection (matrix.h's ExpertKind).
 * Its tensor's name in a folder of c's family (qwen: Qwen3-MoE's), into
 * buf; and its float32 values in m's storage (NULL: held otherwise), with
 * its shape [rows, cols]. */
void hf_moe_tensor_name(bool qwen, int l, int expert, ExpertKind part, char *buf, size_t size);
const float *hf_moe_tensor_view(const Model *m, int l, int expert, ExpertKind part, int *rows,
                                int *cols);

#endif
