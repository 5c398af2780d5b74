#!/usr/bin/python3
"""The roofline of docs/roofline.md, measured on this machine: a record,
not a test (its output is committed in docs/runs/ and doc-check repeats the
page's figures from it).

For each model (the 15M shape in float32, and the Llama-3.2-1B shape's F16
GGUF file of make bench-1b when it is there), on one thread:

  - tests/bench/forward.c times a decode of DECODE tokens (one sequence,
    after its prompt of 16 tokens since 2026-12-06, so at positions 16 to
    47; and 4, 16 and 64 sequences decoding together, at positions 0 to
    31) and prefills of 16, 128 and 512 tokens, and measures the machine's
    two roofs: the rate
    at which the decode step's own bytes are re-read (B, bytes a second),
    and the prefill kernel's rate in cache (P, multiply-adds a second);
  - `stepwise inspect --bandwidth B --peak P` gives each step's
    multiply-adds, bytes and bound, from the model's shape alone;
  - the table sets the measured tokens/s beside the bound.

    /usr/bin/python3 tests/roofline_record.py [build/stepwise]
"""
import json
import os
import subprocess
import sys
from check_util import LONG_TIMEOUT

BIN = sys.argv[1] if len(sys.argv) > 1 else "build/stepwise"
FORWARD = "build/bench/forward"
DECODE = 32
MODELS = [("15M shape, f32", "build/bench/m15-1k.bin", "f32"),
          ("Llama-3.2-1B shape, F16 GGUF", "build/bench/llama-3.2-1b-bf16-1k-f16.gguf", "f16")]


def forward(model, prompt, *extra):
    out = subprocess.run([FORWARD, model, "--threads", "1", "--prompt", str(prompt), "--decode", str(DECODE),
                          "--runs", "3", *extra], capture_output=True, text=True, check=True,
                         timeout=LONG_TIMEOUT).stdout
    return json.loads(out)


def main():
    if not os.path.exists(MODELS[0][1]):
        subprocess.run([BIN, "make-model", "--dim", "288", "--hidden", "768", "--layers", "6", "--heads", "6",
                        "--vocab", "32000", "--seq-len", "1024", "--seed", "42", "--out", MODELS[0][1]],
                       check=True, capture_output=True, timeout=LONG_TIMEOUT)
    print("# tests/roofline_record.py: measured tokens/s beside inspect's roofline bound, one thread")
    print("| model | step | multiply-adds a byte | bound by | bound, tokens/s | measured, tokens/s | "
          "measured / bound |")
    print("|---|---|---|---|---|---|---|")
    for label, model, dtype in MODELS:
        if not os.path.exists(model):
            print(f"| {label} | skipped: {model} not there (make bench-1b makes it) | | | | | |")
            continue
        runs = {t: forward(model, t, *(["--batch", "4,16,64"] if t == 16 else [])) for t in (16, 128, 512)}
        base = runs[16]
        bandwidth = base["decode_step_bytes"] / base["read_seconds"]  # the step's own bytes, re-read
        peak = max(r["kernel_macs_per_second"] for r in runs.values())
        roof = json.loads(subprocess.run(
            [BIN, "inspect", "--model", model, "--weight-dtype", dtype, "--context", str(DECODE), "--json",
             "--no-hash", "--bandwidth", "%.3f" % (bandwidth / 1e9), "--peak", "%.3f" % (peak / 1e9)],
            capture_output=True, text=True, check=True, timeout=LONG_TIMEOUT).stdout)["roofline"]
        print(f"| {label} | the roofs: {bandwidth / 1e9:.1f} GB/s, {peak / 1e9:.1f} G multiply-adds/s "
              f"(balance {peak / bandwidth:.1f}) | | | | | |")
        balance = roof["peak_macs_per_second"] / roof["bandwidth_bytes_per_second"]
        for s in roof["steps"]:
            if s["step"] == "decode":
                b = s["batch"]
                measured = base["decode_tok_s"] if b == 1 else base["batch_decode_tok_s"][str(b)]
                name = f"decode, batch {b}"
            else:
                measured = runs[s["prompt_tokens"]]["prefill_tok_s"]
                name = f"prefill of {s['prompt_tokens']}"
            bound = "memory" if s["macs_per_byte"] < balance else "compute"
            print(f"| {label} | {name} | {s['macs_per_byte']:.2f} | {bound} | {s['tokens_per_second_at_most']:.1f} | "
                  f"{measured:.1f} | {measured / s['tokens_per_second_at_most']:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
