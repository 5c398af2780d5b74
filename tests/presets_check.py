#!/usr/bin/python3
"""make-model --preset writes the published shapes (in `make test`).

The expected values are the published config.json of each model on Hugging
Face, copied here by hand (the repository is named beside each): every
field stepwise writes must equal them, with --layers 1 and a short window
so that the folders stay small. SmolLM2-135M is also written whole (bf16)
and its parameter count checked against the published 134,515,008 and the
closed form. --format llama2c is refused for the presets a llama2.c header
cannot describe, and accepted for TinyLlama's.

    /usr/bin/python3 tests/presets_check.py build/stepwise
"""
import json
import os
import sys
import tempfile

from check_util import Checks, run_stepwise

BIN = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/stepwise")

PUBLISHED = {
    "smollm2-135m": {  # HuggingFaceTB/SmolLM2-135M
        "model_type": "llama", "hidden_size": 576, "intermediate_size": 1536, "num_hidden_layers": 30,
        "num_attention_heads": 9, "num_key_value_heads": 3, "head_dim": 64, "vocab_size": 49152,
        "max_position_embeddings": 8192, "rope_theta": 100000, "rms_norm_eps": 1e-5,
        "tie_word_embeddings": True, "rope_scaling": None},
    "qwen3-0.6b": {  # Qwen/Qwen3-0.6B
        "model_type": "qwen3", "hidden_size": 1024, "intermediate_size": 3072, "num_hidden_layers": 28,
        "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 151936,
        "max_position_embeddings": 40960, "rope_theta": 1000000, "rms_norm_eps": 1e-6,
        "tie_word_embeddings": True, "rope_scaling": None},
    "llama-3.2-1b": {  # meta-llama/Llama-3.2-1B
        "model_type": "llama", "hidden_size": 2048, "intermediate_size": 8192, "num_hidden_layers": 16,
        "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 64, "vocab_size": 128256,
        "max_position_embeddings": 131072, "rope_theta": 500000, "rms_norm_eps": 1e-5,
        "tie_word_embeddings": True,
        "rope_scaling": {"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0,
                         "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}},
    "llama-3-8b": {  # meta-llama/Meta-Llama-3-8B (head_dim is not in its config: 4096 / 32)
        "model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32,
        "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 128256,
        "max_position_embeddings": 8192, "rope_theta": 500000, "rms_norm_eps": 1e-5,
        "tie_word_embeddings": False, "rope_scaling": None},
    "llama-2-7b": {  # meta-llama/Llama-2-7b-hf (head_dim and rope_theta are not in its config: 4096 / 32, 10000)
        "model_type": "llama", "hidden_size": 4096, "intermediate_size": 11008, "num_hidden_layers": 32,
        "num_attention_heads": 32, "num_key_value_heads": 32, "head_dim": 128, "vocab_size": 32000,
        "max_position_embeddings": 4096, "rope_theta": 10000, "rms_norm_eps": 1e-5,
        "tie_word_embeddings": False, "rope_scaling": None},
    "llama-2-13b": {  # meta-llama/Llama-2-13b-hf (head_dim and rope_theta likewise: 5120 / 40, 10000)
        "model_type": "llama", "hidden_size": 5120, "intermediate_size": 13824, "num_hidden_layers": 40,
        "num_attention_heads": 40, "num_key_value_heads": 40, "head_dim": 128, "vocab_size": 32000,
        "max_position_embeddings": 4096, "rope_theta": 10000, "rms_norm_eps": 1e-5,
        "tie_word_embeddings": False, "rope_scaling": None},
    "tinyllama-1.1b": {  # TinyLlama/TinyLlama-1.1B-Chat-v1.0
        "model_type": "llama", "hidden_size": 2048, "intermediate_size": 5632, "num_hidden_layers": 22,
        "num_attention_heads": 32, "num_key_value_heads": 4, "head_dim": 64, "vocab_size": 32000,
        "max_position_embeddings": 2048, "rope_theta": 10000, "rms_norm_eps": 1e-5,
        "tie_word_embeddings": False, "rope_scaling": None},
    "phi-3-mini-4k": {  # microsoft/Phi-3-mini-4k-instruct (head_dim is not in its config: 3072 / 32)
        "model_type": "phi3", "hidden_size": 3072, "intermediate_size": 8192, "num_hidden_layers": 32,
        "num_attention_heads": 32, "num_key_value_heads": 32, "head_dim": 96, "vocab_size": 32064,
        "max_position_embeddings": 4096, "rope_theta": 10000, "rms_norm_eps": 1e-5,
        "tie_word_embeddings": False, "rope_scaling": None, "sliding_window": 2047},
    "gemma-2-2b": {  # google/gemma-2-2b
        "model_type": "gemma2", "hidden_size": 2304, "intermediate_size": 9216, "num_hidden_layers": 26,
        "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256, "vocab_size": 256000,
        "max_position_embeddings": 8192, "rope_theta": 10000, "rms_norm_eps": 1e-6,
        "tie_word_embeddings": True, "rope_scaling": None, "hidden_activation": "gelu_pytorch_tanh",
        "query_pre_attn_scalar": 256, "sliding_window": 4096, "attn_logit_softcapping": 50.0,
        "final_logit_softcapping": 30.0},
    "gemma-3-1b": {  # google/gemma-3-1b-pt
        "model_type": "gemma3_text", "hidden_size": 1152, "intermediate_size": 6912, "num_hidden_layers": 26,
        "num_attention_heads": 4, "num_key_value_heads": 1, "head_dim": 256, "vocab_size": 262144,
        "max_position_embeddings": 32768, "rope_theta": 1000000, "rms_norm_eps": 1e-6,
        "tie_word_embeddings": True, "rope_scaling": None, "hidden_activation": "gelu_pytorch_tanh",
        "query_pre_attn_scalar": 256, "sliding_window": 512, "sliding_window_pattern": 6,
        "rope_local_base_freq": 10000, "attn_logit_softcapping": None, "final_logit_softcapping": None},
}
# Each model's parameters as its model card or safetensors metadata gives them.
PARAMS = {"smollm2-135m": 134515008, "qwen3-0.6b": 596049920, "llama-3.2-1b": 1235814400,
          "llama-3-8b": 8030261248, "llama-2-7b": 6738415616, "llama-2-13b": 13015864320,
          "tinyllama-1.1b": 1100048384, "phi-3-mini-4k": 3821079552, "gemma-2-2b": 2614341888,
          "gemma-3-1b": 999885952}
SMOLLM2_PARAMS = PARAMS["smollm2-135m"]
GPT2_PUBLISHED = {  # openai-community/gpt2 and gpt2-medium's config.json
    "gpt2": {"model_type": "gpt2", "n_embd": 768, "n_layer": 12, "n_head": 12, "n_positions": 1024,
             "vocab_size": 50257, "layer_norm_epsilon": 1e-5, "activation_function": "gelu_new"},
    "gpt2-medium": {"model_type": "gpt2", "n_embd": 1024, "n_layer": 24, "n_head": 16, "n_positions": 1024,
                    "vocab_size": 50257, "layer_norm_epsilon": 1e-5, "activation_function": "gelu_new"},
}
GPT2_PARAMS = {"gpt2": 124439808, "gpt2-medium": 354823168}  # their safetensors, less the attn.bias buffers


def gpt2_closed_form(c):
    """wte and wpe; per layer two LayerNorms (weight and bias), c_attn [d, 3d] and c_proj [d, d] with
    biases, c_fc [d, 4d] and c_proj [4d, d] with biases; ln_f. The classifier is wte."""
    d, L, V, P = c["n_embd"], c["n_layer"], c["vocab_size"], c["n_positions"]
    layer = 4 * d + (3 * d * d + 3 * d) + (d * d + d) + (4 * d * d + 4 * d) + (4 * d * d + d)
    return V * d + P * d + L * layer + 2 * d


def check_gpt2(check, tmp):
    for name, want in GPT2_PUBLISHED.items():
        info = json.loads(run_stepwise(BIN, "inspect", "--preset", name, "--json").stdout)
        m = info["model"]
        sizes = (m.get("dim"), m.get("hidden_dim"), m.get("n_layers"), m.get("n_heads"), m.get("vocab_size"),
                 m.get("seq_len"))
        params = info["this_model"]["params"]
        check(sizes == (want["n_embd"], 4 * want["n_embd"], want["n_layer"], want["n_head"], want["vocab_size"],
                        want["n_positions"]) and params == GPT2_PARAMS[name] == gpt2_closed_form(want),
              f"{name}: inspect --preset gives the published sizes and {GPT2_PARAMS[name]:,} parameters ({params:,})")
        out = os.path.join(tmp, name)
        run_stepwise(BIN, "make-model", "--preset", name, "--layers", "1", "--seq-len", "64", "--vocab", "512",
                     "--out", out)
        with open(os.path.join(out, "config.json"), encoding="utf-8") as f:
            got = json.load(f)
        want = dict(want, n_layer=1, n_positions=64, vocab_size=512)
        wrong = [k for k in want if not close(got.get(k), want[k])]
        check(not wrong and got["architectures"] == ["GPT2LMHeadModel"],
              f"{name}: config.json matches the published config" + (f" except {wrong}" if wrong else ""))


MOE_PUBLISHED = {  # their config.json, and the parameters their model cards give (total, active)
    "mixtral-8x7b": ({"model_type": "mixtral", "hidden_size": 4096, "intermediate_size": 14336,
                      "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
                      "vocab_size": 32000, "max_position_embeddings": 32768, "rope_theta": 1000000,
                      "rms_norm_eps": 1e-5, "tie_word_embeddings": False, "num_local_experts": 8,
                      "num_experts_per_tok": 2}, 46702792704, 12879925248),
    "qwen3-30b-a3b": ({"model_type": "qwen3_moe", "hidden_size": 2048, "intermediate_size": 6144,
                       "moe_intermediate_size": 768, "num_hidden_layers": 48, "num_attention_heads": 32,
                       "num_key_value_heads": 4, "head_dim": 128, "vocab_size": 151936,
                       "max_position_embeddings": 40960, "rope_theta": 1000000, "rms_norm_eps": 1e-6,
                       "tie_word_embeddings": False, "num_experts": 128, "num_experts_per_tok": 8,
                       "norm_topk_prob": True, "decoder_sparse_step": 1, "mlp_only_layers": []},
                      30532122624, 3353032704),
}


def moe_closed_form(c):
    """(total, active): embedding and classifier, per layer attention (Qwen3's q/k norms), two norms, a
    router and E experts of three matrices (k of them active), the final norm."""
    d, L, V = c["hidden_size"], c["num_hidden_layers"], c["vocab_size"]
    qwen = c["model_type"] == "qwen3_moe"
    hd = c.get("head_dim", d // c["num_attention_heads"])
    q, kv = c["num_attention_heads"] * hd, c["num_key_value_heads"] * hd
    E = c["num_experts"] if qwen else c["num_local_experts"]
    k, eh = c["num_experts_per_tok"], c["moe_intermediate_size"] if qwen else c["intermediate_size"]
    layer = 2 * d * q + 2 * d * kv + 2 * d + (2 * hd if qwen else 0) + E * d
    total = 2 * V * d + d + L * (layer + E * 3 * eh * d)
    return total, total - L * (E - k) * 3 * eh * d


def check_moe(check, tmp):
    for name, (want, total, active) in MOE_PUBLISHED.items():
        info = json.loads(run_stepwise(BIN, "inspect", "--preset", name, "--json", "--weight-dtype",
                                       "bf16").stdout)["this_model"]
        check((info["params"], info["active_params"]) == (total, active) == moe_closed_form(want)
              and info["weight_bytes"] == 2 * total,
              f"{name}: inspect --preset gives {total:,} parameters, {active:,} active a token "
              f"({info['params']:,}, {info['active_params']:,}), {2 * total:,} bytes in bf16")
        out = os.path.join(tmp, name)  # one layer, few experts: the other fields as published
        run_stepwise(BIN, "make-model", "--preset", name, "--layers", "1", "--seq-len", "64", "--vocab", "512",
                     "--experts", "4", "--experts-used", "2", "--dtype", "bf16", "--out", out)
        with open(os.path.join(out, "config.json"), encoding="utf-8") as f:
            got = json.load(f)
        experts = "num_experts" if "num_experts" in want else "num_local_experts"
        want = dict(want, num_hidden_layers=1, max_position_embeddings=64, vocab_size=512,
                    num_experts_per_tok=2, **{experts: 4})
        wrong = [k for k in want if not close(got.get(k), want[k])]
        check(not wrong, f"{name}: config.json (1 layer, 4 experts) matches the published config"
              + (f" except {', '.join(f'{k}={got.get(k)!r}' for k in wrong)}" if wrong else ""))


# deepseek-ai/DeepSeek-V2-Lite's config.json (the keys that move a size); the paper (arXiv 2405.04434,
# appendix B) gives it 15.7B parameters, 2.4B activated a token
DEEPSEEK_V2_LITE = {
    "hidden_size": 2048, "intermediate_size": 10944, "num_hidden_layers": 27, "num_attention_heads": 16,
    "num_key_value_heads": 16, "vocab_size": 102400, "max_position_embeddings": 163840, "q_lora_rank": None,
    "kv_lora_rank": 512, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128,
    "n_routed_experts": 64, "num_experts_per_tok": 6, "n_shared_experts": 2, "moe_intermediate_size": 1408,
    "first_k_dense_replace": 1, "moe_layer_freq": 1, "tie_word_embeddings": False, "rms_norm_eps": 1e-6,
    "rope_theta": 10000, "norm_topk_prob": False, "routed_scaling_factor": 1.0, "topk_method": "greedy",
    "rope_scaling": {"type": "yarn", "factor": 40, "original_max_position_embeddings": 4096, "beta_fast": 32,
                     "beta_slow": 1, "mscale": 0.707, "mscale_all_dim": 0.707}}


def mla_closed_form(c):
    """DeepSeek-V2's parameters from modeling_deepseek.py's modules: per layer q_proj (or q_a_proj,
    q_a_layernorm, q_b_proj), kv_a_proj_with_mqa, kv_a_layernorm, kv_b_proj, o_proj and two norms; the
    first_k_dense_replace layers a dense MLP, the rest a gate, the routed experts and the shared ones
    (one MLP n_shared_experts x moe_intermediate_size wide); the embedding, the head and the final norm.
    Returns (total, active a token, active without the embedding)."""
    d, H, L, V = c["hidden_size"], c["num_attention_heads"], c["num_hidden_layers"], c["vocab_size"]
    nope, rope, v, r = c["qk_nope_head_dim"], c["qk_rope_head_dim"], c["v_head_dim"], c["kv_lora_rank"]
    qr, E, k, eh = c["q_lora_rank"] or 0, c["n_routed_experts"], c["num_experts_per_tok"], c["moe_intermediate_size"]
    q = qr * d + qr + H * (nope + rope) * qr if qr else H * (nope + rope) * d
    attention = q + d * (r + rope) + r + r * H * (nope + v) + H * v * d + 2 * d
    dense_layers = c["first_k_dense_replace"]
    dense = 3 * d * c["intermediate_size"]
    moe = E * d + E * 3 * d * eh + 3 * d * c["n_shared_experts"] * eh
    total = V * d * 2 + L * attention + dense_layers * dense + (L - dense_layers) * moe + d
    active = total - (L - dense_layers) * (E - k) * 3 * d * eh
    return total, active, active - V * d


def check_mla(check, tmp):
    """inspect --preset deepseek-v2-lite: the parameters of the closed form above (the paper's 15.7B), and
    the cache a token in MLA's latent form and expanded to every head's K and V, by hand."""
    c = DEEPSEEK_V2_LITE
    info = json.loads(run_stepwise(BIN, "inspect", "--preset", "deepseek-v2-lite", "--json", "--weight-dtype",
                                   "bf16", "--kv-dtype", "bf16").stdout)
    total, active, active_no_embedding = mla_closed_form(c)
    got = info["this_model"]
    check((got["params"], got["active_params"]) == (total, active)
          and (total, active_no_embedding) == (15_706_484_224, 2_451_435_008),  # docs/attention-variants.md
          f"deepseek-v2-lite: inspect gives {total:,} parameters (the paper's 15.7B) and {active:,} active "
          f"a token ({active_no_embedding:,} without the embedding; the paper gives 2.4B) "
          f"({got['params']:,}, {got['active_params']:,})")
    L, H = c["num_hidden_layers"], c["num_attention_heads"]
    latent = L * (c["kv_lora_rank"] + c["qk_rope_head_dim"]) * 2
    expanded = L * H * (c["qk_nope_head_dim"] + c["qk_rope_head_dim"] + c["v_head_dim"]) * 2
    mla, model = info.get("mla", {}), info["model"]
    check((latent, expanded) == (31104, 276480) and mla.get("latent_bytes_per_token") == latent
          and mla.get("expanded_bytes_per_token") == expanded and got["kv_bytes_per_token"] == latent
          and got["attention"] == "MLA" and model["arch"]["family"] == "deepseek2",
          f"deepseek-v2-lite: {latent:,} cache bytes a token in bf16 as MLA's latent and rotary key, "
          f"{expanded:,} expanded to each head's K and V ({expanded / latent:.2f}x) ({mla})")
    text = run_stepwise(BIN, "inspect", "--preset", "deepseek-v2-lite", "--kv-dtype", "bf16").stdout
    check(f"per token, latent: 27 layers x (512 latent + 64 rotary key) x 2 bytes (bf16) = {latent} bytes"
          in text and f"= {expanded} bytes, 8.89x the latent" in text,
          "deepseek-v2-lite: inspect's text gives both forms")
    # the preset's family numbers, over a small shape, land in config.json as the model card has them
    folder = os.path.join(tmp, "ds")
    run_stepwise(BIN, "make-model", "--preset", "deepseek-v2-lite", "--layers", "3", "--dim", "64", "--hidden",
                 "96", "--vocab", "13", "--seq-len", "128", "--experts", "8", "--expert-hidden", "16",
                 "--kv-lora-rank", "16", "--head-dim", "12", "--qk-rope-dim", "4", "--v-head-dim", "8",
                 "--out", folder)
    made = json.load(open(os.path.join(folder, "config.json")))
    yarn = made.get("rope_scaling") or {}
    card = {k: c[k] for k in ("first_k_dense_replace", "n_shared_experts", "num_experts_per_tok",
                              "q_lora_rank", "norm_topk_prob", "routed_scaling_factor", "topk_method")}
    check(all(made.get(k) == v for k, v in card.items()) and set(yarn) == set(c["rope_scaling"])
          and all(abs(yarn[k] - v) < 1e-6 if k != "type" else yarn[k] == v for k, v in c["rope_scaling"].items())
          and made["architectures"] == ["DeepseekV2ForCausalLM"],
          f"make-model --preset deepseek-v2-lite over a small shape: config.json has the card's routing, "
          f"shared experts, dense first layer and YaRN ({card}, {yarn})")
    r = run_stepwise(BIN, "inspect", "--preset", "deepseek-v2-lite", "--kv-dtype", "int8", expect=(2,))
    check("no int8 form of its cache" in r.stderr, "inspect --preset deepseek-v2-lite --kv-dtype int8 is refused")


def closed_form(c):
    """Parameters of a Llama-family shape: embedding (and classifier when untied), per layer q/k/v/o,
    three MLP matrices, two norms (Gemma's four; Qwen3's and Gemma 3's q/k norms), and the final norm."""
    d, h, L, V = c["hidden_size"], c["intermediate_size"], c["num_hidden_layers"], c["vocab_size"]
    q, kv, hd = c["num_attention_heads"] * c["head_dim"], c["num_key_value_heads"] * c["head_dim"], c["head_dim"]
    norms = 4 if c["model_type"].startswith("gemma") else 2
    qk = 2 * hd if c["model_type"] in ("qwen3", "gemma3_text") else 0
    layer = d * q + 2 * d * kv + q * d + 3 * d * h + norms * d + qk
    return V * d * (1 if c["tie_word_embeddings"] else 2) + L * layer + d


def close(a, b):
    if isinstance(b, float) or isinstance(a, float):
        return abs(a - b) <= 1e-6 * abs(b)
    if isinstance(b, dict):
        return isinstance(a, dict) and a.keys() == b.keys() and all(close(a[k], b[k]) for k in b)
    return a == b


# config.json's keys and the run header's names for the same numbers (ref/config_table.h)
HEADER_NAMES = {"rope_theta": "rope_theta", "rms_norm_eps": "norm_eps", "query_pre_attn_scalar": "query_scale",
                "attn_logit_softcapping": "attn_softcap", "final_logit_softcapping": "final_softcap",
                "sliding_window": "sliding_window", "rope_local_base_freq": "rope_local_theta"}


# Every preset with its Hugging Face repository, and every --arch family: make-model's help is
# made from the presets' and the families' tables, so a row added there is listed (a hand-written
# help once left deepseek-v2-lite out).
PRESET_SOURCES = {
    "smollm2-135m": "HuggingFaceTB/SmolLM2-135M", "qwen3-0.6b": "Qwen/Qwen3-0.6B",
    "llama-3.2-1b": "meta-llama/Llama-3.2-1B", "llama-3-8b": "meta-llama/Meta-Llama-3-8B",
    "llama-2-7b": "meta-llama/Llama-2-7b-hf", "llama-2-13b": "meta-llama/Llama-2-13b-hf",
    "tinyllama-1.1b": "TinyLlama/TinyLlama-1.1B-Chat-v1.0", "gpt2": "openai-community/gpt2",
    "gpt2-medium": "openai-community/gpt2-medium", "phi-3-mini-4k": "microsoft/Phi-3-mini-4k-instruct",
    "mixtral-8x7b": "mistralai/Mixtral-8x7B-v0.1", "qwen3-30b-a3b": "Qwen/Qwen3-30B-A3B",
    "gemma-2-2b": "google/gemma-2-2b", "gemma-3-1b": "google/gemma-3-1b-pt",
    "deepseek-v2-lite": "deepseek-ai/DeepSeek-V2-Lite"}
FAMILIES = ("llama", "mistral", "qwen2", "qwen3", "gpt2", "phi3", "gemma2", "gemma3", "mixtral", "qwen3moe",
            "deepseek2")


def check_help_lists(check):
    """make-model --help's --arch and --preset: every family and every preset (with its repository)."""
    text = run_stepwise(BIN, "make-model", "--help").stdout
    flat = " ".join(text.split())
    arch = flat[flat.index("--arch A"):flat.index("--dtype")]
    preset = flat[flat.index("--preset P"):]
    missing = [f for f in FAMILIES if f + " " not in arch + " " and f + "," not in arch]
    check(not missing, "make-model --help: --arch lists every family" + (f" (not {missing})" if missing else ""))
    missing = [n for n, src in PRESET_SOURCES.items() if f"{n} ({src}" not in preset]
    check(not missing, "make-model --help: --preset lists every preset with its repository"
          + (f" (not {missing})" if missing else ""))
    r = run_stepwise(BIN, "make-model", "--preset", "no-such-model", "--out", "/dev/null/x", expect=(2,))
    missing = [n for n in PRESET_SOURCES if n not in r.stderr]
    check(r.returncode == 2 and not missing, "an unknown --preset is refused, naming every preset"
          + (f" (not {missing})" if missing else ""))


def main():
    check = Checks()
    check_help_lists(check)
    with tempfile.TemporaryDirectory() as tmp:
        for name, want in PUBLISHED.items():
            info = json.loads(run_stepwise(BIN, "inspect", "--preset", name, "--json").stdout)
            m = info["model"]
            sizes = {"hidden_size": m.get("dim"), "intermediate_size": m.get("hidden_dim"),
                     "num_hidden_layers": m.get("n_layers"), "num_attention_heads": m.get("n_heads"),
                     "num_key_value_heads": m.get("n_kv_heads"), "vocab_size": m.get("vocab_size"),
                     "max_position_embeddings": m.get("seq_len")}
            wrong = [k for k in sizes if sizes[k] != want[k]]
            params = info["this_model"]["params"]
            check(not wrong and params == PARAMS[name] == closed_form(want),
                  f"{name}: inspect --preset gives the published sizes and {PARAMS[name]:,} parameters"
                  + (f" (not {', '.join(wrong)}; {params})" if wrong or params != PARAMS[name] else ""))
            # the bill in production precisions, from the published shape
            L, kvh, hd = want["num_hidden_layers"], want["num_key_value_heads"], want["head_dim"]
            for kv_dtype, per_token in (("f32", L * kvh * hd * 2 * 4), ("bf16", L * kvh * hd * 2 * 2),
                                        ("f16", L * kvh * hd * 2 * 2), ("int8", L * kvh * (hd + 4) * 2)):
                bill = json.loads(run_stepwise(BIN, "inspect", "--preset", name, "--json", "--kv-dtype", kv_dtype,
                                               "--weight-dtype", "bf16", "--context", "4096").stdout)
                got = bill["this_model"]
                check(got["kv_bytes_per_token"] == per_token and got["kv_bytes_at_context"] == 4096 * per_token
                      and got["weight_bytes"] == 2 * PARAMS[name] and bill["kv_dtype"] == kv_dtype,
                      f"{name}: inspect --kv-dtype {kv_dtype} --weight-dtype bf16 bills {per_token:,} bytes a "
                      f"token and {2 * PARAMS[name]:,} of weights")
            # inspect's fields line names each field as the run header does, with the published value
            text = run_stepwise(BIN, "inspect", "--preset", name).stdout
            line = text.split("  fields: ", 1)[1].split("\n  dim ", 1)[0] if "  fields: " in text else ""
            fields = dict(item.strip().rsplit(" ", 1) for item in line.replace("\n", " ").split(",") if item.strip())
            shown = {k: want[h] for h, k in HEADER_NAMES.items() if want.get(h) is not None}
            off = [k for k in shown if k not in fields or not close(float(fields[k]), shown[k])]
            if name in ("tinyllama-1.1b", "llama-2-7b", "llama-2-13b"):  # llama2.c's architecture: the shape alone
                check(line == "", f"{name}: llama2.c's architecture, inspect shows no fields line")
            else:
                check(shown and not off, f"{name}: inspect's fields line gives {len(shown)} published numbers "
                      f"by their run-header names" + (f" (not {off}: {line!r})" if off else ""))
            out = os.path.join(tmp, name)
            run_stepwise(BIN, "make-model", "--preset", name, "--layers", "1", "--seq-len", "64",
                         "--vocab", "512", "--dtype", "bf16", "--out", out)
            with open(os.path.join(out, "config.json"), encoding="utf-8") as f:
                got = json.load(f)
            want = dict(want, num_hidden_layers=1, max_position_embeddings=64, vocab_size=512)
            wrong = [k for k in want if not close(got.get(k), want[k])]
            check(not wrong, f"{name}: config.json matches the published config"
                  + (f" except {', '.join(f'{k}={got.get(k)!r}' for k in wrong)}" if wrong else ""))
        # inspect --memory: requests of a context that fit beside the weights, from the published shape
        for name, memory, unit_text, weight_dtype in (("llama-2-7b", 80 * 10**9, "80GB", "f16"),
                                                      ("llama-3-8b", 24 * 2**30, "24GiB", "bf16")):
            cap = json.loads(run_stepwise(BIN, "inspect", "--preset", name, "--json", "--context", "4096",
                                          "--weight-dtype", weight_dtype, "--memory", unit_text).stdout)["capacity"]
            want = PUBLISHED[name]
            rows = {r["n_kv_heads"]: r for r in cap["rows"]}
            bad = []
            for kvh, r in rows.items():
                # a variant with other KV heads has its own k and v projections: its own weights
                weights = 2 * (PARAMS[name] - want["num_hidden_layers"] * 2 * want["hidden_size"] * want["head_dim"]
                               * (want["num_key_value_heads"] - kvh))
                if r["weight_bytes"] != weights:
                    bad.append(f"{kvh} KV heads' weights")
                per = {"f32": want["num_hidden_layers"] * kvh * want["head_dim"] * 2 * 4 * 4096,
                       "f16": want["num_hidden_layers"] * kvh * want["head_dim"] * 2 * 2 * 4096,
                       "int8": want["num_hidden_layers"] * kvh * (want["head_dim"] + 4) * 2 * 4096}
                bad += [f"{kvh} KV heads {d}" for d in per
                        if r[f"requests_{d}"] != (memory - weights) // per[d] or r[f"bytes_per_request_{d}"] != per[d]]
            mine = rows[want["num_key_value_heads"]]
            check(cap["memory_bytes"] == memory and cap["weight_bytes"] == 2 * PARAMS[name] and not bad
                  and set(rows) == {k for k in range(1, want["num_attention_heads"] + 1)
                                    if want["num_attention_heads"] % k == 0},
                  f"{name}: inspect --memory {unit_text} --context 4096: {mine['requests_f16']} requests fit with an "
                  f"f16 cache, {mine['requests_int8']} with int8, (memory - weights) // bytes a request for every "
                  "KV-head count" + (f" (not {bad})" if bad else ""))
        # inspect --bandwidth: the roofline, from the published shape by hand (dense llama: the four
        # attention matrices, three MLP ones, the classifier; attention 2 x heads x head_dim a pair)
        for name, context in (("llama-2-7b", 4096), ("llama-3-8b", 1024)):
            w = PUBLISHED[name]
            d, hd, L, nh, kvh = (w["hidden_size"], w["head_dim"], w["num_hidden_layers"],
                                 w["num_attention_heads"], w["num_key_value_heads"])
            matrices = L * (2 * d * nh * hd + 2 * d * kvh * hd + 3 * d * w["intermediate_size"])
            classifier = w["vocab_size"] * d
            kv_token = L * kvh * hd * 2 * 4  # float32 cache
            weight_bytes = (PARAMS[name] - classifier + d) * 4  # all but the embedding, and one of its rows
            roof = json.loads(run_stepwise(BIN, "inspect", "--preset", name, "--json", "--context", str(context),
                                           "--bandwidth", "50").stdout)["roofline"]["steps"]
            bad = []
            for s in roof:
                if s["step"] == "decode":
                    b = s["batch"]
                    macs = b * (matrices + L * context * nh * hd * 2 + classifier)
                    byts = weight_bytes + b * context * kv_token
                else:
                    t = s["prompt_tokens"]
                    macs = t * matrices + L * t * (t + 1) // 2 * nh * hd * 2 + classifier
                    byts = weight_bytes + t * kv_token
                if s["macs"] != macs or s["bytes"] != byts or abs(s["tokens_per_second_at_most"] - 50e9 * s["tokens"] / byts) > 1e-6 * s["tokens_per_second_at_most"]:
                    bad.append(f"{s['step']} {s.get('batch', s.get('prompt_tokens'))}")
            one = roof[0]
            check(not bad and one["macs_per_byte"] < 2,
                  f"{name}: inspect --bandwidth 50 --context {context}: each step's multiply-adds and bytes by hand; "
                  f"decode at batch 1 {one['macs_per_byte']:.2f} multiply-adds a byte, at most "
                  f"{one['tokens_per_second_at_most']:.2f} tokens/s" + (f" (not {bad})" if bad else ""))
        out = os.path.join(tmp, "smol")
        r = run_stepwise(BIN, "make-model", "--preset", "smollm2-135m", "--dtype", "bf16", "--seq-len", "64",
                         "--out", out)
        check(f"{SMOLLM2_PARAMS} parameters" in r.stderr,
              f"smollm2-135m written whole: {SMOLLM2_PARAMS:,} parameters")
        for name, ok in (("qwen3-0.6b", False), ("llama-3.2-1b", False), ("smollm2-135m", False),
                         ("llama-3-8b", False), ("tinyllama-1.1b", True)):
            out = os.path.join(tmp, name + ".bin")
            r = run_stepwise(BIN, "make-model", "--preset", name, "--format", "llama2c", "--layers", "1",
                             "--seq-len", "32", "--out", out, expect=(0,) if ok else (2,))
            check((r.returncode == 0) == ok and (ok or "use --format hf" in r.stderr),
                  f"{name} as a llama2.c checkpoint: {'written' if ok else 'refused, naming --format hf'}")
        check_gpt2(check, tmp)
        check_moe(check, tmp)
        check_mla(check, tmp)
        r = run_stepwise(BIN, "inspect", "--preset", "qwen3-0.6b", "--kv-dtype", "fp8", expect=(2,))
        check("--kv-dtype must be f32, bf16, f16 or int8" in r.stderr, "inspect --kv-dtype fp8 is refused by name")
        r = run_stepwise(BIN, "make-model", "--preset", "gpt-5", "--out", os.path.join(tmp, "x"), expect=(2,))
        check("unknown --preset 'gpt-5'" in r.stderr, "an unknown preset is refused by name")
    return check.summary("presets")


if __name__ == "__main__":
    sys.exit(main())
