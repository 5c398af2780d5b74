#!/usr/bin/python3
"""make bench: stepwise's speed, measured (docs/performance.md).

Single thread, median of RUNS runs (TRACE_RUNS pairs for the trace's cost) with the min and max beside it, timed
inside the process around the phases (the metrics line of `generate`):
decode tokens/s for 256 new tokens from BOS, prefill tokens/s for the prompt
of data/text/prompt-100.txt, on the 15M shape and on stories260K; decode with
int8 weights; the cost of the default-level trace on a 256-token stories260K
run; and the peak resident memory, float32 and int8, against the weights plus
the KV-cache formula. Prints one table and writes it as JSON to build/bench/bench.json.

Then the forward pass timed inside one process (tests/bench/forward.c:
warm, no sampling, medians of 5; the 100-token prompt, then a decode of the
rest of the 256-position window) on the 15M shape, each figure beside its
ceiling: decode against the fastest its own step's bytes were read in the
run (the model's packed matrices and the cache rows of an average step,
re-read warm by the same threads with vector loads, or the decode's best
step when that was faster: so no fraction can pass 1), prefill against the
prefill kernel's own rate on a matrix that stays in cache; the speed-up of
two threads over one; and the issue-19 targets beside each. The buffer
reads of tests/bench/bandwidth.c (1 GiB from DRAM, 64 MiB, 1 MiB) are
printed first, for the machine's sake; they are not ceilings.
Last, the bandwidth argument for half-precision weights: a Llama-3.2-1B-shaped
BF16 folder (make-model --preset llama-3.2-1b, random weights) decoded with its
matrices kept in bfloat16 (--weights stored, the default: 2 bytes a weight
read, widened in registers) and widened to float32 at load (--weights f32: 4
bytes), side by side in this run, every core; the logits are the same bits
(tests/weights_stored_check.py).
And when `make llama-cpp-peer` has installed it, a real llama.cpp as the peer
(node-llama-cpp's prebuilt binary, tests/llama_cpp_engine.mjs): the 15M shape
as GGUF F32 and Q8_0 files (stepwise convert), one thread each, a 100-token
prompt then 128 greedy tokens, llama.cpp with a float32 KV cache and with
its default F16 one, stepwise float32 on the F32 file and with int8
activations on the Q8_0 file (its blocks run as int8 weights), RUNS rounds
interleaved, medians, and stepwise's over llama.cpp's.

A mixture of experts against a dense model of its active size (moe_table):
8 experts 768 wide, 2 a token, and a dense MLP 1,536 wide on the 15M
shape's attention: the weights each holds, the bytes a decode step reads
(inspect), and decode tokens/s on each kernel (docs/moe.md keeps a run's
table).

A benchmark, not a test: nothing is asserted of its speeds.

    /usr/bin/python3 tests/bench.py            the benchmark (make bench)
    /usr/bin/python3 tests/bench.py --smoke    every table once, in make test

--smoke runs every stage once (one run, one round), with the same arguments
on models of the same windows, its files under build/bench-smoke/ (the
1B-shaped folder replaced by a small BF16 folder of the same window): so
that an argument the bench passes and the program no longer takes (a prompt
and decode past the window, say) fails make test, not a later make bench.
It asserts only that every figure came out finite and positive.
"""
import json
import math
import os
import re
import statistics
import subprocess
import sys
from check_util import LONG_TIMEOUT

SMOKE = sys.argv[1:] == ["--smoke"]
RUNS = 1 if SMOKE else 5
# The trace ratio compares two runs of about 40 ms each, where a busy moment
# on a shared machine moves one of them by half: more pairs, interleaved.
TRACE_RUNS = 1 if SMOKE else 15
BIN = "build/stepwise"
MODELS = os.environ.get("STEPWISE_MODELS", "../shared/models")
OUT = "build/bench-smoke" if SMOKE else "build/bench"
M15 = OUT + "/m15.bin" if SMOKE else "build/m15.bin"
# The 15M shape's window, and forward.c's decode after the prompt inside it:
# the prompt's 100 tokens, then the rest of the window.
WINDOW = 256
FORWARD_PROMPT = 100
FORWARD_ARGS = ["--prompt", str(FORWARD_PROMPT), "--decode", str(WINDOW - FORWARD_PROMPT)]
RUNS_ARG = ["--runs", "1"] if SMOKE else []  # forward.c takes the last --runs
PROMPT = open("data/text/prompt-100.txt", encoding="utf-8").read()
METRICS = re.compile(r"prefill (\d+) tokens, ([\d.]+) tokens/s \| decode (\d+) tokens, ([\d.]+) tokens/s"
                     r".*peak RSS ([\d.]+) MiB")


def generate(model, tokenizer, *args):
    """One run; returns (prefill tokens, prefill tok/s, decode tok/s, peak RSS MiB)."""
    out = subprocess.run([BIN, "generate", "--model", model, "--tokenizer", tokenizer, "--threads", "1", *args],
                         capture_output=True, text=True, check=True, timeout=LONG_TIMEOUT)
    m = METRICS.search(out.stderr)
    return int(m.group(1)), float(m.group(2)), float(m.group(4)), float(m.group(5))


def stats(values):
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def total_seconds(model, tokenizer, level):
    path = OUT + "/trace-%s.jsonl" % level
    subprocess.run([BIN, "generate", "--model", model, "--tokenizer", tokenizer, "--steps", "256",
                    "--trace", path, "--trace-level", level, "--quiet"], check=True, timeout=LONG_TIMEOUT)
    with open(path, encoding="utf-8") as f:
        return json.loads(f.read().splitlines()[-1])["measured"]["total_seconds"]


def bandwidth():
    """{'1024': GB/s, '64': GB/s, 'all': GB/s over every core} from tests/bench/bandwidth.c."""
    out = subprocess.run(["build/bench/bandwidth", str(os.cpu_count() or 1)], capture_output=True,
                         text=True, check=True, timeout=LONG_TIMEOUT).stdout
    print(out.rstrip())
    bw = {}
    for line in out.splitlines():
        m = re.match(r"\s*(one|\d+) cores? reads?\s+(\d+) MiB at\s+([\d.]+) GB/s", line)
        if m:
            bw[("all" if m.group(1) != "one" else m.group(2))] = float(m.group(3)) * 1e9
    return bw


def forward(model, *args):
    out = subprocess.run(["build/bench/forward", model, *args, *RUNS_ARG], capture_output=True, text=True,
                         check=True, timeout=LONG_TIMEOUT).stdout
    return json.loads(out)


def forward_table(model):
    """The in-process figures against their ceilings and the targets; returns them as a dict."""
    bw = bandwidth()
    # float32 and int8 on one thread in three interleaved rounds (the machine's drift falls on
    # both), each round's medians of 5; the middle round by prefill speed of each
    pairs = [(forward(model, *FORWARD_ARGS, "--threads", "1"), forward(model, *FORWARD_ARGS, "--threads", "1", "--int8"))
             for _ in range(3)]
    one = sorted((p[0] for p in pairs), key=lambda r: r["prefill_tok_s"])[1]
    q8 = sorted((p[1] for p in pairs), key=lambda r: r["prefill_tok_s"])[1]
    two = forward(model, *FORWARD_ARGS, "--threads", "2")
    step = one["decode_step_bytes"]
    prefill_ceiling = one["kernel_macs_per_second"] / (one["prefill_macs"] / one["prefill_tokens"])

    def reread(r):
        return "re-read of its bytes" if r["ceiling_from"] == "read" else "its own best step"

    rows = [
        ("15M decode, 1 thread", one["decode_tok_s"], 1 / one["decode_read_seconds"], reread(one), 430),
        ("15M prefill (100 tokens), 1 thread", one["prefill_tok_s"], prefill_ceiling, "kernel in cache", 4200),
        ("15M int8 decode (int8 x int8), 1 thread", q8["decode_tok_s"], 1 / q8["decode_read_seconds"], reread(q8),
         750),
        ("15M int8 prefill (int8 x int8, 100 tokens), 1 thread", q8["prefill_tok_s"], None, "", None),
        ("15M decode, 2 threads", two["decode_tok_s"], 1 / two["decode_read_seconds"], reread(two), None),
        ("15M prefill, 2 threads", two["prefill_tok_s"], 2 * prefill_ceiling, "2 x kernel in cache", None),
    ]
    print()
    print("In one process (tests/bench/forward.c), %s; decode reads %.1f MiB per step"
          " (%.1f GB/s at its re-read's rate on one thread)" % ("one run" if SMOKE else "medians of 5", step / 2**20,
                                                                step / one["read_seconds"] / 1e9))
    print()
    print("| measurement | tokens/s | ceiling | ceiling from | fraction | target |")
    print("|---|---|---|---|---|---|")
    for what, got, ceiling, source, target in rows:
        met = "" if target is None else ("%d: %s" % (target, "met" if got >= target else "not met"))
        if ceiling is None:
            print("| %s | %.1f | | | | %s |" % (what, got, met))
            continue
        print("| %s | %.1f | %.1f | %s | %.2f | %s |" % (what, got, ceiling, source, got / ceiling, met))
    int8_ratio = q8["prefill_tok_s"] / one["prefill_tok_s"]
    print("| 15M prefill, int8 x int8 / float32 | **%.2fx** | | | | 2.0x: %s |" % (
        int8_ratio, "met" if int8_ratio >= 2.0 else "not met"))
    ratio = two["prefill_tok_s"] / one["prefill_tok_s"]
    print("| 15M prefill, 2 threads / 1 thread | %.2fx | | | | 1.6x: %s |" % (ratio, "met" if ratio >= 1.6 else "not met"))
    bitwise = all(r["bitwise"] for r in (one, two, q8))
    print("| logits with 2 threads = with 1, bit for bit | %s | | | | |" % ("yes" if bitwise else "NO"))
    return {"bandwidth": bw, "threads_1": one, "threads_2": two, "int8": q8}


L1B = OUT + ("/small-bf16" if SMOKE else "/llama-3.2-1b-bf16")
L1B_SHAPE = ["--dim", "128", "--hidden", "256", "--layers", "2", "--heads", "4", "--kv-heads", "2",
             "--vocab", "512"] if SMOKE else ["--preset", "llama-3.2-1b"]


def half_table():
    """BF16 as stored against float32, decode on every core; returns both runs."""
    if not os.path.exists(L1B):
        subprocess.run([BIN, "make-model", *L1B_SHAPE, "--format", "hf", "--dtype", "bf16", "--seq-len",
                        str(WINDOW), "--out", L1B], check=True, capture_output=True, timeout=LONG_TIMEOUT)
    threads = str(os.cpu_count() or 1)
    args = ["--threads", threads, "--prompt", "8", "--decode", "16", "--runs", "3"]
    stored = forward(L1B, *args)
    f32 = forward(L1B, *args, "--f32")
    print()
    print("| llama-3.2-1b shape, BF16 folder, %s threads | decode tokens/s | bytes a step | peak resident |" % threads)
    print("|---|---|---|---|")
    for what, r in (("--weights stored (bfloat16 read)", stored), ("--weights f32 (widened at load)", f32)):
        print("| %s | %.2f | %.2f GiB | %.2f GiB |" % (what, r["decode_tok_s"], r["decode_step_bytes"] / 2**30,
                                                        r["peak_rss_bytes"] / 2**30))
    print("| stored / f32 | %.2fx | %.2f | %.2f |" % (stored["decode_tok_s"] / f32["decode_tok_s"],
                                                     stored["decode_step_bytes"] / f32["decode_step_bytes"],
                                                     stored["peak_rss_bytes"] / f32["peak_rss_bytes"]))
    return {"stored": stored, "f32": f32}


LLAMA_CPP = "build/npm-llama-cpp"


def peer_table():
    """stepwise and llama.cpp on the same GGUF files in the same run, RUNS
    rounds interleaved, medians: the 15M shape as F32 (stepwise float32
    against llama.cpp with a float32 cache and with its default F16 one) and
    as Q8_0 (stepwise's int8 activations run the Q8_0 blocks as they are;
    llama.cpp's Q8_0 kernels, both caches). None when llama.cpp is not
    installed."""
    if not os.path.exists(os.path.join(LLAMA_CPP, ".installed")):
        print("llama.cpp peer skipped: make llama-cpp-peer installs it")
        return None
    tok = os.path.join(MODELS, "tokenizer.bin")
    files = {"F32": OUT + "/m15.gguf", "Q8_0": OUT + "/m15-q8_0.gguf"}
    for kind, gguf in files.items():
        if not os.path.exists(gguf):
            subprocess.run([BIN, "convert", "--model", M15, "--tokenizer", tok, "--type", kind.lower(),
                            "--out", gguf], check=True, capture_output=True, timeout=LONG_TIMEOUT)
    ours = {"F32": [], "Q8_0": []}
    theirs = {(k, c): [] for k in files for c in ("f32", "defaults")}
    version = None
    for _ in range(RUNS):  # interleaved: the machine's drift falls on every row alike
        for kind, gguf in files.items():
            int8 = ["--quant-activations", "int8"] if kind == "Q8_0" else []
            n, prefill, decode, _ = generate(gguf, tok, "--prompt", PROMPT, "--steps", "129", *int8)
            ours[kind].append((prefill, decode))
            for cache in ("f32", "defaults"):
                out = subprocess.run(["node", "tests/llama_cpp_engine.mjs", LLAMA_CPP, "time", gguf, "32000",
                                      str(n), "128", cache], capture_output=True, text=True, check=True,
                                     timeout=LONG_TIMEOUT).stdout
                r = json.loads(out.strip().splitlines()[-1])
                theirs[(kind, cache)].append((r["prefill_tok_s"], r["decode_tok_s"]))
                version = "llama.cpp %s (node-llama-cpp %s)" % (r["llama_cpp"], r["node_llama_cpp"])
    med = lambda v: (statistics.median(p for p, _ in v), statistics.median(d for _, d in v))
    print("| 15M GGUF, 1 thread, %d rounds, %s | prefill tokens/s | decode tokens/s |" % (RUNS, version))
    print("|---|---|---|")
    rows = {}
    for kind in files:
        us = med(ours[kind])
        what = "float32" if kind == "F32" else "int8 activations, the Q8_0 blocks as int8 weights"
        print("| stepwise, %s, %s | %.1f | %.1f |" % (kind, what, *us))
        for cache in ("f32", "defaults"):
            them = med(theirs[(kind, cache)])
            label = "F32 cache" if cache == "f32" else "its default F16 cache"
            print("| llama.cpp, %s, %s | %.1f | %.1f |" % (kind, label, *them))
            print("| stepwise / llama.cpp (%s, %s) | **%.2fx** | **%.2fx** |" % (
                kind, label, us[0] / them[0], us[1] / them[1]))
            rows["%s %s" % (kind, cache)] = {"stepwise": us, "llama_cpp": them}
    return {"peer": version, "rows": rows}


def moe_table():
    """A mixture of experts against a dense model of its active size: the 15M
    shape's attention, and an MLP of 8 experts 768 wide, 2 a token (Mixtral's
    form), against one dense MLP of 2 x 768 = 1,536. Both read the same
    bytes a decode step (inspect's decode_weight_bytes, which moe_check holds
    to the work counters), while the mixture holds 4 times the MLP weights.
    Each on the plain and the fast kernels. Decode tokens/s, one thread,
    medians of RUNS interleaved rounds; returns the rows."""
    moe, dense = OUT + "/moe-8x768", OUT + "/dense-1536"
    shape = ["--dim", "288", "--layers", "6", "--heads", "6", "--vocab", "32000", "--seq-len", str(WINDOW)]
    if not os.path.exists(os.path.join(moe, "config.json")):
        subprocess.run([BIN, "make-model", "--format", "hf", "--arch", "mixtral", "--experts", "8",
                        "--hidden", "768", *shape, "--out", moe], check=True, capture_output=True, timeout=LONG_TIMEOUT)
    if not os.path.exists(os.path.join(dense, "config.json")):
        subprocess.run([BIN, "make-model", "--format", "hf", "--hidden", "1536", *shape, "--out", dense],
                       check=True, capture_output=True, timeout=LONG_TIMEOUT)
    tok = os.path.join(MODELS, "tokenizer.bin")
    runs = {(m, k): [] for m in ("moe", "dense") for k in ("plain", "fast")}
    for _ in range(RUNS):  # interleaved: the machine's drift falls on all four alike
        for (m, k) in runs:
            runs[(m, k)].append(generate(moe if m == "moe" else dense, tok, "--steps", "128",
                                         "--kernels", k)[2])
    info = {n: json.loads(subprocess.run([BIN, "inspect", "--model", m, "--json"], capture_output=True,
                                         text=True, check=True, timeout=LONG_TIMEOUT).stdout)["this_model"]
            for n, m in (("moe", moe), ("dense", dense))}
    med = {key: statistics.median(v) for key, v in runs.items()}
    print("| 15M attention, 1 thread, %d rounds | weights held | read a decode step | decode tokens/s, plain "
          "kernels | fast kernels |" % RUNS)
    print("|---|---|---|---|---|")
    print("| 8 experts x 768, 2 a token | %.1f MiB | %.1f MiB | %.1f | %.1f |" % (
        info["moe"]["weight_bytes"] / 2**20, info["moe"]["decode_weight_bytes"] / 2**20,
        med[("moe", "plain")], med[("moe", "fast")]))
    print("| dense MLP 1,536 wide | %.1f MiB | %.1f MiB | %.1f | %.1f |" % (
        info["dense"]["weight_bytes"] / 2**20, info["dense"]["weight_bytes"] / 2**20,
        med[("dense", "plain")], med[("dense", "fast")]))
    print("| mixture / dense | %.2fx | | %.2fx | %.2fx |" % (
        info["moe"]["weight_bytes"] / info["dense"]["weight_bytes"],
        med[("moe", "plain")] / med[("dense", "plain")], med[("moe", "fast")] / med[("dense", "fast")]))
    return [{"what": "%s decode (%s)" % ("MoE 8x768 top-2" if m == "moe" else "dense 1536", k),
             "unit": "tokens/s", **stats(v)} for (m, k), v in runs.items()]


def main():
    os.makedirs(OUT, exist_ok=True)
    if not os.path.exists(M15):
        subprocess.run([BIN, "make-model", "--dim", "288", "--hidden", "768", "--layers", "6",
                        "--heads", "6", "--vocab", "32000", "--seq-len", str(WINDOW), "--seed", "42",
                        "--out", M15], check=True, capture_output=True, timeout=LONG_TIMEOUT)
    models = {"15M": (M15, os.path.join(MODELS, "tokenizer.bin")),
              "stories260K": (os.path.join(MODELS, "stories260K.bin"), os.path.join(MODELS, "tok512.bin"))}
    rows = []
    for name, (model, tok) in models.items():
        decode = [generate(model, tok, "--steps", "256")[2] for _ in range(RUNS)]
        prefill = [generate(model, tok, "--prompt", PROMPT, "--steps", "1") for _ in range(RUNS)]
        rows.append({"what": "%s decode, 256 tokens from BOS" % name, "unit": "tokens/s", **stats(decode)})
        rows.append({"what": "%s prefill, %d-token prompt" % (name, prefill[0][0]), "unit": "tokens/s",
                     **stats([p[1] for p in prefill])})
    model, tok = models["15M"]
    q8 = [generate(model, tok, "--steps", "256", "--quant-weights", "int8")[2] for _ in range(RUNS)]
    rows.append({"what": "15M decode, int8 weights", "unit": "tokens/s", **stats(q8)})
    model, tok = models["stories260K"]
    ratios = [total_seconds(model, tok, "sampling") / total_seconds(model, tok, "summary") for _ in range(TRACE_RUNS)]
    rows.append({"what": "stories260K 256 tokens, default trace / untraced", "unit": "x", **stats(ratios)})
    model, tok = models["15M"]
    rss = [generate(model, tok, "--steps", "256")[3] for _ in range(RUNS)]
    info = json.loads(subprocess.run([BIN, "inspect", "--model", model, "--context", "256", "--json"],
                                     capture_output=True, text=True, check=True, timeout=LONG_TIMEOUT).stdout)
    formula = (info["this_model"]["weight_bytes"] + info["this_model"]["kv_bytes_at_context"]) / 2**20
    rows.append({"what": "15M peak resident memory (weights + KV formula: %.1f MiB)" % formula,
                 "unit": "MiB", **stats(rss)})
    rss8 = [generate(model, tok, "--steps", "256", "--quant-weights", "int8")[3] for _ in range(RUNS)]
    formula8 = (info["int8"]["weight_bytes"] + info["this_model"]["kv_bytes_at_context"]) / 2**20
    rows.append({"what": "15M peak resident memory, int8 weights (int8 weights + KV: %.1f MiB)" % formula8,
                 "unit": "MiB", **stats(rss8)})
    ceilings = forward_table(M15)
    ceilings["bf16_1b"] = half_table()
    ceilings["llama_cpp_peer"] = peer_table()
    ceilings["moe"] = moe_table()
    print("| measurement | median | min | max | unit |")
    print("|---|---|---|---|---|")
    for r in rows:
        f = "%.2f" if r["unit"] == "x" else "%.1f"  # a ratio near its 1.5 target needs two places
        print(("| %s | " + " | ".join([f] * 3) + " | %s |") % (r["what"], r["median"], r["min"], r["max"], r["unit"]))
    with open(OUT + "/bench.json", "w", encoding="utf-8") as f:
        json.dump({"runs": RUNS, "trace_runs": TRACE_RUNS, "rows": rows, "in_process": ceilings}, f,
                  indent=1)
    return smoke_check(rows, ceilings) if SMOKE else 0


def smoke_check(rows, ceilings):
    """--smoke: every figure finite and not negative, every speed positive,
    every bitwise comparison true; 1 otherwise, naming the figure."""
    bad = []

    def walk(where, v):
        if isinstance(v, dict):
            for k, x in v.items():
                walk("%s.%s" % (where, k), x)
        elif isinstance(v, (list, tuple)):
            for i, x in enumerate(v):
                walk("%s[%d]" % (where, i), x)
        elif isinstance(v, bool):
            if where.endswith(".bitwise") and not v:
                bad.append(where + " is false")
        elif isinstance(v, (int, float)):
            if not math.isfinite(v) or v < 0 or (v == 0 and where.endswith("tok_s")):
                bad.append("%s = %r" % (where, v))

    walk("rows", rows)
    walk("in_process", ceilings)
    for b in bad:
        print("FAIL  bench smoke: " + b)
    print("ok    bench smoke: every stage ran, %d figures' rows finite and positive" % len(rows)
          if not bad else "bench smoke: %d bad figures" % len(bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
