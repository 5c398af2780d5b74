#!/usr/bin/python3
"""How near any float32 reference can come to llama.cpp's float16 cache
(issue 48, item 6): a record, not a check in `make test`.

For six seeded random models of one small llama shape (4 layers, dim 128,
4 heads, Llama 2's 32,000 ids), converted to F32 GGUF, llama.cpp runs
16 ids teacher-forced with an F16 cache and flash attention off
(tests/llama_cpp_engine.mjs). Against its logits:

  - stepwise `score` as is, with --kv-dtype f16, and with --kv-rounding
    llama.cpp too;
  - a float64 numpy forward that rounds to float16 exactly where llama.cpp
    does (K and V as cached, the query for K.Q, the probabilities before
    V) and nowhere else.

The float64 forward has no float32 noise of its own, so what separates it
from llama.cpp is llama.cpp's: a value its float32 arithmetic (its sums'
order, its exp, its RoPE angles) puts on the other side of a float16
rounding boundary. Where that forward is itself past a tolerance, no
reference that sums in its own order can be held to it. Writes the table
to stdout:

    /usr/bin/python3 tests/f16_cache_seeds.py build/stepwise build/npm-llama-cpp > RECORD
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "trace"))
from check_util import run_stepwise, LONG_TIMEOUT  # noqa: E402
from gguf_read import read_gguf  # noqa: E402
from f16_reference import forward_f64, half  # noqa: E402

ROOT = os.path.dirname(HERE)
MODELS = os.path.abspath(os.path.join(ROOT, os.environ.get("STEPWISE_MODELS", "../shared/models")))
IDS = [1, 403, 407, 261, 378, 267, 130, 302, 297, 263, 45, 311, 1000, 2000, 3000, 4000]
SEEDS = range(1, 7)


def stepwise_logits(binary, model, *extra):
    with tempfile.NamedTemporaryFile(suffix=".jsonl") as out:
        run_stepwise(binary, "score", "--model", model, "--tokens", ",".join(map(str, IDS)), "--top-n", "0",
                     *extra, "--out", out.name)
        with open(out.name, encoding="utf-8") as f:
            return np.array([e["logits"] for e in map(json.loads, f) if e["event"] == "logits"])


def main():
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    binary, npm = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    engine = os.path.join(HERE, "llama_cpp_engine.mjs")
    rounding = ["--kv-dtype", "f16", "--kv-rounding", "llama.cpp"]
    print("# tests/f16_cache_seeds.py: llama.cpp with an F16 cache (flash attention off) against stepwise and "
          "a float64 forward with llama.cpp's float16 rounding points")
    print(f"# shape: 4 layers, dim 128, hidden 384, 4 heads, vocab 32000; {len(IDS)} ids teacher-forced; "
          "max |dlogit|")
    print("seed  stepwise-as-is  --kv-dtype-f16  --kv-rounding-llama.cpp  float64-with-the-roundings")
    with tempfile.TemporaryDirectory() as tmp:
        texts = os.path.join(tmp, "texts.json")
        with open(texts, "w", encoding="utf-8") as f:
            json.dump(["a"], f)
        for seed in SEEDS:
            base = os.path.join(tmp, f"m{seed}")
            run_stepwise(binary, "make-model", "--dim", "128", "--hidden", "384", "--layers", "4", "--heads", "4",
                         "--vocab", "32000", "--seq-len", "64", "--seed", str(seed), "--out", base + ".bin")
            run_stepwise(binary, "convert", "--model", base + ".bin", "--tokenizer",
                         os.path.join(MODELS, "tokenizer.bin"), "--out", base + ".gguf")
            r = subprocess.run(["node", engine, npm, "candidates", base + ".gguf", ",".join(map(str, IDS)), texts,
                                base + "-cand"], capture_output=True, text=True, timeout=LONG_TIMEOUT)
            if r.returncode != 0:
                raise SystemExit(f"llama_cpp_engine.mjs: exit {r.returncode}\n{r.stderr}")
            theirs = np.fromfile(base + "-cand-f16.f32", dtype="<f4").reshape(len(IDS), -1).astype(np.float64)
            runs = [stepwise_logits(binary, base + ".gguf", *extra)
                    for extra in ([], rounding[:2], rounding)]
            meta, tensors = read_gguf(base + ".gguf")
            runs.append(forward_f64(meta, tensors, IDS, half, half))
            print(f"{seed:<4}  " + "  ".join(f"{np.abs(r - theirs).max():.1e}" for r in runs))


if __name__ == "__main__":
    main()
