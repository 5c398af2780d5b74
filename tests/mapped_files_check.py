#!/usr/bin/python3
"""A model file that changes under a run is an error, not a crash or a
silent mix of weights (in `make test`).

With --weights stored the matrices are read from the mapped files for the
whole run (with the plain kernels, at every token). While `score` runs on a
BF16 folder:
- the weights file is truncated: reading a page the file no longer has
  raises SIGBUS, and stepwise must end with one line naming the cause and
  exit status 2, leaving no output file;
- the weights file is rewritten in place (same size, new bytes): the run
  finishes, sees that the file's modification time changed since it was
  mapped, and refuses its results: one line, status 2, and a trace whose
  last event is the error (no logits are given as results).
A control run on an untouched copy writes its output and exits 0.

    /usr/bin/python3 tests/mapped_files_check.py build/stepwise
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

from check_util import Checks, run_stepwise

BIN = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/stepwise")
TOKENS = ",".join(str(1 + (i * 37) % 500) for i in range(200))


def start_score(folder, out):
    return subprocess.Popen([BIN, "score", "--model", folder, "--tokens", TOKENS, "--top-n", "0",
                             "--kernels", "plain", "--quiet", "--out", out],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def wait_mapped(p, path, timeout=120):
    """Wait until the run has mapped path (it shows in /proc/PID/maps) and
    is still running: only then is the file in use."""
    real = os.path.realpath(path)
    deadline = time.time() + timeout
    while p.poll() is None and time.time() < deadline:
        try:
            with open(f"/proc/{p.pid}/maps", encoding="utf-8") as f:
                if real in f.read():
                    time.sleep(0.2)  # into the forward pass
                    return p.poll() is None
        except OSError:
            pass
        time.sleep(0.02)
    return False


def main():
    check = Checks()
    with tempfile.TemporaryDirectory() as tmp:
        base = os.path.join(tmp, "base")
        run_stepwise(BIN, "make-model", "--format", "hf", "--dtype", "bf16", "--dim", "512",
                     "--hidden", "1536", "--layers", "4", "--heads", "8", "--vocab", "512",
                     "--seq-len", "512", "--out", base)
        weights = "model.safetensors"

        control = os.path.join(tmp, "control")
        shutil.copytree(base, control)
        out = os.path.join(tmp, "control.jsonl")
        p = start_score(control, out)
        _, err = p.communicate(timeout=600)
        check(p.returncode == 0 and os.path.exists(out),
              f"control: an untouched folder scores (exit {p.returncode}) {err.strip()}")

        cut = os.path.join(tmp, "cut")
        shutil.copytree(base, cut)
        out = os.path.join(tmp, "cut.jsonl")
        p = start_score(cut, out)
        running = wait_mapped(p, os.path.join(cut, weights))
        os.truncate(os.path.join(cut, weights), 4096)
        _, err = p.communicate(timeout=600)
        lines = err.strip().splitlines()
        check(running and p.returncode == 2 and len(lines) == 1 and "truncated" in lines[0]
              and "SIGBUS" in lines[0] and not os.path.exists(out),
              f"truncated while in use: exit {p.returncode}, one line ({lines[-1] if lines else ''})"
              ", no output")

        changed = os.path.join(tmp, "changed")
        shutil.copytree(base, changed)
        out = os.path.join(tmp, "changed.jsonl")
        path = os.path.join(changed, weights)
        p = start_score(changed, out)
        running = wait_mapped(p, path)
        size = os.path.getsize(path)
        with open(path, "r+b") as f:  # the same size, other bytes, in place
            f.seek(size // 2)
            f.write(b"\x3f\x80" * 4096)
        _, err = p.communicate(timeout=600)
        lines = err.strip().splitlines()
        events = [json.loads(line) for line in open(out, encoding="utf-8")] if os.path.exists(out) else []
        last = events[-1] if events else {}
        check(running and p.returncode == 2 and len(lines) == 1
              and "was written while the run read it" in lines[0] and last.get("event") == "error"
              and not any(e.get("event") == "scored" for e in events),
              f"rewritten while in use: exit {p.returncode}, one line "
              f"({lines[-1] if lines else ''}), the trace ends in the error")
    return check.summary("mapped files")


if __name__ == "__main__":
    sys.exit(main())
