#!/usr/bin/python3
"""The standalone pytest template (python/template/), run as an engine team
would run it (in `make test`): copied into a temporary folder outside the
checkout, with only the `stepwise` package on the path, and my_engine.py
filled in with the project's numpy engine (tests/numpy_engine.py, float32
numpy from llama.cpp's graph, sharing nothing with stepwise but the GGUF
file) as the candidate.

1. It passes on stories260K.gguf, making its golden file on the first run
   and reusing it (the same bytes, not rewritten) on the second.
2. Without its model it fails, saying why, unless STEPWISE_ALLOW_SKIP=1
   opts into a skip; the stub my_engine.py, as shipped, fails and says
   what to fill in.
3. A broken engine (one RMSNorm weight off by 1%) fails the comparison.

    /usr/bin/python3 tests/python_template_check.py
"""
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_util import Checks, TIMEOUT  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = os.path.abspath(os.path.join(ROOT, os.environ.get("STEPWISE_MODELS", "../shared/models")))
MODEL = os.path.join(MODELS, "stories260K.gguf")
check = Checks()

# the team's adapter: here the numpy engine of the checkout's tests/, its
# folder given by the check (a team imports its own engine)
ADAPTER = '''import os, sys
import numpy as np
sys.path.insert(0, os.environ["NUMPY_ENGINE_DIR"])
import numpy_engine
from gguf_read import read_gguf


def my_engine_logits(model_path, ids):
    meta, tensors = read_gguf(model_path)
    if os.environ.get("BREAK_ENGINE"):  # one norm weight off by 1%
        qtype, dims, raw = tensors["blk.0.attn_norm.weight"]
        w = np.frombuffer(raw, np.float32).copy()
        w[3] *= 1.01
        tensors["blk.0.attn_norm.weight"] = (qtype, dims, w.tobytes())
    return np.asarray(numpy_engine.forward(meta, tensors, ids)[0], dtype=np.float32)
'''


def pytest(folder, **env):
    base = {k: v for k, v in os.environ.items()
            if not k.startswith("STEPWISE_TEMPLATE") and k not in ("STEPWISE_ALLOW_SKIP", "PYTHONPATH")}
    base.update(PYTHONPATH=os.path.join(ROOT, "python"), NUMPY_ENGINE_DIR=os.path.join(ROOT, "tests"),
                PYTHONDONTWRITEBYTECODE="1", **env)
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rsf"],
                       capture_output=True, text=True, env=base, cwd=folder, timeout=TIMEOUT)
    return r.returncode, r.stdout + r.stderr


def last_line(out):
    lines = [x for x in out.strip().splitlines() if x.strip()]
    return lines[-1] if lines else ""


def main():
    if not os.path.exists(MODEL):
        print(f"python template check skipped: no {MODEL}")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        repo = os.path.join(tmp, "engine", "tests")  # outside the checkout
        shutil.copytree(os.path.join(ROOT, "python", "template"), repo,
                        ignore=shutil.ignore_patterns("__pycache__", "golden"))
        status, out = pytest(repo)
        check(status == 1 and "STEPWISE_TEMPLATE_MODEL is not set" in out,
              f"the template as shipped, no model set, fails saying so: {last_line(out)}")
        status, out = pytest(repo, STEPWISE_TEMPLATE_MODEL=MODEL)
        check(status == 1 and "put your engine's call in my_engine_logits" in out,
              f"the stub my_engine.py fails, saying what to fill in: {last_line(out)}")
        with open(os.path.join(repo, "my_engine.py"), "w") as f:
            f.write(ADAPTER)
        status, out = pytest(repo, STEPWISE_TEMPLATE_MODEL=MODEL)
        golden = os.path.join(repo, "golden")
        made = sorted(os.listdir(golden)) if os.path.isdir(golden) else []
        check(status == 0 and "3 passed" in last_line(out) and len(made) == 2,
              f"from {repo} with only the package: the numpy engine against stories260K.gguf: "
              f"{last_line(out)}; golden set made: {made}")
        stamps = {n: os.stat(os.path.join(golden, n)).st_mtime_ns for n in made}
        status, out = pytest(repo, STEPWISE_TEMPLATE_MODEL=MODEL)
        again = {n: os.stat(os.path.join(golden, n)).st_mtime_ns for n in sorted(os.listdir(golden))}
        check(status == 0 and again == stamps, f"the second run reuses the golden set: {last_line(out)}")
        status, out = pytest(repo, STEPWISE_TEMPLATE_MODEL=MODEL, BREAK_ENGINE="1")
        check(status == 1 and "failed" in last_line(out) and "FAILED test_against_stepwise.py::"
              "test_my_engine_matches_stepwise" in out,
              f"an engine with one norm weight off by 1% fails the comparison: {last_line(out)}")
        missing = os.path.join(tmp, "no-such-model.gguf")
        status, out = pytest(repo, STEPWISE_TEMPLATE_MODEL=missing)
        check(status == 1 and "does not exist" in out and "skipped" not in last_line(out),
              f"a missing model fails, not skips: {last_line(out)}")
        status, out = pytest(repo, STEPWISE_TEMPLATE_MODEL=missing, STEPWISE_ALLOW_SKIP="1")
        check(status == 0 and "3 skipped" in last_line(out),
              f"STEPWISE_ALLOW_SKIP=1 skips instead: {last_line(out)}")
    return check.summary("python template check")


if __name__ == "__main__":
    sys.exit(main())
