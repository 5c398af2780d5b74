#!/usr/bin/python3
"""batch --prefill-chunk N computes each prompt N positions a step and gives
the same bits (in `make test`).

Requests of several prompt lengths, greedy and sampled, arriving at
different times, are served with --prefill-chunk 1, 3 and 7 (and without),
at --max-batch 1 and 3, with and without the prefix cache, on stories260K,
and each request is also run alone with `generate`, the independent
reference. For every request:

- the tokens are generate's;
- every logits, sample and activation event (--trace-level full: every
  hook at every position) is generate's, byte for byte, once the events
  are keyed by what they are (event, hook, layer, head, position): chunks
  emit the same rows in more passes (with the prefix cache, the positions
  copied from it have no activations: they were not computed);
- the trace has one prefill pass a chunk: ceil(computed / N) passes for the
  computed prompt positions (all but those copied from the prefix cache),
  each of at most N positions, covering them in order.

    /usr/bin/python3 tests/prefill_chunk_check.py build/stepwise
"""
import json
import math
import os
import sys
import tempfile

from check_util import Checks, run_stepwise, stories260k

BIN = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/stepwise")
SHARED = "Once upon a time, there was a little girl named Lily. She liked to play outside. "
REQUESTS = [
    {"id": "long", "prompt": SHARED + "One day she saw a big dog", "max_tokens": 12},
    {"id": "sampled", "prompt": SHARED + "Her brother Tom", "max_tokens": 16, "temperature": 0.9,
     "top_p": 0.9, "seed": 7, "arrival_ms": 1},
    {"id": "short", "prompt": "Tom", "max_tokens": 10, "arrival_ms": 2},
    {"id": "one", "prompt": "The cat sat", "max_tokens": 1},
]


def keyed(path):
    """The trace's per-position events as {key: line}; and its prefill passes."""
    rows, passes = {}, []
    for line in open(path, encoding="utf-8"):
        e = json.loads(line)
        if e["event"] == "forward" and e["phase"] == "prefill":
            passes.append((e["pos"], e["n_tokens"]))
        if e["event"] in ("logits", "sample", "activation", "token"):
            key = (e["event"], e.get("hook"), e.get("layer"), e.get("head"), e.get("pos"))
            rows[key] = line
    return rows, passes


def main():
    check = Checks()
    m = stories260k("prefill chunks")
    if m is None:
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        reqs = os.path.join(tmp, "r.jsonl")
        with open(reqs, "w", encoding="utf-8") as f:
            for r in REQUESTS:
                f.write(json.dumps(r) + "\n")
        alone = {}
        for r in REQUESTS:
            trace = os.path.join(tmp, "alone-%s.jsonl" % r["id"])
            args = ["--prompt", r["prompt"], "--steps", str(r["max_tokens"])]
            if "temperature" in r:
                args += ["--temperature", str(r["temperature"]), "--top-p", str(r["top_p"]),
                         "--seed", str(r["seed"])]
            run_stepwise(BIN, "generate", *m, *args, "--trace", trace, "--trace-level", "full",
                         "--quiet")
            alone[r["id"]] = keyed(trace)[0]
        for chunk in (1, 3, 7):
            for batch in (1, 3):
                for prefix in (False, True):
                    what = f"--prefill-chunk {chunk} --max-batch {batch}" + (" --prefix-cache" if prefix else "")
                    d = os.path.join(tmp, f"c{chunk}-b{batch}-{prefix}")
                    out = run_stepwise(BIN, "batch", *m, "--requests", reqs, "--max-batch", str(batch),
                                       "--prefill-chunk", str(chunk), "--trace", d, "--trace-level",
                                       "full", "--quiet", *(["--prefix-cache"] if prefix else [])).stdout
                    lines = {json.loads(l)["id"]: json.loads(l) for l in out.splitlines()}
                    same = passes_ok = 0
                    for r in REQUESTS:
                        rows, passes = keyed(os.path.join(d, r["id"] + ".jsonl"))
                        n = lines[r["id"]]["prompt_tokens"]
                        reused = lines[r["id"]]["metrics"].get("prefix_tokens_reused", 0)
                        # positions copied from the prefix cache were never computed for
                        # this request: their activations are not in its trace
                        want = {k: v for k, v in alone[r["id"]].items()
                                if k[0] != "activation" or k[4] is None or k[4] >= reused}
                        same += rows == want
                        starts = list(range(reused, n, chunk))
                        passes_ok += passes == [(p, min(chunk, n - p)) for p in starts] and \
                            len(passes) == math.ceil((n - reused) / chunk)
                    check(same == len(REQUESTS), f"{what}: every request's tokens, logits, draws and "
                          f"activations are generate's ({same} of {len(REQUESTS)})")
                    check(passes_ok == len(REQUESTS), f"{what}: one prefill pass a chunk of at most "
                          f"{chunk} positions, in order ({passes_ok} of {len(REQUESTS)})")
        r = run_stepwise(BIN, "batch", *m, "--requests", reqs, "--prefill-chunk", "-1", expect=(2,))
        check("--prefill-chunk" in r.stderr and len(r.stderr.strip().splitlines()) == 1,
              f"--prefill-chunk -1 refused: {r.stderr.strip()}")
    return check.summary("prefill chunks")


if __name__ == "__main__":
    sys.exit(main())
