#!/usr/bin/python3
"""The architecture options against an independent reference.

For each option of the architecture struct (config.h) this writes a small
random-weight model in stepwise's JSON format, has `stepwise score` compute
the logits of every position, and computes the same logits here in float64
numpy, written from the published modelling code (Hugging Face's
LlamaForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM and their RoPE
helpers), sharing nothing with the C engine but the JSON file. Each case
also runs with the option's effect taken away, which must change the
logits: a case cannot pass because the option is ignored. The engine runs
with both kernels, which must agree to the bit.

usage: tests/arch_reference.py build/stepwise      (run by `make test`)
"""
import json
import math
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # loaded by path too (make_seeds.sh)
from check_util import TIMEOUT  # noqa: E402

BIN = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/stepwise")
TMP = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "build", "tmp",
                   "arch")
TOKENS = [1, 5, 9, 3, 17, 11, 4, 30, 2, 7, 12, 25]
TOLERANCE = 2e-4  # float32 engine against a float64 reference, on logits of size ~1


# ---------------------------------------------------------------- the model


def make_model(cfg, seed):
    """Random weights of the shapes cfg implies (a JSON-ready dict)."""
    rng = np.random.default_rng(seed)
    d, h, L, V = cfg["dim"], cfg["hidden_dim"], cfg["n_layers"], cfg["vocab_size"]
    nh, nkv = cfg["n_heads"], cfg["n_kv_heads"]
    hd = cfg.get("head_dim", d // nh)
    u = lambda *shape: (rng.uniform(-1, 1, size=shape) / math.sqrt(shape[-1])).tolist()
    norm = lambda n: (1 + 0.2 * rng.uniform(-1, 1, size=n)).tolist()
    layers = []
    for _ in range(L):
        layer = {"rms_att": norm(d), "wq": u(nh * hd, d), "wk": u(nkv * hd, d),
                 "wv": u(nkv * hd, d), "wo": u(d, nh * hd), "rms_ffn": norm(d),
                 "w1": u(h, d), "w2": u(d, h), "w3": u(h, d)}
        if cfg.get("qkv_bias"):
            layer.update(bq=(0.3 * rng.uniform(-1, 1, nh * hd)).tolist(),
                         bk=(0.3 * rng.uniform(-1, 1, nkv * hd)).tolist(),
                         bv=(0.3 * rng.uniform(-1, 1, nkv * hd)).tolist())
        if cfg.get("qk_norm"):
            layer.update(q_norm=norm(hd), k_norm=norm(hd))
        layers.append(layer)
    weights = {"token_embedding": u(V, d), "layers": layers, "rms_final": norm(d)}
    if cfg.get("untied"):
        weights["classifier"] = u(V, d)
    pieces = [["<unk>", 0], ["<s>", 0], ["</s>", 0]] + [["t%d" % i, -i] for i in range(3, V)]
    config = {k: v for k, v in cfg.items() if k != "untied"}
    return {"stepwise_model": 1, "name": "arch test", "config": config, "tokenizer": pieces,
            "weights": weights}


# ---------------------------------------------------------------- reference


def rms_norm(x, w, eps):
    return w * (x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps))


def inv_freq(cfg):
    """transformers' _compute_default_rope_parameters, then the linear or
    llama3 rescaling of modeling_rope_utils."""
    hd = cfg.get("head_dim", cfg["dim"] // cfg["n_heads"])
    hd = cfg.get("rope_dims", hd)  # partial RoPE (Phi-3): the frequencies of the turned dims
    theta = cfg.get("rope_theta", 10000.0)
    freq = 1.0 / theta ** (np.arange(0, hd, 2, dtype=np.float64) / hd)
    s = cfg.get("rope_scaling")
    if s is None:
        return freq
    if s["type"] == "longrope":  # _compute_longrope_parameters: 1 / (ext_factors * base^(2i/dim))
        ext = np.array(s["long_factor"] if cfg.get("_long") else s["short_factor"], dtype=np.float64)
        return 1.0 / (ext * theta ** (np.arange(0, hd, 2, dtype=np.float64) / hd))
    if s["type"] == "linear":
        return freq / s["factor"]
    old, lo, hi, f = (s["original_max_position_embeddings"], s["low_freq_factor"],
                      s["high_freq_factor"], s["factor"])
    wavelen = 2 * math.pi / freq
    scaled = np.where(wavelen > old / lo, freq / f, freq)
    smooth = (old / wavelen - lo) / (hi - lo)
    smoothed = (1 - smooth) * scaled / f + smooth * scaled
    medium = ~(wavelen < old / hi) & ~(wavelen > old / lo)
    return np.where(medium, smoothed, scaled)


def rope(x, pos, cfg):
    """x [heads, hd] at position pos: rotate_half (Hugging Face) or
    interleaved pairs (Meta's original llama, llama2.c)."""
    hd = x.shape[-1]
    rot = cfg.get("rope_dims", hd)
    if rot < hd:  # partial (Phi-3's modeling code): the first rot dims turn, the rest pass
        return np.concatenate([rope(x[:, :rot], pos, dict(cfg, rope_dims=rot)), x[:, rot:]], axis=-1)
    ang = pos * inv_freq(cfg)
    cos, sin = np.cos(ang), np.sin(ang)
    s = cfg.get("rope_scaling") or {}
    if s.get("type") == "longrope":  # Phi3RotaryEmbedding: cos and sin times the attention factor
        cos, sin = cos * s["attention_factor"], sin * s["attention_factor"]
    if cfg.get("rope_layout") == "halves":
        a, b = x[:, : hd // 2], x[:, hd // 2:]
        return np.concatenate([a * cos - b * sin, a * sin + b * cos], axis=-1)
    a, b = x[:, 0::2], x[:, 1::2]
    out = np.empty_like(x)
    out[:, 0::2], out[:, 1::2] = a * cos - b * sin, a * sin + b * cos
    return out


def reference_logits(model, tokens):
    cfg = model["config"]
    W = {k: np.array(v, dtype=np.float64) for k, v in model["weights"].items() if k != "layers"}
    layers = [{k: np.array(v, dtype=np.float64) for k, v in l.items()}
              for l in model["weights"]["layers"]]
    d, nh, nkv = cfg["dim"], cfg["n_heads"], cfg["n_kv_heads"]
    hd = cfg.get("head_dim", d // nh)
    eps = cfg.get("norm_eps", 1e-5)
    cls = W.get("classifier", W["token_embedding"])
    T = len(tokens)
    scaling = cfg.get("rope_scaling") or {}
    if scaling.get("type") == "longrope":  # one forward call: long factors when it reaches past the original
        cfg = dict(cfg, _long=scaling.get("force_long", T > scaling["original_max_position_embeddings"]))
    x = W["token_embedding"][tokens]  # [T, d]
    for l in layers:
        xn = rms_norm(x, l["rms_att"], eps)
        q, k, v = xn @ l["wq"].T, xn @ l["wk"].T, xn @ l["wv"].T
        if "bq" in l:
            q, k, v = q + l["bq"], k + l["bk"], v + l["bv"]
        q, k, v = q.reshape(T, nh, hd), k.reshape(T, nkv, hd), v.reshape(T, nkv, hd)
        if "q_norm" in l:
            q, k = rms_norm(q, l["q_norm"], eps), rms_norm(k, l["k_norm"], eps)
        # longrope's long_at: each position's factors when the calls differed (prefill, then decode)
        at = lambda t: dict(cfg, _long=scaling["long_at"][t]) if "long_at" in scaling else cfg
        q = np.stack([rope(q[t], t, at(t)) for t in range(T)])
        k = np.stack([rope(k[t], t, at(t)) for t in range(T)])
        out = np.zeros((T, nh, hd))
        for t in range(T):
            for hh in range(nh):
                kv = hh // (nh // nkv)
                lo = max(0, t - cfg["sliding_window"] + 1) if cfg.get("sliding_window") else 0  # Mistral's mask
                s = k[lo: t + 1, kv] @ q[t, hh] / math.sqrt(hd)
                p = np.exp(s - s.max())
                out[t, hh] = (p / p.sum()) @ v[lo: t + 1, kv]
        x = x + out.reshape(T, nh * hd) @ l["wo"].T
        xn = rms_norm(x, l["rms_ffn"], eps)
        g, up = xn @ l["w1"].T, xn @ l["w3"].T
        x = x + (g / (1 + np.exp(-g)) * up) @ l["w2"].T
    return rms_norm(x, W["rms_final"], eps) @ cls.T


# ---------------------------------------------------------------- the engine


def engine_logits(model, name, kernels="fast"):
    path = os.path.join(TMP, name + ".json")
    out = os.path.join(TMP, name + "-" + kernels + ".jsonl")
    json.dump(model, open(path, "w"))
    run = subprocess.run([BIN, "score", "--model", path, "--tokens",
                          ",".join(map(str, TOKENS)), "--top-n", "0", "--reproducible",
                          "--kernels", kernels, "--out", out], capture_output=True, text=True, timeout=TIMEOUT)
    if run.returncode != 0:
        raise RuntimeError("stepwise score failed: " + run.stderr.strip())
    rows = {}
    for line in open(out):
        e = json.loads(line)
        if e.get("event") == "logits":
            rows[e["pos"]] = e["logits"]
    return np.array([rows[p] for p in range(len(TOKENS))], dtype=np.float64)


BASE = {"dim": 16, "hidden_dim": 24, "n_layers": 2, "n_heads": 4, "n_kv_heads": 2,
        "vocab_size": 32, "seq_len": 32}

# name: (the option, the same config with the option's effect taken away)
CASES = {
    "llama2c (the reference itself)": ({}, None),
    "rope_layout halves": ({"rope_layout": "halves"}, {}),
    "rope_theta 50": ({"rope_theta": 50.0}, {}),
    "rope_scaling linear": ({"rope_scaling": {"type": "linear", "factor": 4.0}}, {}),
    "rope_scaling llama3": ({"rope_theta": 100.0,
                             "rope_scaling": {"type": "llama3", "factor": 8.0,
                                              "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                              "original_max_position_embeddings": 16}},
                            {"rope_theta": 100.0}),
    "head_dim 6 (not dim / n_heads)": ({"head_dim": 6}, {"head_dim": 4}),
    "qkv_bias": ({"qkv_bias": True}, "zero-bias"),
    "qk_norm": ({"qk_norm": True}, "unit-norm"),
    "norm_eps 0.5": ({"norm_eps": 0.5}, {}),
    "untied classifier": ({"untied": True}, "tied-copy"),
    "MQA (1 KV head)": ({"n_kv_heads": 1}, {"n_kv_heads": 4}),
    "Qwen3-like (halves, head_dim, qk_norm, theta, eps)": (
        {"rope_layout": "halves", "head_dim": 8, "qk_norm": True, "rope_theta": 1e6,
         "norm_eps": 1e-6}, "unit-norm"),
    "Qwen2-like (halves, qkv_bias, theta)": (
        {"rope_layout": "halves", "qkv_bias": True, "rope_theta": 1e6}, "zero-bias"),
}


def without(model, how):
    """The model with the option's effect removed."""
    m = json.loads(json.dumps(model))
    if isinstance(how, dict):
        cfg = dict(BASE, **how)
        m["config"] = {k: v for k, v in cfg.items() if k != "untied"}
        if "head_dim" in how or "n_kv_heads" in how:
            m = make_model(cfg, 7)
        return m
    for l in m["weights"]["layers"]:
        if how == "zero-bias":
            for k in ("bq", "bk", "bv"):
                l[k] = [0.0] * len(l[k])
        if how == "unit-norm":
            for k in ("q_norm", "k_norm"):
                l[k] = [1.0] * len(l[k])
    if how == "tied-copy":
        m["weights"]["token_embedding"] = m["weights"]["classifier"]
        del m["weights"]["classifier"]
    return m


def check_q_pre(name, model, tag):
    """The hook blocks.0.attn.q_pre is wq · ln1 (+ bq) (then each head's
    RMSNorm with q_norm), computed here from the trace's own ln1."""
    path = os.path.join(TMP, tag + ".json")
    out = os.path.join(TMP, tag + "-hooks.jsonl")
    run = subprocess.run([BIN, "score", "--model", path, "--tokens", "1,5,9", "--top-n", "0",
                          "--trace-hooks", "blocks.0.ln1,blocks.0.attn.q_pre", "--out", out],
                         capture_output=True, text=True, timeout=TIMEOUT)
    if run.returncode != 0:
        return "score failed: " + run.stderr.strip()
    cfg = model["config"]
    layer = {k: np.array(v, dtype=np.float64) for k, v in model["weights"]["layers"][0].items()}
    hd = cfg.get("head_dim", cfg["dim"] // cfg["n_heads"])
    ln1, q_pre = {}, {}
    for line in open(out):
        e = json.loads(line)
        if e.get("event") == "activation" and e["hook"] == "blocks.0.ln1":
            ln1[e["pos"]] = np.array(e["data"], dtype=np.float64).reshape(-1)
        if e.get("event") == "activation" and e["hook"] == "blocks.0.attn.q_pre":
            q_pre[e["pos"]] = np.array(e["data"], dtype=np.float64).reshape(-1)
    if set(ln1) != {0, 1, 2} or set(q_pre) != {0, 1, 2}:
        return "the trace lacks ln1 or attn.q_pre at positions 0..2"
    worst = 0.0
    for p in range(3):
        q = layer["wq"] @ ln1[p] + layer.get("bq", 0)
        if "q_norm" in layer:
            q = rms_norm(q.reshape(-1, hd), layer["q_norm"], cfg.get("norm_eps", 1e-5)).reshape(-1)
        worst = max(worst, float(np.max(np.abs(q - q_pre[p]))))
    return None if worst <= 1e-5 else "attn.q_pre differs from wq · ln1 (+ bias, norm) by %.3g" % worst


def main():
    os.makedirs(TMP, exist_ok=True)
    failed = 0
    for i, (name, (option, away)) in enumerate(CASES.items()):
        cfg = dict(BASE, **option)
        model = make_model(cfg, 7)
        tag = "case%d" % i
        try:
            got = engine_logits(model, tag)
            plain = engine_logits(model, tag, "plain")
        except RuntimeError as e:
            print("FAIL  %s: %s" % (name, e))
            failed += 1
            continue
        want = reference_logits(model, TOKENS)
        err = float(np.max(np.abs(got - want)))
        problems = []
        if not np.array_equal(got, plain):
            problems.append("--kernels plain and fast differ")
        if name in ("llama2c (the reference itself)", "qkv_bias", "qk_norm"):
            hook_problem = check_q_pre(name, model, tag)
            if hook_problem:
                problems.append(hook_problem)
        if not err <= TOLERANCE:
            problems.append("max |engine - reference| %.3g > %.1g" % (err, TOLERANCE))
        if away is not None:
            other = reference_logits(without(model, away), TOKENS)
            moved = float(np.max(np.abs(other - want)))
            if not moved > 100 * TOLERANCE:
                problems.append("the option changes the logits by only %.3g: the case "
                                "cannot tell it from its absence" % moved)
        if problems:
            failed += 1
            print("FAIL  %s: %s" % (name, "; ".join(problems)))
        else:
            print("ok    %s (max |engine - numpy| %.2g)" % (name, err))
    print("architectures: %d passed, %d failed" % (len(CASES) - failed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
