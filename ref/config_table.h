/* config_table.h: every number and flag of a model's Config, declared once.
 *
 * One line a field. The Config struct is made from this table (config.h),
 * and so are the run header's model (trace_events.c, checked against the
 * schema by tests/test_config_fields.c; config.h gives it as data), the ranges config_validate
 * checks, config_is_llama2c, the config.json keys the Hugging Face reader
 * and writer take as they are (hf_fields.c), the GGUF keys (gguf_fields.c),
 * and make-model's options (cli/make_model.c, defaults from the family).
 * What a key means beyond "this field's value" (Gemma's layer_types, a
 * window as wide as the context, Phi-3's partial_rotary_factor) stays in
 * the family's reader, which leaves the key out here ("").
 *
 * A new scalar field is a line here, its entry in trace/schema/run.schema.json
 * (tests/test_config_fields.c fails until it is there), and its maths; a
 * rule between fields goes into config_validate. A family whose config.json
 * gives the field under another name or meaning reads it in its own code
 * (hf: "").
 *
 * X(group, type, name, trace, zero, min, max, show, hf, gguf, option, families, help)
 *   group     what it describes: CF_SHAPE, CF_ATTENTION, CF_ROPE, CF_NORM, CF_MLP,
 *             CF_MOE, CF_FILES (the run header puts CF_SHAPE at the model's top
 *             level, CF_MOE in arch.moe, the rest in arch)
 *   type      INT, FLOAT or BOOL (int, float, bool in the struct)
 *   trace     its name in the run header
 *   zero      what a 0 stands for (rope_theta's 10000), or 0
 *   min, max  the range of a value that is set (0 is "not set", but for CF_SHAPE)
 *   show      in the run header: CF_ALWAYS, CF_IF_SET, CF_WITH_PREV (when the
 *             field before it is shown), CF_NEVER
 *   hf        its config.json key, read and written as the value ("": none, or
 *             the family's code reads it)
 *   gguf      its GGUF key after "<arch>." ("": none, or the family's code),
 *             for the families listed (llama.cpp's names are make-model's)
 *   option    make-model's option ("": none); INT and FLOAT only, as make-model
 *             marks a number not given with -1 (a flag cannot say "not given")
 *   families  the make-model --arch names whose config.json holds the key and
 *             whose option it is, space-separated ("": every family)
 *   help      what it is, for the option's help and the reader
 */
#ifndef STEPWISE_CONFIG_TABLE_H
#define STEPWISE_CONFIG_TABLE_H

#define CF_INT_MAX 2147483647.0
#define CF_HUGE    1e30

/* clang-format off */
#define CONFIG_FIELDS(X) \
    X(CF_SHAPE, INT, dim, "dim", 0, 1, CF_INT_MAX, CF_ALWAYS, \
      "", "", "dim", "", \
      "the model width (the residual stream)") \
    X(CF_SHAPE, INT, hidden_dim, "hidden_dim", 0, 1, CF_INT_MAX, CF_ALWAYS, \
      "", "", "hidden", "", \
      "the MLP's hidden width") \
    X(CF_SHAPE, INT, n_layers, "n_layers", 0, 1, CF_INT_MAX, CF_ALWAYS, \
      "", "", "layers", "", \
      "blocks") \
    X(CF_SHAPE, INT, n_heads, "n_heads", 0, 1, CF_INT_MAX, CF_ALWAYS, \
      "", "", "heads", "", \
      "query heads") \
    X(CF_SHAPE, INT, n_kv_heads, "n_kv_heads", 0, 1, CF_INT_MAX, CF_ALWAYS, \
      "", "", "kv-heads", "", \
      "key/value heads, dividing the query heads (default: as\n" \
      "many)") \
    X(CF_SHAPE, INT, vocab_size, "vocab_size", 0, 1, CF_INT_MAX, CF_ALWAYS, \
      "", "", "vocab", "", \
      "token ids") \
    X(CF_SHAPE, INT, seq_len, "seq_len", 0, 1, CF_INT_MAX, CF_ALWAYS, \
      "", "", "seq-len", "", \
      "the context, in positions") \
    X(CF_SHAPE, BOOL, shared_classifier, "shared_classifier", 0, 0, 1, CF_ALWAYS, \
      "", "", "", "", \
      "the classifier is the token embedding (tied)") \
    \
    X(CF_ATTENTION, INT, head_dim, "head_dim", 0, 2, 65536, CF_NEVER, \
      "head_dim", "", "head-dim", "", \
      "the head size, if not dim / heads") \
    X(CF_ATTENTION, BOOL, qkv_bias, "qkv_bias", 0, 0, 1, CF_ALWAYS, \
      "", "", "", "", \
      "q, k and v add a bias (Qwen2)") \
    X(CF_ATTENTION, BOOL, qk_norm, "qk_norm", 0, 0, 1, CF_ALWAYS, \
      "", "", "", "", \
      "each head of q and k is RMS-normalised before RoPE\n" \
      "(Qwen3, Gemma 3)") \
    X(CF_ATTENTION, FLOAT, query_scale, "query_scale", 0, 1e-30, 1e9, CF_IF_SET, \
      "query_pre_attn_scalar", "", "query-scale", "gemma2 gemma3", \
      "scores divided by sqrt(X): query_pre_attn_scalar (0:\n" \
      "the head size)") \
    X(CF_ATTENTION, FLOAT, attn_softcap, "attn_softcap", 0, 1e-30, 1e9, CF_IF_SET, \
      "attn_logit_softcapping", "attn_logit_softcapping", "attn-softcap", "gemma2 gemma3", \
      "scores capped as tanh(s / X) * X (gemma2: 50; 0: none)") \
    X(CF_ATTENTION, INT, kv_lora_rank, "kv_lora_rank", 0, 1, 1 << 20, CF_IF_SET, \
      "kv_lora_rank", "attention.kv_lora_rank", "kv-lora-rank", "deepseek2", \
      "multi-head latent attention (DeepSeek-V2): each position caches one\n" \
      "latent of this many values, from which every head's key and value\n" \
      "are rebuilt, and one rotary key shared by the heads (0: none)") \
    X(CF_ATTENTION, INT, qk_rope_head_dim, "qk_rope_head_dim", 0, 2, 65536, CF_IF_SET, \
      "qk_rope_head_dim", "", "qk-rope-dim", "deepseek2", \
      "MLA: the dimensions of each head's q and k that RoPE turns, after\n" \
      "head_dim - qk_rope_head_dim that it does not") \
    X(CF_ATTENTION, INT, q_lora_rank, "q_lora_rank", 0, 1, 1 << 20, CF_IF_SET, \
      "q_lora_rank", "attention.q_lora_rank", "q-lora-rank", "deepseek2", \
      "MLA: the query through a low-rank path of this width, normed\n" \
      "between its two matrices (0: one matrix)") \
    X(CF_ATTENTION, INT, v_head_dim, "v_head_dim", 0, 1, 65536, CF_IF_SET, \
      "v_head_dim", "", "v-head-dim", "deepseek2", \
      "the width of a head's value when not head_dim (MLA's 128 of 192)") \
    X(CF_ATTENTION, INT, sliding_window, "sliding_window", 0, 1, 1 << 30, CF_IF_SET, \
      "sliding_window", "", "sliding-window", \
      "gemma2 gemma3 mistral phi3 mixtral", \
      "sliding layers see the last N positions (0: none;\n" \
      "mistral's, phi3's and mixtral's: every layer)") \
    X(CF_ATTENTION, INT, sliding_pattern, "sliding_pattern", 0, 1, 1 << 20, CF_WITH_PREV, \
      "", "", "sliding-pattern", "gemma2 gemma3", \
      "layer l slides unless (l + 1) % N == 0 (gemma2: 2,\n" \
      "gemma3: 6; 0: every layer)") \
    \
    X(CF_ROPE, FLOAT, rope_theta, "rope_theta", 10000, 1, CF_HUGE, CF_ALWAYS, \
      "rope_theta", "rope.freq_base", "rope-theta", "", \
      "the RoPE base (default 10000)") \
    X(CF_ROPE, INT, rope_dims, "rope_dims", 0, 2, 65536, CF_IF_SET, \
      "", "", "", "", \
      "RoPE turns the first N dimensions of each head (Phi-3's\n" \
      "partial_rotary_factor; 0: all)") \
    X(CF_ROPE, FLOAT, rope_local_theta, "rope_local_theta", 0, 1e-30, 1e9, CF_IF_SET, \
      "rope_local_base_freq", "", "rope-local-theta", "gemma3", \
      "the sliding layers' RoPE base, unscaled (gemma3: 10000)") \
    \
    X(CF_NORM, FLOAT, norm_eps, "norm_eps", 1e-5, 1e-30, 0.999999, CF_ALWAYS, \
      "rms_norm_eps", "attention.layer_norm_rms_epsilon", "", "", \
      "the norms' epsilon (default 1e-5)") \
    X(CF_NORM, BOOL, norm_plus_one, "norm_plus_one", 0, 0, 1, CF_IF_SET, \
      "", "", "", "", \
      "every RMSNorm multiplies by 1 + w (Gemma; the loaders add\n" \
      "the 1)") \
    X(CF_NORM, BOOL, post_norms, "post_norms", 0, 0, 1, CF_IF_SET, \
      "", "", "", "", \
      "attention's and the MLP's outputs are normalised before\n" \
      "the residual (Gemma 2 and 3)") \
    \
    X(CF_MLP, BOOL, proj_bias, "proj_bias", 0, 0, 1, CF_IF_SET, \
      "", "", "", "", \
      "attention's output and the MLP add a bias (GPT-2)") \
    X(CF_MLP, FLOAT, embed_scale, "embed_scale", 0, 1e-30, 1e9, CF_IF_SET, \
      "", "", "", "", \
      "the token's embedding row is multiplied by this (Gemma's\n" \
      "sqrt(dim))") \
    X(CF_MLP, FLOAT, final_softcap, "final_softcap", 0, 1e-30, 1e9, CF_IF_SET, \
      "final_logit_softcapping", "final_logit_softcapping", "final-softcap", "gemma2 gemma3", \
      "logits capped as tanh(z / X) * X (gemma2: 30; 0: none)") \
    \
    X(CF_FILES, BOOL, fused_files, "fused_files", 0, 0, 1, CF_IF_SET, \
      "", "", "", "", \
      "the files fuse q, k and v, and gate and up (Phi-3)") \
    \
    X(CF_MOE, INT, n_experts, "n_experts", 0, 1, 4096, CF_IF_SET, \
      "", "", "experts", "mixtral qwen3moe deepseek2", \
      "experts in each MoE layer (required)") \
    X(CF_MOE, INT, n_experts_used, "n_experts_used", 0, 1, 4096, CF_WITH_PREV, \
      "", "", "experts-used", "mixtral qwen3moe deepseek2", \
      "the experts each token runs (default 2)") \
    X(CF_MOE, INT, expert_hidden_dim, "expert_hidden_dim", 0, 1, 1 << 30, CF_WITH_PREV, \
      "moe_intermediate_size", "expert_feed_forward_length", "expert-hidden", \
      "qwen3moe deepseek2", \
      "each expert's hidden width (default --hidden)") \
    X(CF_MOE, BOOL, expert_norm_topk, "norm_topk", 0, 0, 1, CF_WITH_PREV, \
      "norm_topk_prob", "", "", "qwen3moe deepseek2", \
      "the k chosen probabilities divided by their sum") \
    X(CF_MOE, INT, moe_step, "moe_step", 0, 1, 1 << 20, CF_WITH_PREV, \
      "decoder_sparse_step", "", "moe-step", "qwen3moe", \
      "layer l is sparse when (l + 1) % N == 0 (default 1)") \
    X(CF_MOE, INT, n_shared_experts, "n_shared_experts", 0, 1, 64, CF_IF_SET, \
      "n_shared_experts", "expert_shared_count", "shared-experts", "deepseek2", \
      "experts every token runs beside the routed ones, as one MLP\n" \
      "n_shared_experts x expert_hidden_dim wide (DeepSeek-V2)") \
    X(CF_MOE, FLOAT, routed_scaling_factor, "routed_scaling_factor", 1, 1e-6, 1e6, CF_IF_SET, \
      "routed_scaling_factor", "expert_weights_scale", "routed-scale", "deepseek2", \
      "the routed experts' weights multiplied by this when not\n" \
      "renormalised (DeepSeek-V2; 0: 1)") \
    X(CF_MOE, INT, expert_groups, "expert_groups", 0, 1, 64, CF_IF_SET, \
      "n_group", "", "expert-groups", "deepseek2", \
      "route within groups: the experts split into N groups, and a\n" \
      "token's experts come from the groups whose most probable\n" \
      "expert is most probable (DeepSeek-V2's group_limited_greedy)") \
    X(CF_MOE, INT, expert_groups_used, "expert_groups_used", 0, 1, 64, CF_WITH_PREV, \
      "topk_group", "", "expert-groups-used", "deepseek2", \
      "how many groups a token's experts come from (with\n" \
      "--expert-groups)")
/* clang-format on */

#endif
