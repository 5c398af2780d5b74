#!/usr/bin/python3
"""make bench: stepwise's speed, measured (docs/performance.md).

Single thread, median of RUNS runs (TRACE_RUNS pairs for the trace's cost) with the min and max beside it, timed
inside the process around the phases (the metrics line of `generate`):
decode tokens/s for 256 new tokens from BOS, prefill tokens/s for the prompt
of data/text/prompt-100.txt, on the 15M shape and on stories260K; decode with
int8 weights; the cost of the default-level trace on a 256-token stories260K
run; and the peak resident memory, float32 and int8, against the weights plus
the KV-cache formula. Prints one table and writes it as JSON to build/bench/bench.json.
A benchmark, not a test: nothing is asserted.
"""
import json
import os
import re
import statistics
import subprocess
import sys

RUNS = 5
# The trace ratio compares two runs of about 40 ms each, where a busy moment
# on a shared machine moves one of them by half: more pairs, interleaved.
TRACE_RUNS = 15
BIN = "build/stepwise"
MODELS = os.environ.get("STEPWISE_MODELS", "../shared/models")
M15 = "build/m15.bin"
PROMPT = open("data/text/prompt-100.txt", encoding="utf-8").read()
METRICS = re.compile(r"prefill (\d+) tokens, ([\d.]+) tokens/s \| decode (\d+) tokens, ([\d.]+) tokens/s"
                     r".*peak RSS ([\d.]+) MiB")


def generate(model, tokenizer, *args):
    """One run; returns (prefill tokens, prefill tok/s, decode tok/s, peak RSS MiB)."""
    out = subprocess.run([BIN, "generate", "--model", model, "--tokenizer", tokenizer, *args],
                         capture_output=True, text=True, check=True)
    m = METRICS.search(out.stderr)
    return int(m.group(1)), float(m.group(2)), float(m.group(4)), float(m.group(5))


def stats(values):
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def total_seconds(model, tokenizer, level):
    path = "build/bench/trace-%s.jsonl" % level
    subprocess.run([BIN, "generate", "--model", model, "--tokenizer", tokenizer, "--steps", "256",
                    "--trace", path, "--trace-level", level, "--quiet"], check=True)
    with open(path, encoding="utf-8") as f:
        return json.loads(f.read().splitlines()[-1])["measured"]["total_seconds"]


def main():
    os.makedirs("build/bench", exist_ok=True)
    if not os.path.exists(M15):
        subprocess.run([BIN, "make-model", "--dim", "288", "--hidden", "768", "--layers", "6",
                        "--heads", "6", "--vocab", "32000", "--seq-len", "256", "--seed", "42",
                        "--out", M15], check=True, capture_output=True)
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
                                     capture_output=True, text=True, check=True).stdout)
    formula = (info["this_model"]["weight_bytes"] + info["this_model"]["kv_bytes_at_context"]) / 2**20
    rows.append({"what": "15M peak resident memory (weights + KV formula: %.1f MiB)" % formula,
                 "unit": "MiB", **stats(rss)})
    rss8 = [generate(model, tok, "--steps", "256", "--quant-weights", "int8")[3] for _ in range(RUNS)]
    formula8 = (info["int8"]["weight_bytes"] + info["this_model"]["kv_bytes_at_context"]) / 2**20
    rows.append({"what": "15M peak resident memory, int8 weights (int8 weights + KV: %.1f MiB)" % formula8,
                 "unit": "MiB", **stats(rss8)})
    print("| measurement | median | min | max | unit |")
    print("|---|---|---|---|---|")
    for r in rows:
        f = "%.2f" if r["unit"] == "x" else "%.1f"  # a ratio near its 1.5 target needs two places
        print(("| %s | " + " | ".join([f] * 3) + " | %s |") % (r["what"], r["median"], r["min"], r["max"], r["unit"]))
    with open("build/bench/bench.json", "w", encoding="utf-8") as f:
        json.dump({"runs": RUNS, "trace_runs": TRACE_RUNS, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
