#!/usr/bin/python3
"""--context-policy drop-oldest past the window, token by token (in `make
test`, context area). stories260K generates 100 tokens in a 48-position
window, dropping the oldest 16 at a time (drop-oldest; and keep-prefix,
which keeps the first 5). The cache's
contents are followed from the trace's forward events (each writes its
tokens at its positions); at every context event:

- the dropped tokens are those the cache held at first_dropped onwards,
  and kept = positions_before - dropped;
- the rebuild that follows prefills, from position 0, exactly the cache
  without that span, then the new token: kept + 1 = positions_after
  tokens, compared one by one;
- its logits are, bit for bit, those `score --tokens` computes for the
  same tokens in one fresh prefill.

    /usr/bin/python3 tests/drop_oldest_check.py build/stepwise
"""
import json
import os
import sys
import tempfile

from check_util import Checks, run_stepwise, stories260k

BIN = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/stepwise")


def follow(trace):
    """Each context event with the cache before it and the rebuild after it
    (its forward event and its logits)."""
    events = [json.loads(line) for line in open(trace, encoding="utf-8")]
    cache, shifts = [], []
    for i, e in enumerate(events):
        if e["event"] == "context":
            rebuild = next(f for f in events[i + 1:] if f["event"] == "forward")
            logits = next(f for f in events[i + 1:] if f["event"] == "logits")
            shifts.append((e, list(cache), rebuild, logits))
        elif e["event"] == "forward":
            cache[e["pos"]:e["pos"] + e["n_tokens"]] = e["tokens"]
    return shifts


def main():
    check = Checks()
    m = stories260k("drop-oldest")
    if m is None:
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        for policy, keep in (("drop-oldest", "0"), ("keep-prefix", "5")):
            trace = os.path.join(tmp, f"{policy}.jsonl")
            run_stepwise(BIN, "generate", *m, "--prompt", "Once upon a time", "--steps", "100", "--temperature",
                         "0.8", "--seed", "3", "--context", "48", "--context-drop", "16", "--keep", keep,
                         "--context-policy", policy, "--trace", trace, "--quiet")
            shifts = follow(trace)
            spans = rebuilt = same_logits = 0
            for ctx, cache, rebuild, logits in shifts:
                first, dropped = ctx["first_dropped"], ctx["dropped"]
                spans += (cache[first:first + len(dropped)] == dropped and len(cache) == ctx["positions_before"]
                          and ctx["kept"] == len(cache) - len(dropped) and first == int(keep))
                want = cache[:first] + cache[first + len(dropped):]
                rebuilt += (rebuild["phase"] == "rebuild" and rebuild["pos"] == 0
                            and rebuild["tokens"][:-1] == want and rebuild["n_tokens"] == ctx["positions_after"]
                            == ctx["kept"] + 1)
                out = os.path.join(tmp, "s.jsonl")
                run_stepwise(BIN, "score", *m, "--tokens", ",".join(map(str, rebuild["tokens"])), "--top-n", "0",
                             "--out", out)
                rows = [json.loads(line) for line in open(out, encoding="utf-8")]
                last = [r for r in rows if r["event"] == "logits"][-1]
                same_logits += last["logits"] == logits["logits"] and logits["pos"] == ctx["kept"]
            n = len(shifts)
            check(n >= 3 and spans == n, f"{policy} --keep {keep}: {spans} of {n} context events drop the span the cache "
                                         f"held at position {keep}, and kept = the rest")
            check(n >= 3 and rebuilt == n, f"{policy} --keep {keep}: {rebuilt} of {n} rebuilds prefill the cache without "
                                           f"that span, token by token, then the new token")
            check(n >= 3 and same_logits == n, f"{policy} --keep {keep}: {same_logits} of {n} rebuilds' logits are "
                                               f"`score --tokens`'s, bit for bit")
    return check.summary("drop-oldest")


if __name__ == "__main__":
    sys.exit(main())
