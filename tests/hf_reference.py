#!/usr/bin/python3
"""Hugging Face model directories against independent references.

1. For each supported architecture (Llama, Mistral, Qwen2, Qwen3) and dtype
   (F32, F16, BF16), this writes a random-weight model directory with its
   own safetensors writer (config.json, model.safetensors or shards and
   their index), has `stepwise score` compute every position's logits, and
   compares them with the float64 numpy forward of tests/arch_reference.py
   (written from Hugging Face's modelling code: rotate_half RoPE, [out, in]
   weights, q/k/v biases, q/k norms) run on the weights as stored (after
   their rounding to F16 or BF16): max |dlogit| <= 1e-4.
2. `stepwise make-model --format hf` writes folders of every architecture,
   dtype and shard count; read back here by a safetensors reader of this
   file's own, in Hugging Face's layout, they must give the engine's logits
   (the C writer's halves permutation and rounding against this reading).
3. stories260K converted to a Hugging Face directory, its q and k rows
   permuted as Hugging Face's conversion script does, must give run.c's
   golden logits (../golden/stories260K/once_upon_a_time.json) within 1e-5.

usage: tests/hf_reference.py build/stepwise      (run by `make test`)
"""
import importlib.util
import json
import math
import os
import shutil
import struct
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # loaded by path too (make_seeds.sh)
from check_util import TIMEOUT  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BIN = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/stepwise")
TMP = os.path.join(ROOT, "build", "tmp", "hf")
MODELS = os.path.abspath(os.path.join(ROOT, os.environ.get("STEPWISE_MODELS", "../shared/models")))
TINY_TOKENIZER = os.path.join(ROOT, "data", "tiny-model.json")  # a vocabulary of 13
TOKENS = [1, 5, 9, 3, 12, 11, 4, 8, 2, 7, 10, 6]

spec = importlib.util.spec_from_file_location("arch_reference", os.path.join(HERE, "arch_reference.py"))
arch_reference = importlib.util.module_from_spec(spec)
spec.loader.exec_module(arch_reference)


# ---------------------------------------------------------------- writing


def stored(values, dtype):
    """(bytes as the file holds them, the values as read back in float64)."""
    a = np.asarray(values, dtype=np.float64)
    if dtype == "F32":
        f = a.astype("<f4")
        return f.tobytes(), f.astype(np.float64)
    if dtype == "F16":
        f = a.astype("<f2")
        return f.tobytes(), f.astype(np.float64)
    # BF16: round float32 to nearest even in the top 16 bits
    bits = a.astype("<f4").view("<u4").astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype("<u2")
    back = (rounded.astype("<u4") << 16).view("<f4").astype(np.float64)
    return rounded.tobytes(), back


def write_safetensors(path, tensors, dtype):
    """tensors: {name: array}; returns {name: float64 array as stored}."""
    header, blobs, offset, read_back = {}, [], 0, {}
    for name in sorted(tensors):
        raw, back = stored(tensors[name], dtype)
        header[name] = {"dtype": dtype, "shape": list(np.shape(tensors[name])),
                        "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
        read_back[name] = back.reshape(np.shape(tensors[name]))
    header["__metadata__"] = {"format": "pt"}
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))
    return read_back


def write_model_dir(path, config, tensors, dtype, shards=1):
    """A folder of config and tensors, written afresh (a file another run
    left there would be read too)."""
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    json.dump(config, open(os.path.join(path, "config.json"), "w"), indent=1)
    names = sorted(tensors)
    if shards == 1:
        return write_safetensors(os.path.join(path, "model.safetensors"), tensors, dtype)
    back, weight_map = {}, {}
    for s in range(shards):
        part = {n: tensors[n] for n in names[s::shards]}
        file = "model-%05d-of-%05d.safetensors" % (s + 1, shards)
        back.update(write_safetensors(os.path.join(path, file), part, dtype))
        weight_map.update({n: file for n in part})
    json.dump({"metadata": {}, "weight_map": weight_map},
              open(os.path.join(path, "model.safetensors.index.json"), "w"))
    return back


# ---------------------------------------------------------------- models

BASE = {"hidden_size": 16, "intermediate_size": 24, "num_hidden_layers": 2,
        "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 13,
        "max_position_embeddings": 32, "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
        "hidden_act": "silu", "tie_word_embeddings": False}


def hf_tensors(cfg, seed):
    rng = np.random.default_rng(seed)
    d, h, L, V = (cfg["hidden_size"], cfg["intermediate_size"], cfg["num_hidden_layers"],
                  cfg["vocab_size"])
    nh, nkv = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hd = cfg.get("head_dim") or d // nh
    arch = cfg["architectures"][0]
    u = lambda *s: rng.uniform(-1, 1, size=s) / np.sqrt(s[-1])
    norm = lambda n: 1 + 0.2 * rng.uniform(-1, 1, size=n)
    t = {"model.embed_tokens.weight": u(V, d), "model.norm.weight": norm(d)}
    if not cfg["tie_word_embeddings"]:
        t["lm_head.weight"] = u(V, d)
    for l in range(L):
        p = "model.layers.%d." % l
        t.update({p + "input_layernorm.weight": norm(d), p + "post_attention_layernorm.weight": norm(d),
                  p + "self_attn.q_proj.weight": u(nh * hd, d),
                  p + "self_attn.k_proj.weight": u(nkv * hd, d),
                  p + "self_attn.v_proj.weight": u(nkv * hd, d),
                  p + "self_attn.o_proj.weight": u(d, nh * hd),
                  p + "mlp.gate_proj.weight": u(h, d), p + "mlp.up_proj.weight": u(h, d),
                  p + "mlp.down_proj.weight": u(d, h)})
        if arch == "Qwen2ForCausalLM":
            for k, n in (("q", nh * hd), ("k", nkv * hd), ("v", nkv * hd)):
                t[p + "self_attn.%s_proj.bias" % k] = 0.3 * rng.uniform(-1, 1, n)
        if arch == "Qwen3ForCausalLM":
            t[p + "self_attn.q_norm.weight"] = norm(hd)
            t[p + "self_attn.k_norm.weight"] = norm(hd)
        if arch == "Phi3ForCausalLM":  # Phi-3's files fuse them (modeling_phi3: qkv_proj, gate_up_proj)
            t[p + "self_attn.qkv_proj.weight"] = np.concatenate(
                [t.pop(p + "self_attn.%s_proj.weight" % k) for k in "qkv"])
            t[p + "mlp.gate_up_proj.weight"] = np.concatenate(
                [t.pop(p + "mlp.gate_proj.weight"), t.pop(p + "mlp.up_proj.weight")])
    return t


def as_reference_model(cfg, w):
    """The stored weights in tests/arch_reference.py's model form."""
    arch = cfg["architectures"][0]
    config = {"dim": cfg["hidden_size"], "hidden_dim": cfg["intermediate_size"],
              "n_layers": cfg["num_hidden_layers"], "n_heads": cfg["num_attention_heads"],
              "n_kv_heads": cfg["num_key_value_heads"], "vocab_size": cfg["vocab_size"],
              "rope_layout": "halves", "rope_theta": cfg["rope_theta"],
              "norm_eps": cfg["rms_norm_eps"]}
    if cfg.get("head_dim"):
        config["head_dim"] = cfg["head_dim"]
    if arch in ("MistralForCausalLM", "Phi3ForCausalLM") and cfg.get("sliding_window"):
        config["sliding_window"] = cfg["sliding_window"]  # every layer: kv_idx > q_idx - window
    if cfg.get("partial_rotary_factor", 1.0) < 1:  # Phi3: int(head_dim * factor) dims turn
        hd = cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]
        config["rope_dims"] = int(hd * cfg["partial_rotary_factor"])
    if cfg.get("rope_scaling"):
        s = dict(cfg["rope_scaling"])
        s["type"] = s.pop("rope_type")
        if s["type"] == "longrope":  # _compute_longrope_parameters' context and attention factor
            original = cfg.get("original_max_position_embeddings", cfg["max_position_embeddings"])
            factor = cfg["max_position_embeddings"] / original
            s["original_max_position_embeddings"] = original
            s.setdefault("attention_factor", 1.0 if factor <= 1 else
                         math.sqrt(1 + math.log(factor) / math.log(original)))
        config["rope_scaling"] = s
    layers = []
    w = dict(w)
    for l in range(cfg["num_hidden_layers"]):
        p = "model.layers.%d." % l
        if arch == "Phi3ForCausalLM":  # Phi3Attention's split of qkv, Phi3MLP's chunk(2): gate first
            hd = cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]
            q, kv = cfg["num_attention_heads"] * hd, cfg["num_key_value_heads"] * hd
            qkv, gate_up = w[p + "self_attn.qkv_proj.weight"], w[p + "mlp.gate_up_proj.weight"]
            w.update({p + "self_attn.q_proj.weight": qkv[:q], p + "self_attn.k_proj.weight": qkv[q:q + kv],
                      p + "self_attn.v_proj.weight": qkv[q + kv:],
                      p + "mlp.gate_proj.weight": gate_up[:len(gate_up) // 2],
                      p + "mlp.up_proj.weight": gate_up[len(gate_up) // 2:]})
        layer = {"rms_att": w[p + "input_layernorm.weight"], "wq": w[p + "self_attn.q_proj.weight"],
                 "wk": w[p + "self_attn.k_proj.weight"], "wv": w[p + "self_attn.v_proj.weight"],
                 "wo": w[p + "self_attn.o_proj.weight"],
                 "rms_ffn": w[p + "post_attention_layernorm.weight"],
                 "w1": w[p + "mlp.gate_proj.weight"], "w2": w[p + "mlp.down_proj.weight"],
                 "w3": w[p + "mlp.up_proj.weight"]}
        if arch == "Qwen2ForCausalLM":
            layer.update(bq=w[p + "self_attn.q_proj.bias"], bk=w[p + "self_attn.k_proj.bias"],
                         bv=w[p + "self_attn.v_proj.bias"])
        if arch == "Qwen3ForCausalLM":
            layer.update(q_norm=w[p + "self_attn.q_norm.weight"],
                         k_norm=w[p + "self_attn.k_norm.weight"])
        layers.append(layer)
    weights = {"token_embedding": w["model.embed_tokens.weight"], "layers": layers,
               "rms_final": w["model.norm.weight"]}
    if "lm_head.weight" in w:
        weights["classifier"] = w["lm_head.weight"]
    return {"config": config, "weights": weights}


CASES = [
    ("Llama F32, GQA, untied", {"architectures": ["LlamaForCausalLM"]}, "F32", 1),
    ("Llama BF16, tied, head_dim 6, llama3 scaling",
     {"architectures": ["LlamaForCausalLM"], "tie_word_embeddings": True, "head_dim": 6,
      "rope_theta": 100.0,
      "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                       "high_freq_factor": 4.0, "original_max_position_embeddings": 16}}, "BF16", 1),
    ("Llama F16, linear scaling, 3 shards",
     {"architectures": ["LlamaForCausalLM"], "rope_scaling": {"rope_type": "linear", "factor": 2.0}},
     "F16", 3),
    ("Mistral F16, sliding window of the whole context",
     {"architectures": ["MistralForCausalLM"], "sliding_window": 32, "rope_theta": 1e6}, "F16", 1),
    ("Mistral F32, sliding window 5 on every layer, 12 positions",
     {"architectures": ["MistralForCausalLM"], "sliding_window": 5}, "F32", 1),
    ("Phi3 BF16, sliding window 3 on every layer, fused",
     {"architectures": ["Phi3ForCausalLM"], "sliding_window": 3}, "BF16", 1),
    ("Llama F32, rms_norm_eps 0.5 (config.json's, not a default)",
     {"architectures": ["LlamaForCausalLM"], "rms_norm_eps": 0.5}, "F32", 1),
    ("Qwen2 F32, q/k/v biases, 2 shards",
     {"architectures": ["Qwen2ForCausalLM"], "rope_theta": 1e6, "rms_norm_eps": 1e-6}, "F32", 2),
    ("Phi3 BF16, q/k/v and gate/up fused, 2 shards, sliding window of the whole context",
     {"architectures": ["Phi3ForCausalLM"], "sliding_window": 32, "partial_rotary_factor": 1.0},
     "BF16", 2),
    ("Phi3 F32, fused, stored weights: views of the fused rows",
     {"architectures": ["Phi3ForCausalLM"]}, "F32", 1),
    ("Phi3 F32, partial_rotary_factor 0.75: 6 of head_dim 8 turned",
     {"architectures": ["Phi3ForCausalLM"], "head_dim": 8, "partial_rotary_factor": 0.75}, "F32", 1),
    ("Phi3 F32, longrope: 12 positions past an original context of 8, the long factors",
     {"architectures": ["Phi3ForCausalLM"], "original_max_position_embeddings": 8,
      "rope_scaling": {"rope_type": "longrope", "short_factor": [1.0, 1.5], "long_factor": [2.0, 7.0]}},
     "F32", 1),
    ("Phi3 F32, longrope: 12 positions, the last one past an original context of 11, the long factors",
     {"architectures": ["Phi3ForCausalLM"], "original_max_position_embeddings": 11,
      "rope_scaling": {"rope_type": "longrope", "short_factor": [1.0, 1.5], "long_factor": [2.0, 7.0]}},
     "F32", 1),
    ("Phi3 BF16, longrope: 12 positions inside an original context of 16, the short factors",
     {"architectures": ["Phi3ForCausalLM"], "original_max_position_embeddings": 16,
      "rope_scaling": {"rope_type": "longrope", "short_factor": [1.0, 3.0], "long_factor": [2.0, 7.0]}},
     "BF16", 1),
    ("Phi3 F32, longrope with a given attention_factor 1.5, partial_rotary_factor 0.5",
     {"architectures": ["Phi3ForCausalLM"], "original_max_position_embeddings": 8, "head_dim": 8,
      "partial_rotary_factor": 0.5,
      "rope_scaling": {"rope_type": "longrope", "short_factor": [1.0, 1.5], "long_factor": [2.0, 7.0],
                       "attention_factor": 1.5}}, "F32", 1),
    ("Qwen3 BF16, q/k norms, head_dim 8, tied",
     {"architectures": ["Qwen3ForCausalLM"], "head_dim": 8, "tie_word_embeddings": True,
      "rope_theta": 1e6, "rms_norm_eps": 1e-6}, "BF16", 1),
]


def engine_logits(model_dir, tokens, tokenizer, name):
    out = os.path.join(TMP, name + ".jsonl")
    run = subprocess.run([BIN, "score", "--model", model_dir, "--tokenizer", tokenizer,
                          "--tokens", ",".join(map(str, tokens)), "--top-n", "0",
                          "--reproducible", "--out", out], capture_output=True, text=True, timeout=TIMEOUT)
    if run.returncode != 0:
        raise RuntimeError(run.stderr.strip())
    rows = {}
    for line in open(out):
        e = json.loads(line)
        if e.get("event") == "logits":
            rows[e["pos"]] = e["logits"]
    return np.array([rows[p] for p in range(len(tokens))], dtype=np.float64)


# ---------------------------------------------------------------- make-model


def header_editor(weights):
    """st(edit): the bytes of the safetensors file weights with its header
    passed through edit(header) (a dict, changed in place), padded to 8:
    the broken files of the bad-input matrix and the fuzz seeds."""
    n = struct.unpack("<Q", weights[:8])[0]
    header, data = json.loads(weights[8:8 + n]), weights[8 + n:]

    def st(edit):
        h = json.loads(json.dumps(header))
        edit(h)
        text = json.dumps(h).encode()
        text += b" " * (-len(text) % 8)
        return struct.pack("<Q", len(text)) + text + data
    return st


def read_safetensors(path):
    """{name: float64 array} of one file, decoded here."""
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    header, data = json.loads(raw[8:8 + n]), raw[8 + n:]
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        b, e = t["data_offsets"]
        chunk = data[b:e]
        if t["dtype"] == "F32":
            a = np.frombuffer(chunk, dtype="<f4")
        elif t["dtype"] == "F16":
            a = np.frombuffer(chunk, dtype="<f2")
        else:
            a = (np.frombuffer(chunk, dtype="<u2").astype("<u4") << 16).view("<f4")
        out[name] = a.astype(np.float64).reshape(t["shape"])
    return out


def read_model_dir(path):
    cfg = json.load(open(os.path.join(path, "config.json")))
    tensors = {}
    for f in sorted(os.listdir(path)):
        if f.endswith(".safetensors"):
            tensors.update(read_safetensors(os.path.join(path, f)))
    return cfg, tensors


MAKE_MODEL = [
    ("llama", "f32", 1, []), ("llama", "bf16", 2, ["--untied"]), ("mistral", "f16", 1, []),
    ("qwen2", "f32", 3, ["--rope-theta", "1000000"]),
    ("qwen3", "bf16", 1, ["--head-dim", "8", "--rope-theta", "1000000"]),
    ("phi3", "f16", 2, []),
]


def check_make_model():
    failed = 0
    for i, (arch, dtype, shards, extra) in enumerate(MAKE_MODEL):
        path = os.path.join(TMP, "made%d" % i)
        if os.path.exists(path):
            for f in os.listdir(path):
                os.unlink(os.path.join(path, f))
            os.rmdir(path)
        args = [BIN, "make-model", "--format", "hf", "--arch", arch, "--dtype", dtype, "--shards",
                str(shards), "--dim", "16", "--hidden", "24", "--layers", "2", "--heads", "4",
                "--kv-heads", "2", "--vocab", "13", "--seq-len", "32", "--seed", str(5 + i),
                "--out", path] + extra
        name = "make-model --format hf --arch %s --dtype %s --shards %d %s" % (
            arch, dtype, shards, " ".join(extra))
        run = subprocess.run(args, capture_output=True, text=True, timeout=TIMEOUT)
        if run.returncode != 0:
            print("FAIL  %s: %s" % (name, run.stderr.strip()))
            failed += 1
            continue
        cfg, tensors = read_model_dir(path)
        want = arch_reference.reference_logits(as_reference_model(cfg, tensors), TOKENS)
        got = engine_logits(path, TOKENS, TINY_TOKENIZER, "made%d" % i)
        err = float(np.max(np.abs(got - want)))
        ok = err <= 1e-4
        failed += not ok
        print("%s  %s (max |engine - numpy| %.2g)" % ("ok  " if ok else "FAIL", name, err))
    failed += check_same_as_checkpoint()
    return failed


def check_same_as_checkpoint():
    """The folder make-model writes is the checkpoint it writes with the same
    seed, in Hugging Face's layout: the two give the same logits, bit for
    bit (the halves permutation on the way out, interleaving on the way in)."""
    shape = ["--dim", "16", "--hidden", "24", "--layers", "2", "--heads", "4", "--kv-heads", "2",
             "--vocab", "13", "--seq-len", "32", "--seed", "9"]
    folder, checkpoint = os.path.join(TMP, "same-hf"), os.path.join(TMP, "same.bin")
    if os.path.exists(folder):
        for f in os.listdir(folder):
            os.unlink(os.path.join(folder, f))
        os.rmdir(folder)
    subprocess.run([BIN, "make-model", "--format", "hf", "--out", folder] + shape, check=True,
                   capture_output=True, timeout=TIMEOUT)
    subprocess.run([BIN, "make-model", "--out", checkpoint] + shape, check=True,
                   capture_output=True, timeout=TIMEOUT)
    a = engine_logits(folder, TOKENS, TINY_TOKENIZER, "same-hf")
    b = engine_logits(checkpoint, TOKENS, TINY_TOKENIZER, "same-bin")
    ok = np.array_equal(a, b)
    print("%s  make-model --format hf equals its llama2.c checkpoint of the same seed, bit for "
          "bit" % ("ok  " if ok else "FAIL"))
    return 0 if ok else 1


# ---------------------------------------------------------------- stories260K


def permute(w, n_heads):
    """Hugging Face's convert_llama_weights_to_hf.py: interleaved pairs of
    each head's rows become its two halves (rotate_half's layout)."""
    dim1, dim2 = w.shape
    return w.reshape(n_heads, dim1 // n_heads // 2, 2, dim2).transpose(0, 2, 1, 3).reshape(dim1, dim2)


def stories_as_hf(path):
    raw = open(os.path.join(MODELS, "stories260K.bin"), "rb").read()
    dim, hidden, L, nh, nkv, vocab, seq = struct.unpack("<7i", raw[:28])
    f = np.frombuffer(raw[28:], dtype="<f4").astype(np.float64)
    hd, kv = dim // nh, nkv * (dim // nh)
    pos = 0

    def take(*shape):
        nonlocal pos
        n = int(np.prod(shape))
        a = f[pos:pos + n].reshape(shape)
        pos += n
        return a

    emb = take(abs(vocab), dim)
    rms_att, wq, wk = take(L, dim), take(L, dim, dim), take(L, kv, dim)
    wv, wo, rms_ffn = take(L, kv, dim), take(L, dim, dim), take(L, dim)
    w1, w2, w3, rms_final = take(L, hidden, dim), take(L, dim, hidden), take(L, hidden, dim), take(dim)
    t = {"model.embed_tokens.weight": emb, "model.norm.weight": rms_final}
    for l in range(L):
        p = "model.layers.%d." % l
        t.update({p + "input_layernorm.weight": rms_att[l],
                  p + "self_attn.q_proj.weight": permute(wq[l], nh),
                  p + "self_attn.k_proj.weight": permute(wk[l], nkv),
                  p + "self_attn.v_proj.weight": wv[l], p + "self_attn.o_proj.weight": wo[l],
                  p + "post_attention_layernorm.weight": rms_ffn[l],
                  p + "mlp.gate_proj.weight": w1[l], p + "mlp.down_proj.weight": w2[l],
                  p + "mlp.up_proj.weight": w3[l]})
    config = {"architectures": ["LlamaForCausalLM"], "hidden_size": dim,
              "intermediate_size": hidden, "num_hidden_layers": L, "num_attention_heads": nh,
              "num_key_value_heads": nkv, "vocab_size": abs(vocab), "max_position_embeddings": seq,
              "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "hidden_act": "silu",
              "tie_word_embeddings": vocab > 0}
    write_model_dir(path, config, t, "F32")


def check_stories():
    golden = os.path.join(MODELS, "..", "golden", "stories260K", "once_upon_a_time.json")
    if not os.path.exists(os.path.join(MODELS, "stories260K.bin")) or not os.path.exists(golden):
        print("skip  stories260K in Hugging Face layout (no stories260K or golden in %s)" % MODELS)
        return None
    path = os.path.join(TMP, "stories260K-hf")
    stories_as_hf(path)
    g = json.load(open(golden))
    tokens = [s["token"] for s in g["steps"]]
    want = np.array([s["logits"] for s in g["steps"]], dtype=np.float64)
    got = engine_logits(path, tokens, os.path.join(MODELS, "tok512.bin"), "stories")
    err = float(np.max(np.abs(got - want)))
    ok = err <= 1e-5
    print("%s  stories260K in Hugging Face layout, %d positions against run.c's goldens "
          "(max |dlogit| %.2g)" % ("ok  " if ok else "FAIL", len(tokens), err))
    return 0 if ok else 1


def check_longrope_decode():
    """Hugging Face picks longrope's factors per forward call: a prompt
    inside the original context is turned with the short factors, and so are
    the decode steps until a step's position reaches past it; from then on
    each new q and k is turned with the long ones, while the cached keys
    keep their turn. generate (a prefill of the prompt, then one token a
    call) must give the logits of a float64 forward that turns each
    position as its call did."""
    tok = os.path.join(MODELS, "tokenizer.bin")
    if not os.path.exists(tok):
        print("hf reference: no tokenizer.bin in %s, the longrope decode case is skipped" % MODELS)
        return None
    cfg = dict(BASE, architectures=["Phi3ForCausalLM"], vocab_size=32000, original_max_position_embeddings=8,
               rope_scaling={"rope_type": "longrope", "short_factor": [1.0, 1.5], "long_factor": [2.0, 7.0]})
    path = os.path.join(TMP, "longrope-decode")
    back = write_model_dir(path, cfg, hf_tensors(cfg, 21), "F32")
    trace = os.path.join(TMP, "longrope-decode.jsonl")
    run = subprocess.run([BIN, "generate", "--model", path, "--tokenizer", tok, "--prompt", "Once upon",
                          "--steps", "10", "--trace-level", "logits", "--reproducible", "--quiet",
                          "--trace", trace], capture_output=True, text=True, timeout=TIMEOUT)
    if run.returncode != 0:
        print("FAIL  longrope decode: generate failed: " + run.stderr.strip())
        return 1
    events = [json.loads(line) for line in open(trace)]
    seq = [e for e in events if e.get("event") == "done"][0]["tokens"]
    prompt = [e for e in events if e.get("event") == "forward" and e.get("phase") == "prefill"][0]["n_tokens"]
    got = {e["pos"]: np.array(e["logits"]) for e in events if e.get("event") == "logits"}
    ref = as_reference_model(cfg, back)
    orig = ref["config"]["rope_scaling"]["original_max_position_embeddings"]
    # the prompt's call: long when it reaches past the original; each decode call: its own position
    ref["config"]["rope_scaling"]["long_at"] = [prompt > orig if p < prompt else p + 1 > orig
                                                for p in range(len(seq))]
    want = arch_reference.reference_logits(ref, seq)
    steps = sorted(p for p in got if p < len(seq))
    err = max(float(np.max(np.abs(got[p] - want[p]))) for p in steps)
    ref["config"]["rope_scaling"].pop("long_at")  # one call over the whole sequence instead
    whole = arch_reference.reference_logits(ref, seq)
    apart = max(float(np.max(np.abs(got[p] - whole[p]))) for p in steps)
    ok = err <= 1e-4 and max(steps) >= orig and apart > 1e-4
    print("%s  longrope, prompt of %d then %d decode steps past an original context of %d: the logits of each "
          "call's factors (max |dlogit| %.2g), not one call's (%.2g away)" % (
              "ok  " if ok else "FAIL", prompt, len(steps) - 1, orig, err, apart))
    # the same run under valgrind: the long tables beside the short ones, freed
    vg = subprocess.run(["valgrind", "-q", "--error-exitcode=9", "--leak-check=full",
                         "--errors-for-leak-kinds=definite,indirect", BIN, "generate", "--model", path,
                         "--tokenizer", tok, "--prompt", "Once upon", "--steps", "10", "--quiet"],
                        capture_output=True, text=True, timeout=TIMEOUT)
    clean = vg.returncode == 0
    print("%s  longrope generate under valgrind: no invalid access, nothing lost%s" % (
        "ok  " if clean else "FAIL", "" if clean else ": " + vg.stderr.strip()[:300]))
    return 0 if ok and clean else 1


def main():
    os.makedirs(TMP, exist_ok=True)
    failed = 0
    for i, (name, overrides, dtype, shards) in enumerate(CASES):
        cfg = dict(BASE, **overrides)
        path = os.path.join(TMP, "case%d" % i)
        back = write_model_dir(path, cfg, hf_tensors(cfg, 11 + i), dtype, shards)
        want = arch_reference.reference_logits(as_reference_model(cfg, back), TOKENS)
        try:
            got = engine_logits(path, TOKENS, TINY_TOKENIZER, "case%d" % i)
        except RuntimeError as e:
            failed += 1
            print("FAIL  %s: %s" % (name, e))
            continue
        err = float(np.max(np.abs(got - want)))
        if cfg.get("partial_rotary_factor", 1.0) < 1:  # the option matters: all dims turned is not it
            ref = as_reference_model(cfg, back)
            ref["config"].pop("rope_dims")
            if ref["config"].get("rope_scaling", {}).get("type") == "longrope":  # its factors are per turned pair
                ref["config"].pop("rope_scaling")
            full = float(np.max(np.abs(got - arch_reference.reference_logits(ref, TOKENS))))
            ok = full > 1e-4
            failed += not ok
            print("%s  %s: with every dimension turned the reference is %.2g away" % (
                "ok  " if ok else "FAIL", name, full))
        if cfg.get("sliding_window", 99) < len(TOKENS):  # the window matters: without it, farther
            ref = as_reference_model(cfg, back)
            ref["config"].pop("sliding_window")
            away = float(np.max(np.abs(got - arch_reference.reference_logits(ref, TOKENS))))
            ok = away > 1e-4
            failed += not ok
            print("%s  %s: without the window the reference is %.2g away" % ("ok  " if ok else "FAIL", name, away))
        if (cfg.get("rope_scaling") or {}).get("rope_type") == "longrope":  # its choice and factors matter
            ref = as_reference_model(cfg, back)
            chosen = len(TOKENS) > ref["config"]["rope_scaling"]["original_max_position_embeddings"]
            ref["config"]["rope_scaling"]["force_long"] = not chosen
            other = float(np.max(np.abs(got - arch_reference.reference_logits(ref, TOKENS))))
            ref["config"].pop("rope_scaling")
            plain = float(np.max(np.abs(got - arch_reference.reference_logits(ref, TOKENS))))
            ok = other > 1e-4 and plain > 1e-4
            failed += not ok
            print("%s  %s: with the %s factors the reference is %.2g away, without longrope %.2g" % (
                "ok  " if ok else "FAIL", name, "short" if chosen else "long", other, plain))
        if (cfg.get("rope_scaling") or {}).get("rope_type") == "longrope":  # GGUF: the folder's bits
            gguf = path + ".gguf"
            run = subprocess.run([BIN, "convert", "--model", path, "--tokenizer", TINY_TOKENIZER, "--out", gguf],
                                 capture_output=True, text=True, timeout=TIMEOUT)
            same = run.returncode == 0 and np.array_equal(
                engine_logits(gguf, TOKENS, TINY_TOKENIZER, "case%d-gguf" % i), got)
            failed += not same
            print("%s  %s: converted to GGUF (rope_factors_long/short, rope.scaling.attn_factor), the same "
                  "logits bit for bit%s" % ("ok  " if same else "FAIL", name, "" if same else ": " + run.stderr))
        if err <= 1e-4:
            print("ok    %s (max |engine - numpy| %.2g)" % (name, err))
        else:
            failed += 1
            print("FAIL  %s: max |engine - numpy| %.3g > 1e-4" % (name, err))
    failed += check_make_model()
    stories = check_stories()
    decode = check_longrope_decode()
    total = len(CASES) + len(MAKE_MODEL) + 1 + (stories is not None) + (decode is not None)
    failed += (stories or 0) + (decode or 0)
    print("hugging face models: %d passed, %d failed" % (total - failed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
