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

The k-quants (Q4_K, Q5_K, Q6_K) are checked the same way on random
super-blocks (random 6-bit scales and quants, fixed small d), dequantized by
numpy from ggml's block layout, written out here independently of the C.

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
from check_util import Checks, TIMEOUT  # noqa: E402

Q8_0, Q4_0, Q4_1 = 8, 2, 3
Q4_K, Q5_K, Q6_K = 12, 13, 14
F32 = 0
K_BYTES = {Q4_K: 144, Q5_K: 176, Q6_K: 210}


def f16(raw):
    """Little-endian F16 bytes as float32 values."""
    return np.frombuffer(raw, dtype="<f2").astype(np.float32)


def k_scale_min(s):
    """The eight 6-bit (scale, min) pairs packed in 12 bytes (get_scale_min_k4)."""
    s = [int(v) for v in s]
    out = []
    for j in range(8):
        if j < 4:
            out.append((s[j] & 63, s[j + 4] & 63))
        else:
            out.append(((s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4),
                        (s[j + 4] >> 4) | ((s[j] >> 6) << 4)))
    return out


def dequantize_k(block, qtype):
    """One super-block of 256, from the layout in ggml's block_q*_K, in
    float32 with the reference code's order of operations."""
    y = np.empty(256, np.float32)
    if qtype == Q6_K:
        ql, qh = np.frombuffer(block[:128], np.uint8), np.frombuffer(block[128:192], np.uint8)
        sc, d = np.frombuffer(block[192:208], np.int8), f16(block[208:210])[0]
        for half in range(2):
            L, H, S = ql[64 * half:], qh[32 * half:], sc[8 * half:]
            for l in range(32):
                q = [((L[l] & 15) | ((H[l] & 3) << 4)), ((L[l + 32] & 15) | (((H[l] >> 2) & 3) << 4)),
                     ((L[l] >> 4) | (((H[l] >> 4) & 3) << 4)), ((L[l + 32] >> 4) | (((H[l] >> 6) & 3) << 4))]
                for k in range(4):
                    y[128 * half + l + 32 * k] = (d * np.float32(S[l // 16 + 2 * k])) * np.float32(int(q[k]) - 32)
        return y
    d, dmin = f16(block[0:2])[0], f16(block[2:4])[0]
    pairs = k_scale_min(np.frombuffer(block[4:16], np.uint8))
    qh = np.frombuffer(block[16:48], np.uint8) if qtype == Q5_K else None
    qs = np.frombuffer(block[48:] if qtype == Q5_K else block[16:], np.uint8)
    for i in range(4):
        for half in range(2):
            sc, mn = pairs[2 * i + half]
            dd, mm = d * np.float32(sc), dmin * np.float32(mn)
            for l in range(32):
                q = (qs[32 * i + l] >> 4) if half else (qs[32 * i + l] & 15)
                if qh is not None and (qh[l] >> (2 * i + half)) & 1:
                    q += 16
                y[64 * i + 32 * half + l] = dd * np.float32(int(q)) - mm
    return y


def random_k(shape, qtype, rng):
    """Random super-blocks of qtype for a matrix of shape (random scales and
    quants; small d so the weights stay near 1/sqrt(fan_in)) -> (bytes, values)."""
    n = int(np.prod(shape)) // 256
    out, vals = bytearray(), []
    for _ in range(n):
        b = bytearray(rng.integers(0, 256, K_BYTES[qtype], dtype=np.uint8).tobytes())
        if qtype == Q6_K:
            b[208:210] = np.float16(0.0004).tobytes()
        else:
            b[0:2], b[2:4] = np.float16(0.002).tobytes(), np.float16(0.03).tobytes()
        out += b
        vals.append(dequantize_k(bytes(b), qtype))
    return bytes(out), np.concatenate(vals).reshape(shape)


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


def model_gguf(weights, qtype, blobs=None):
    """A llama GGUF: matrices in qtype (F32: as given; blobs: the bytes
    already made), norms F32."""
    d, h = weights["token_embd.weight"].shape[1], weights["blk.0.ffn_gate.weight"].shape[0]
    nh, vocab = 4, len(w.PIECES)
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
        blob = (x.astype("<f4").tobytes() if t == F32 else
                blobs[name] if blobs is not None else quantize(x, t)[0])
        shape = list(reversed(x.shape))  # GGUF lists the fastest dimension first
        infos += w.gguf_string(name) + struct.pack("<I", len(shape))
        infos += b"".join(struct.pack("<Q", s) for s in shape) + struct.pack("<IQ", t, len(data))
        data += blob + b"\0" * (-len(blob) % 32)
    head = b"GGUF" + struct.pack("<IQQ", 3, len(weights), len(kvs)) + b"".join(kvs) + infos
    return head + b"\0" * (-len(head) % 32) + data


def weights_of(seed, d=64, h=96):
    rng = np.random.default_rng(seed)
    kvd, vocab = d // 2, len(w.PIECES)
    shapes = {"token_embd.weight": (vocab, d), "output_norm.weight": (d,), "output.weight": (vocab, d),
              "blk.0.attn_norm.weight": (d,), "blk.0.attn_q.weight": (d, d),
              "blk.0.attn_k.weight": (kvd, d), "blk.0.attn_v.weight": (kvd, d),
              "blk.0.attn_output.weight": (d, d), "blk.0.ffn_norm.weight": (d,),
              "blk.0.ffn_gate.weight": (h, d), "blk.0.ffn_down.weight": (d, h),
              "blk.0.ffn_up.weight": (h, d)}
    return {n: (1 + 0.1 * rng.standard_normal(s) if len(s) == 1 else
                rng.standard_normal(s) / np.sqrt(s[-1])).astype(np.float32)
            for n, s in shapes.items()}


def logits(stepwise, path, tmp, *extra, header=None):
    out = os.path.join(tmp, "score.jsonl")
    subprocess.run([stepwise, "score", "--model", path, "--text", "cat sat cats", "--top-n", "0",
                    "--out", out, *extra], check=True, capture_output=True, timeout=TIMEOUT)
    lines = open(out).read().splitlines()
    if header is not None:
        header.update(json.loads(lines[0]))
    rows = [json.loads(line) for line in lines if '"event":"logits"' in line]
    return np.array([r["logits"] for r in rows], dtype=np.float64)


def q4_0_as_q8_0(blob):
    """Q4_0 blocks (f16 d, 16 bytes of nibbles) as Q8_0 blocks of the same
    values: the codes q - 8 as int8 beside the same f16 d."""
    out = bytearray()
    for at in range(0, len(blob), 18):
        d, nib = blob[at:at + 2], np.frombuffer(blob[at + 2:at + 18], np.uint8)
        q = np.concatenate([nib & 0x0F, nib >> 4]).astype(np.int16) - 8
        out += d + q.astype(np.int8).tobytes()
    return bytes(out)


def check_int8_direct(check, stepwise, weights, write, tmp):
    """A Q8_0 file under int8 activations runs as the int8 weights its
    blocks are (groups of 32, as stored): the bits of --quant-weights int8
    --quant-group 32 applied to the file dequantized at load, plain and fast
    kernels, and the run header says int8 weights in groups of 32. Q4_0's
    blocks run as their codes too: the bits of a Q8_0 file numpy writes
    with the same values (codes q - 8, the same scales), and not those of
    its values quantized again (so both run their codes as stored)."""
    q8 = write("direct-Q8_0.gguf", model_gguf(weights, Q8_0))
    acts = ("--quant-activations", "int8")
    header = {}
    direct = logits(stepwise, q8, tmp, *acts, header=header)
    requant = logits(stepwise, q8, tmp, *acts, "--quant-weights", "int8", "--quant-group", "32",
                     "--weights", "f32", "--kernels", "plain")
    fast = logits(stepwise, q8, tmp, *acts, "--kernels", "fast", "--threads", "3")
    deq = {n: (x if x.ndim == 1 else quantize(x, Q8_0)[1]) for n, x in weights.items()}
    as_f32 = write("direct-Q8_0-deq.gguf", model_gguf(deq, F32))  # the same values as F32
    fake = logits(stepwise, as_f32, tmp, *acts)  # float weights, int8 activations
    quant = header.get("quant", {})
    ok = (np.array_equal(direct, requant) and np.array_equal(direct, fast) and direct.shape[0] > 1
          and quant.get("weights") == "int8" and quant.get("weight_group") == 32
          and not np.array_equal(direct, fake))
    check(ok, f"Q8_0 under --quant-activations int8: its blocks are the int8 "
          f"weights, the bits of --quant-weights int8 --quant-group 32 on the dequantized file, plain "
          f"and fast (header {quant}); its values held as F32 (float weights) would differ by "
          f"{np.abs(direct - fake).max():.2e}")
    q4_blobs = {n: quantize(x, Q4_0)[0] for n, x in weights.items() if x.ndim == 2}
    q4 = write("direct-Q4_0.gguf", model_gguf(weights, Q4_0, blobs=q4_blobs))
    same = write("direct-Q4_0-as-Q8_0.gguf", model_gguf(weights, Q8_0, blobs={
        n: q4_0_as_q8_0(b) for n, b in q4_blobs.items()}))
    w8 = ("--quant-weights", "int8", "--quant-group", "32", *acts)
    a, b = logits(stepwise, q4, tmp, *w8), logits(stepwise, same, tmp, *w8)
    requantized = logits(stepwise, same, tmp, *w8, "--weights", "f32")  # codes of +-127 again
    ok4 = np.array_equal(a, b) and a.shape[0] > 1 and not np.array_equal(b, requantized)
    check(ok4, f"Q4_0 with --quant-weights int8 --quant-group 32: its blocks' "
          f"own codes, the bits of the Q8_0 file of the same values; quantizing those values again "
          f"(codes up to 127) would differ by {np.abs(b - requantized).max():.2e}")


def main():
    stepwise = sys.argv[1]
    weights = weights_of(7)
    check = Checks()
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
            check(ok, f"{name}: logits equal to numpy's dequantization "
                  f"as F32: {same}; max |dlogit| against the float model {drift:.4f} "
                  f"(bound {bound})")
        check_int8_direct(check, stepwise, weights, write, tmp)
        # k-quants: random super-blocks (a model of dim 256, whole super-blocks per row)
        base = weights_of(8, d=256, h=256)
        for qtype, name in ((Q4_K, "Q4_K"), (Q5_K, "Q5_K"), (Q6_K, "Q6_K")):
            rng = np.random.default_rng(qtype)
            made = {n: random_k(x.shape, qtype, rng) for n, x in base.items() if x.ndim == 2}
            deq = {n: (made[n][1] if n in made else x) for n, x in base.items()}
            got = logits(stepwise, write(name + ".gguf", model_gguf(
                base, qtype, blobs={n: b for n, (b, _) in made.items()})), tmp)
            want = logits(stepwise, write(name + "-deq.gguf", model_gguf(deq, F32)), tmp)
            same = got.shape == want.shape and got.shape[0] > 1 and np.array_equal(got, want)
            # inspect names each tensor's type and its bytes on disk and as float32
            r = subprocess.run([stepwise, "inspect", "--model", os.path.join(tmp, name + ".gguf"),
                                "--json", "--no-hash"], capture_output=True, text=True, check=True, timeout=TIMEOUT)
            listed = {t["name"]: t for t in json.loads(r.stdout)["gguf_tensors"]}
            for n, x in base.items():
                t = listed[n]
                want_type, want_bytes = ((name, x.size // 256 * K_BYTES[qtype]) if x.ndim == 2
                                         else ("F32", x.size * 4))
                same = same and t["type"] == want_type and t["bytes"] == want_bytes \
                    and t["float32_bytes"] == x.size * 4
            check(same, f"{name}: random super-blocks give the logits of "
                  f"numpy's dequantization as F32: {same}")
    return check.summary("gguf quantized types")


if __name__ == "__main__":
    sys.exit(main())
