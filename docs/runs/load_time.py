#!/usr/bin/python3
"""The load-time record (docs/runs/2026-12-05-load-time.txt): two builds of
tests/bench/forward.c, before and after a change, load each of make
bench-1b's 1B files in turn (3 interleaved rounds, one thread; the Q8_0
file with int8 activations) and print load_seconds side by side.

    /usr/bin/python3 docs/runs/load_time.py BEFORE_FORWARD AFTER_FORWARD
"""
import json
import subprocess
import sys

FOLDER = "build/bench/llama-3.2-1b-bf16-1k"


def load_seconds(forward, kind):
    args = [forward, f"{FOLDER}-{kind}.gguf", "--threads", "1", "--prompt", "2", "--decode", "1", "--runs", "1"]
    args += ["--int8"] if kind == "q8_0" else []
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    return json.loads(out.splitlines()[-1])["load_seconds"]


def main(before, after):
    print("| file | round | before s | after s | before / after |")
    print("|---|---|---|---|---|")
    for r in (1, 2, 3):
        for kind in ("f16", "bf16", "q8_0"):
            a, b = load_seconds(before, kind), load_seconds(after, kind)
            print(f"| {kind} | {r} | {a:.3f} | {b:.3f} | {a / b:.2f} |")


if __name__ == "__main__":
    main(*sys.argv[1:3])
