#!/usr/bin/python3
"""The decode ceiling of `make bench` is one a decode cannot beat (in `make test`).

tests/bench/forward.c times a decode and, as its ceiling, re-reads the bytes
a decode step reads. This check runs it on stories260K and on a small GQA
model made here, float32 and int8, on 1 and 2 threads, and checks:

- the bytes: the work counters' bytes per average decode step
  ("decode_step_bytes") and the bytes the re-read covers ("read_bytes")
  equal the ones computed here from the shapes alone: the token's
  embedding row, each layer's two norms and seven matrices, the final norm,
  the classifier, and the KV rows of an average step; the re-read also
  covers the padding of the fast layouts' last block of rows (16 rows for
  float32, 64 for int8), which their kernels read;
- the fraction: decode tokens/s times the ceiling's seconds per step is at
  most 1, whichever read was faster.

    /usr/bin/python3 tests/bench_ceiling_check.py build/stepwise
"""
import json
import os
import subprocess
import sys
import tempfile

from check_util import Checks, run_stepwise, LONG_TIMEOUT

BIN = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/stepwise")
FORWARD = os.path.join(os.path.dirname(BIN), "bench", "forward")
PROMPT = 8
DECODE = 24


def padded(rows, block):
    return -(-rows // block) * block


def step_bytes(cfg, int8, pad):
    """(counted, read): the bytes of an average decode step of DECODE
    tokens after a prompt of PROMPT (positions PROMPT to PROMPT + DECODE - 1),
    without and with the layouts' padding; int8 codes are a byte,
    with a float scale per group of 32 (the last one partial)."""
    d, h, L, V = cfg["dim"], cfg["hidden"], cfg["layers"], cfg["vocab"]
    kv = cfg["kv_heads"] * (d // cfg["heads"])
    block = 64 if int8 else 16

    def matrix(rows, cols):
        rows = padded(rows, block) if pad else rows
        return rows * cols + rows * -(-cols // 32) * 4 if int8 else rows * cols * 4

    embed = d + d // 32 * 4 if int8 else d * 4
    layer = 2 * d * 4 + matrix(d, d) + 2 * matrix(kv, d) + matrix(d, d) + 2 * matrix(h, d) + matrix(d, h)
    weights = embed + L * layer + d * 4 + matrix(V, d)
    kv_row = L * kv * 2 * 4
    # the counters: kv_row x (2 T + D + 1) / 2 (the mean of T+1 .. T+D rows);
    # the re-read: T + (D + 1) // 2 whole rows
    return (weights + kv_row * (2 * PROMPT + DECODE + 1) // 2,
            weights + kv_row * (PROMPT + (DECODE + 1) // 2))


def main():
    check = Checks()
    if not os.path.exists(FORWARD):
        print(f"bench ceiling: {FORWARD} is missing (make {os.path.relpath(FORWARD)})")
        return 1
    models = os.path.abspath(os.environ.get("STEPWISE_MODELS", "../shared/models"))
    with tempfile.TemporaryDirectory() as tmp:
        gqa = os.path.join(tmp, "gqa.bin")
        run_stepwise(BIN, "make-model", "--dim", "96", "--hidden", "200", "--layers", "3", "--heads", "6",
                     "--kv-heads", "2", "--vocab", "300", "--seq-len", "64", "--seed", "5", "--out", gqa)
        cases = [(gqa, {"dim": 96, "hidden": 200, "layers": 3, "heads": 6, "kv_heads": 2, "vocab": 300})]
        stories = os.path.join(models, "stories260K.bin")
        if os.path.exists(stories):
            cases.append((stories, {"dim": 64, "hidden": 172, "layers": 5, "heads": 8, "kv_heads": 4,
                                    "vocab": 512}))
        else:
            print(f"      (no stories260K.bin in {models}: the small model only)")
        for path, cfg in cases:
            name = os.path.basename(path)
            for int8 in (False, True):
                for threads in (1, 2):
                    args = [FORWARD, path, "--threads", str(threads), "--prompt", str(PROMPT), "--decode",
                            str(DECODE), "--runs", "3"] + (["--int8"] if int8 else [])
                    r = json.loads(subprocess.run(args, capture_output=True, text=True, check=True,
                                                  timeout=LONG_TIMEOUT).stdout)
                    what = f"{name}, {'int8' if int8 else 'float32'}, {threads} thread(s)"
                    counted, read = step_bytes(cfg, int8, False)[0], step_bytes(cfg, int8, True)[1]
                    check(r["decode_step_bytes"] == counted and r["read_bytes"] == read,
                          f"{what}: {r['decode_step_bytes']} bytes counted, {r['read_bytes']} re-read "
                          f"(from the shapes: {counted}, {read})")
                    fraction = r["decode_tok_s"] * r["decode_read_seconds"]
                    check(0 < fraction <= 1, f"{what}: decode at {fraction:.2f} of its ceiling "
                          f"(from {r['ceiling_from']})")
    return check.summary("bench ceiling")


if __name__ == "__main__":
    sys.exit(main())
