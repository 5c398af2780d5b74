#!/usr/bin/python3
"""The int8 KV cache's scales, one per position and KV head (in `make test`,
quant area): stories260K generates with --quant-kv int8, tracing each
layer's K and V rows in float32 (the hooks blocks.N.attn.k and attn.v,
after RoPE) and the rows the cache holds (--trace-kv: dequantized). numpy
quantizes the float rows itself, head by head (scale = max |x| / 127 in
float32, codes rounded half away from zero), and every cached row must be
its dequantized values, bit for bit; a cache that kept one scale per
position (all heads together) fails, since the heads' ranges differ. The
trace's quant events for kv.k and kv.v must show one head's group
(head_dim values), its scale the one numpy computes for it.

    /usr/bin/python3 tests/kv_int8_check.py build/stepwise
"""
import json
import os
import sys
import tempfile

import numpy as np

from check_util import Checks, run_stepwise, stories260k

BIN = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/stepwise")


def quantized(x, group):
    """x [n] float32 quantized per group of `group` values and read back, as
    docs/quantization.md defines it."""
    out = np.empty_like(x)
    scales = []
    for start in range(0, len(x), group):
        g = x[start:start + group]
        scale = np.float32(np.max(np.abs(g))) / np.float32(127)
        scales.append(scale)
        if not scale > 0:
            out[start:start + group] = 0
            continue
        v = g / scale
        codes = np.clip(np.sign(v) * np.floor(np.abs(v) + np.float32(0.5)), -127, 127).astype(np.int8)
        out[start:start + group] = codes.astype(np.float32) * scale  # +0 for code 0, as C
    return out, scales


def main():
    check = Checks()
    m = stories260k("kv int8")
    if m is None:
        return 0
    shape = json.loads(run_stepwise(BIN, "inspect", *m[:2], "--json").stdout)["model"]
    head_dim, kv_heads = shape["head_dim"], shape["n_kv_heads"]
    with tempfile.TemporaryDirectory() as tmp:
        trace = os.path.join(tmp, "t.jsonl")
        run_stepwise(BIN, "generate", *m, "--prompt", "Once upon a time", "--steps", "6", "--quant-kv", "int8",
                     "--trace", trace, "--trace-level", "layers", "--trace-kv", "--trace-hooks", "blocks.*.attn.k,blocks.*.attn.v")
        floats, cached, events = {}, {}, []
        for line in open(trace, encoding="utf-8"):
            e = json.loads(line)
            if e["event"] == "activation" and e["hook"].endswith((".attn.k", ".attn.v")):
                layer, which = int(e["hook"].split(".")[1]), e["hook"][-1]
                floats[(layer, e["pos"], which)] = np.array(e["data"], dtype=np.float32)
            elif e["event"] == "kv":
                for which in "kv":
                    cached[(e["layer"], e["pos"], which)] = np.array(e[which], dtype=np.float32)
            elif e["event"] == "quant" and e["tensor"] in ("kv.k", "kv.v"):
                events.append(e)
        same, spread = 0, 0.0
        for key, x in floats.items():
            want, scales = quantized(x, head_dim)
            got = cached.get(key)
            same += got is not None and np.array_equal(got.view(np.uint32), want.view(np.uint32))
            spread = max(spread, max(scales) / max(min(scales), np.float32(1e-30)))
        check(len(floats) > 0 and same == len(floats) and len(floats) == len(cached),
              f"{same} of {len(floats)} cached K and V rows ({kv_heads} KV heads of {head_dim}) are numpy's "
              f"per-head quantization of the float rows, bit for bit (the heads' scales differ up to "
              f"{spread:.1f}x, so one scale a row would not give them)")
        good = 0
        for e in events:
            x = floats[(e["layer"], e["pos"], e["tensor"][-1])]
            _, scales = quantized(x, head_dim)
            good += (e["group"] == head_dim and e["n"] == kv_heads * head_dim and len(e["values"]) == head_dim
                     and np.float32(e["scale"]) == scales[0])
        check(len(events) == len(floats) and good == len(events),
              f"{good} of {len(events)} kv quant events show a group of {head_dim} (one head) with numpy's scale")
        # --kv-dtype f16 / bf16: each cached row is its float row rounded by numpy (float16: round to
        # nearest even; bfloat16: the top 16 bits, rounded to nearest even); plain == fast == 2
        # threads, with llama.cpp's rounding points too
        def to_bf16(x):
            u = x.view(np.uint32).astype(np.uint64)
            u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16 << 16
            return u.astype(np.uint32).view(np.float32)
        for dtype, rnd in (("f16", lambda x: x.astype(np.float16).astype(np.float32)), ("bf16", to_bf16)):
            trace = os.path.join(tmp, dtype + ".jsonl")
            run_stepwise(BIN, "generate", *m, "--prompt", "Once upon a time", "--steps", "6", "--kv-dtype", dtype,
                         "--trace", trace, "--trace-level", "layers", "--trace-kv", "--trace-hooks",
                         "blocks.*.attn.k,blocks.*.attn.v")
            floats, cached = {}, {}
            for line in open(trace, encoding="utf-8"):
                e = json.loads(line)
                if e["event"] == "activation" and e["hook"].endswith((".attn.k", ".attn.v")):
                    floats[(int(e["hook"].split(".")[1]), e["pos"], e["hook"][-1])] = np.array(e["data"], np.float32)
                elif e["event"] == "kv":
                    for which in "kv":
                        cached[(e["layer"], e["pos"], which)] = np.array(e[which], dtype=np.float32)
            header = json.loads(open(trace, encoding="utf-8").readline())["kv_cache"]
            want_bytes = shape["n_layers"] * kv_heads * head_dim * 2 * 2  # layers x heads x dims x (K, V) x 2 bytes
            check(header["bytes_per_token"] == want_bytes and "x 2 bytes" in header["formula"],
                  f"--kv-dtype {dtype}: the cache holds 16 bits a value: {header['bytes_per_token']} bytes a token "
                  f"(layers x KV heads x head_dim x 2 x 2 = {want_bytes}), half a float32 cache's")
            same = sum(k in cached and np.array_equal(cached[k].view(np.uint32), rnd(x).view(np.uint32))
                       for k, x in floats.items())
            moved = sum(not np.array_equal(rnd(x), x) for x in floats.values())
            check(len(floats) > 0 and same == len(floats) and moved > 0,
                  f"--kv-dtype {dtype}: {same} of {len(floats)} cached K and V rows are numpy's {dtype} rounding of "
                  f"the float rows, bit for bit ({moved} of them moved by it)")
        outs = []
        for extra in (["--kernels", "plain"], ["--kernels", "fast", "--threads", "1"], ["--threads", "2"]):
            r = run_stepwise(BIN, "score", *m, "--text", "Once upon a time, there was a little girl", "--top-n",
                             "0", "--kv-dtype", "f16", "--kv-rounding", "llama.cpp", "--reproducible",
                             "--out", os.path.join(tmp, "s.jsonl"), *extra)
            outs.append([l for l in open(os.path.join(tmp, "s.jsonl")) if '"logits"' in l and '"event":"run"' not in l])
        check(outs[0] == outs[1] == outs[2] and len(outs[0]) > 0,
              "--kv-dtype f16 --kv-rounding llama.cpp: plain and fast kernels, 1 and 2 threads, the same logits")
    return check.summary("kv int8")


if __name__ == "__main__":
    sys.exit(main())
