#!/usr/bin/python3
"""Where a 15M prefill's time goes, float32 and int8 x int8 (docs/performance.md).

perf samples tests/bench/forward.c (one thread, a 100-token prompt, one
decode step, 60 runs), from 0.3 s on (after loading, packing and quantizing
the weights, which take about 0.05 s), and this groups the samples by what
the functions do, leaving out what is not the forward pass: the ceiling's
re-read of the weights (read_bytes). The decode steps' own share (one token
a run, with the classifier) stays in.

    /usr/bin/python3 docs/runs/profile_prefill.py   (needs perf and make build/bench/forward)
"""
import collections
import re
import subprocess

GROUPS = [("matmul kernels", r"block_tokens?_|q8_quads|q8_block|matmul|linear_blocks"),
          ("quantizing activations", r"quantize_row|q8_group_sums|code_chunk|abs_max"),
          ("exponentials (softmax's and SwiGLU's)", r"exp_chunk|expf"),
          ("attention", r"head_|attention|softmax|keys_transpose"),
          ("norms, SwiGLU, RoPE, residual", r"rmsnorm|swiglu|rope|residual|rows_task"),
          ("copies (memcpy, memset)", r"memmove|memcpy|memset")]
LEFT_OUT = r"read_bytes|pack|quantize_matrix|fread|_IO_|page|kallsyms|mmap|munmap|sort|strcmp|malloc|free"


def profile(int8):
    args = ["perf", "record", "-q", "-D", "300", "-F", "5000", "-o", "/tmp/profile_prefill.data", "build/bench/forward",
            "build/m15.bin", "--threads", "1", "--prompt", "100", "--decode", "1", "--runs", "60"]
    subprocess.run(args + (["--int8"] if int8 else []), check=True, capture_output=True)
    return group_shares("/tmp/profile_prefill.data", GROUPS)


def group_shares(data, groups):
    """perf's samples in data, by group (pattern on the function's name), in
    percent of those not LEFT_OUT."""
    out = subprocess.run(["perf", "report", "-i", data, "--stdio", "--no-children", "--sort", "sym"],
                         capture_output=True, text=True, check=True).stdout
    shares = collections.Counter()
    for line in out.splitlines():
        m = re.match(r"\s*([\d.]+)%\s+\[[.k]\]\s+(\S+)", line)
        if not m or re.search(LEFT_OUT, m.group(2)):
            continue
        group = next((g for g, pattern in groups if re.search(pattern, m.group(2))), "other")
        shares[group] += float(m.group(1))
    total = sum(shares.values())
    return {g: 100 * v / total for g, v in shares.items()}


def main():
    runs = {"float32": profile(False), "int8 x int8": profile(True)}
    print("| share of the forward pass's samples | float32 | int8 x int8 |")
    print("|---|---|---|")
    for group in [g for g, _ in GROUPS] + ["other"]:
        print("| %s | %.1f%% | %.1f%% |" % (group, runs["float32"].get(group, 0), runs["int8 x int8"].get(group, 0)))


if __name__ == "__main__":
    main()
