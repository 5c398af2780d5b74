#!/usr/bin/python3
"""--weights stored gives the bits of --weights f32 (in `make test`).

A Hugging Face folder's matrices are kept as the files store them (mapped,
float32, float16 or bfloat16) and widened as they are read, or widened to
float32 at load (--weights f32, the old way). Every float16 and bfloat16 is
exactly a float32, and the sums keep their order, so the two must agree to
the bit. The reference is --weights f32 with the plain kernels; the f32 path
itself is checked against numpy in tests/hf_reference.py.

For llama, qwen2 (q/k/v biases) and qwen3 (q/k norms) folders in F32, F16
and BF16 (two shards each), an untied BF16 folder, and a BF16 folder whose
tensors sit at odd offsets (a header of odd length: the loader copies them):
- `score` with every activation (--hooks default): plain and fast kernels,
  threads 1, 2, 3 and 7;
- `generate` (prefill, then decode one token at a time against the cache),
  with its logits, KV rows and layer activations in the trace;
- each int8 switch (weights, activations, KV cache), stored against f32.
Everything but the run header and the bytes read must be byte for byte the
same; the bytes read (weight_bytes) must be half for 16-bit matrices.

GGUF files of every type stepwise reads (F32, F16, BF16, Q8_0, Q4_0, Q4_1,
Q4_K, Q5_K, Q6_K; written by tests/gguf_quant_check.py's writer) give the
same bytes as stored (blocks dequantized a block at a time as read, or
packed) and dequantized at load, with the plain and the fast kernels.

Memory: on a 67M-parameter BF16 folder, `score` with --weights stored peaks
at no more than 0.6 of the resident memory --weights f32 takes, with either
kernel.

    /usr/bin/python3 tests/weights_stored_check.py build/stepwise
"""
import json
import os
import struct
import sys
import tempfile

from check_util import Checks, run_stepwise

BIN = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/stepwise")
MODELS = os.environ.get("STEPWISE_MODELS", "../shared/models")
TOKENS = "1,5,9,200,17,33,2,4,99,100,101,7,8,300,301,5,6"  # 17: two tiles of six and a partial one
SHAPE = ["--dim", "64", "--hidden", "96", "--layers", "2", "--heads", "4", "--kv-heads", "2",
         "--vocab", "512", "--seq-len", "64"]


def events(path):
    """The trace's events but the run header, without the bytes read; and
    the bytes read, summed."""
    kept, read = [], 0
    with open(path, encoding="utf-8") as f:
        for line in f:
            e = json.loads(line)
            if e.get("event") == "run":
                continue
            stack = [e]
            while stack:
                o = stack.pop()
                if isinstance(o, dict):
                    read += o.pop("weight_bytes", 0) if isinstance(o.get("weight_bytes"), int) else 0
                    o.pop("seconds", None), o.pop("measured", None)
                    stack.extend(o.values())
                elif isinstance(o, list):
                    stack.extend(o)
            kept.append(json.dumps(e, sort_keys=True))
    return kept, read


def make_folder(tmp, name, *args):
    out = os.path.join(tmp, name)
    run_stepwise(BIN, "make-model", "--format", "hf", "--shards", "2", *SHAPE, *args, "--out", out)
    return out


def misalign(folder):
    """Rewrite each safetensors file with one more byte of header (a space in
    the JSON): every tensor then starts at an odd offset."""
    for name in os.listdir(folder):
        if not name.endswith(".safetensors"):
            continue
        path = os.path.join(folder, name)
        data = open(path, "rb").read()
        n = struct.unpack("<Q", data[:8])[0]
        header = data[8:8 + n].rstrip(b" ")
        if (len(header) + 1) % 2 == 0:
            header += b" "
        header += b" "
        with open(path, "wb") as f:
            f.write(struct.pack("<Q", len(header)) + header + data[8 + n:])
    return folder


def score(model, out, *args):
    run_stepwise(BIN, "score", "--model", model, "--tokens", TOKENS, "--top-n", "0", "--quiet",
                 "--reproducible", "--hooks", "default", "--out", out, *args)
    return events(out)


def generate(model, tokenizer, out, *args):
    run_stepwise(BIN, "generate", "--model", model, "--tokenizer", tokenizer, "--prompt",
                 "Once upon a time", "--steps", "12", "--temperature", "0.8", "--quiet",
                 "--trace", out, "--trace-level", "layers", "--trace-kv", *args)
    return events(out)


def check_folder(check, tmp, folder, half, tokenizer):
    name = os.path.basename(folder)
    ref, ref_read = score(folder, os.path.join(tmp, "ref.jsonl"), "--weights", "f32", "--kernels",
                          "plain")
    runs = [("plain", "1"), ("fast", "1"), ("fast", "2"), ("fast", "3"), ("fast", "7")]
    for kernels, threads in runs:
        got, read = score(folder, os.path.join(tmp, "got.jsonl"), "--kernels", kernels,
                          "--threads", threads)
        check(got == ref, f"{name}: score, stored = f32, {kernels} kernels, {threads} threads")
    want = ref_read // 2 if half else ref_read
    check(read < ref_read if half else read == ref_read,
          f"{name}: bytes read {read} as stored, {ref_read} as float32 (half: {half})")
    if half:  # the matrices' bytes halve; the norms stay float32
        check(read > want, f"{name}: bytes read more than half of float32's ({read} > {want})")
    if tokenizer is None:
        return
    ref = generate(folder, tokenizer, os.path.join(tmp, "gref.jsonl"), "--weights", "f32",
                   "--kernels", "plain")
    for kernels, threads in [("plain", "1"), ("fast", "3")]:
        got = generate(folder, tokenizer, os.path.join(tmp, "ggot.jsonl"), "--kernels", kernels,
                       "--threads", threads)
        check(got[0] == ref[0] and (got[1] < ref[1] if half else got[1] == ref[1]),
              f"{name}: generate, stored = f32 (bytes read: {got[1]} and {ref[1]}), {kernels} "
              f"kernels, {threads} threads")


def check_int8(check, tmp, folder):
    name = os.path.basename(folder)
    for switch in ("--quant-weights", "--quant-activations", "--quant-kv"):
        for kernels in ("plain", "fast"):
            a, _ = score(folder, os.path.join(tmp, "a.jsonl"), switch, "int8", "--kernels",
                         kernels, "--weights", "f32")
            b, _ = score(folder, os.path.join(tmp, "b.jsonl"), switch, "int8", "--kernels",
                         kernels, "--threads", "2")
            check(a == b, f"{name}: {switch} int8, stored = f32, {kernels} kernels")


def check_inspect(check, folder):
    """inspect's bill of a folder held as stored, against the files' sizes and the closed form:
    2 bytes a matrix weight packed (the untied embedding stays mapped), 4 a norm weight."""
    info = json.loads(run_stepwise(BIN, "inspect", "--model", folder, "--json", "--no-hash").stdout)
    held, m = info["weights_held"], info["model"]
    d, h, L, V = m["dim"], m["hidden_dim"], m["n_layers"], m["vocab_size"]
    q, kv = m["n_heads"] * m["head_dim"], m["n_kv_heads"] * m["head_dim"]
    files = sum(os.path.getsize(os.path.join(folder, f)) for f in os.listdir(folder)
                if f.endswith(".safetensors"))
    matrices = L * (d * q + 2 * d * kv + q * d + 3 * d * h) + V * d
    check(held["mapped_bytes"] == files and held["packed_bytes"] == 2 * matrices
          and held["anonymous_bytes"] == 4 * (2 * L + 1) * d,
          f"inspect bills {held['mapped_bytes']} mapped (the files: {files}), "
          f"{held['packed_bytes']} packed (2 x {matrices}), {held['anonymous_bytes']} anonymous "
          f"(4 x {(2 * L + 1) * d} norm weights)")


def check_inspect_q8(check, tmp):
    """A .q8 file's matrices are held in the process's own memory, all of
    them and nothing else: the file's bytes after its 40-byte header (magic,
    version, eight int32), tied or not."""
    for tied in (True, False):
        ckpt, q8 = os.path.join(tmp, f"m{tied}.bin"), os.path.join(tmp, f"m{tied}.q8")
        run_stepwise(BIN, "make-model", *SHAPE, *([] if tied else ["--untied"]), "--out", ckpt)
        run_stepwise(BIN, "quantize", "--model", ckpt, "--out", q8)
        info = json.loads(run_stepwise(BIN, "inspect", "--model", q8, "--json",
                                       "--no-hash").stdout)
        held, body = info["weights_held"], os.path.getsize(q8) - 40
        check(held["anonymous_bytes"] == body and held["mapped_bytes"] == 0,
              f"inspect of a .q8 file ({'tied' if tied else 'untied'}) bills "
              f"{held['anonymous_bytes']} anonymous bytes (the file after its header: {body}) "
              f"and {held['mapped_bytes']} mapped")


def check_gguf(check, tmp):
    import numpy as np
    import gguf_quant_check as gq
    small, large = gq.weights_of(7), gq.weights_of(8, d=256, h=256)
    files = {"F32": gq.model_gguf(small, gq.F32)}
    for name, t, dtype in (("F16", 1, "<f2"), ("BF16", 30, None)):
        def half(x):
            if dtype is not None:
                return x.astype(dtype).tobytes()
            u = x.astype("<f4").view("<u4").astype(np.uint64)  # bfloat16, rounded to nearest even
            return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype("<u2").tobytes()
        files[name] = gq.model_gguf(small, t, blobs={n: half(x) for n, x in small.items() if x.ndim == 2})
    for name, t in (("Q8_0", gq.Q8_0), ("Q4_0", gq.Q4_0), ("Q4_1", gq.Q4_1)):
        files[name] = gq.model_gguf(small, t)
    for name, t in (("Q4_K", gq.Q4_K), ("Q5_K", gq.Q5_K), ("Q6_K", gq.Q6_K)):
        rng = np.random.default_rng(t)
        made = {n: gq.random_k(x.shape, t, rng)[0] for n, x in large.items() if x.ndim == 2}
        files[name] = gq.model_gguf(large, t, blobs=made)
    for name, data in files.items():
        path = os.path.join(tmp, name + ".gguf")
        with open(path, "wb") as f:
            f.write(data)
        def run(out, *args):
            run_stepwise(BIN, "score", "--model", path, "--text", "cat sat cats sat", "--top-n", "0",
                         "--quiet", "--reproducible", "--hooks", "default", "--out", out, *args)
            return events(out)[0]
        ref = run(os.path.join(tmp, "g-ref.jsonl"), "--weights", "f32", "--kernels", "plain")
        same = [run(os.path.join(tmp, "g.jsonl"), "--kernels", k, "--threads", n) == ref
                for k, n in (("plain", "1"), ("fast", "1"), ("fast", "2"), ("fast", "3"), ("fast", "7"))]
        check(all(same) and len(ref) > 3,
              f"GGUF {name}: stored = f32 with plain, and fast on 1, 2, 3 and 7 threads ({same})")
        if name in ("F16", "BF16", "Q8_0", "Q4_K"):  # and each int8 switch
            for switch in ("--quant-weights", "--quant-activations", "--quant-kv"):
                for kernels in ("plain", "fast"):
                    a = run(os.path.join(tmp, "g-a.jsonl"), switch, "int8", "--weights", "f32",
                            "--kernels", kernels)
                    b = run(os.path.join(tmp, "g-b.jsonl"), switch, "int8", "--kernels", kernels,
                            "--threads", "2")
                    check(a == b and len(a) > 3,
                          f"GGUF {name}: {switch} int8, stored = f32, {kernels} kernels")


def peak_rss(args):
    """Peak resident memory (bytes) of one run of BIN ARGS."""
    pid = os.fork()
    if pid == 0:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1), os.dup2(devnull, 2)
        os.execv(BIN, [BIN] + args)
    _, status, usage = os.wait4(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(args)}: failed")
    return usage.ru_maxrss * 1024


def check_memory(check, tmp):
    folder = os.path.join(tmp, "m67")
    run_stepwise(BIN, "make-model", "--format", "hf", "--dtype", "bf16", "--dim", "768",
                 "--hidden", "2048", "--layers", "6", "--heads", "12", "--vocab", "32000",
                 "--seq-len", "256", "--out", folder)
    out = os.path.join(tmp, "mem.jsonl")
    for kernels in ("plain", "fast"):
        base = ["score", "--model", folder, "--tokens", "1,2,3,4,5,6,7,8", "--top-n", "0",
                "--quiet", "--kernels", kernels, "--threads", "2", "--out", out]
        f32 = peak_rss(base + ["--weights", "f32"])
        stored = peak_rss(base)
        check(stored <= 0.6 * f32,
              f"67M BF16 folder, {kernels} kernels: peak resident {stored / 2**20:.0f} MiB as "
              f"stored, {f32 / 2**20:.0f} MiB as float32 (ratio {stored / f32:.2f} <= 0.6)")


def main():
    check = Checks()
    tok512 = os.path.join(MODELS, "tok512.bin")
    tokenizer = tok512 if os.path.exists(tok512) else None
    if tokenizer is None:
        print(f"generate cases skipped: no tok512.bin in {MODELS}")
    with tempfile.TemporaryDirectory() as tmp:
        for arch in ("llama", "qwen2", "qwen3"):
            for dtype in ("f32", "f16", "bf16"):
                folder = make_folder(tmp, f"{arch}-{dtype}", "--arch", arch, "--dtype", dtype)
                check_folder(check, tmp, folder, dtype != "f32", tokenizer)
        untied = make_folder(tmp, "llama-bf16-untied", "--dtype", "bf16", "--untied")
        check_folder(check, tmp, untied, True, tokenizer)
        check_int8(check, tmp, untied)
        for dtype in ("f16", "f32"):
            check_int8(check, tmp, os.path.join(tmp, f"qwen2-{dtype}"))
        check_inspect(check, untied)
        check_inspect_q8(check, tmp)
        odd = misalign(make_folder(tmp, "llama-bf16-odd-offsets", "--dtype", "bf16"))
        check_folder(check, tmp, odd, True, None)
        check_gguf(check, tmp)
        check_memory(check, tmp)
    return check.summary("weights as stored")


if __name__ == "__main__":
    sys.exit(main())
