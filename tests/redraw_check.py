"""No separate planning step (docs/hit-enter.md): a generated token is
the distribution's and the seed's, and the distribution is the tokens'.

On three sampled stories260K runs (temperature, top-k and top-p as
docs/hit-enter.md runs it; temperature and min-p; temperature alone, every
filter off), traced at --trace-level sampling, this file redraws every
token with a sampler and llama2.c's xorshift* of its own, written from
their definitions in docs/sampling.md, in float64, from the traced logits
and the run's seed alone:

1. the u of the n-th sample event is the n-th draw of xorshift* started
   from the seed: one draw a token, nothing else drawn;
2. the survivors, in descending probability, are those of the stages in
   the run's order (temperature, top-k, top-p, min-p) computed here from
   the step's logits;
3. the token that u picks, walking the renormalised survivors (every
   filter off: every id in index order, as run.c's sample_mult), is the
   traced token at every step; no u, top-p mass or min-p ratio lies within
   1e-5 of the boundary it is compared with, so the C sampler's float32
   rounding cannot have decided a step that float64 decides otherwise
   (a run where one did fails here, as undecidable, not as a pass);
4. the logits of every step of the generation are, bit for bit (the same
   printed numbers), those `stepwise score` gives the finished sequence
   in one prefill: the tokens are the only state one step hands the next.

    /usr/bin/python3 tests/redraw_check.py build/stepwise
"""
import json
import math
import os
import struct
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_util import Checks, run_stepwise, stories260k  # noqa: E402

BIN = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/stepwise")
MARGIN = 1e-5  # far above float32's rounding of a probability (6e-8 at 1)
check = Checks()

RUNS = (  # name, prompt, steps, options
    ("top-k 40, top-p 0.9", "Once upon a time", 24,
     ["--temperature", "0.9", "--top-k", "40", "--top-p", "0.9", "--seed", "4"]),
    ("min-p 0.1", "The cat sat", 32, ["--temperature", "1", "--min-p", "0.1", "--seed", "11"]),
    ("every filter off", "Lily", 32, ["--temperature", "1.2", "--top-p", "1", "--seed", "133742"]),
)


def xorshift(seed):
    """llama2.c's xorshift*: u in [0, 1) from the top 24 of 32 bits."""
    state = seed
    while True:
        state ^= state >> 12
        state ^= (state << 25) % 2**64
        state ^= state >> 27
        yield ((state * 0x2545F4914F6CDD1D) % 2**64 >> 32 >> 8) / 2**24


def f32(x):
    return struct.unpack("f", struct.pack("f", x))[0]


def softmax(values):
    top = max(values.values())
    e = {i: math.exp(v - top) for i, v in values.items()}
    total = sum(e.values())
    return {i: x / total for i, x in e.items()}


def redraw(logits, sampler, u):
    """(survivors in descending probability, the token u picks, the
    smallest distance of a decision from its boundary)."""
    values = {i: x for i, x in enumerate(logits) if x is not None}
    near = math.inf
    for stage in sampler["stages"]:
        if stage == "temperature":
            values = {i: x / sampler["temperature"] for i, x in values.items()}
        elif stage == "top_k" and 0 < sampler["top_k"] < len(values):
            keep = sorted(values, key=lambda i: (-values[i], i))[:sampler["top_k"]]
            values = {i: values[i] for i in keep}
        elif stage == "top_p" and sampler["top_p"] < 1:
            p = softmax(values)
            mass, keep = 0.0, []
            for i in sorted(p, key=lambda i: (-p[i], i)):
                mass += p[i]
                keep.append(i)
                near = min(near, abs(mass - sampler["top_p"]))
                if mass >= sampler["top_p"]:
                    break
            values = {i: values[i] for i in keep}
        elif stage == "min_p" and sampler["min_p"] > 0:
            p = softmax(values)
            top = max(p.values())
            near = min([near] + [abs(p[i] / top - sampler["min_p"]) for i in p])
            values = {i: values[i] for i in p if p[i] >= sampler["min_p"] * top}
    p = softmax(values)
    order = sorted(p, key=lambda i: (-p[i], i))
    filters_off = sampler["top_k"] == 0 and sampler["top_p"] >= 1 and sampler["min_p"] == 0
    walk = sorted(p) if filters_off else order
    cdf, token = 0.0, walk[-1]
    for i in walk:
        cdf += p[i]
        near = min(near, abs(u - cdf))
        if u < cdf:
            token = i
            break
    return order, token, near


def events(path):
    return [json.loads(line) for line in open(path, encoding="utf-8")]


def main():
    stories = stories260k("redraw check")
    if stories is None:
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        for name, prompt, steps, options in RUNS:
            trace = os.path.join(tmp, "run.jsonl")
            run_stepwise(BIN, "generate", *stories, "--prompt", prompt, "--steps", str(steps), *options,
                         "--trace-level", "sampling", "--trace", trace, "--quiet")
            evs = events(trace)
            sampler = evs[0]["sampler"]
            logits = {e["pos"]: e["logits"] for e in evs if e["event"] == "logits"}
            samples = [e for e in evs if e["event"] == "sample"]
            draws = xorshift(sampler["seed"])
            us = [next(draws) for _ in samples]
            check(samples and all(f32(e["u"]) == u for e, u in zip(samples, us)),
                  f"{name}: the {len(samples)} draws' u are xorshift*'s from seed {sampler['seed']}, in turn "
                  f"(first {us[0] if us else None})")
            same_survivors = same_token = 0
            nearest = math.inf
            for e, u in zip(samples, us):
                survivors, token, near = redraw(logits[e["pos"]], sampler, u)
                listed = e.get("survivors")  # every filter off, the event lists none: all survive
                same_survivors += len(survivors) == e["n_survivors"] and listed in (None, survivors)
                same_token += token == e["token"]
                nearest = min(nearest, near)
            choices = sum(e["n_survivors"] > 1 for e in samples)
            check(same_survivors == len(samples),
                  f"{name}: the survivors of {same_survivors} of {len(samples)} steps are this file's "
                  f"stages' on the traced logits ({choices} steps with a choice)")
            check(same_token == len(samples) and choices > 0,
                  f"{name}: {same_token} of {len(samples)} tokens redrawn from the logits and the seed alone")
            check(nearest > MARGIN, f"{name}: no decision within {MARGIN} of its boundary (nearest {nearest:.2e}),"
                  f" so float32 and float64 cannot disagree")
            tokens = evs[0]["prompt_tokens"] + [e["token"] for e in evs if e["event"] == "token"]
            scored = os.path.join(tmp, "scored.jsonl")
            run_stepwise(BIN, "score", *stories, "--tokens", ",".join(map(str, tokens)), "--top-n", "0",
                         "--out", scored, "--quiet")
            one_pass = {e["pos"]: e["logits"] for e in events(scored) if e["event"] == "logits"}
            same = sum(one_pass.get(pos) == row for pos, row in logits.items())
            check(same == len(logits) == len(samples),
                  f"{name}: the logits of {same} of {len(logits)} steps are score's on the finished "
                  f"{len(tokens)} tokens in one prefill, bit for bit")
    return check.summary("redraw check")


if __name__ == "__main__":
    sys.exit(main())
