"""What the Python checks share: ok/FAIL lines with a count of failures,
and running the stepwise binary with the exit status a case expects.

Every run here has a timeout (run() below): a program that hangs fails
its check with a message, it does not hold `make test` forever."""
import subprocess

# Seconds a run may take unless its check says otherwise: the slowest runs
# of the checks (a 1B model's passes) take about a minute; a hang is caught.
TIMEOUT = 600
# A measurement's runs (the benchmarks, a test area's whole row): minutes
# each on a 1B model, never an hour.
LONG_TIMEOUT = 3600


def run(args, timeout=TIMEOUT, **kwargs):
    """subprocess.run(args, **kwargs) under a timeout: a run that outlives
    it exits the check with a message naming the command (a hang is a
    failure, not a wait)."""
    try:
        return subprocess.run(args, timeout=timeout, **kwargs)
    except subprocess.TimeoutExpired:
        raise SystemExit(f"{' '.join(map(str, args))}: no exit within {timeout} s (a hang)") from None


class Checks:
    """Prints "ok    WHAT" or "FAIL  WHAT" and counts the failures; a check
    that cannot run here says so with skip(), never as an ok line."""

    def __init__(self):
        self.failures = self.skipped = 0

    def __call__(self, ok, what):
        print(("ok    " if ok else "FAIL  ") + what)
        self.failures += 0 if ok else 1

    def skip(self, what):
        print("skip  " + what)
        self.skipped += 1

    def summary(self, name):
        skipped = f" ({self.skipped} skipped)" if self.skipped else ""
        print(f"{name}: {'PASS' if self.failures == 0 else f'{self.failures} FAILED'}{skipped}")
        return 1 if self.failures else 0


def run_stepwise(binary, *args, expect=(0,), env=None, timeout=TIMEOUT):
    """Run binary ARGS...; its CompletedProcess (text), or exit the check
    with its stderr when the status is not one of expect, or with a message
    when it has not exited within timeout seconds."""
    r = run([binary] + list(args), capture_output=True, text=True, encoding="utf-8", env=env,
            timeout=timeout)
    if r.returncode not in expect:
        raise SystemExit(f"{' '.join(args)}: exit {r.returncode}, want {expect}\n{r.stderr}")
    return r


def score_run(binary, model, tokens, *extra, hooks=None):
    """`stepwise score` of the ids tokens (no top-n, reproducible): (the
    logits [T, vocab] as float64, {hook: {(pos, head): data}} of the
    activation events, the trace's text)."""
    import json
    import os
    import tempfile
    import numpy as np
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "s.jsonl")
        args = ["score", "--model", model, "--tokens", ",".join(map(str, tokens)), "--top-n", "0",
                "--reproducible", "--out", out, *extra]
        if hooks:
            args += ["--hooks", hooks]
        run_stepwise(binary, *args)
        rows, acts = {}, {}
        with open(out, encoding="utf-8") as f:
            text = f.read()
        for line in text.splitlines():
            e = json.loads(line)
            if e.get("event") == "logits":
                rows[e["pos"]] = e["logits"]
            elif e.get("event") == "activation":
                acts.setdefault(e["hook"], {})[(e["pos"], e.get("head", -1))] = e["data"]
    return np.array([rows[p] for p in range(len(tokens))], dtype=np.float64), acts, text


def write_candidate(path, acts, nudge=None):
    """A candidate of activation events, {name: rows [T, ...]} under another
    engine's names; nudge (name, pos) moves one value of that row by 5% of
    its largest (+ 0.05), for diff to find. Returns path."""
    import json
    import numpy as np
    with open(path, "w", encoding="utf-8") as f:
        for name, rows in acts.items():
            for pos, row in enumerate(rows):
                row = np.array(row, dtype=np.float32).reshape(-1)
                if nudge == (name, pos):
                    row[1] += 0.05 * (np.abs(row).max() + 1)
                f.write(json.dumps({"event": "activation", "hook": name, "pos": pos,
                                    "data": [float(v) for v in row]}) + "\n")
    return path


def diff_names(binary, ref, cand, engine):
    """`stepwise diff REF CAND --names ENGINE --json` as a dict ({"error":
    stderr} when it printed no report)."""
    import json
    r = run([binary, "diff", ref, cand, "--names", engine, "--json"], capture_output=True,
                       text=True)
    return json.loads(r.stdout) if r.stdout else {"error": r.stderr}


def check_names_diff(check, binary, tmp, folder, tokens, acts, engine, nudges, family, least):
    """The float64 reference's activations {name: rows} under ENGINE's names
    as a candidate against `score --hooks '*'` of folder: diff --names
    ENGINE passes them (at least `least` activations compared), and a nudge
    to each (name, hook) of nudges at position 5 is found at that hook and
    position."""
    import os
    ref = os.path.join(tmp, engine + "-ref.jsonl")
    run_stepwise(binary, "score", "--model", folder, "--tokens", ",".join(map(str, tokens)), "--top-n", "0",
                 "--hooks", "*", "--out", ref)
    cand = os.path.join(tmp, engine + "-cand.jsonl")
    d = diff_names(binary, ref, write_candidate(cand, acts), engine)
    check(d.get("verdict") == "pass" and d.get("activations", 0) >= least,
          f"the float64 reference under Hugging Face's {family} names passes diff --names {engine} "
          f"({d.get('activations')} activations)")
    for module, hook in nudges:
        first = diff_names(binary, ref, write_candidate(cand, acts, (module, 5)), engine).get(
            "first_divergence") or {}
        check(first.get("hook") == hook and first.get("pos") == 5,
              f"a nudge to {module} at pos 5 is found at {hook}, pos 5 ({first.get('hook')}, {first.get('pos')})")


def check_refused_configs(check, binary, tmp, base, tensors, cases):
    """Each (what, change, words) of cases: a folder of base's config.json
    with change over it and tensors (tests/hf_reference.py's writer) is
    refused by score with exit 2 and one error line holding words, and no
    output file."""
    import os
    import hf_reference
    for what, change, words in cases:
        folder = os.path.join(tmp, "bad")
        hf_reference.write_model_dir(folder, dict(base, **change), tensors, "F32")
        out = os.path.join(tmp, "refused.jsonl")
        r = run([binary, "score", "--model", folder, "--tokens", "1,2", "--top-n", "0", "--out", out],
                capture_output=True, text=True)
        line = r.stderr.strip()
        check(r.returncode == 2 and words in line and len(line.splitlines()) == 1 and not os.path.exists(out),
              f"config.json with {what}: refused ({line})")


def models_dir():
    """$STEPWISE_MODELS (default ../shared/models) as an absolute path, a
    relative one taken from the project's root."""
    import os
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return os.path.abspath(os.path.join(root, os.environ.get("STEPWISE_MODELS", "../shared/models")))


def stories260k(check_name):
    """["--model", stories260K.bin, "--tokenizer", tok512.bin] (absolute paths)
    from $STEPWISE_MODELS, or None after saying the check is skipped."""
    import os
    models = models_dir()
    model = os.path.join(models, "stories260K.bin")
    if not os.path.exists(model):
        print(f"{check_name}: no stories260K in {models}, skipped")
        return None
    return ["--model", model, "--tokenizer", os.path.join(models, "tok512.bin")]


def tok512_encoder():
    """sentencepiece's encode for $STEPWISE_MODELS/tok512.model (ids, no
    BOS), or None when sentencepiece or the model is missing."""
    import os
    try:
        import sentencepiece as spm
    except ImportError:
        return None
    path = os.path.join(models_dir(), "tok512.model")
    return spm.SentencePieceProcessor(model_file=path).encode if os.path.exists(path) else None
