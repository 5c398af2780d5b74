"""A model larger than the memory a process may take fails before loading,
stating the bytes (in `make test`): make-model of a 667 MB shape under a
300 MB address-space limit (RLIMIT_AS, which the check reads beside
/proc/meminfo's MemAvailable) is refused in one line naming both figures,
and the same shape's needs are the closed form (params x 4 bytes).

    /usr/bin/python3 tests/memory_check.py build/stepwise
"""
import os
import resource
import subprocess
import sys
import tempfile

BIN = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/stepwise")
# dim 1024, hidden 4096, 8 layers, 8 heads (MHA), vocab 32000, tied: the
# embedding 32000 x 1024, per layer wq/wk/wv/wo 4 x 1024^2, w1/w2/w3 3 x 1024 x 4096,
# two norms 2 x 1024, and the final norm 1024
PARAMS = 32000 * 1024 + 8 * (4 * 1024 * 1024 + 3 * 1024 * 4096 + 2 * 1024) + 1024
LIMIT = 300 << 20


def limited():
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))


def main():
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "big.bin")
        r = subprocess.run([BIN, "make-model", "--dim", "1024", "--hidden", "4096", "--layers", "8",
                            "--heads", "8", "--vocab", "32000", "--seq-len", "256", "--out", out],
                           capture_output=True, text=True, preexec_fn=limited)
        want = "the weights need %d bytes" % (PARAMS * 4)
        ok = (r.returncode == 2 and want in r.stderr and "can take" in r.stderr
              and r.stderr.count("\n") == 1 and not os.path.exists(out))
        print(("ok    " if ok else "FAIL  ") + "a %d-byte model under a %d-byte limit: %s"
              % (PARAMS * 4, LIMIT, r.stderr.strip()))
    print("memory check: %s" % ("PASS" if ok else "FAILED"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
