#!/usr/bin/python3
"""Where a 1B prefill's time goes (docs/performance.md): the F16 GGUF file of
`make bench-1b` (build/bench/llama-3.2-1b-bf16-1k-f16.gguf), one thread,
prompts of 64 and 512 tokens.

perf samples tests/bench/forward.c from DELAY seconds on (past loading and
packing, about 6 s here; the script checks the load took less), without
the kernel-rate timing (--no-kernel-rate), and groups the samples by what
the functions do, as profile_prefill.py does for the 15M shape, with the
widening of half blocks to float32 (once a block, before its tiles) a group
of its own. The decode's re-read of the weights (read_bytes) is left out.

    /usr/bin/python3 docs/runs/profile_prefill_1b.py   (needs perf, make bench-1b's files)
"""
import json
import subprocess

from profile_prefill import GROUPS, group_shares

MODEL = "build/bench/llama-3.2-1b-bf16-1k-f16.gguf"
DELAY = 9.0
GROUPS_1B = [("widening half blocks to float32", r"widen_"),
             ("decode kernels of half blocks", r"(one|pair|many)_(avx512|f16c)")] + GROUPS


def profile(prompt, runs):
    args = ["perf", "record", "-q", "-D", str(int(DELAY * 1000)), "-F", "2000", "-o", "/tmp/profile_1b.data",
            "build/bench/forward", MODEL, "--threads", "1", "--prompt", str(prompt), "--decode", "1",
            "--runs", str(runs), "--no-kernel-rate"]
    run = json.loads(subprocess.run(args, check=True, capture_output=True, text=True).stdout.splitlines()[-1])
    assert run["load_seconds"] < DELAY - 1, "the load ran into the profile: raise DELAY"
    return group_shares("/tmp/profile_1b.data", GROUPS_1B), run["prefill_tok_s"]


def main():
    runs = {64: profile(64, 8), 512: profile(512, 1)}
    print("| share of the forward pass's samples | 64 tokens | 512 tokens |")
    print("|---|---|---|")
    for group in [g for g, _ in GROUPS_1B] + ["other"]:
        print("| %s | %.1f%% | %.1f%% |" % (group, runs[64][0].get(group, 0), runs[512][0].get(group, 0)))
    print("| (prefill, tokens a second) | %.1f | %.1f |" % (runs[64][1], runs[512][1]))


if __name__ == "__main__":
    main()
