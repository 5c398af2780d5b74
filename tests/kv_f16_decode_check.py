#!/usr/bin/python3
"""The 16-bit KV caches over a decode (in `make test`, quant area; issue 67).

Every other comparison of `--kv-dtype f16` with llama.cpp is one prefill
pass, so a cache that a decode step writes or widens at the wrong row, or a
rounding point applied in the prompt's pass only, would pass them. Here a
random llama model (GQA, 2 layers, dim 128, Llama 2's 32,000 ids, converted
to GGUF) generates: the prompt in one pass, then token by token against
the cache (temperature 1, so the ids vary), every position's logits traced
(--all-logits). Each run is then set against, on its own ids:

  - a real llama.cpp with an F16 cache (tests/llama_cpp_engine.mjs decode:
    flash attention off, the prompt in one call, then one call a token);
  - a float64 numpy forward of the same ids that rounds exactly where
    llama.cpp's float16 cache does (K and V as cached, the query for K.Q,
    the probabilities before V) and nowhere else.

The tolerance is derived, not measured on stepwise: the numpy forward is
run a second time with the query's and the probabilities' rounding left
out at the positions judged (the decode steps; the prompt's positions
after the first), and the root-mean-square distance S between its two
runs there is what a stepwise that missed those rounding points would be
away. A stepwise that has them must be nearer than S/2 to both llama.cpp
and the numpy forward, over the decode steps and over the prompt: nearer
the right computation than half the way to the wrong one. (What is left
is each engine's float32 arithmetic putting a value on the other side of
a float16 rounding boundary: docs/oracle.md; on this shape's seeds 1 to
6, measured on 2026-12-07, it was at most 0.7 of S/2, and 0.17 on seed 1,
the one the check runs.) A cache row written or widened at the wrong
position is orders of magnitude past it.

`--kv-dtype bf16` rounds K and V only (llama.cpp's BF16 cache also
rounds the query and the probabilities to bfloat16, and stepwise has no
such option), so its decode is held to the numpy forward with K and V
rounded to bfloat16 (by hand from the bits: to nearest, ties to even),
with the tolerance S/2 of leaving the rounding of K and V out; and
llama.cpp's BF16 cache, decoding the same ids step by step, to the numpy
forward that rounds the query and the probabilities to bfloat16 too, while
stepwise stays with the one that does not, each within half the two
forwards' distance: what parts stepwise from llama.cpp there is that
rounding and nothing else.

    /usr/bin/python3 tests/kv_f16_decode_check.py build/stepwise build/npm-llama-cpp
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
from check_util import TIMEOUT, Checks, run_stepwise  # noqa: E402
from gguf_read import read_gguf  # noqa: E402
from f16_reference import bf16, forward_f64, half  # noqa: E402

ROOT = os.path.dirname(HERE)
MODELS = os.path.abspath(os.path.join(ROOT, os.environ.get("STEPWISE_MODELS", "../shared/models")))
BIN = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/stepwise")
NPM = os.path.abspath(sys.argv[2] if len(sys.argv) > 2 else "build/npm-llama-cpp")
ENGINE = os.path.join(HERE, "llama_cpp_engine.mjs")
PROMPT, STEPS = "Once upon a time there was", 48  # BOS and 6 ids, then 47 decode steps
check = Checks()


def generate(model, tmp, *extra):
    """stepwise's generation: (ids of every position, logits [T, vocab], the
    number of prompt positions, the stop reason)."""
    trace = os.path.join(tmp, "g.jsonl")
    run_stepwise(BIN, "generate", "--model", model, "--prompt", PROMPT, "--steps", str(STEPS), "--temperature",
                 "1", "--seed", "7", "--all-logits", "--trace", trace, "--trace-level", "logits", "--reproducible",
                 "--quiet", *extra)
    events = [json.loads(line) for line in open(trace, encoding="utf-8")]
    rows = [e for e in events if e["event"] == "logits"]
    done = next(e for e in events if e["event"] == "done")
    return ([e["token"] for e in rows], np.array([e["logits"] for e in rows], dtype=np.float64),
            done["prefill_tokens"], done["stop_reason"])


def llama_cpp_decode(model, ids, n_prompt, cache, tmp):
    out = os.path.join(tmp, "llama.f32")
    r = subprocess.run(["node", ENGINE, NPM, "decode", model, ",".join(map(str, ids)), str(n_prompt), cache, out],
                       capture_output=True, text=True, timeout=TIMEOUT)
    if r.returncode != 0:
        raise SystemExit(f"llama_cpp_engine.mjs decode: exit {r.returncode}\n{r.stderr}")
    return np.fromfile(out, dtype="<f4").reshape(len(ids), -1).astype(np.float64)


def rms(a):
    return float(np.sqrt(np.mean(a * a)))


def main():
    tokenizer = os.path.join(MODELS, "tokenizer.bin")
    if not os.path.exists(tokenizer):
        print(f"16-bit cache decode check skipped: no tokenizer.bin in {MODELS}")
        return 0
    have_llama = os.path.isdir(os.path.join(NPM, "node_modules", "node-llama-cpp"))
    with tempfile.TemporaryDirectory() as tmp:
        base = os.path.join(tmp, "m")
        run_stepwise(BIN, "make-model", "--dim", "128", "--hidden", "384", "--layers", "2", "--heads", "4",
                     "--kv-heads", "2", "--vocab", "32000", "--seq-len", "128", "--seed", "1", "--out", base + ".bin")
        model = base + ".gguf"
        run_stepwise(BIN, "convert", "--model", base + ".bin", "--tokenizer", tokenizer, "--out", model)
        meta, tensors = read_gguf(model)

        # float16, with llama.cpp's rounding points
        ids, ours, n_prompt, stop = generate(model, tmp, "--kv-dtype", "f16", "--kv-rounding", "llama.cpp")
        n = len(ids)
        check(stop == "steps" and n - n_prompt >= 40 and n_prompt >= 4,
              f"f16: {n_prompt} prompt positions, then {n - n_prompt} decode steps (stop: {stop})")
        decode, prompt = np.arange(n) >= n_prompt, (np.arange(n) >= 1) & (np.arange(n) < n_prompt)
        ref = forward_f64(meta, tensors, ids, half, half)
        theirs = llama_cpp_decode(model, ids, n_prompt, "F16", tmp) if have_llama else None
        for label, judged in (("the decode steps", decode), ("the prompt's positions after the first", prompt)):
            # the same forward without the query's and the probabilities' rounding where judged
            wrong = forward_f64(meta, tensors, ids, half, half, ~judged)
            tol = rms(ref[judged] - wrong[judged]) / 2
            d_ref = rms(ours[judged] - ref[judged])
            check(d_ref < tol, f"f16 --kv-rounding llama.cpp, {label}: rms |dlogit| {d_ref:.1e} from the float64 "
                  f"forward with the same rounding points, under {tol:.1e} (half of leaving them out there)")
            if theirs is None:
                check.skip(f"f16, {label}, against llama.cpp: no node-llama-cpp in {NPM} (make llama-cpp-peer)")
                continue
            d_ll = rms(ours[judged] - theirs[judged])
            worst = int(np.argmax(np.abs(ours - theirs).max(axis=1) * judged))
            check(d_ll < tol, f"f16 --kv-rounding llama.cpp, {label}: rms |dlogit| {d_ll:.1e} from llama.cpp's F16 "
                  f"cache decoding the same ids step by step, under {tol:.1e} (max |dlogit| "
                  f"{np.abs(ours[judged] - theirs[judged]).max():.1e}, at position {worst})")

        # bfloat16: K and V rounded as cached, nothing else
        ids, ours, n_prompt, stop = generate(model, tmp, "--kv-dtype", "bf16")
        n = len(ids)
        decode = np.arange(n) >= n_prompt
        check(stop == "steps" and n - n_prompt >= 40, f"bf16: {n - n_prompt} decode steps (stop: {stop})")
        ref = forward_f64(meta, tensors, ids, bf16)
        tol = rms(ref[decode] - forward_f64(meta, tensors, ids, lambda a: a)[decode]) / 2
        d_ref = rms(ours[decode] - ref[decode])
        check(d_ref < tol, f"bf16, the decode steps: rms |dlogit| {d_ref:.1e} from the float64 forward with K and V "
              f"rounded to bfloat16, under {tol:.1e} (half of leaving the rounding out)")
        if have_llama:  # llama.cpp's BF16 cache: the same, and the query and probabilities in bfloat16 too
            theirs = llama_cpp_decode(model, ids, n_prompt, "BF16", tmp)
            four = forward_f64(meta, tensors, ids, bf16, bf16)
            tol = rms(ref[decode] - four[decode]) / 2
            d_ll, d_ours = rms(theirs[decode] - four[decode]), rms(ours[decode] - ref[decode])
            check(d_ll < tol and d_ours < tol,
                  f"bf16, the decode steps: llama.cpp's BF16 cache decoding the same ids step by step is rms "
                  f"{d_ll:.1e} from the float64 forward that also rounds the query and the probabilities to "
                  f"bfloat16, stepwise {d_ours:.1e} from the one that does not, both under {tol:.1e} (half the "
                  f"two forwards' distance): that rounding is all that parts them "
                  f"(rms {rms(ours[decode] - theirs[decode]):.1e})")
    return check.summary("16-bit cache decode check")


if __name__ == "__main__":
    sys.exit(main())
