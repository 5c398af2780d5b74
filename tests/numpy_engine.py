#!/usr/bin/python3
"""Another engine, for the oracle walkthrough (docs/oracle.md): a llama
GGUF file (F32, F16 or Q8_0 tensors) run in float32 numpy, written from
llama.cpp's graph for the llama architecture (RMSNorm, RoPE on adjacent
pairs, grouped-query attention, SwiGLU), sharing nothing with stepwise but
the file. numpy's matrix products sum in their own order, so its logits
differ from stepwise's in the last bits, as any independent float32
engine's do. It writes them through trace/candidate.py: OUT.f32 (or
OUT.npy) with the sidecar, or with OUT.jsonl the logits and the default
golden hooks (the residual stream of every block, attn_out, mlp_out,
final_norm) as a trace that diff walks hook by hook. --kv f16 keeps K and
V in float16, as engines with a half-precision cache do (the f16-kv
preset is calibrated on it).

usage: tests/numpy_engine.py MODEL.gguf 1,403,407,... OUT.{f32,npy,jsonl} [--kv f16]
"""
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "trace"))
from candidate import write_logits, write_trace  # noqa: E402
from gguf_read import read_gguf  # noqa: E402


def tensor(tensors, name):
    """A tensor as float32 [rows, cols] (or [cols]), dequantized as ggml does."""
    qtype, dims, raw = tensors[name]
    if qtype == 0:
        x = np.frombuffer(raw, dtype="<f4")
    elif qtype == 1:
        x = np.frombuffer(raw, dtype="<f2").astype(np.float32)
    elif qtype == 8:  # Q8_0: blocks of an F16 scale d and 32 int8 q; x = q * d
        b = np.frombuffer(raw, dtype=np.uint8).reshape(-1, 34)
        d = b[:, :2].copy().view("<f2").astype(np.float32)
        x = (b[:, 2:].view(np.int8).astype(np.float32) * d).reshape(-1)
    else:
        raise SystemExit(f"{name}: ggml type {qtype} is not read here")
    return x.reshape(dims[::-1])


def rms_norm(x, w, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def rope(x, theta, head_dim):
    """Rotate each adjacent pair (2i, 2i+1) of every head by pos * theta^(-2i/head_dim)."""
    T = x.shape[0]
    freq = theta ** (-np.arange(0, head_dim, 2, dtype=np.float32) / head_dim)
    angle = np.arange(T, dtype=np.float32)[:, None] * freq[None, :]
    cos, sin = np.cos(angle)[:, None, :], np.sin(angle)[:, None, :]
    h = x.reshape(T, -1, head_dim // 2, 2)
    a, b = h[..., 0], h[..., 1]
    return np.stack([a * cos - b * sin, a * sin + b * cos], axis=-1).reshape(x.shape)


def forward(meta, t, tokens, kv_f16=False):
    """The logits [T, vocab] and the default hooks' activations {name: [T, dim]}."""
    arch = meta["general.architecture"]
    assert arch == "llama", f"this engine runs llama only, not {arch}"
    g = lambda k, d=None: meta.get(f"llama.{k}", d)
    L, nh = g("block_count"), g("attention.head_count")
    nkv = g("attention.head_count_kv", nh)
    eps, theta = np.float32(g("attention.layer_norm_rms_epsilon")), np.float32(g("rope.freq_base", 10000.0))
    emb = tensor(t, "token_embd.weight")
    hd = g("attention.key_length", emb.shape[1] // nh)
    T = len(tokens)
    x = emb[tokens].astype(np.float32)
    mask = np.triu(np.full((T, T), -np.inf, dtype=np.float32), 1)
    acts = {}
    for l in range(L):
        w = lambda n: tensor(t, f"blk.{l}.{n}.weight")
        acts[f"blocks.{l}.resid_pre"] = x
        xb = rms_norm(x, w("attn_norm"), eps)
        q = rope(xb @ w("attn_q").T, theta, hd).reshape(T, nh, hd)
        k = rope(xb @ w("attn_k").T, theta, hd).reshape(T, nkv, hd)
        v = (xb @ w("attn_v").T).reshape(T, nkv, hd)
        if kv_f16:  # the cache holds half precision
            k, v = k.astype(np.float16).astype(np.float32), v.astype(np.float16).astype(np.float32)
        k, v = np.repeat(k, nh // nkv, axis=1), np.repeat(v, nh // nkv, axis=1)
        s = np.einsum("thd,uhd->htu", q, k) / np.sqrt(np.float32(hd)) + mask
        p = np.exp(s - s.max(axis=-1, keepdims=True))
        p /= p.sum(axis=-1, keepdims=True)
        attn_out = np.einsum("htu,uhd->thd", p, v).reshape(T, nh * hd) @ w("attn_output").T
        x = x + attn_out
        acts[f"blocks.{l}.attn_out"], acts[f"blocks.{l}.resid_mid"] = attn_out, x
        xb = rms_norm(x, w("ffn_norm"), eps)
        gate = xb @ w("ffn_gate").T
        mlp_out = (gate / (1 + np.exp(-gate)) * (xb @ w("ffn_up").T)) @ w("ffn_down").T
        x = x + mlp_out
        acts[f"blocks.{l}.mlp_out"], acts[f"blocks.{l}.resid_post"] = mlp_out, x
    classifier = tensor(t, "output.weight") if "output.weight" in t else emb  # absent: tied
    acts["final_norm"] = rms_norm(x, tensor(t, "output_norm.weight"), eps)
    return acts["final_norm"] @ classifier.T, acts


def main():
    args = sys.argv[1:]
    kv_f16 = args[-2:] == ["--kv", "f16"]
    if kv_f16:
        args = args[:-2]
    if len(args) != 3:
        raise SystemExit(__doc__)
    meta, tensors = read_gguf(args[0])
    tokens = [int(i) for i in args[1].split(",")]
    logits, acts = forward(meta, tensors, tokens, kv_f16)
    out = args[2]
    if out.endswith(".jsonl"):
        write_trace(out, tokens, logits=logits, activations=acts)
        print(f"wrote {out}: {len(tokens)} positions, logits and {len(acts)} hooks")
    else:
        write_logits(out, logits, token_ids=tokens)
        print(f"wrote {out}: {len(tokens)} positions x {logits.shape[1]} logits")


if __name__ == "__main__":
    main()
