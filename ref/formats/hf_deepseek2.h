/* hf_deepseek2.h: DeepSeek-V2 in a Hugging Face folder
 * (DeepseekV2ForCausalLM): what its config.json says beyond the field
 * table's keys (config_table.h: kv_lora_rank, qk_rope_head_dim,
 * q_lora_rank, v_head_dim, n_shared_experts, routed_scaling_factor,
 * moe_intermediate_size, norm_topk_prob). Its tensors are hf_model.c's
 * table's and hf_moe.h's; its block is mla.h's and moe.h's. */
#ifndef STEPWISE_HF_DEEPSEEK2_H
#define STEPWISE_HF_DEEPSEEK2_H

#include <cjson/cJSON.h>

#include "ref/config.h"
#include "ref/util/error.h"

/* The query's and key's widths (head_dim is qk_nope_head_dim +
 * qk_rope_head_dim; v_head_dim the unturned width unless given), the
 * routed experts (n_routed_experts; none: a dense model) and those a token
 * runs, the first first_k_dense_replace layers dense, the routing greedy
 * or within groups (topk_method group_limited_greedy: n_group, topk_group);
 * moe_layer_freq other than 1, another topk_method and a scoring_func other
 * than softmax refused by name. */
bool hf_deepseek2_config(const cJSON *root, Config *c, const char *what, StepError *err);

#endif
