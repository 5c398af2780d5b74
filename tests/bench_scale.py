#!/usr/bin/python3
"""make bench-scale: a real model's size on one core and on all of them.

Makes the qwen3-0.6b preset (make-model --preset: Qwen3-0.6B's published
shape, 596 million parameters, random weights, bf16 on disk, float32 once
loaded) in build/scale/ unless it is there, measures the memory bandwidth
(tests/bench/bandwidth.c: one core, then every core, reading 1 GiB), and
runs tests/bench/forward.c on one thread and on every core: load time (read,
convert, pack), peak resident memory, prefill and decode tokens/s (medians
of 3), the bytes one decode step reads, the bandwidth decode achieves
(bytes per step x steps per second), the rate at which forward.c re-reads
that step's bytes with the same threads, and decode as a fraction of its
ceiling (the faster of that re-read and decode's own best step, so at
most 1; the 1 GiB buffer reads are printed for the machine's sake). Prints a table (docs/performance.md keeps one) and writes
build/bench/scale.json. A benchmark, not a test: nothing is asserted.

    /usr/bin/python3 tests/bench_scale.py [PRESET]
"""
import json
import os
import subprocess
import sys
from check_util import LONG_TIMEOUT

BIN = "build/stepwise"
PRESET = sys.argv[1] if len(sys.argv) > 1 else "qwen3-0.6b"
MODEL = os.path.join("build/scale", PRESET)


def main():
    os.makedirs("build/bench", exist_ok=True)
    if not os.path.exists(os.path.join(MODEL, "config.json")):
        os.makedirs("build/scale", exist_ok=True)
        print(f"making {MODEL} (once)...", flush=True)
        subprocess.run([BIN, "make-model", "--preset", PRESET, "--seq-len", "512", "--dtype", "bf16",
                        "--out", MODEL], check=True, timeout=LONG_TIMEOUT)
    cores = os.cpu_count() or 1
    out = subprocess.run(["build/bench/bandwidth", str(cores)], capture_output=True, text=True,
                         check=True, timeout=LONG_TIMEOUT).stdout
    print(out.rstrip())
    one_core = all_cores = None
    for line in out.splitlines():
        if "1024 MiB" in line:
            rate = float(line.split(" at ")[1].split()[0]) * 1e9
            if line.lstrip().startswith("one"):
                one_core = rate
            else:
                all_cores = rate
    all_cores = all_cores or one_core
    results = []
    for threads, bw in ((1, one_core), (cores, all_cores)):
        r = json.loads(subprocess.run(["build/bench/forward", MODEL, "--threads", str(threads), "--prompt", "64",
                                       "--decode", "32", "--runs", "3"],
                                      capture_output=True, text=True, check=True, timeout=LONG_TIMEOUT).stdout)
        r["bandwidth"] = bw
        r["achieved"] = r["decode_step_bytes"] * r["decode_tok_s"]
        r["reread"] = r["read_bytes"] / r["read_seconds"]
        results.append(r)
    print()
    print(f"{PRESET}: {results[0]['decode_step_bytes'] / 2**30:.2f} GiB read per decode step")
    print()
    print("| threads | load s | peak RSS GiB | prefill tok/s (64) | decode tok/s (32) | decode GB/s | "
          "re-read GB/s | fraction | bitwise |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in results:
        print("| %d | %.1f | %.2f | %.1f | %.2f | %.1f | %.1f | %.2f | %s |"
              % (r["threads"], r["load_seconds"], r["peak_rss_bytes"] / 2**30, r["prefill_tok_s"],
                 r["decode_tok_s"], r["achieved"] / 1e9, r["reread"] / 1e9, r["decode_tok_s"] * r["decode_read_seconds"],
                 "yes" if r["bitwise"] else "NO"))
    with open("build/bench/scale.json", "w", encoding="utf-8") as f:
        json.dump({"preset": PRESET, "runs": results}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
