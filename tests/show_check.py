"""`trace show` on a projector and `sample --from-trace` (in `make test`):

1. trace show never prints a line wider than 80 columns: traces at every
   level, sampled with --trace-temperatures, a score file, the 32000-piece
   Llama 2 vocabulary, a long file name;
2. --step N is the N-th draw even after a context shift repeats positions,
   and --pos on a repeated position says so;
3. the softmax table of --trace-temperatures holds numpy's softmax of the
   step's own logits at each temperature;
4. sample --from-trace FILE --step N draws from exactly that step's logits:
   its JSON equals sample --logits given those logits by hand.

    /usr/bin/python3 tests/show_check.py build/stepwise
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_util import Checks, run_stepwise, TIMEOUT  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = os.path.abspath(os.path.join(ROOT, os.environ.get("STEPWISE_MODELS", "../shared/models")))
BIN = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/stepwise")
check = Checks()


def run(*args, expect=0):
    return run_stepwise(BIN, *args, expect=(expect,)).stdout


def events(path):
    return [json.loads(line) for line in open(path, encoding="utf-8")]


def traces(tmp):
    """name -> path of the traces to show."""
    stories = ["--model", os.path.join(MODELS, "stories260K.bin"), "--tokenizer",
               os.path.join(MODELS, "tok512.bin")]
    out = {}
    for level in ("tokens", "logits", "sampling", "layers", "full"):
        out[level] = os.path.join(tmp, f"{level}.jsonl")
        run("generate", "--prompt", "cat", "--trace-level", level, "--trace", out[level], "--quiet")
    long_name = os.path.join(tmp, "a-trace-file-name-long-enough-to-overflow-any-header-line-"
                             "that-put-it-first-and-the-position-after-it.jsonl")
    run("generate", *stories, "--prompt", "Once upon a time", "--steps", "12", "--temperature",
        "0.9", "--top-k", "40", "--top-p", "0.9", "--min-p", "0.02", "--trace-temperatures",
        "0.25,0.5,1,1.5,2,3,4,5", "--trace-level", "sampling", "--trace", long_name, "--quiet")
    out["sampled, 8 temperatures, long name"] = long_name
    out["score"] = os.path.join(tmp, "score.jsonl")
    run("score", *stories, "--text", "Once upon a time, there was a little girl", "--out",
        out["score"])
    small = os.path.join(tmp, "small32k.bin")
    run("make-model", "--dim", "8", "--hidden", "16", "--layers", "1", "--heads", "2", "--vocab",
        "32000", "--seq-len", "8", "--out", small)
    out["32000 pieces, context shifts"] = os.path.join(tmp, "shift.jsonl")
    run("generate", "--model", small, "--tokenizer", os.path.join(MODELS, "tokenizer.bin"),
        "--prompt", "Hello world", "--steps", "20", "--context-policy", "drop-oldest",
        "--temperature", "1", "--seed", "3", "--trace-level", "sampling", "--trace",
        out["32000 pieces, context shifts"], "--quiet")
    return out


def check_width(paths):
    widest, shown = 0, 0
    for name, path in paths.items():
        draws = sum(1 for e in events(path) if e["event"] == "sample")
        for args in [[]] + [["--step", str(n)] for n in range(1, min(draws, 6) + 1)] + [["--top", "40"]]:
            r = subprocess.run([BIN, "trace", "show", path] + args, capture_output=True, text=True,
                               encoding="utf-8", timeout=TIMEOUT)
            if r.returncode != 0:
                continue
            shown += 1
            w = max(len(line) for line in r.stdout.split("\n"))
            if w > 80:
                print(f"      {name} {args}: {w} columns")
            widest = max(widest, w)
    check(widest <= 80 and shown >= 20,
          f"trace show fits 80 columns: {shown} views of {len(paths)} traces, the widest {widest}")


def check_steps(path):
    samples = [e for e in events(path) if e["event"] == "sample"]
    positions = [e["pos"] for e in samples]
    repeated = next(p for p in positions if positions.count(p) > 1)
    ok = True
    for n in range(1, len(samples) + 1):
        head = run("trace", "show", path, "--step", str(n)).split("\n")[1]
        ok = ok and head.startswith(f"step {n}: position {positions[n - 1]}")
    text = run("trace", "show", path, "--pos", str(repeated))
    check(ok and f"occurs {positions.count(repeated)} times" in text,
          f"--step N names all {len(samples)} draws after context shifts (positions "
          f"{positions[:12]}...); --pos {repeated} says it occurs {positions.count(repeated)} times")
    err = subprocess.run([BIN, "trace", "show", path, "--step", str(len(samples) + 1)],
                         capture_output=True, text=True, timeout=TIMEOUT).stderr
    check(f"has {len(samples)} draws" in err, "a step beyond the last is refused, naming the count")


def check_temperatures(path):
    evs = events(path)
    step = 3
    sample = [e for e in evs if e["event"] == "sample"][step - 1]
    logits = [e for e in evs if e["event"] == "logits" and e["pos"] == sample["pos"]][-1]["logits"]
    x = np.array(logits, dtype=np.float64)
    text = run("trace", "show", path, "--step", str(step)).split("\n")
    at = text.index("softmax at the traced temperatures:")
    temps = [float(t[2:]) for t in text[at + 1].split()][:5]
    ok = len(temps) == 5
    for row in text[at + 2:at + 7]:
        token = int(row.split()[0])
        cells = [float(c.rstrip("%")) for c in row.split()[-len(temps):]]
        for t, cell in zip(temps, cells):
            p = np.exp(x / t - (x / t).max())
            ok = ok and abs(100 * p[token] / p.sum() - cell) <= 0.051
    check(ok and "(3 more temperatures in the trace)" in text[at + 7],
          "the --trace-temperatures table is numpy's softmax of the step's logits at each T "
          "(5 shown, the other 3 counted)")


def check_sample_from_trace(path):
    evs = events(path)
    sample = [e for e in evs if e["event"] == "sample"][2]
    logits = [e for e in evs if e["event"] == "logits" and e["pos"] == sample["pos"]][-1]["logits"]
    args = ["--temperature", "0.5,1,2", "--top-k", "40", "--top-p", "0.9", "--json"]
    from_trace = json.loads(run("sample", "--from-trace", path, "--step", "3", *args))
    by_hand = json.loads(run("sample", "--logits", ",".join("%.9g" % v for v in logits), *args))
    text = run("sample", "--from-trace", path, "--step", "3", "--temperature", "0.5,1,2")
    check(from_trace == by_hand and "the 8 most likely of 512 tokens" in text,
          "sample --from-trace --step 3 draws from that step's logits (the same JSON as "
          "--logits given them), its table the 8 most likely by their pieces")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        paths = traces(tmp)
        check_width(paths)
        check_steps(paths["32000 pieces, context shifts"])
        check_temperatures(paths["sampled, 8 temperatures, long name"])
        check_sample_from_trace(paths["sampled, 8 temperatures, long name"])
    return check.summary("show check")


if __name__ == "__main__":
    sys.exit(main())
