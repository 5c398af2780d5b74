#!/usr/bin/python3
"""Gemma 2 and Gemma 3 (text) against a float64 numpy forward written here
from Hugging Face's modeling_gemma2.py and modeling_gemma3.py (in `make test`):

    x = embed[ids] · normalizer       normalizer = √hidden_size in the weights' dtype
    norm(x; w) = x / sqrt(mean(x²) + eps) · (1 + w)         (Gemma's RMSNorm)
    each layer: h = norm(x; input_layernorm)
                q, k, v = h·Wqᵀ, h·Wkᵀ, h·Wvᵀ        Gemma 3: q, k = norm(q; q_norm), norm(k; k_norm) per head
                q, k = rope(q), rope(k)               rotate_half; Gemma 3's sliding layers: rope_local_base_freq
                s = q·kᵀ · query_pre_attn_scalar^-½   Gemma 2: s = tanh(s / c) · c (attn_logit_softcapping)
                mask: causal, and on sliding layers key > query - sliding_window
                x += norm(softmax(s) · v · Woᵀ; post_attention_layernorm)
                h = norm(x; pre_feedforward_layernorm)
                x += norm(W_down · (gelu_tanh(W_gate h) ⊙ W_up h); post_feedforward_layernorm)
    logits = norm(x; norm) · embedᵀ, then Gemma 2: tanh(z / c) · c (final_logit_softcapping)

1. Folders this file writes (its own safetensors writer, random weights, F32
   and BF16; config.json with layer_types or Gemma 3's older
   sliding_window_pattern): `stepwise score` within 1e-5 of the reference.
2. Every option matters: the reference with it taken away (each soft-cap,
   the window, query_pre_attn_scalar, the 1 + w, the post-norms, the
   embedding scale, GeGLU, the local RoPE base, the q/k norms) is farther
   than 1e-4 from the engine.
3. Decode against the cache (generate, one token at a time, past the
   window) gives the reference's logits too; plain and fast kernels and 1,
   2 and 3 threads give the same bytes.
4. The hooks blocks.L.attn.post_norm and mlp.post_norm are the reference's
   post-norm outputs; a sliding layer's pattern is 0 outside its window.
5. `make-model --format hf --arch gemma2|gemma3` writes folders this file
   reads back (norms stored as w, not 1 + w) and the reference on them is
   the engine's. `convert` writes GGUF gemma2 and gemma3 with llama.cpp's
   names and its 1 + w norms (read by tests/gguf_read.py), and the file
   gives the folder's logits bit for bit.
6. config.json values the engine does not run are refused in one line.

    /usr/bin/python3 tests/gemma_check.py build/stepwise
"""
import json
import math
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from check_util import Checks, check_names_diff, check_refused_configs, run_stepwise, score_run, TIMEOUT  # noqa: E402
import hf_reference  # noqa: E402

BIN = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/stepwise")
MODELS = os.path.abspath(os.environ.get("STEPWISE_MODELS", os.path.join(HERE, "..", "..", "shared", "models")))
TINY_TOKENIZER = os.path.join(HERE, "..", "data", "tiny-model.json")
TOKENS = [1, 5, 9, 3, 12, 11, 4, 8, 2, 7, 10, 6, 0, 5, 5]
TOLERANCE = 1e-5
check = Checks()


def config(gemma3=False, d=20, layers=4, heads=4, kv=2, hd=8, vocab=13, positions=32, **kw):
    cfg = {"architectures": ["Gemma3ForCausalLM" if gemma3 else "Gemma2ForCausalLM"],
           "model_type": "gemma3_text" if gemma3 else "gemma2", "hidden_size": d,
           "intermediate_size": 2 * d + 8, "num_hidden_layers": layers, "num_attention_heads": heads,
           "num_key_value_heads": kv, "head_dim": hd, "vocab_size": vocab,
           "max_position_embeddings": positions, "rms_norm_eps": 1e-6,
           "rope_theta": 1e6 if gemma3 else 10000.0, "hidden_activation": "gelu_pytorch_tanh",
           "query_pre_attn_scalar": 2 * hd, "sliding_window": 4,
           "attn_logit_softcapping": None if gemma3 else 1.5,
           "final_logit_softcapping": None if gemma3 else 2.0, "tie_word_embeddings": True,
           "layer_types": ["sliding_attention" if (l + 1) % 2 else "full_attention" for l in range(layers)]}
    if gemma3:
        cfg["rope_local_base_freq"] = 10.0
        cfg["rope_scaling"] = {"rope_type": "linear", "factor": 4.0}
    cfg.update(kw)
    return cfg


def random_tensors(cfg, seed):
    """Gemma's tensors under Hugging Face's names: norms hold w (the model
    multiplies by 1 + w), matrices [out, in]."""
    rng = np.random.default_rng(seed)
    d, h, L, V = cfg["hidden_size"], cfg["intermediate_size"], cfg["num_hidden_layers"], cfg["vocab_size"]
    nh, nkv, hd = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
    u = lambda *s: rng.uniform(-1, 1, size=s) / np.sqrt(s[-1])
    norm = lambda n: 0.3 * rng.uniform(-1, 1, size=n)
    t = {"model.embed_tokens.weight": u(V, d), "model.norm.weight": norm(d)}
    if not cfg["tie_word_embeddings"]:
        t["lm_head.weight"] = u(V, d)
    for l in range(L):
        p = f"model.layers.{l}."
        t.update({p + "input_layernorm.weight": norm(d), p + "post_attention_layernorm.weight": norm(d),
                  p + "pre_feedforward_layernorm.weight": norm(d),
                  p + "post_feedforward_layernorm.weight": norm(d),
                  p + "self_attn.q_proj.weight": u(nh * hd, d), p + "self_attn.k_proj.weight": u(nkv * hd, d),
                  p + "self_attn.v_proj.weight": u(nkv * hd, d), p + "self_attn.o_proj.weight": u(d, nh * hd),
                  p + "mlp.gate_proj.weight": 3 * u(h, d), p + "mlp.up_proj.weight": u(h, d),
                  p + "mlp.down_proj.weight": u(d, h)})
        if cfg["architectures"][0] == "Gemma3ForCausalLM":
            t[p + "self_attn.q_norm.weight"] = norm(hd)
            t[p + "self_attn.k_norm.weight"] = norm(hd)
    return t


# ---------------------------------------------------------------- reference


def gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def silu(x):
    return x / (1 + np.exp(-x))


def bf16(x):
    """x rounded to bfloat16 (nearest even), as a float64."""
    bits = np.array([x], dtype="<f4").view("<u4").astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype("<u4") << 16
    return float(rounded.astype("<u4").view("<f4")[0])


def sliding(cfg):
    """Which layers slide: layer_types, or the older sliding_window_pattern."""
    if cfg.get("layer_types"):
        return [t == "sliding_attention" for t in cfg["layer_types"]]
    p = cfg.get("sliding_window_pattern", 6)
    return [bool((l + 1) % p) for l in range(cfg["num_hidden_layers"])]


def inv_freq(theta, hd, scaling):
    """_compute_default_rope_parameters, then linear scaling's division."""
    f = 1.0 / theta ** (np.arange(0, hd, 2, dtype=np.float64) / hd)
    return f / scaling["factor"] if scaling else f


def rope(x, pos, freq):
    """rotate_half: x [heads, hd], dims (i, i + hd/2) turned together."""
    hd = x.shape[-1]
    ang = pos * freq
    a, b = x[:, : hd // 2], x[:, hd // 2:]
    return np.concatenate([a * np.cos(ang) - b * np.sin(ang), a * np.sin(ang) + b * np.cos(ang)], axis=-1)


def reference(cfg, w, tokens, dtype="F32", away=(), acts=None, gelu=gelu_tanh):
    """The logits [T, vocab]. away: options taken away, to show each matters.
    acts (a dict): filled with each module's output under its Hugging Face
    name (":input" for its input), [T, width], and each layer's pattern.
    gelu: the MLP's (another engine's rounding of it, say)."""
    gemma3 = cfg["architectures"][0] == "Gemma3ForCausalLM"
    d, nh, nkv, hd = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
    eps = cfg["rms_norm_eps"]
    one = 0.0 if "1 + w" in away else 1.0

    def norm(x, v):
        return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * (one + v)

    T = len(tokens)
    scale = math.sqrt(d) if "embedding scale rounded" in away else (
        bf16(math.sqrt(d)) if dtype == "BF16" else float(np.float32(math.sqrt(d))))
    x = w["model.embed_tokens.weight"][tokens] * (1.0 if "embedding scale" in away else scale)
    slides = sliding(cfg)
    window = cfg["sliding_window"]
    qscale = hd if "query_pre_attn_scalar" in away else cfg["query_pre_attn_scalar"]
    cap = None if "attention soft-cap" in away else cfg.get("attn_logit_softcapping")
    scaling = cfg.get("rope_scaling")
    for l in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{l}."
        local = gemma3 and slides[l] and "local RoPE base" not in away
        freq = inv_freq(cfg["rope_local_base_freq"], hd, None) if local else inv_freq(cfg["rope_theta"], hd, scaling)
        keep = (lambda name, a: acts.__setitem__(p + name, a.reshape(T, -1))) if acts is not None else (
            lambda name, a: None)
        h = norm(x, w[p + "input_layernorm.weight"])
        keep("input_layernorm", h)
        q = (h @ w[p + "self_attn.q_proj.weight"].T).reshape(T, nh, hd)
        k = (h @ w[p + "self_attn.k_proj.weight"].T).reshape(T, nkv, hd)
        v = (h @ w[p + "self_attn.v_proj.weight"].T).reshape(T, nkv, hd)
        keep("self_attn.q_proj", q), keep("self_attn.k_proj", k), keep("self_attn.v_proj", v)
        if gemma3 and "q/k norms" not in away:
            q, k = norm(q, w[p + "self_attn.q_norm.weight"]), norm(k, w[p + "self_attn.k_norm.weight"])
        q = np.stack([rope(q[t], t, freq) for t in range(T)])
        k = np.stack([rope(k[t], t, freq) for t in range(T)])
        out = np.zeros((T, nh, hd))
        pattern = np.zeros((T, nh, T))
        for t in range(T):
            lo = t - window + 1 if slides[l] and "window" not in away else 0
            lo = max(lo, 0)
            for hh in range(nh):
                g = hh // (nh // nkv)
                s = k[: t + 1, g] @ q[t, hh] * qscale ** -0.5
                if cap:
                    s = np.tanh(s / cap) * cap
                s = s[lo:]
                e = np.exp(s - s.max())
                pattern[t, hh, lo: t + 1] = e / e.sum()
                out[t, hh] = pattern[t, hh, lo: t + 1] @ v[lo: t + 1, g]
        keep("self_attn.o_proj:input", out)
        a = out.reshape(T, nh * hd) @ w[p + "self_attn.o_proj.weight"].T
        keep("self_attn.o_proj", a)
        if "post-norms" not in away:
            a = norm(a, w[p + "post_attention_layernorm.weight"])
        keep("post_attention_layernorm", a)
        x = x + a
        h = norm(x, w[p + "pre_feedforward_layernorm.weight"])
        keep("pre_feedforward_layernorm", h)
        act = silu if "GeGLU" in away else gelu
        gate, up = h @ w[p + "mlp.gate_proj.weight"].T, h @ w[p + "mlp.up_proj.weight"].T
        hidden = act(gate) * up
        m = hidden @ w[p + "mlp.down_proj.weight"].T
        keep("mlp.gate_proj", gate), keep("mlp.up_proj", up), keep("mlp.down_proj:input", hidden)
        keep("mlp.down_proj", m)
        if "post-norms" not in away:
            m = norm(m, w[p + "post_feedforward_layernorm.weight"])
        keep("post_feedforward_layernorm", m)
        x = x + m
        keep("", x)  # the decoder layer's output: "model.layers.{l}."
        if acts is not None:
            acts[f"blocks.{l}.attn.pattern"] = pattern
    x = norm(x, w["model.norm.weight"])
    if acts is not None:
        acts["model.norm"] = x
    logits = x @ w.get("lm_head.weight", w["model.embed_tokens.weight"]).T
    fcap = None if "final soft-cap" in away else cfg.get("final_logit_softcapping")
    return np.tanh(logits / fcap) * fcap if fcap else logits


# ---------------------------------------------------------------- the engine


def score(model, tokens, *extra, hooks=None):
    """(logits [T, vocab], {hook: {(pos, head): data}}, the trace's text)."""
    return score_run(BIN, model, tokens, *extra, hooks=hooks)


OPTIONS = {"gemma2": ["attention soft-cap", "final soft-cap", "window", "query_pre_attn_scalar", "1 + w",
                      "post-norms", "embedding scale", "GeGLU"],
           "gemma3": ["window", "query_pre_attn_scalar", "1 + w", "post-norms", "embedding scale", "GeGLU",
                      "local RoPE base", "q/k norms"]}


def check_reference(tmp):
    cases = [("Gemma 2 F32, soft-caps 1.5 and 2, window 4, alternate layers", config(), "F32"),
             ("Gemma 2 BF16, untied, 3 layers, window 6", config(layers=3, sliding_window=6,
                                                                 tie_word_embeddings=False), "BF16"),
             ("Gemma 3 F32, q/k norms, window 4, local RoPE base 10, linear scaling 4", config(True), "F32"),
             ("Gemma 3 BF16, sliding_window_pattern 3 (no layer_types), MQA",
              dict({k: v for k, v in config(True, layers=6, kv=1).items() if k != "layer_types"},
                   sliding_window_pattern=3), "BF16")]
    for i, (what, cfg, dtype) in enumerate(cases):
        folder = os.path.join(tmp, f"ref{i}")
        stored = hf_reference.write_model_dir(folder, cfg, random_tensors(cfg, 200 + i), dtype)
        got, _, _ = score(folder, TOKENS)
        err = np.abs(got - reference(cfg, stored, TOKENS, dtype)).max()
        check(err <= TOLERANCE, f"{what}: engine within {TOLERANCE:g} of the float64 reference "
                                f"(max |dlogit| {err:.2e})")
        if i in (0, 2):
            family = "gemma3" if i else "gemma2"
            moved = {o: np.abs(got - reference(cfg, stored, TOKENS, dtype, away=(o,))).max()
                     for o in OPTIONS[family]}
            weakest = min(moved, key=moved.get)
            check(all(v > 1e-4 for v in moved.values()),
                  f"{family}: each option matters, the reference without it is more than 1e-4 away "
                  f"(least: {weakest}, {moved[weakest]:.2e})")
        if i == 1:
            err = np.abs(got - reference(cfg, stored, TOKENS, dtype, away=("embedding scale rounded",))).max()
            check(err > 1e-6, f"the BF16 embedding scale is √20 rounded to bfloat16, as Hugging Face's: "
                              f"unrounded, the reference is {err:.2e} away")
    return os.path.join(tmp, "ref0"), os.path.join(tmp, "ref2")


def check_engine_paths(gemma2, gemma3):
    """Decode against the cache, both kernels, several threads: the same
    logits as one prefill, and as the reference."""
    tok512 = os.path.join(MODELS, "tok512.bin")
    for name, folder in (("gemma2", gemma2), ("gemma3", gemma3)):
        base = score(folder, TOKENS, "--kernels", "plain", "--threads", "1")[2]
        same = all(score(folder, TOKENS, "--kernels", k, "--threads", t)[2] == base
                   for k, t in (("fast", "1"), ("fast", "2"), ("fast", "3"), ("plain", "2")))
        check(same, f"{name}: plain and fast kernels, 1, 2 and 3 threads: the same bytes")
    if not os.path.exists(tok512):
        print(f"gemma: no tok512.bin in {MODELS}: the decode case is skipped")
        return
    with tempfile.TemporaryDirectory() as tmp:
        for arch in ("gemma2", "gemma3"):
            folder = os.path.join(tmp, arch)
            extra = ["--rope-theta", "1000000", "--rope-local-theta", "10"] if arch == "gemma3" else []
            run_stepwise(BIN, "make-model", "--format", "hf", "--arch", arch, "--dim", "32", "--hidden", "64",
                         "--layers", "4", "--heads", "4", "--kv-heads", "2", "--head-dim", "8", "--vocab", "512",
                         "--seq-len", "64", "--sliding-window", "3", "--query-scale", "12", "--seed", "3",
                         "--out", folder, *extra)
            trace = os.path.join(tmp, arch + ".jsonl")
            run_stepwise(BIN, "generate", "--model", folder, "--tokenizer", tok512, "--prompt", "Once upon",
                         "--steps", "10", "--trace-level", "logits", "--reproducible", "--quiet",
                         "--trace", trace)
            events = [json.loads(line) for line in open(trace)]
            seq = [e for e in events if e.get("event") == "done"][0]["tokens"]
            decoded = {e["pos"]: e["logits"] for e in events if e.get("event") == "logits"}
            cfg, w = hf_reference.read_model_dir(folder)
            want = reference(cfg, w, seq)
            steps = [p for p in decoded if p < len(seq)]
            err = max(np.abs(np.array(decoded[p]) - want[p]).max() for p in steps)
            check(len(steps) >= 6 and max(steps) >= 6 and err <= TOLERANCE,
                  f"{arch}: {len(steps)} positions decoded one at a time against the cache, past a window of "
                  f"3, within {TOLERANCE:g} of the reference (max |dlogit| {err:.2e})")
            vg = subprocess.run(["valgrind", "-q", "--error-exitcode=9", "--leak-check=full",
                                 "--errors-for-leak-kinds=definite,indirect", BIN, "generate", "--model", folder,
                                 "--tokenizer", tok512, "--prompt", "Once upon", "--steps", "10", "--quiet"],
                                capture_output=True, text=True, timeout=TIMEOUT)
            check(vg.returncode == 0, f"{arch}: that generate under valgrind: no invalid access, nothing lost"
                  + ("" if vg.returncode == 0 else ": " + vg.stderr.strip()[:300]))


def check_hooks(folder):
    cfg, w = hf_reference.read_model_dir(folder)
    acts = {}
    reference(cfg, w, TOKENS, acts=acts)
    _, got, _ = score(folder, TOKENS, hooks="blocks.*.attn.post_norm,blocks.*.mlp.post_norm,blocks.0.attn.pattern")
    worst = 0.0
    for l in range(cfg["num_hidden_layers"]):
        for hook, module in (("attn.post_norm", "post_attention_layernorm"),
                             ("mlp.post_norm", "post_feedforward_layernorm")):
            rows = got.get(f"blocks.{l}.{hook}", {})
            if len(rows) != len(TOKENS):
                worst = math.inf
                break
            mine = np.array([rows[(p, -1)] for p in range(len(TOKENS))], dtype=np.float64).reshape(len(TOKENS), -1)
            worst = max(worst, float(np.abs(mine - acts[f"model.layers.{l}.{module}"]).max()))
    check(worst <= TOLERANCE, f"blocks.L.attn.post_norm and mlp.post_norm are the reference's post-norm "
                              f"outputs (max |d| {worst:.2e})")
    pattern = got.get("blocks.0.attn.pattern", {})
    window = cfg["sliding_window"]
    zero_outside = all(all(v == 0 for v in pattern[(p, h)][: p - window + 1])
                       for p in range(window, len(TOKENS)) for h in range(cfg["num_attention_heads"]))
    sums = [sum(pattern[(p, h)]) for p in range(len(TOKENS)) for h in range(cfg["num_attention_heads"])]
    check(zero_outside and all(abs(s - 1) < 1e-5 for s in sums),
          f"a sliding layer's attn.pattern is 0 outside its window of {window} and sums to 1")


def check_diff(tmp, folder):
    """The reference's activations under Hugging Face's Gemma module names
    as a candidate: diff --names hf-gemma passes it, and finds a nudge at
    each hook Gemma adds or moves where it was made."""
    cfg, w = hf_reference.read_model_dir(folder)
    acts = {}
    reference(cfg, w, TOKENS, acts=acts)
    modules = {name.rstrip("."): rows for name, rows in acts.items() if not name.startswith("blocks.")}
    check_names_diff(check, BIN, tmp, folder, TOKENS, modules, "hf-gemma",
                     (("model.layers.1.post_attention_layernorm", "blocks.1.attn.post_norm"),
                      ("model.layers.0.pre_feedforward_layernorm", "blocks.0.ln2"),
                      ("model.layers.2.mlp.down_proj:input", "blocks.2.mlp.hidden"),
                      ("model.layers.0.post_feedforward_layernorm", "blocks.0.mlp.post_norm")),
                     "Gemma 2", 15 * len(TOKENS))


def check_make_model_and_convert(tmp):
    from gguf_read import read_gguf
    for arch, extra, keys in (
            ("gemma2", ["--sliding-window", "5", "--query-scale", "16"],
             ("gemma2.attn_logit_softcapping", "gemma2.final_logit_softcapping", "gemma2.attention.sliding_window")),
            ("gemma3", ["--sliding-window", "5", "--rope-theta", "1000000", "--layers", "7"],
             ("gemma3.attention.sliding_window", "gemma3.rope.freq_base"))):
        folder = os.path.join(tmp, "made-" + arch)
        args = ["make-model", "--format", "hf", "--arch", arch, "--dtype", "bf16", "--dim", "32", "--hidden", "64",
                "--layers", "4", "--heads", "4", "--kv-heads", "2", "--head-dim", "16", "--vocab", "13",
                "--seq-len", "32", "--out", folder, *extra]
        run_stepwise(BIN, *args)
        cfg, w = hf_reference.read_model_dir(folder)
        got, _, _ = score(folder, TOKENS)
        err = np.abs(got - reference(cfg, w, TOKENS, "BF16")).max()
        zero_norms = all(np.all(v == 0) for k, v in w.items() if k.endswith("norm.weight"))
        check(err <= TOLERANCE and zero_norms,
              f"make-model --arch {arch} (bf16): its folder holds the norms as w (0 for the model's 1), and "
              f"the reference on it is the engine's (max |dlogit| {err:.2e})")
        gguf = os.path.join(tmp, arch + ".gguf")
        run_stepwise(BIN, "convert", "--model", folder, "--tokenizer", TINY_TOKENIZER, "--out", gguf)
        meta, tensors = read_gguf(gguf)
        names_ok = (meta.get("general.architecture") == arch and "blk.0.post_attention_norm.weight" in tensors
                    and "blk.0.post_ffw_norm.weight" in tensors and all(k in meta for k in keys)
                    and tensors["blk.0.attn_norm.weight"][0] == 0  # F32
                    and np.all(np.frombuffer(tensors["blk.0.attn_norm.weight"][2], "<f4") == 1.0))
        # the folder's embedding scale is √32 in bfloat16; llama.cpp's, the float32 one
        same = np.abs(score(gguf, TOKENS)[0] - reference(cfg, w, TOKENS, "F32")).max()
        check(names_ok and same <= TOLERANCE,
              f"convert writes GGUF {arch} (llama.cpp's names and keys, norms as 1 + w), and the file gives "
              f"the reference's logits with llama.cpp's float32 √dim (max |dlogit| {same:.2e})")


def check_refused(tmp):
    base = config()
    check_refused_configs(check, BIN, tmp, base, random_tensors(base, 7), (
            ("hidden_activation gelu", {"hidden_activation": "gelu"}, "hidden_activation gelu"),
            ("layer_types of another length", {"layer_types": ["full_attention"]}, "layer_types"),
            ("layer_types with no pattern", {"layer_types": ["sliding_attention", "full_attention",
                                                             "full_attention", "sliding_attention"]},
             "layer_types repeats no pattern"),
            ("a negative soft-cap", {"attn_logit_softcapping": -1}, "attn_logit_softcapping"),
            ("sliding_window 2.5", {"sliding_window": 2.5}, "sliding_window")))


def main():
    with tempfile.TemporaryDirectory() as tmp:
        gemma2, gemma3 = check_reference(tmp)
        check_engine_paths(gemma2, gemma3)
        check_hooks(gemma2)
        check_diff(tmp, gemma2)
        check_make_model_and_convert(tmp)
        check_refused(tmp)
    return check.summary("gemma check")


if __name__ == "__main__":
    sys.exit(main())
