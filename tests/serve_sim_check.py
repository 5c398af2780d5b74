#!/usr/bin/python3
"""serve-sim (in `make test`): the load simulation against a second one.

The schedule of docs/serving-under-load.md is simulated again here, in
Python, from its rules: arrivals drawn with llama2.c's xorshift* (gap
-ln(1-u)/rate, then the prompt and new-token lengths), first come first
served into max-batch slots, each request reserving ceil((prompt + new) /
block) blocks at admission, the chunked prefills first, then admissions
(each prefilled at once), then one decode step of every request past its
prompt, each pass costing fixed + per_row x rows + per_attended x
positions attended. Every request's times and the report's percentiles
(nearest rank) must agree with `serve-sim --json` to 1e-9 ms, over rates,
batch sizes, chunks and KV budgets.

Then what the issue asks of it: the same seed gives the same report byte
for byte, another seed another; p95 TTFT grows with the rate (the same
draws, compressed in time); a budget of fewer blocks than the requests
need makes requests wait and the report says how long; costs measured
on stories260K are written, read back and give the same report as the
run that measured them; hostile cost files and options exit 2 in one line.
The capacity worked out by hand from the step costs (mu, the page's
"Capacity" section) is what the simulation finishes with every slot busy,
within a tolerance worked out by hand from the draws; p95 TTFT rises with
the utilisation rho = lambda/mu; past mu the p95 follows the line
0.95 n (1/mu - 1/lambda) of an unbounded queue.

    /usr/bin/python3 tests/serve_sim_check.py build/stepwise
"""
import json
import math
import os
import sys
import tempfile

from check_util import Checks, run_stepwise, stories260k

BIN = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/stepwise")
# Seconds a run may take: each is a fraction of a second on saved costs and a
# few seconds measuring stories260K (a minute under a sanitizer); a hang
# fails the check with a message instead of holding `make test`.
TIMEOUT = 180
MASK = (1 << 64) - 1

COSTS = {"format": "stepwise-step-costs", "version": 1, "seq_len": 512,
         "kv_bytes_per_position": 1280, "threads": 1,
         "decode": {"fixed_s": 4e-4, "per_row_s": 2.5e-5, "per_attended_s": 3e-8},
         "prefill": {"fixed_s": 5e-4, "per_row_s": 6e-5, "per_attended_s": 2e-8}}


class Xorshift:
    def __init__(self, seed):
        self.state = seed

    def u32(self):
        s = self.state
        s ^= s >> 12
        s ^= (s << 25) & MASK
        s ^= s >> 27
        self.state = s
        return ((s * 0x2545F4914F6CDD1D) & MASK) >> 32


def workload(n, rate, prompt, new, seed):
    rng, t, out = Xorshift(seed), 0.0, []
    for _ in range(n):
        u = (rng.u32() >> 8) / 16777216.0
        if rate > 0:
            t += -math.log(1.0 - u) / rate
        p = prompt[0] + rng.u32() % (prompt[1] - prompt[0] + 1)
        d = new[0] + rng.u32() % (new[1] - new[0] + 1)
        out.append((t, p, d))
    return out


def pass_cost(c, rows, attended):
    return c["fixed_s"] + c["per_row_s"] * rows + c["per_attended_s"] * attended


def simulate(reqs, costs, max_batch, chunk=0, block=16, blocks=0):
    """Every request's dict of times (ms), as the documented rules give them."""
    reqs = [{"arrival": a, "prompt": p, "new": d, "done": 0, "filled": 0, "times": [],
             "blocked": None, "state": "waiting"} for a, p, d in reqs]
    for r in reqs:
        r["blocks"] = -(-(r["prompt"] + r["new"]) // block)
        r["rejected"] = r["prompt"] + r["new"] > costs["seq_len"] or (0 < blocks < r["blocks"])
    queue = sorted(range(len(reqs)), key=lambda i: (reqs[i]["arrival"], i))
    queue = [reqs[i] for i in queue if not reqs[i]["rejected"]]
    clock, used, running = 0.0, 0, []

    def prefill(r):
        nonlocal clock
        lo = r["filled"]
        hi = min(r["prompt"], lo + chunk) if chunk > 0 else r["prompt"]
        attended = (hi * (hi + 1) - lo * (lo + 1)) / 2
        clock += pass_cost(costs["prefill"], hi - lo, attended)
        r["filled"] = hi
        if hi == r["prompt"]:
            r["state"] = "decoding"
            token(r)

    def token(r):
        nonlocal used
        r["times"].append(clock)
        if len(r["times"]) == r["new"]:
            r["state"] = "done"
            used -= r["blocks"]

    while queue or running:
        for r in running:
            if r["state"] == "prefilling":
                prefill(r)
        running = [r for r in running if r["state"] != "done"]
        while queue and len(running) < max_batch and queue[0]["arrival"] <= clock:
            r = queue[0]
            if blocks > 0 and used + r["blocks"] > blocks:
                if r["blocked"] is None:
                    r["blocked"] = clock
                break
            queue.pop(0)
            used += r["blocks"]
            r["admitted"] = clock
            r["state"] = "prefilling"
            running.append(r)
            prefill(r)
            if r["state"] == "done":
                running.pop()
        if not running:
            if queue:
                clock = max(clock, queue[0]["arrival"])
            continue
        step = [r for r in running if r["state"] == "decoding"]
        if step:
            attended = sum(r["prompt"] + len(r["times"]) for r in step)
            clock += pass_cost(costs["decode"], len(step), attended)
            for r in step:
                token(r)
        running = [r for r in running if r["state"] != "done"]
    out = []
    for r in reqs:
        if r["rejected"]:
            out.append({"rejected": True})
            continue
        t, a = r["times"], r["arrival"]
        gaps = [(t[i] - t[i - 1]) * 1e3 for i in range(1, len(t))]
        out.append({"rejected": False, "queue_ms": (r["admitted"] - a) * 1e3,
                    "block_wait_ms": (r["admitted"] - r["blocked"]) * 1e3 if r["blocked"] is not None else 0,
                    "ttft_ms": (t[0] - a) * 1e3, "e2e_ms": (t[-1] - a) * 1e3,
                    "itl_max_ms": max(gaps, default=0), "gaps": gaps})
    return out


def stepwise(*args, expect=(0,)):
    return run_stepwise(BIN, *args, expect=expect, timeout=TIMEOUT)


def nearest_rank(values, q):
    v = sorted(values)
    return v[max(1, math.ceil(q * len(v))) - 1]


def sim_json(costs_path, *args):
    r = stepwise("serve-sim", "--step-costs", costs_path, "--json", *args)
    return json.loads(r.stdout), r.stdout


def close(a, b):
    return abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))


def compare(check, costs, costs_path, n, rate, prompt, new, seed, batch, chunk, block, blocks):
    args = ["--num-requests", str(n), "--rate", str(rate), "--seed", str(seed),
            "--prompt-tokens", f"{prompt[0]}:{prompt[1]}", "--new-tokens", f"{new[0]}:{new[1]}",
            "--max-batch", str(batch), "--prefill-chunk", str(chunk), "--block-size", str(block),
            "--kv-blocks", str(blocks)]
    got, _ = sim_json(costs_path, *args)
    reqs = workload(n, rate, prompt, new, seed)
    drawn = all(close(q["arrival_ms"], a * 1e3) and q["prompt_tokens"] == p and q["new_tokens"] == d
                for q, (a, p, d) in zip(got["requests"], reqs))
    want = simulate(reqs, costs, batch, chunk, block, blocks)
    fields = ("queue_ms", "block_wait_ms", "ttft_ms", "e2e_ms", "itl_max_ms")
    same = all(g["rejected"] == w["rejected"] and
               (w["rejected"] or all(close(g[f], w[f]) for f in fields))
               for g, w in zip(got["requests"], want))
    served = [w for w in want if not w["rejected"]]
    s = got["summary"]
    gaps = [x for w in served for x in w["gaps"]]
    pct = all(close(s[k][name], nearest_rank(vals, q))
              for k, vals in (("ttft_ms", [w["ttft_ms"] for w in served]),
                              ("e2e_ms", [w["e2e_ms"] for w in served]), ("itl_ms", gaps))
              for name, q in (("p50", 0.5), ("p95", 0.95), ("p99", 0.99)))
    label = (f"{n} requests at {rate}/s, batch {batch}, chunk {chunk}, "
             f"{blocks or 'unlimited'} blocks of {block}")
    check(drawn, f"{label}: the arrivals and lengths are the xorshift draws")
    check(same and len(got["requests"]) == n, f"{label}: every request's times agree")
    check(pct, f"{label}: p50/p95/p99 of TTFT, ITL and end-to-end agree (nearest rank)")
    return got


def request_seconds(c, P, N, batch):
    """What one request of P prompt tokens and N new ones holds a server whose
    every step is full (docs/serving-under-load.md, "Capacity"): its prefill,
    a batch-th of each of its N - 1 decode steps' fixed part, its rows, and
    the positions those rows attend, P + 1 up to P + N - 1."""
    d, p = c["decode"], c["prefill"]
    return (p["fixed_s"] + p["per_row_s"] * P + p["per_attended_s"] * P * (P + 1) / 2
            + (N - 1) * (d["fixed_s"] / batch + d["per_row_s"])
            + d["per_attended_s"] * ((N - 1) * P + (N - 1) * N / 2))


def capacity_checks(check, tmp):
    """The capacity worked by hand, mu = 1 / E[t(P, N)] over the lengths' 49 x 49
    equally likely pairs, is what serve-sim finishes with every request sent
    at once, within 3 standard deviations of the mean of n draws plus the
    run's end (at most 64 steps of fewer rows, each paying its fixed part
    whole); the utilisation's latency knee (p95 TTFT at rho = 0.5 below that
    at 0.9); and past capacity the p95 TTFT on the line 0.95 n (1/mu - 1/lambda)
    worked by hand, within 3 standard deviations of the k-th arrival's time
    (k / lambda^2) and of k requests' service (k sigma^2)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    committed = os.path.join(root, "data", "step-costs", "m15-1thread.json")
    for costs_path, name in ((committed, "the committed 15M costs"), (os.path.join(tmp, "costs.json"), "the test's costs")):
        c = json.load(open(costs_path, encoding="utf-8"))
        ts = [request_seconds(c, P, N, 16) for P in range(16, 65) for N in range(16, 65)]
        mean = sum(ts) / len(ts)
        sd = math.sqrt(sum((x - mean) ** 2 for x in ts) / len(ts))
        mu, n = 1 / mean, 8000
        tolerance = 3 * sd / mean / math.sqrt(n) + 64 * c["decode"]["fixed_s"] / (n * mean)
        s = sim_json(costs_path, "--rate", "0", "--num-requests", str(n), "--max-batch", "16")[0]["summary"]
        got = s["served"] / s["seconds"]
        check(abs(got / mu - 1) <= tolerance,
              f"{name}: capacity {got:.3f} requests/s simulated, {mu:.3f} by hand "
              f"({abs(got / mu - 1):.3%} apart, tolerance {tolerance:.3%})")

        def summary(rho, requests):
            return sim_json(costs_path, "--rate", "%.4f" % (rho * mu), "--num-requests", str(requests),
                            "--max-batch", "16")[0]["summary"]
        half, busy = summary(0.5, 8000)["ttft_ms"]["p95"], summary(0.9, 8000)["ttft_ms"]["p95"]
        check(half < busy, f"{name}: p95 TTFT {half:.2f} ms at rho 0.5, {busy:.2f} ms at 0.9")
        lam = float("%.4f" % (1.2 * mu))
        k = 0.95 * n
        line = k * (1 / mu - 1 / lam)
        spread = 3 * math.sqrt(k / lam ** 2 + k * sd ** 2)
        over = summary(1.2, n)
        got = over["ttft_ms"]["p95"] / 1000
        check(abs(got - line) <= spread and over["served"] / over["seconds"] < mu * (1 + tolerance),
              f"{name}: at rho 1.2 the p95 TTFT of {n} requests is {got:.2f} s, the line "
              f"0.95 n (1/mu - 1/lambda) {line:.2f} s (within {spread:.2f} s); served "
              f"{over['served'] / over['seconds']:.3f} a second, no more than mu")


def refused_under_memcheck(check, tmp):
    """Cost files serve-sim cannot read, under valgrind's memcheck: exit 2
    and no error. A read that failed before the costs were set left stack
    garbage for the cleanup to free, a crash in about half the runs and an
    error in every one under memcheck: this finds it every time."""
    import shutil
    import subprocess
    if shutil.which("valgrind") is None or "ASAN_OPTIONS" in os.environ:
        check.skip("unreadable cost files under valgrind: no valgrind (or a sanitizer build)")
        return
    nul = os.path.join(tmp, "nul.json")
    with open(nul, "wb") as f:
        f.write(json.dumps(COSTS).encode()[:10] + b"\0" + json.dumps(COSTS).encode()[10:])
    for what, target in (("a NUL byte", nul), ("a missing file", os.path.join(tmp, "none.json")),
                         ("a directory", tmp)):
        args = ["valgrind", "-q", "--error-exitcode=9", BIN, "serve-sim", "--step-costs", target]
        try:
            r = subprocess.run(args, capture_output=True, text=True, timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            check(False, f"a cost file with {what} under valgrind: no exit within {TIMEOUT} s")
            continue
        check(r.returncode == 2 and "==" not in r.stderr,
              f"a cost file with {what}: exit 2 under valgrind, no memory error "
              f"(exit {r.returncode}: {r.stderr.strip()[:200]})")


def main():
    check = Checks()
    with tempfile.TemporaryDirectory() as tmp:
        costs_path = os.path.join(tmp, "costs.json")
        with open(costs_path, "w", encoding="utf-8") as f:
            json.dump(COSTS, f)
        for case in [(40, 50, (8, 64), (4, 48), 1, 4, 0, 16, 0),
                     (40, 400, (8, 64), (4, 48), 2, 8, 0, 16, 0),
                     (60, 300, (8, 200), (4, 60), 3, 8, 32, 16, 0),
                     (60, 300, (8, 64), (4, 48), 4, 16, 0, 16, 30),
                     (30, 0, (100, 300), (100, 250), 5, 6, 64, 8, 80),
                     (20, 100, (300, 400), (100, 200), 6, 4, 0, 16, 30)]:
            compare(check, COSTS, costs_path, *case)

        args = ["--num-requests", "80", "--rate", "250", "--seed", "9"]
        _, a = sim_json(costs_path, *args)
        _, b = sim_json(costs_path, *args)
        _, c = sim_json(costs_path, *args[:-1], "10")
        check(a == b, "the same seed gives the same report, byte for byte")
        check(a != c, "another seed gives another report")

        rates = [25, 50, 100, 200, 400, 800]
        p95 = [sim_json(costs_path, "--num-requests", "200", "--rate", str(r), "--seed", "3")[0]
               ["summary"]["ttft_ms"]["p95"] for r in rates]
        check(all(x <= y for x, y in zip(p95, p95[1:])) and p95[-1] > 2 * p95[0],
              f"p95 TTFT grows with the rate: {', '.join(f'{x:.2f}' for x in p95)} ms")

        base = ["--num-requests", "100", "--rate", "400", "--seed", "4", "--max-batch", "16"]
        free = sim_json(costs_path, *base)[0]["summary"]
        tight = sim_json(costs_path, *base, "--kv-blocks", "24")[0]
        t = tight["summary"]
        waited = [q for q in tight["requests"] if q.get("block_wait_ms", 0) > 0]
        check(free["waited_for_blocks"] == 0 and t["waited_for_blocks"] == len(waited) > 0 and
              t["block_wait_total_ms"] > 0 and t["peak_kv_blocks"] <= 24 and
              t["ttft_ms"]["p95"] > free["ttft_ms"]["p95"],
              f"24 blocks: {t['waited_for_blocks']} requests wait "
              f"{t['block_wait_total_ms']:.1f} ms in all (none without a budget), p95 TTFT "
              f"{free['ttft_ms']['p95']:.2f} -> {t['ttft_ms']['p95']:.2f} ms")
        text = stepwise("serve-sim", "--step-costs", costs_path, *base, "--kv-blocks",
                            "24").stdout
        check(f"waited for KV blocks: {t['waited_for_blocks']} requests" in text,
              "the text report says how many waited for blocks, and how long")
        memory = sim_json(costs_path, *base, "--kv-memory", str(24 * 16 * 1280))[0]["summary"]
        check(memory["kv_blocks"] == 24, "--kv-memory of 24 blocks' bytes gives 24 blocks")

        model = stories260k("serve_sim_check")
        if model is None:
            check.skip("measured costs: no stories260K")
        else:
            saved = os.path.join(tmp, "measured.json")
            r1 = stepwise("serve-sim", *model, "--threads", "1", "--save-costs", saved, "--json", "--rate", "500")
            measured = json.load(open(saved, encoding="utf-8"))
            r2 = stepwise("serve-sim", "--step-costs", saved, "--json", "--rate", "500")
            decode = [p for p in measured["points"] if p["kind"] == "decode"]
            check(r1.stdout == r2.stdout, "costs saved and read back give the report that "
                  "measured them, byte for byte")
            check(measured["kv_bytes_per_position"] == 5 * 2 * 4 * 32 and len(decode) >= 8 and
                  all(v >= 0 for k in ("decode", "prefill") for v in measured[k].values()),
                  "stories260K's costs: 1280 bytes a position (5 layers x K,V x 4 heads x 8 x "
                  "4 bytes), non-negative coefficients")
            fitted = [pass_cost(measured["decode"], p["rows"], p["attended"]) for p in decode]
            worst = max(abs(f - p["seconds"]) / p["seconds"] for f, p in zip(fitted, decode))
            if "ASAN_OPTIONS" in os.environ:  # a sanitizer's timings say nothing of the fit
                check.skip(f"the decode fit's quality under a sanitizer (worst {worst:.0%})")
            else:
                check(worst < 1.0, f"the decode fit is within {worst:.0%} of every timed step")

        bad = os.path.join(tmp, "bad.json")
        for text, what in [("{", "not JSON"), ('{"format":"stepwise-step-costs","version":1}',
                                               "no seq_len"),
                           (json.dumps({**COSTS, "decode": {**COSTS["decode"], "fixed_s": -1}}),
                            "a negative cost"),
                           (json.dumps({**COSTS, "seq_len": 1e99}), "a huge seq_len")]:
            with open(bad, "w", encoding="utf-8") as f:
                f.write(text)
            r = stepwise("serve-sim", "--step-costs", bad, expect=(2,))
            check(r.stderr.count("\n") == 1 and "step costs" in r.stderr,
                  f"a cost file with {what} is refused in one line: {r.stderr.strip()}")
        for args, what in [(["--prompt-tokens", "9:3"], "a range backwards"),
                           (["--rate", "-1"], "a negative rate"),
                           (["--kv-blocks", "4", "--kv-memory", "1MB"], "both budgets"),
                           (["--kv-memory", "100"], "less than one block")]:
            r = stepwise("serve-sim", "--step-costs", costs_path, *args, expect=(2,))
            check(r.stderr.count("\n") == 1, f"{what} is refused in one line: {r.stderr.strip()}")
        capacity_checks(check, tmp)
        refused_under_memcheck(check, tmp)
    return check.summary("serve_sim_check")


if __name__ == "__main__":
    sys.exit(main())
