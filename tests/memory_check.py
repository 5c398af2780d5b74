"""A model larger than the memory a process may take fails before loading,
stating the bytes (in `make test`): make-model of a 667 MB shape under a
300 MB address-space limit (RLIMIT_AS, which the check reads beside
/proc/meminfo's MemAvailable) is refused in one line naming both figures,
and the same shape's needs are the closed form (params x 4 bytes). And
compare-quant, under limits that run out at each of its steps in turn,
completes or fails in one line naming what ran out (compare_quant_sweep).
And a Q8_0 file run with int8 activations holds its bytes about once
(q8_0_resident).

    /usr/bin/python3 tests/memory_check.py build/stepwise
"""
import json
import os
import re
import resource
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_util import Checks, TIMEOUT  # noqa: E402

BIN = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/stepwise")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = os.path.abspath(os.path.join(ROOT, os.environ.get("STEPWISE_MODELS", "../shared/models")))
# dim 1024, hidden 4096, 8 layers, 8 heads (MHA), vocab 32000, tied: the
# embedding 32000 x 1024, per layer wq/wk/wv/wo 4 x 1024^2, w1/w2/w3 3 x 1024 x 4096,
# two norms 2 x 1024, and the final norm 1024
PARAMS = 32000 * 1024 + 8 * (4 * 1024 * 1024 + 3 * 1024 * 4096 + 2 * 1024) + 1024
LIMIT = 300 << 20


def limited():
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))


def main():
    check = Checks()
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "big.bin")
        r = subprocess.run([BIN, "make-model", "--dim", "1024", "--hidden", "4096", "--layers", "8",
                            "--heads", "8", "--vocab", "32000", "--seq-len", "256", "--out", out],
                           capture_output=True, text=True, preexec_fn=limited, timeout=TIMEOUT)
        want = "the weights need %d bytes" % (PARAMS * 4)
        check(r.returncode == 2 and want in r.stderr and "can take" in r.stderr
              and r.stderr.count("\n") == 1 and not os.path.exists(out),
              "a %d-byte model under a %d-byte limit: %s" % (PARAMS * 4, LIMIT, r.stderr.strip()))
    compare_quant_sweep(check)
    q8_0_resident(check)
    return check.summary("memory check")


def q8_0_resident(check):
    """A Q8_0 file run with int8 activations holds its bytes about once
    (issue 49): its blocks are packed straight from the mapped file, whose
    pages go back as they are packed (fast kernels), or copied to int8 rows
    likewise (plain). Peak resident memory, from generate's metrics line,
    within 1.1 x the file + the KV cache at the context (inspect's figure)
    on both kernels: before, 2.5 x."""
    with tempfile.TemporaryDirectory() as tmp:
        src, gguf = os.path.join(tmp, "mid.bin"), os.path.join(tmp, "mid.gguf")
        subprocess.run([BIN, "make-model", "--dim", "768", "--hidden", "2048", "--layers", "6", "--heads", "12",
                        "--vocab", "32000", "--seq-len", "256", "--out", src], check=True, capture_output=True,
                       timeout=TIMEOUT)
        subprocess.run([BIN, "convert", "--model", src, "--tokenizer", os.path.join(MODELS, "tokenizer.bin"),
                        "--type", "q8_0", "--out", gguf], check=True, capture_output=True, timeout=TIMEOUT)
        os.remove(src)
        info = json.loads(subprocess.run([BIN, "inspect", "--model", gguf, "--context", "256", "--json"],
                                         capture_output=True, text=True, check=True, timeout=TIMEOUT).stdout)
        kv, size = info["this_model"]["kv_bytes_at_context"], os.path.getsize(gguf)
        for kernels in ("fast", "plain"):
            r = subprocess.run([BIN, "generate", "--model", gguf, "--prompt", "Once", "--steps", "2",
                                "--quant-activations", "int8", "--kernels", kernels], capture_output=True, text=True,
                               timeout=TIMEOUT)
            peak = re.search(r"peak RSS ([\d.]+) MiB", r.stderr + r.stdout)
            peak = float(peak.group(1)) * 2**20 if peak else float("inf")
            check(r.returncode == 0 and peak <= 1.1 * size + kv,
                  "a %.1f MiB Q8_0 file, int8 activations, %s kernels: peak resident %.1f MiB <= 1.1 x the file "
                  "+ the KV cache (%.1f MiB)" % (size / 2**20, kernels, peak / 2**20, (1.1 * size + kv) / 2**20))


def compare_quant_sweep(check):
    """compare-quant, whose every step allocates (two models, the scores,
    the JSON), under address-space limits from 4 to 24 MiB: each run either
    completes (its JSON whole) or exits 2 with one line naming what ran out,
    never a crash or a message left unset; the sweep must reach several
    different failures and a success."""
    models = os.environ.get("STEPWISE_MODELS", os.path.join(os.path.dirname(__file__), "..", "..", "shared",
                                                            "models"))
    model, tok = os.path.join(models, "stories260K.bin"), os.path.join(models, "tok512.bin")
    if not os.path.exists(model):
        check.skip("compare-quant under memory limits: no stories260K.bin in %s" % models)
        return
    text = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "text", "prompt-100.txt")
    outcomes, bad = {}, []
    for kib in range(4 << 10, (24 << 10) + 1, 512):
        def limit(kib=kib):
            resource.setrlimit(resource.RLIMIT_AS, (kib << 10, kib << 10))
        r = subprocess.run([BIN, "compare-quant", "--model", model, "--tokenizer", tok, "--text", text, "--json",
                            "--threads", "1"], capture_output=True, text=True, preexec_fn=limit, timeout=TIMEOUT)
        err = r.stderr
        if r.returncode == 127 and "error while loading shared libraries" in err:
            continue  # the dynamic loader, before stepwise runs
        if r.returncode == 0:
            whole = len(json.loads(r.stdout)["configs"]) == 5 and err == ""
            outcomes["completes"] = outcomes.get("completes", 0) + 1
            if not whole:
                bad.append((kib, "incomplete output"))
            continue
        one_line = r.returncode == 2 and err.startswith("stepwise: error: ") and err.count("\n") == 1
        named = any(w in err for w in ("memory", "Cannot allocate", "could not start"))
        if not (one_line and named and err[:-1].isprintable()):
            bad.append((kib, r.returncode, err[:120]))
        outcomes[err.split(":")[2].strip() if err.count(":") > 2 else err] = 1
    check(not bad and "completes" in outcomes and len(outcomes) >= 4, "compare-quant under address-space limits of 4 to 24 MiB: %d kinds of "
          "outcome (%s), each a whole run or one line naming what ran out%s"
          % (len(outcomes), ", ".join(sorted(outcomes))[:200], "; bad: %s" % bad[:3] if bad else ""))


if __name__ == "__main__":
    sys.exit(main())
