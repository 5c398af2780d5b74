#!/usr/bin/python3
"""The progress line (in `make test`): drawn only when stderr is a terminal.

Each command runs with stderr on a pseudo-terminal (Python's pty module)
and stdout on a pipe (generate also with stdout on the terminal, where its
streamed text is the progress and no line may be drawn over it). Expected: the line names what is being done with
done/total, a rate and the time left, is redrawn in place ("\\r" and erase
to the end of the line) and is cleared at the end ("\\r\\033[K" before the
summary, nothing of it left after). The same commands with stderr on a pipe,
or with --quiet, write no "\\r" and no escape at all, and their stdout is
byte for byte the same as under the terminal: traces and pipes are
unchanged.

    /usr/bin/python3 tests/progress_check.py build/stepwise
"""
import json
import os
import pty
import select
import subprocess
import sys
import tempfile
import time

from check_util import Checks, stories260k, TIMEOUT

BIN = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/stepwise")
CLEAR = "\r\033[K"


def run_on_terminal(args, both=False):
    """(stdout bytes, what the terminal got as text, exit status); both: stdout
    on the terminal too."""
    master, slave = pty.openpty()
    p = subprocess.Popen([BIN, *args], stdout=slave if both else subprocess.PIPE, stderr=slave,
                         stdin=subprocess.DEVNULL)
    os.close(slave)
    seen = b""
    deadline = time.monotonic() + TIMEOUT  # a hang fails the check, never holds it
    while time.monotonic() < deadline:
        if not select.select([master], [], [], 1.0)[0]:
            continue
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the child closed its end
            break
        if not chunk:
            break
        seen += chunk
    else:
        p.kill()
    out = b"" if both else p.stdout.read()
    p.wait(timeout=TIMEOUT)
    os.close(master)
    return out, seen.decode("utf-8", "replace").replace("\r\n", "\n"), p.returncode


def run_on_pipe(args):
    r = subprocess.run([BIN, *args], capture_output=True, timeout=TIMEOUT)
    return r.stdout, r.stderr.decode("utf-8", "replace"), r.returncode


def comparable(out):
    """stdout without batch's measured timings (which differ run to run)."""
    lines = []
    for line in out.decode("utf-8", "replace").splitlines():
        try:
            o = json.loads(line)
            o.pop("metrics", None)
            lines.append(json.dumps(o))
        except ValueError:
            lines.append(line)
    return lines


def main():
    check = Checks()
    m = stories260k("progress")
    if m is None:
        return 0
    model = m[1]
    with tempfile.TemporaryDirectory() as tmp:
        requests = os.path.join(tmp, "requests.jsonl")
        with open(requests, "w", encoding="utf-8") as f:
            for i in range(24):
                f.write(json.dumps({"id": f"r{i}", "prompt": "Once upon a time", "max_tokens": 40}) + "\n")
        long_text = " ".join(["The cat sat on the mat and looked at the moon."] * 20)  # 401 tokens
        cases = [
            ("batch", ["batch", *m, "--requests", requests, "--max-batch", "4"], "serving (requests): "),
            ("generate, text to a pipe", ["generate", *m, "--steps", "400", "--prompt", "Once"],
             "generating (tokens): "),
            ("score of a long sequence", ["score", *m, "--text", long_text, "--out", os.path.join(tmp, "s.jsonl"),
                                          "--top-n", "0"], "forward pass (layers): "),
            ("quantize", ["quantize", "--model", model, "--out", os.path.join(tmp, "q.q8")],
             "quantizing to int8 (matrices): "),
            ("convert", ["convert", *m, "--out", os.path.join(tmp, "c.gguf")], "writing the tensors: "),
        ]
        for name, args, want in cases:
            out_t, term, status = run_on_terminal(args)
            line = [seg for seg in term.split("\r") if seg.startswith(want)]
            shown = bool(line) and "/s" in line[-1] and "/" in line[-1].split(": ")[1]
            cleared = CLEAR in term and want not in term.rsplit(CLEAR, 1)[1]
            check(status == 0 and shown and cleared,
                  f"{name} on a terminal: {line[-1].strip() if line else 'no line'!r}, then cleared")
            out_p, err_p, status_p = run_on_pipe(args)
            check(status_p == 0 and "\r" not in err_p and "\033" not in err_p,
                  f"{name} on a pipe: no progress line")
            if name not in ("quantize", "convert"):  # their output is a file, checked elsewhere
                check(comparable(out_t) == comparable(out_p),
                      f"{name}: stdout the same on a terminal and on a pipe (batch: but its timings)")
            if name not in ("quantize", "convert"):
                _, term_q, _ = run_on_terminal(args + ["--quiet"])
                check("\r" not in term_q.replace("\n", "") and "\033" not in term_q,
                      f"{name} --quiet on a terminal: no progress line")
        _, term, _ = run_on_terminal(["generate", *m, "--steps", "40", "--prompt", "Once"], both=True)
        check("generating" not in term and "Once" in term,
              "generate with its text on the same terminal: the text, no line drawn over it")
    return check.summary("progress")


if __name__ == "__main__":
    sys.exit(main())
