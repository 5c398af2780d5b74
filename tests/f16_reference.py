"""The float64 llama forward with a 16-bit cache's rounding points, the
reference of tests/kv_f16_decode_check.py and tests/f16_cache_seeds.py:
K and V rounded as cached, and the query and the probabilities where
llama.cpp rounds them too (its F16 cache multiplies K.Q and P.V in float16),
and nowhere else. In float64 it has no float32 noise of its own, so what
separates it from an engine is the engine's float32 arithmetic."""
import numpy as np

import numpy_engine


def half(a):
    """a rounded to float16 (numpy: to nearest, ties to even), in float64."""
    return a.astype(np.float32).astype(np.float16).astype(np.float64)


def bf16(a):
    """a rounded to bfloat16 from its float32 bits: add 0x7fff plus the kept
    part's lowest bit (ties to even), keep the top 16 bits."""
    u = a.astype(np.float32).view(np.uint32).astype(np.uint64)
    u = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16 << 16).astype(np.uint32)
    return u.view(np.float32).astype(np.float64)


def forward_f64(meta, t, ids, kv_round, qp_round=None, qp_at=None):
    """The llama forward in float64, K and V through kv_round as cached, the
    query and the probabilities through qp_round at the positions qp_at
    (a boolean mask; None: all): logits [T, vocab]."""
    g = lambda k, d=None: meta.get(f"llama.{k}", d)
    L, nh = g("block_count"), g("attention.head_count")
    nkv = g("attention.head_count_kv", nh)
    eps, theta = g("attention.layer_norm_rms_epsilon"), g("rope.freq_base", 10000.0)
    w64 = lambda name: numpy_engine.tensor(t, name).astype(np.float64)
    emb = w64("token_embd.weight")
    hd, n = emb.shape[1] // nh, len(ids)
    at = np.ones(n, bool) if qp_at is None else qp_at
    same = lambda a: a
    rq = lambda a: np.where(at[:, None, None], (qp_round or same)(a), a)
    x, mask = emb[ids], np.triu(np.full((n, n), -np.inf), 1)
    for l in range(L):
        w = lambda s: w64(f"blk.{l}.{s}.weight")
        xb = numpy_engine.rms_norm(x, w("attn_norm"), eps)
        q = rq(numpy_engine.rope(xb @ w("attn_q").T, theta, hd).reshape(n, nh, hd))
        k = kv_round(numpy_engine.rope(xb @ w("attn_k").T, theta, hd).reshape(n, nkv, hd))
        v = kv_round((xb @ w("attn_v").T).reshape(n, nkv, hd))
        k, v = np.repeat(k, nh // nkv, axis=1), np.repeat(v, nh // nkv, axis=1)  # head h reads h / group
        s = np.einsum("thd,uhd->htu", q, k) / np.sqrt(hd) + mask
        p = np.exp(s - s.max(axis=-1, keepdims=True))
        p = p / p.sum(axis=-1, keepdims=True)
        p = np.where(at[None, :, None], (qp_round or same)(p), p)
        x = x + np.einsum("htu,uhd->thd", p, v).reshape(n, -1) @ w("attn_output").T
        xb = numpy_engine.rms_norm(x, w("ffn_norm"), eps)
        gate = xb @ w("ffn_gate").T
        x = x + (gate / (1 + np.exp(-gate)) * (xb @ w("ffn_up").T)) @ w("ffn_down").T
    classifier = w64("output.weight") if "output.weight" in t else emb
    return numpy_engine.rms_norm(x, w64("output_norm.weight"), eps) @ classifier.T
