#!/usr/bin/python3
"""gguf_quant_check.py: GGUF's quantized tensor types, Q8_0, Q4_0 and Q4_1,
read by stepwise against numpy.

A llama GGUF of dim 64 (blocks of 32 along each row) is written twice per
type by this script, from the GGUF spec and ggml's block layouts:
  - with its matrices quantized by numpy as ggml's reference quantizers do
    (Q8_0: d = max|x| / 127, q = round(x / d); Q4_0: d = x[argmax|x|] / -8,
    q = min(15, trunc(x / d + 8.5)); Q4_1: d = (max - min) / 15, m = min,
    q = min(15, trunc((x - m) / d + 0.5)));
  - and as F32, holding numpy's dequantization of those blocks (q d, or
    q d + m, in float32).
stepwise must give the same logits for both, to the bit: its dequantizer
reads the blocks as numpy wrote them. And the quantized model's logits must
stay near the unquantized model's (the type's error is the one expected).

usage: gguf_quant_check.py STEPWISE
"""
import json
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gguf_write as w  # noqa: E402

Q8_0, Q4_0, Q4_1 = 8, 2, 3
F32 = 0


def quantize(x, qtype):
    """Blocks of 32 along the last axis -> (bytes, dequantized float32)."""
    blocks = x.astype(np.float32).reshape(-1, 32)
    out, deq = bytearray(), np.empty_like(blocks)
    for i, b in enumerate(blocks):
        if qtype == Q8_0:
            amax = np.max(np.abs(b))
            d = np.float32(amax / 127)
            q = np.round(b / d).astype(np.int8) if d else np.zeros(32, np.int8)
            dh = np.float16(d)
            out += dh.tobytes() + q.tobytes()
            deq[i] = q.astype(np.float32) * np.float32(dh)
        elif qtype == Q4_0:
            k = np.argmax(np.abs(b))
            d = np.float32(b[k] / -8)
            idd = np.float32(1 / d) if d else np.float32(0)
            q = np.minimum(15, np.trunc(b * idd + np.float32(8.5))).astype(np.uint8)
            dh = np.float16(d)
            out += dh.tobytes() + (q[:16] | (q[16:] << 4)).astype(np.uint8).tobytes()
            deq[i] = (q.astype(np.int32) - 8).astype(np.float32) * np.float32(dh)
        else:
            lo, hi = np.min(b), np.max(b)
            d = np.float32((hi - lo) / 15)
            idd = np.float32(1 / d) if d else np.float32(0)
            q = np.minimum(15, np.trunc((b - lo) * idd + np.float32(0.5))).astype(np.uint8)
            dh, mh = np.float16(d), np.float16(lo)
            out += dh.tobytes() + mh.tobytes() + (q[:16] | (q[16:] << 4)).astype(np.uint8).tobytes()
            deq[i] = q.astype(np.float32) * np.float32(dh) + np.float32(mh)
    return bytes(out), deq.reshape(x.shape)


def model_gguf(weights, qtype):
    """A llama GGUF: matrices in qtype (F32: as given), norms F32."""
    d, h, nh, vocab = 64, 96, 4, len(w.PIECES)
    kvs = [w.kv_str("general.architecture", "llama"), w.kv_u32("llama.context_length", 16),
           w.kv_u32("llama.embedding_length", d), w.kv_u32("llama.feed_forward_length", h),
           w.kv_u32("llama.block_count", 1), w.kv_u32("llama.attention.head_count", nh),
           w.kv_u32("llama.attention.head_count_kv", 2), w.kv_f32("llama.rope.freq_base", 10000.0),
           w.kv_f32("llama.attention.layer_norm_rms_epsilon", 1e-5),
           w.kv_str("tokenizer.ggml.model", "llama"),
           w.kv_array("tokenizer.ggml.tokens", 8, w.PIECES, None),
           w.kv_array("tokenizer.ggml.scores", 6, [0.0] * 3 + [-1.0 * i for i in range(3, vocab)], "<f"),
           w.kv_u32("tokenizer.ggml.bos_token_id", 1), w.kv_u32("tokenizer.ggml.eos_token_id", 2)]
    infos, data = b"", b""
    for name, x in weights.items():
        t = F32 if x.ndim == 1 or qtype == F32 else qtype
        blob = x.astype("<f4").tobytes() if t == F32 else quantize(x, t)[0]
        shape = list(reversed(x.shape))  # GGUF lists the fastest dimension first
        infos += w.gguf_string(name) + struct.pack("<I", len(shape))
        infos += b"".join(struct.pack("<Q", s) for s in shape) + struct.pack("<IQ", t, len(data))
        data += blob + b"\0" * (-len(blob) % 32)
    head = b"GGUF" + struct.pack("<IQQ", 3, len(weights), len(kvs)) + b"".join(kvs) + infos
    return head + b"\0" * (-len(head) % 32) + data


def weights_of(seed):
    rng = np.random.default_rng(seed)
    d, h, kvd, vocab = 64, 96, 32, len(w.PIECES)
    shapes = {"token_embd.weight": (vocab, d), "output_norm.weight": (d,), "output.weight": (vocab, d),
              "blk.0.attn_norm.weight": (d,), "blk.0.attn_q.weight": (d, d),
              "blk.0.attn_k.weight": (kvd, d), "blk.0.attn_v.weight": (kvd, d),
              "blk.0.attn_output.weight": (d, d), "blk.0.ffn_norm.weight": (d,),
              "blk.0.ffn_gate.weight": (h, d), "blk.0.ffn_down.weight": (d, h),
              "blk.0.ffn_up.weight": (h, d)}
    return {n: (1 + 0.1 * rng.standard_normal(s) if len(s) == 1 else
                rng.standard_normal(s) / np.sqrt(s[-1])).astype(np.float32)
            for n, s in shapes.items()}


def logits(stepwise, path, tmp):
    out = os.path.join(tmp, "score.jsonl")
    subprocess.run([stepwise, "score", "--model", path, "--text", "cat sat cats", "--top-n", "0",
                    "--out", out], check=True, capture_output=True)
    rows = [json.loads(line) for line in open(out) if '"event":"logits"' in line]
    return np.array([r["logits"] for r in rows], dtype=np.float64)


def main():
    stepwise = sys.argv[1]
    weights = weights_of(7)
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        def write(name, data):
            p = os.path.join(tmp, name)
            open(p, "wb").write(data)
            return p
        exact = logits(stepwise, write("f32.gguf", model_gguf(weights, F32)), tmp)
        for qtype, name, bound in ((Q8_0, "Q8_0", 0.2), (Q4_0, "Q4_0", 2.0), (Q4_1, "Q4_1", 2.0)):
            deq = {n: (x if x.ndim == 1 else quantize(x, qtype)[1]) for n, x in weights.items()}
            got = logits(stepwise, write(name + ".gguf", model_gguf(weights, qtype)), tmp)
            want = logits(stepwise, write(name + "-deq.gguf", model_gguf(deq, F32)), tmp)
            same = got.shape == want.shape and np.array_equal(got, want)
            drift = float(np.max(np.abs(got - exact)))
            ok = same and 0 < drift <= bound and got.shape[0] == exact.shape[0] > 1
            print(f"{'ok  ' if ok else 'FAIL'}  {name}: logits equal to numpy's dequantization "
                  f"as F32: {same}; max |dlogit| against the float model {drift:.4f} "
                  f"(bound {bound})")
            failures += not ok
    if failures:
        sys.exit(f"FAIL: {failures} quantized types")
    print("gguf quantized types: PASS")


if __name__ == "__main__":
    main()
