"""What the Python checks share: ok/FAIL lines with a count of failures,
and running the stepwise binary with the exit status a case expects."""
import subprocess


class Checks:
    """Prints "ok    WHAT" or "FAIL  WHAT" and counts the failures."""

    def __init__(self):
        self.failures = 0

    def __call__(self, ok, what):
        print(("ok    " if ok else "FAIL  ") + what)
        self.failures += 0 if ok else 1

    def summary(self, name):
        print(f"{name}: {'PASS' if self.failures == 0 else f'{self.failures} FAILED'}")
        return 1 if self.failures else 0


def run_stepwise(binary, *args, expect=(0,), env=None):
    """Run binary ARGS...; its CompletedProcess (text), or exit the check
    with its stderr when the status is not one of expect."""
    r = subprocess.run([binary] + list(args), capture_output=True, text=True, encoding="utf-8",
                       env=env)
    if r.returncode not in expect:
        raise SystemExit(f"{' '.join(args)}: exit {r.returncode}, want {expect}\n{r.stderr}")
    return r


def stories260k(check_name):
    """["--model", stories260K.bin, "--tokenizer", tok512.bin] (absolute paths)
    from $STEPWISE_MODELS, or None after saying the check is skipped."""
    import os
    models = os.path.abspath(os.environ.get("STEPWISE_MODELS", "../shared/models"))
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
    path = os.path.join(os.path.abspath(os.environ.get("STEPWISE_MODELS", "../shared/models")),
                        "tok512.model")
    return spm.SentencePieceProcessor(model_file=path).encode if os.path.exists(path) else None
