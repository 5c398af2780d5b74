#!/usr/bin/python3
"""gguf_reference.py: GGUF files of each architecture against the float64
numpy forward of tests/arch_reference.py.

Random Hugging Face-convention weights (tests/hf_reference.py's) are written
into GGUF files here, from the GGUF spec, as llama.cpp's converter lays
them out: tensor names blk.N.attn_q.weight and so on, dimensions fastest
first; for `llama` q's and k's rows permuted from Hugging Face's halves to
interleaved pairs (the converter's permute), for `qwen2` and `qwen3` left in
halves (llama.cpp runs those with NeoX-style RoPE). The logits stepwise
gives at every position must be within 1e-4 of the reference's, computed
from the Hugging Face-layout weights. check_modes: the keys that choose
how llama.cpp runs a model are refused but for the value stepwise
implements, and a tensor nothing reads is warned about.

usage: gguf_reference.py STEPWISE
"""
import json
import math
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import arch_reference  # noqa: E402
import gguf_write as w  # noqa: E402
import hf_reference as hf  # noqa: E402
from check_util import TIMEOUT  # noqa: E402

GGUF_F32, GGUF_F16 = 0, 1

# after "model.layers.N." -> after "blk.N."
LAYER_NAMES = {"input_layernorm.weight": "attn_norm.weight",
               "self_attn.q_proj.weight": "attn_q.weight", "self_attn.k_proj.weight": "attn_k.weight",
               "self_attn.v_proj.weight": "attn_v.weight",
               "self_attn.o_proj.weight": "attn_output.weight",
               "self_attn.q_proj.bias": "attn_q.bias", "self_attn.k_proj.bias": "attn_k.bias",
               "self_attn.v_proj.bias": "attn_v.bias",
               "self_attn.q_norm.weight": "attn_q_norm.weight",
               "self_attn.k_norm.weight": "attn_k_norm.weight",
               "post_attention_layernorm.weight": "ffn_norm.weight",
               "mlp.gate_proj.weight": "ffn_gate.weight", "mlp.down_proj.weight": "ffn_down.weight",
               "mlp.up_proj.weight": "ffn_up.weight"}


def to_interleaved(x, n_heads):
    """llama.cpp's permute: each head's two halves become interleaved pairs."""
    rows = x.shape[0]
    return x.reshape(n_heads, 2, rows // n_heads // 2, *x.shape[1:]).swapaxes(1, 2).reshape(x.shape)


def llama3_rope_factors(cfg, hd):
    """convert_hf_to_gguf.py's LlamaModel: Llama 3's rule as one factor per
    frequency (rope_freqs.weight), in float32 as torch computes it."""
    s = cfg["rope_scaling"]
    f32 = np.float32
    freqs = f32(1) / f32(cfg["rope_theta"]) ** (np.arange(0, hd, 2, dtype=f32) / f32(hd))
    old, lo, hi, factor = (f32(s["original_max_position_embeddings"]), f32(s["low_freq_factor"]),
                           f32(s["high_freq_factor"]), f32(s["factor"]))
    out = []
    for freq in freqs:
        wavelen = f32(2 * math.pi) / freq
        if wavelen < old / hi:
            out.append(f32(1))
        elif wavelen > old / lo:
            out.append(factor)
        else:
            smooth = (old / wavelen - lo) / (hi - lo)
            out.append(f32(1) / ((f32(1) - smooth) / factor + smooth))
    return np.array(out, dtype=np.float32)


def gguf_bytes(arch, cfg, tensors, dtype):
    nh, nkv = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hd = cfg.get("head_dim") or cfg["hidden_size"] // nh
    kvs = [w.kv_str("general.architecture", arch),
           w.kv_u32(arch + ".context_length", cfg["max_position_embeddings"]),
           w.kv_u32(arch + ".embedding_length", cfg["hidden_size"]),
           w.kv_u32(arch + ".feed_forward_length", cfg["intermediate_size"]),
           w.kv_u32(arch + ".block_count", cfg["num_hidden_layers"]),
           w.kv_u32(arch + ".attention.head_count", nh),
           w.kv_u32(arch + ".attention.head_count_kv", nkv),
           w.kv_u32(arch + ".attention.key_length", hd),
           w.kv_u32(arch + ".attention.value_length", hd),
           w.kv_f32(arch + ".rope.freq_base", cfg["rope_theta"]),
           w.kv_f32(arch + ".attention.layer_norm_rms_epsilon", cfg["rms_norm_eps"])]
    scaling = cfg.get("rope_scaling") or {}
    if scaling.get("rope_type") == "linear":  # positions divided by the factor
        kvs += [w.kv_str(arch + ".rope.scaling.type", "linear"),
                w.kv_f32(arch + ".rope.scaling.factor", scaling["factor"])]
    out = {"token_embd.weight": tensors["model.embed_tokens.weight"],
           "output_norm.weight": tensors["model.norm.weight"]}
    if scaling.get("rope_type") == "llama3":
        out["rope_freqs.weight"] = llama3_rope_factors(cfg, hd)
    if "lm_head.weight" in tensors:
        out["output.weight"] = tensors["lm_head.weight"]
    for name, x in tensors.items():
        if not name.startswith("model.layers."):
            continue
        l, rest = name[len("model.layers."):].split(".", 1)
        if arch == "llama" and rest in ("self_attn.q_proj.weight", "self_attn.k_proj.weight"):
            x = to_interleaved(x, nh if "q_proj" in rest else nkv)
        out["blk.%s.%s" % (l, LAYER_NAMES[rest])] = x
    infos, data = b"", b""
    for name, x in out.items():
        t = GGUF_F32 if x.ndim == 1 else dtype
        blob = x.astype("<f4" if t == GGUF_F32 else "<f2").tobytes()
        shape = list(reversed(x.shape))
        infos += w.gguf_string(name) + struct.pack("<I", len(shape))
        infos += b"".join(struct.pack("<Q", s) for s in shape) + struct.pack("<IQ", t, len(data))
        data += blob + b"\0" * (-len(blob) % 32)
    head = b"GGUF" + struct.pack("<IQQ", 3, len(out), len(kvs)) + b"".join(kvs) + infos
    return head + b"\0" * (-len(head) % 32) + data


CASES = [
    ("llama F32, GQA, untied", "llama", {"architectures": ["LlamaForCausalLM"]}, GGUF_F32),
    ("llama F16, tied", "llama", {"architectures": ["LlamaForCausalLM"], "tie_word_embeddings": True},
     GGUF_F16),
    ("llama F32, linear RoPE scaling (factor 2)", "llama",
     {"architectures": ["LlamaForCausalLM"], "rope_scaling": {"rope_type": "linear", "factor": 2.0}},
     GGUF_F32),
    ("llama F32, Llama 3 RoPE scaling as rope_freqs.weight, head_dim 6", "llama",
     {"architectures": ["LlamaForCausalLM"], "head_dim": 6, "rope_theta": 100.0,
      "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                       "high_freq_factor": 4.0, "original_max_position_embeddings": 16}}, GGUF_F32),
    ("qwen2 F32, q/k/v biases", "qwen2",
     {"architectures": ["Qwen2ForCausalLM"], "rope_theta": 1e6, "rms_norm_eps": 1e-6}, GGUF_F32),
    ("qwen3 F16, q/k norms, head_dim 8, tied", "qwen3",
     {"architectures": ["Qwen3ForCausalLM"], "head_dim": 8, "tie_word_embeddings": True,
      "rope_theta": 1e6, "rms_norm_eps": 1e-6}, GGUF_F16),
]


def engine_logits(stepwise, path, out):
    """Every position's logits of `stepwise score` on the GGUF file at path,
    or the error line."""
    r = subprocess.run([stepwise, "score", "--model", path, "--tokenizer", hf.TINY_TOKENIZER,
                        "--tokens", ",".join(map(str, hf.TOKENS)), "--top-n", "0", "--out", out],
                       capture_output=True, text=True, timeout=TIMEOUT)
    if r.returncode != 0:
        return r.stderr.strip()
    rows = {}
    for line in open(out):
        if '"event":"logits"' in line:
            e = json.loads(line)
            rows[e["pos"]] = e["logits"]
    return np.array([rows[p] for p in range(len(hf.TOKENS))], dtype=np.float64)


def check_modes(stepwise, tmp):
    """The keys that choose how llama.cpp runs a model (gguf_fields.h):
    the value stepwise implements runs as the file without the key, any
    other is refused naming the key and value (issue 67: a sigmoid gating
    ran as softmax); a tensor no part of the architecture reads is warned
    about, the logits unchanged. On tests/gguf_write.py's tiny llama.
    Returns the number of failures."""
    import gguf_split_mla

    def run(data, name):
        path, out = os.path.join(tmp, name + ".gguf"), os.path.join(tmp, name + ".jsonl")
        open(path, "wb").write(data)
        r = subprocess.run([stepwise, "score", "--model", path, "--tokens", "1,3,4,5", "--top-n", "0",
                            "--out", out], capture_output=True, text=True, timeout=TIMEOUT)
        logits = [line for line in open(out) if line.startswith('{"event":"logits"')] if r.returncode == 0 else None
        return r, logits

    def with_kv(kv):
        return w.tiny_gguf("llama", w.llama_tokenizer_kvs() + [kv])
    plain_result, plain = run(w.tiny_gguf("llama"), "plain")
    failed = 0

    def say(ok, what):
        print("%s  %s" % ("ok  " if ok else "FAIL", what))
        return 0 if ok else 1
    for v, name in ((0, "none (llama.cpp reads it as softmax)"), (1, "softmax")):
        r, logits = run(with_kv(w.kv_u32("llama.expert_gating_func", v)), "gating%d" % v)
        failed += say(plain is not None and logits == plain and "warning" not in r.stderr,
                      "expert_gating_func %d, %s: the logits of the file without the key" % (v, name))
    r, logits = run(with_kv(w.kv_u32("llama.expert_group_count", 1)), "groups1")
    failed += say(plain is not None and logits == plain,
                  "expert_group_count 1 (one group, no limit): the logits of the file without the key")
    for kv, words in ((w.kv_u32("llama.expert_gating_func", 2), "llama.expert_gating_func 2 (sigmoid) is not"),
                      (w.kv_u32("llama.expert_gating_func", 3), "expert_gating_func 3 (softmax_weight) is not"),
                      (w.kv_u32("llama.expert_gating_func", 4), "expert_gating_func 4 is not a gating function"),
                      (w.kv_u32("llama.expert_group_count", 2), "llama.expert_group_count 2: llama.cpp's"),
                      (w.kv_u32("llama.pooling_type", 3), "llama.pooling_type 3: a pooled"),
                      (w.gguf_string("llama.attention.causal") + struct.pack("<IB", 7, 0),
                       "llama.attention.causal false")):
        r, _ = run(with_kv(kv), "refused")
        failed += say(r.returncode == 2 and words in r.stderr and len(r.stderr.splitlines()) == 1,
                      "refused in one line naming the value: " + words)
    # a key given twice is refused whichever copy comes first (the first
    # found ran: an accepted gating hid a refused one behind it)
    for order in ((1, 2), (2, 1)):
        twice = w.tiny_gguf("llama", w.llama_tokenizer_kvs() + [w.kv_u32("llama.expert_gating_func", v)
                                                                for v in order])
        r, _ = run(twice, "twice")
        failed += say(r.returncode == 2 and "key llama.expert_gating_func appears twice" in r.stderr and
                      len(r.stderr.splitlines()) == 1,
                      "expert_gating_func given twice (%d, then %d) is refused in one line" % order)
    plain_path, extra = os.path.join(tmp, "plain.gguf"), os.path.join(tmp, "extra.gguf")
    gguf_split_mla.split(plain_path, extra, mla=False,
                         extra_tensors=[("blk.0.exp_probs_b.bias", [4], GGUF_F32, struct.pack("<4f", 9, 9, 9, 9))])
    r, logits = run(open(extra, "rb").read(), "extra")
    failed += say("warning" not in plain_result.stderr and plain is not None and logits == plain and
                  "stepwise: warning: " in r.stderr and "1 tensor is not used by the architecture "
                  "(blk.0.exp_probs_b.bias)" in r.stderr,
                  "a tensor nothing reads (exp_probs_b) is warned about by name; the logits are the file's "
                  "without it; the file without it warns nothing")
    return failed


def main():
    stepwise = sys.argv[1]
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        failed += check_modes(stepwise, tmp)
        for i, (name, arch, overrides, dtype) in enumerate(CASES):
            cfg = dict(hf.BASE, **overrides)
            tensors = hf.hf_tensors(cfg, 31 + i)
            # the values as stored (F16 where the matrices are), for the reference
            stored = {n: (x.astype(np.float32) if x.ndim == 1 or dtype == GGUF_F32
                          else x.astype(np.float16)).astype(np.float64) for n, x in tensors.items()}
            path = os.path.join(tmp, "m%d.gguf" % i)
            open(path, "wb").write(gguf_bytes(arch, cfg, stored, dtype))
            want = arch_reference.reference_logits(hf.as_reference_model(cfg, stored), hf.TOKENS)
            got = engine_logits(stepwise, path, os.path.join(tmp, "s%d.jsonl" % i))
            if isinstance(got, str):
                print("FAIL  %s: %s" % (name, got))
                failed += 1
                continue
            err = float(np.max(np.abs(got - want)))
            ok = err <= 1e-4
            note = ""
            if "rope_scaling" in overrides:  # the scaling must matter: the file without it is off
                plain = dict(cfg)
                del plain["rope_scaling"]
                open(path, "wb").write(gguf_bytes(arch, plain, stored, dtype))
                off = float(np.max(np.abs(engine_logits(stepwise, path, os.path.join(tmp, "p.jsonl")) - want)))
                ok = ok and off > 1e-3
                note = "; without the scaling %.2g" % off
            failed += not ok
            print("%s  GGUF %s (max |engine - numpy| %.2g%s)" % ("ok  " if ok else "FAIL", name, err, note))
    print("gguf architectures and modes: %d failed" % failed)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
