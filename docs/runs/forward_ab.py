#!/usr/bin/python3
"""An A/B of the forward pass: two builds of tests/bench/forward.c (A
before a change, B after) on one model, in interleaved rounds, on 1 and 2
threads. Each run gives its prefill and decode in tokens a second and the
fastest the decode's bytes were read in the same process (read_seconds);
the decode over that read is the decode's share of its own read ceiling,
which the machine's drift moves less than the rate. Prints a row a round
and the medians. (Its first form, decode_ab.py, printed the decode columns
only.)

    /usr/bin/python3 docs/runs/forward_ab.py A B MODEL ROUNDS [forward's flags...]
"""
import json
import statistics
import subprocess
import sys


def run(binary, model, threads, flags):
    args = [binary, model, "--threads", str(threads), "--no-kernel-rate"] + flags
    out = json.loads(subprocess.run(args, check=True, capture_output=True, text=True).stdout)
    assert out["bitwise"], "the logits moved with the thread count"
    return out["prefill_tok_s"], out["decode_tok_s"], out["decode_tok_s"] * out["read_seconds"]


def main():
    a, b, model, rounds, flags = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5:]
    print("| threads | round | A prefill tok/s | B prefill tok/s | A decode tok/s | B decode tok/s | "
          "A / read ceiling | B / read ceiling |")
    print("|---|---|---|---|---|---|---|---|")
    for threads in (1, 2):
        runs = {"A": [], "B": []}
        for r in range(rounds):  # interleaved: the machine's drift falls on both alike
            runs["A"].append(run(a, model, threads, flags))
            runs["B"].append(run(b, model, threads, flags))
            print(row(threads, r + 1, runs["A"][-1], runs["B"][-1]))
        med = {k: [statistics.median(x[i] for x in v) for i in (0, 1, 2)] for k, v in runs.items()}
        print(row(threads, "median", med["A"], med["B"]))


def row(threads, name, a, b):
    return (f"| {threads} | {name} | {a[0]:.1f} | {b[0]:.1f} | {a[1]:.1f} | {b[1]:.1f} | {a[2]:.2f} | "
            f"{b[2]:.2f} |")


if __name__ == "__main__":
    main()
