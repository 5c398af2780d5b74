#!/usr/bin/python3
"""The 15M shape beside llama.cpp, one thread, in interleaved rounds: a
record (docs/runs/), not a test. Each round, for the float32 and the F16
GGUF file: stepwise's forward pass (tests/bench/forward.c: a prefill of 64
tokens, then a decode of 16 after it, medians of 3 runs) and llama.cpp's
(tests/llama_cpp_engine.mjs time: the same ids and counts, a float32
cache), one table row each with the ratios.

    /usr/bin/python3 docs/runs/peer_15m.py [ROUNDS]
"""
import json
import subprocess
import sys

FILES = [("f32", "build/bench/m15.gguf"), ("F16", "build/bench/m15-f16.gguf")]


def ours(model):
    args = ["build/bench/forward", model, "--threads", "1", "--prompt", "64", "--decode", "16", "--runs", "3",
            "--no-kernel-rate"]
    return json.loads(subprocess.run(args, capture_output=True, text=True, check=True).stdout)


def theirs(model):
    args = ["node", "tests/llama_cpp_engine.mjs", "build/npm-llama-cpp", "time", model, "32000", "64", "16", "f32", "1"]
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    print("| file | round | stepwise prefill tok/s | llama.cpp | ratio | stepwise decode tok/s | llama.cpp | ratio |")
    print("|---|---|---|---|---|---|---|---|")
    rows = []
    for r in range(rounds):  # interleaved: the machine's drift falls on both alike
        for label, model in FILES:
            o, t = ours(model), theirs(model)
            rows.append((label, r + 1, o["prefill_tok_s"], t["prefill_tok_s"], o["decode_tok_s"], t["decode_tok_s"]))
    for label, r, po, pt, do, dt in sorted(rows, key=lambda x: (x[0] != "f32", x[1])):
        print(f"| {label} | {r} | {po:.1f} | {pt:.1f} | {po / pt:.2f} | {do:.1f} | {dt:.1f} | {do / dt:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
