#!/usr/bin/python3
"""--threads N gives the same bytes for every N (in `make test`).

From the command line, with N = 1, 2, 3 and 7 (7 is more threads than this
machine's processors, so the split is uneven and threads queue): the trace of
a prefill then decode (logits, every KV row written and, for stories260K,
every activation), the same with int8 weights, activations and KV cache, a
`batch` of requests decoded together, a `score` of a sequence with its
activations, and `compare-quant`'s table. Models: stories260K, the 15M-parameter shape and a small GQA
shape (more query heads than KV heads, heads split unevenly over threads).
The reference is N = 1, the plain single-threaded order of every sum; a
first line of each trace (the run header) is compared too, since it records
nothing about threads. The metrics line says how many threads ran (7 with
--threads 7, 1 with the plain kernels, which never split), and --threads 0,
300 and "two" are refused.

    /usr/bin/python3 tests/threads_check.py build/stepwise
"""
import hashlib
import json
import os
import sys
import tempfile

from check_util import Checks, run_stepwise

BIN = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/stepwise")
MODELS = os.environ.get("STEPWISE_MODELS", "../shared/models")
THREADS = (1, 2, 3, 7)
PROMPT = open("data/text/prompt-100.txt", encoding="utf-8").read()


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def same_for_every_n(check, tmp, name, make_args):
    """Run make_args(n, out) for every N; every output file must hash alike."""
    hashes = {}
    for n in THREADS:
        out = os.path.join(tmp, f"{name}-{n}")
        run_stepwise(BIN, *make_args(n, out))
        files = sorted(os.listdir(out)) if os.path.isdir(out) else [None]
        hashes[n] = [(f, digest(os.path.join(out, f) if f else out)) for f in files]
    sizes = sum(os.path.getsize(os.path.join(tmp, f"{name}-1", f) if f else os.path.join(tmp, f"{name}-1"))
                for f, _ in hashes[1])
    check(all(hashes[n] == hashes[1] for n in THREADS) and sizes > 0,
          f"{name}: identical bytes for --threads {', '.join(map(str, THREADS))} ({sizes} bytes)")


def main():
    check = Checks()
    with tempfile.TemporaryDirectory() as tmp:
        m15 = os.path.join(tmp, "m15.bin")
        run_stepwise(BIN, "make-model", "--dim", "288", "--hidden", "768", "--layers", "6", "--heads", "6",
                     "--vocab", "32000", "--seq-len", "256", "--seed", "42", "--out", m15)
        gqa = os.path.join(tmp, "gqa.bin")
        run_stepwise(BIN, "make-model", "--dim", "96", "--hidden", "160", "--layers", "2", "--heads", "12",
                     "--kv-heads", "3", "--vocab", "512", "--seq-len", "256", "--seed", "7", "--out", gqa)
        # name, model, tokenizer, trace level, prompt (shorter where the trace is heavier)
        models = [("15M", m15, os.path.join(MODELS, "tokenizer.bin"), "logits", PROMPT),
                  ("gqa", gqa, os.path.join(MODELS, "tok512.bin"), "full", PROMPT[:300])]
        if os.path.exists(os.path.join(MODELS, "stories260K.bin")):
            models.insert(0, ("stories260K", os.path.join(MODELS, "stories260K.bin"),
                              os.path.join(MODELS, "tok512.bin"), "full", PROMPT[:300]))
        else:
            print(f"threads: stories260K not in {MODELS}, its cases skipped")
        requests = os.path.join(tmp, "requests.jsonl")
        with open(requests, "w", encoding="utf-8") as f:
            for i, p in enumerate(["Once upon a time", "The cat sat", PROMPT[:200], "Tom and Lily"]):
                f.write(json.dumps({"id": f"r{i}", "prompt": p, "max_tokens": 12 + 5 * i,
                                    "temperature": 0.8, "seed": i + 1}) + "\n")
        for name, model, tok, level, prompt in models:
            common = ["--model", model, "--tokenizer", tok]
            gen = common + ["--prompt", prompt, "--steps", "24", "--trace-level", level, "--trace-kv",
                            "--reproducible", "--quiet"]
            same_for_every_n(check, tmp, f"{name} prefill+decode",
                             lambda n, out: ["generate", *gen, "--threads", str(n), "--trace", out])
            same_for_every_n(check, tmp, f"{name} int8 weights, activations, KV",
                             lambda n, out: ["generate", *gen, "--quant-weights", "int8",
                                             "--quant-activations", "int8", "--quant-kv", "int8",
                                             "--threads", str(n), "--trace", out])
            if name == "stories260K":  # the other int8 kernel (float activations), once
                same_for_every_n(check, tmp, f"{name} int8 weights, float activations",
                                 lambda n, out: ["generate", *gen, "--quant-weights", "int8",
                                                 "--threads", str(n), "--trace", out])
                # the policies that run a nested generation and a ranking
                for policy in ("summarize", "retrieve"):
                    same_for_every_n(check, tmp, f"{name} --context-policy {policy}",
                                     lambda n, out: ["generate", *common, "--prompt", "Once upon a time",
                                                     "--steps", "90", "--context", "64", "--context-drop",
                                                     "40", "--keep", "1", "--context-policy", policy,
                                                     "--summary-tokens", "16", "--trace-level", "logits",
                                                     "--reproducible", "--quiet", "--threads", str(n),
                                                     "--trace", out])
            same_for_every_n(check, tmp, f"{name} batch of 4",
                             lambda n, out: ["batch", *common, "--requests", requests, "--max-batch", "4",
                                             "--quiet", "--threads", str(n), "--trace", out,
                                             "--reproducible"])
            same_for_every_n(check, tmp, f"{name} score with activations",
                             lambda n, out: ["score", *common, "--text", prompt[:200], "--hooks", "default",
                                             "--reproducible", "--threads", str(n), "--out", out])
        if any(m[0] == "stories260K" for m in models):
            outs = {n: run_stepwise(BIN, "compare-quant", "--model", models[0][1], "--tokenizer", models[0][2],
                                    "--text", "data/text/the-lost-kite.txt", "--json", "--threads", str(n)).stdout
                    for n in THREADS}
            check(all(outs[n] == outs[1] for n in THREADS) and "W+A+KV" in outs[1],
                  "stories260K compare-quant: the same table for every --threads")
        for n, kernels, want in (("7", "fast", 7), ("7", "plain", 1)):
            r = run_stepwise(BIN, "generate", "--threads", n, "--kernels", kernels, "--steps", "2")
            check(r.stderr.rstrip().endswith(f"| threads {want}"),
                  f"--threads {n} --kernels {kernels} runs on {want}")
        for bad in ("0", "300", "two"):
            r = run_stepwise(BIN, "generate", "--threads", bad, "--steps", "2", expect=(2,))
            check("--threads" in r.stderr and len(r.stderr.strip().splitlines()) == 1,
                  f"--threads {bad} refused in one line: {r.stderr.strip()}")
    return check.summary("threads")


if __name__ == "__main__":
    sys.exit(main())
