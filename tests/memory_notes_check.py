#!/usr/bin/python3
"""Memory notes and documents are tokens in the prompt (in `make test`).

`generate --memory FILE --document FILE` and batch's "memory" and
"documents" fields put saved text before the prompt; nothing else changes.
Checked against sentencepiece (tok512.model) and against a second run of
the engine on bare token ids:

- the prompt's ids are sentencepiece's for the documented parts: BOS,
  "Memory:", the note, "Document <id>:", the document, the prompt;
- the trace's chat event credits those tokens to `memory` and
  `document:<id>`, and the prompt's own ids are those of the run without
  the note (the question is the same tokens);
- the logits after the prompt equal, bit for bit, those `score --tokens`
  computes for the same ids with no note at all: the weights are the same
  (the same SHA-256 in both run headers), only the tokens differ;
- a batch request with the same note gives the same tokens as generate;
- a note that alone exceeds the window, a document whose file name is not
  a plain id, and a request whose document has no text are refused.

    /usr/bin/python3 tests/memory_notes_check.py build/stepwise
"""
import json
import os
import sys
import tempfile

from check_util import Checks, run_stepwise, stories260k, tok512_encoder

BIN = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/stepwise")
NOTE = "The girl is called Sue and she has a red ball."
DOC = "A dog can run and jump in the park."
PROMPT = "Once upon a time"


def events(path, kind):
    return [e for e in map(json.loads, open(path, encoding="utf-8")) if e["event"] == kind]


def sentencepiece_ids():
    """BOS and each documented part encoded on its own, or None."""
    enc = tok512_encoder()
    if enc is None:
        return None
    return [1] + enc("Memory:") + enc(NOTE) + enc("Document dogs.txt:") + enc(DOC) + enc(PROMPT)


def main():
    check = Checks()
    m = stories260k("memory notes")
    if m is None:
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        note, doc = os.path.join(tmp, "note.txt"), os.path.join(tmp, "dogs.txt")
        open(note, "w").write(NOTE + "\n")
        open(doc, "w").write(DOC + "\n")
        with_note, without = os.path.join(tmp, "with.jsonl"), os.path.join(tmp, "without.jsonl")
        common = [*m, "--steps", "24", "--quiet", "--trace-level", "logits"]
        run_stepwise(BIN, "generate", *common, "--prompt", PROMPT, "--memory", note,
                     "--document", doc, "--trace", with_note)
        run_stepwise(BIN, "generate", *common, "--prompt", PROMPT, "--trace", without)

        ids = events(with_note, "forward")[0]["tokens"]
        bare = events(without, "forward")[0]["tokens"]
        want = sentencepiece_ids()
        if want is not None:
            check(ids == want, f"the prompt's {len(ids)} ids are sentencepiece's for the parts")
        segs = events(with_note, "chat")[0]["segments"]
        spans = {s["source"]: (s["start"], s["end"]) for s in segs}
        check("memory" in spans and "document:dogs.txt" in spans and spans["user"][1] == len(ids),
              f"the chat event credits memory {spans.get('memory')}, document:dogs.txt "
              f"{spans.get('document:dogs.txt')}, the prompt {spans.get('user')}")
        check(ids[spans["user"][0]:] == bare[1:],
              "the prompt's own tokens are those of the run without the note")

        # the same ids, no note: score computes the same logits
        scored = os.path.join(tmp, "scored.jsonl")
        run_stepwise(BIN, "score", *m, "--tokens", ",".join(map(str, ids)), "--out", scored,
                     "--top-n", "0", "--quiet")
        last = [e for e in events(scored, "logits") if e["pos"] == len(ids) - 1][0]["logits"]
        gen = [e for e in events(with_note, "logits") if e["pos"] == len(ids) - 1][0]["logits"]
        check(last == gen, "the logits after the prompt equal score's on the bare ids, bit for bit")
        hashes = [events(p, "run")[0]["environment"].get("model_files")
                  for p in (with_note, without, scored)]
        check(hashes[0] == hashes[1] == hashes[2] and hashes[0],
              "the same model files (SHA-256) in all three runs: the weights did not change")
        a = events(with_note, "done")[0]["tokens"][len(ids):]
        b = events(without, "done")[0]["tokens"][len(bare):]
        print(f"      with the note the story goes {a[:10]}...\n      without it {b[:10]}...")

        # batch: the same request as a line
        requests, out = os.path.join(tmp, "req.jsonl"), os.path.join(tmp, "out.jsonl")
        lines = [{"id": "note", "prompt": PROMPT, "memory": [NOTE],
                  "documents": [{"id": "dogs.txt", "text": DOC}], "max_tokens": 24},
                 {"id": "empty-doc", "prompt": PROMPT, "documents": [{"id": "x"}]},
                 {"id": "bad-id", "prompt": PROMPT, "documents": [{"id": "a/b", "text": "x"}]},
                 {"id": "long", "prompt": PROMPT, "memory": [NOTE * 60]}]
        with open(requests, "w") as f:
            f.writelines(json.dumps(r) + "\n" for r in lines)
        trace_dir = os.path.join(tmp, "traces")
        run_stepwise(BIN, "batch", *m, "--requests", requests, "--out", out, "--quiet",
                     "--trace", trace_dir, expect=(1,))
        got = {r["id"]: r for r in map(json.loads, open(out))}
        full = events(with_note, "done")[0]["tokens"]
        check(got["note"].get("tokens") == full,
              "batch's request with the note gives generate's tokens")
        bseg = events(os.path.join(trace_dir, "note.jsonl"), "chat")[0]["segments"]
        check(bseg == segs, "batch's trace has the same chat segments")
        for rid, words in (("empty-doc", "text"), ("bad-id", "letters, digits"),
                           ("long", "alone has")):
            err = got[rid].get("error", "")
            check(words in err, f"request {rid}: {err}")

        # generate refuses the same in one line, exit 2
        long_note = os.path.join(tmp, "long.txt")
        open(long_note, "w").write(NOTE * 20)
        bad_name = os.path.join(tmp, "a b.txt")
        open(bad_name, "w").write(DOC)
        for args, words in ((["--memory", long_note, "--context", "64"], "alone has"),
                            (["--document", bad_name], "letters, digits"),
                            (["--memory", os.path.join(tmp, "missing.txt")], "missing.txt")):
            r = run_stepwise(BIN, "generate", *m, "--prompt", PROMPT, "--quiet", *args, expect=(2,))
            check(words in r.stderr and len(r.stderr.strip().splitlines()) == 1,
                  f"generate {args[0]} refused: {r.stderr.strip()}")
    return check.summary("memory notes")


if __name__ == "__main__":
    sys.exit(main())
