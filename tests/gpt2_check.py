#!/usr/bin/python3
"""GPT-2 (GPT2LMHeadModel) against a float64 numpy forward written here from
Hugging Face's modelling_gpt2.py (in `make test`):

    x = wte[ids] + wpe[positions]
    each block: h = LayerNorm(x; ln_1) (weight and bias, eps from config)
                q, k, v = split(h · c_attn.W + c_attn.b)   Conv1D: W is [in, out]
                a = softmax(q·kᵀ / sqrt(head_dim), causal) · v
                x += a · attn.c_proj.W + attn.c_proj.b
                h = LayerNorm(x; ln_2)
                x += gelu_new(h · c_fc.W + c_fc.b) · mlp.c_proj.W + mlp.c_proj.b
    logits = LayerNorm(x; ln_f) · wteᵀ      (tied)

1. Folders this file writes (its own safetensors writer, random weights,
   F32 and BF16, tensor names with "transformer." and without, tied and
   untied): `stepwise score` within 1e-5 of the reference (max |dlogit|).
2. Each of GPT-2's differences from Llama matters: the reference without
   the position embedding, with RMSNorm for LayerNorm, without the biases,
   or with GELU's erf form for its tanh approximation, is farther than 1e-5
   from the engine.
3. `make-model --format hf --arch gpt2` writes a folder this file reads back
   (Conv1D layout, fused c_attn) and the reference on it is the engine's.
4. `convert` writes the folder as GGUF gpt2 with llama.cpp's tensor and
   key names (read here by tests/gguf_read.py), and the file gives the
   folder's logits bit for bit. Plain and fast kernels, 1 and 2 threads:
   the same bits. The hook
   embed.pos is the position embedding's rows.
5. The reference's activations under Hugging Face's module names pass
   `diff --names hf-gpt2`; a nudge to embed.pos, ln1, mlp.up, mlp.hidden
   or final_norm at one position is found there.
6. config.json values the engine does not run are refused in one line:
   another activation, scale_attn_by_inverse_layer_idx, a bad epsilon.

    /usr/bin/python3 tests/gpt2_check.py build/stepwise
"""
import json
import math
import os
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from check_util import Checks, check_names_diff, check_refused_configs, run_stepwise, score_run  # noqa: E402
import hf_reference  # noqa: E402

BIN = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/stepwise")
TOKENS = [1, 5, 9, 3, 12, 11, 4, 8, 2, 7, 10, 6, 0, 5, 5]
check = Checks()


def config(d=32, layers=2, heads=4, inner=None, vocab=13, positions=24, eps=1e-5, tied=True):
    return {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "n_embd": d, "n_layer": layers,
            "n_head": heads, "n_inner": inner, "n_positions": positions, "n_ctx": positions,
            "vocab_size": vocab, "layer_norm_epsilon": eps, "activation_function": "gelu_new",
            "scale_attn_weights": True, "tie_word_embeddings": tied}


def random_tensors(cfg, seed, prefix="transformer."):
    """GPT-2's tensors by its names, in its layout: Conv1D weights [in, out]."""
    rng = np.random.default_rng(seed)
    d, L, V, P = cfg["n_embd"], cfg["n_layer"], cfg["vocab_size"], cfg["n_positions"]
    h = cfg["n_inner"] or 4 * d
    u = lambda *shape: rng.uniform(-1, 1, shape) / math.sqrt(shape[0])  # noqa: E731
    t = {prefix + "wte.weight": rng.uniform(-1, 1, (V, d)), prefix + "wpe.weight": rng.uniform(-1, 1, (P, d)),
         prefix + "ln_f.weight": 1 + 0.3 * rng.uniform(-1, 1, d), prefix + "ln_f.bias": 0.3 * rng.uniform(-1, 1, d)}
    for layer in range(L):
        p = f"{prefix}h.{layer}."
        t.update({p + "ln_1.weight": 1 + 0.3 * rng.uniform(-1, 1, d), p + "ln_1.bias": 0.3 * rng.uniform(-1, 1, d),
                  p + "attn.c_attn.weight": u(d, 3 * d), p + "attn.c_attn.bias": 0.3 * rng.uniform(-1, 1, 3 * d),
                  p + "attn.c_proj.weight": u(d, d), p + "attn.c_proj.bias": 0.3 * rng.uniform(-1, 1, d),
                  p + "ln_2.weight": 1 + 0.3 * rng.uniform(-1, 1, d), p + "ln_2.bias": 0.3 * rng.uniform(-1, 1, d),
                  p + "mlp.c_fc.weight": u(d, h), p + "mlp.c_fc.bias": 0.3 * rng.uniform(-1, 1, h),
                  p + "mlp.c_proj.weight": u(h, d), p + "mlp.c_proj.bias": 0.3 * rng.uniform(-1, 1, d)})
    if not cfg["tie_word_embeddings"]:
        t["lm_head.weight"] = rng.uniform(-1, 1, (V, d))
    return t


def layer_norm(x, w, b, eps):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * w + b


def rms_norm(x, w, b, eps):  # what Llama would do: for the check that LayerNorm matters
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w


def gelu_new(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def gelu_erf(x):
    return 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))


def reference(cfg, w, tokens, positions=True, norm=layer_norm, biases=True, gelu=gelu_new, acts=None):
    """Every position's logits, float64, from the weights as stored; with
    acts (a dict), each module's output under Hugging Face's name too."""
    keep = (lambda name, x: acts.__setitem__(name, x)) if acts is not None else (lambda name, x: None)
    pre = "transformer." if "transformer.wte.weight" in w else ""
    d, H, eps = cfg["n_embd"], cfg["n_head"], cfg["layer_norm_epsilon"]
    hd, T = d // H, len(tokens)
    b = (lambda name: w[name]) if biases else (lambda name: 0 * w[name])
    keep("transformer.wte", w[pre + "wte.weight"][tokens])
    keep("transformer.wpe", w[pre + "wpe.weight"][:T])
    x = w[pre + "wte.weight"][tokens] + (w[pre + "wpe.weight"][:T] if positions else 0)
    mask = np.triu(np.full((T, T), -np.inf), 1)
    for layer in range(cfg["n_layer"]):
        p = f"{pre}h.{layer}."
        h = norm(x, w[p + "ln_1.weight"], b(p + "ln_1.bias"), eps)
        keep(f"transformer.h.{layer}.ln_1", h)
        qkv = h @ w[p + "attn.c_attn.weight"] + b(p + "attn.c_attn.bias")
        q, k, v = (qkv[:, i * d:(i + 1) * d].reshape(T, H, hd).transpose(1, 0, 2) for i in range(3))
        s = q @ k.transpose(0, 2, 1) / math.sqrt(hd) + mask
        s = np.exp(s - s.max(-1, keepdims=True))
        a = (s / s.sum(-1, keepdims=True)) @ v
        a = a.transpose(1, 0, 2).reshape(T, d)
        keep(f"transformer.h.{layer}.attn.c_proj:input", a)
        a = a @ w[p + "attn.c_proj.weight"] + b(p + "attn.c_proj.bias")
        keep(f"transformer.h.{layer}.attn", a)
        x = x + a
        h = norm(x, w[p + "ln_2.weight"], b(p + "ln_2.bias"), eps)
        keep(f"transformer.h.{layer}.ln_2", h)
        up = h @ w[p + "mlp.c_fc.weight"] + b(p + "mlp.c_fc.bias")
        keep(f"transformer.h.{layer}.mlp.c_fc", up)
        m = gelu(up)
        keep(f"transformer.h.{layer}.mlp.act", m)
        m = m @ w[p + "mlp.c_proj.weight"] + b(p + "mlp.c_proj.bias")
        keep(f"transformer.h.{layer}.mlp", m)
        x = x + m
        keep(f"transformer.h.{layer}", x)
    x = norm(x, w[pre + "ln_f.weight"], b(pre + "ln_f.bias"), eps)
    keep("transformer.ln_f", x)
    logits = x @ w.get("lm_head.weight", w[pre + "wte.weight"]).T
    keep("lm_head", logits)
    return logits


def score(model, tokens, *extra, hooks=None):
    """(logits [T, vocab], {hook: rows [T, ...]}, the trace's text)."""
    logits, acts, text = score_run(BIN, model, tokens, *extra, hooks=hooks)
    return logits, {k: np.array([v[p] for p in sorted(v)]) for k, v in acts.items()}, text


def check_reference(tmp):
    cases = [("F32, transformer. names, tied", config(), "F32", "transformer."),
             ("BF16, GPT2Model's names, tied", config(), "BF16", ""),
             ("F32, untied, n_inner 48, eps 1e-3", config(inner=48, eps=1e-3, tied=False), "F32", "transformer."),
             ("BF16, 3 layers, 2 heads", config(layers=3, heads=2), "BF16", "transformer.")]
    worst = {}
    for i, (what, cfg, dtype, prefix) in enumerate(cases):
        folder = os.path.join(tmp, f"ref{i}")
        stored = hf_reference.write_model_dir(folder, cfg, random_tensors(cfg, 100 + i, prefix), dtype)
        got, _, _ = score(folder, TOKENS)
        err = np.abs(got - reference(cfg, stored, TOKENS)).max()
        check(err <= 1e-5, f"{what}: engine within 1e-5 of the float64 reference (max |dlogit| {err:.2e})")
        if i == 0:
            worst = {name: np.abs(got - reference(cfg, stored, TOKENS, **kw)).max() for name, kw in (
                ("the position embedding", {"positions": False}),
                ("LayerNorm (RMSNorm instead)", {"norm": rms_norm}),
                ("the biases", {"biases": False}),
                ("GELU's tanh approximation (erf instead)", {"gelu": gelu_erf}))}
    for name, err in worst.items():
        check(err > 1e-5, f"{name} matters: the reference without it is {err:.2e} from the engine")


def check_make_model(tmp):
    folder = os.path.join(tmp, "made")
    run_stepwise(BIN, "make-model", "--format", "hf", "--arch", "gpt2", "--dtype", "bf16", "--dim", "32",
                 "--hidden", "80", "--layers", "2", "--heads", "4", "--vocab", "13", "--seq-len", "24",
                 "--out", folder)
    cfg, w = hf_reference.read_model_dir(folder)
    names_ok = "transformer.h.1.attn.c_attn.weight" in w and w["transformer.h.1.attn.c_attn.weight"].shape == (32, 96)
    got, acts, _ = score(folder, TOKENS, hooks="embed.pos")
    err = np.abs(got - reference(cfg, w, TOKENS)).max()
    check(names_ok and err <= 1e-5, f"make-model --arch gpt2 (bf16): its folder, read here as GPT-2's "
                                    f"Conv1D layout, gives the engine's logits (max |dlogit| {err:.2e})")
    pos = acts.get("embed.pos")
    check(pos is not None and np.array_equal(pos.astype(np.float32),
                                              w["transformer.wpe.weight"][:len(TOKENS)].astype(np.float32)),
          "the hook embed.pos is the position embedding's rows")
    gguf = os.path.join(tmp, "made.gguf")
    run_stepwise(BIN, "convert", "--model", folder, "--tokenizer", os.path.join(HERE, "..", "data",
                 "tiny-model.json"), "--out", gguf)
    from gguf_read import read_gguf
    meta, tensors = read_gguf(gguf)
    names_ok = (meta["general.architecture"] == "gpt2" and "blk.0.attn_qkv.weight" in tensors
                and "position_embd.weight" in tensors and meta["gpt2.attention.layer_norm_epsilon"] > 0)
    check(names_ok and np.array_equal(score(gguf, TOKENS)[0], got),
          "convert writes GGUF gpt2 (llama.cpp's names: attn_qkv, position_embd, ...), and the file gives "
          "the folder's logits bit for bit")
    run = json.loads(score(folder, TOKENS)[2].splitlines()[0])["model"]["arch"]
    with tempfile.TemporaryDirectory() as t:
        out = os.path.join(t, "s.jsonl")
        run_stepwise(BIN, "score", "--model", folder, "--tokens", ",".join(map(str, TOKENS)), "--top-n", "0",
                     "--out", out)
        shown = run_stepwise(BIN, "trace", "show", out, "--pos", "3").stdout.splitlines()[0]
        valid = run_stepwise(BIN, "trace", "validate", out, expect=(0, 1)).returncode == 0
    check(run.get("family") == "gpt2" and run.get("norm") == "layernorm" and run.get("position") == "learned"
          and shown.endswith("(gpt2)") and valid,
          f"the trace names the family (run.model.arch {run.get('family')}, trace show: {shown!r}) and validates")
    base = score(folder, TOKENS, "--kernels", "plain", "--threads", "1")[2]
    same = all(score(folder, TOKENS, "--kernels", k, "--threads", t)[2] == base
               for k, t in (("fast", "1"), ("fast", "2"), ("plain", "2")))
    check(same, "plain and fast kernels, 1 and 2 threads: the same bytes")


def check_diff(tmp):
    """The reference's activations under Hugging Face's module names as a
    candidate: diff --names hf-gpt2 passes it, and finds a nudge at each
    hook GPT-2 adds or changes where it was made."""
    folder = os.path.join(tmp, "made")  # check_make_model's
    cfg, w = hf_reference.read_model_dir(folder)
    acts = {}
    reference(cfg, w, TOKENS, acts=acts)
    check_names_diff(check, BIN, tmp, folder, TOKENS, acts, "hf-gpt2",
                     (("transformer.wpe", "embed.pos"), ("transformer.h.1.ln_1", "blocks.1.ln1"),
                      ("transformer.h.0.mlp.c_fc", "blocks.0.mlp.up"),
                      ("transformer.h.0.mlp.act", "blocks.0.mlp.hidden"), ("transformer.ln_f", "final_norm")),
                     "GPT-2", 11 * len(TOKENS))


def check_refused(tmp):
    base = config()
    check_refused_configs(check, BIN, tmp, base, random_tensors(base, 7), (
            ("activation_function gelu (erf)", {"activation_function": "gelu"}, "activation_function gelu"),
            ("scale_attn_by_inverse_layer_idx", {"scale_attn_by_inverse_layer_idx": True},
             "scale_attn_by_inverse_layer_idx"),
            ("layer_norm_epsilon 0", {"layer_norm_epsilon": 0}, "layer_norm_epsilon"),
            ("n_head 0", {"n_head": 0}, "n_head")))


def main():
    with tempfile.TemporaryDirectory() as tmp:
        check_reference(tmp)
        check_make_model(tmp)
        check_diff(tmp)
        check_refused(tmp)
    return check.summary("gpt2 check")


if __name__ == "__main__":
    sys.exit(main())
