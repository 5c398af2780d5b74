"""stepwise as the golden reference in an engine's own test suite: copy this
folder (test_against_stepwise.py and my_engine.py) into your repository,
fill in my_engine.py, and run `python3 -m pytest`. Nothing here depends on
the stepwise checkout: only the `stepwise` package (`make install`, or
`pip install ./python`, docs/library.md).

Set:
  STEPWISE_TEMPLATE_MODEL   the model both engines run (a GGUF file, a
                            Hugging Face folder, ...); required
  STEPWISE_TEMPLATE_TEXT    the prompt (default: a fixed sentence)
  STEPWISE_TEMPLATE_GOLDEN  the folder the golden logits live in (default:
                            golden/ beside this file); made once, on the
                            first run, from stepwise: commit it
  STEPWISE_TEMPLATE_PRESET  the tolerance (default fp32; f16-kv for an
                            engine with a float16 KV cache, docs/oracle.md)
  STEPWISE_ALLOW_SKIP=1     skip, not fail, when the model is missing (a
                            CI machine without it then tests nothing, and
                            says so; without it the run fails)
"""
import hashlib
import json
import os
import sys

import pytest

import stepwise

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from my_engine import my_engine_logits  # noqa: E402

TEXT = os.environ.get("STEPWISE_TEMPLATE_TEXT", "Once upon a time, there was a little girl named Lily.")
PRESET = os.environ.get("STEPWISE_TEMPLATE_PRESET", "fp32")


@pytest.fixture(scope="session")
def model_path():
    path = os.environ.get("STEPWISE_TEMPLATE_MODEL")
    if path and os.path.exists(path):
        return path
    why = (f"the model {path} does not exist" if path else "STEPWISE_TEMPLATE_MODEL is not set")
    if os.environ.get("STEPWISE_ALLOW_SKIP") == "1":
        pytest.skip(why + " (STEPWISE_ALLOW_SKIP=1)")
    pytest.fail(why + ": nothing would be tested (STEPWISE_ALLOW_SKIP=1 skips instead)")


@pytest.fixture(scope="session")
def golden(model_path):
    """(the golden file, its token ids): stepwise's logits for TEXT, made once
    under a name that says which model and prompt they belong to."""
    folder = os.environ.get("STEPWISE_TEMPLATE_GOLDEN", os.path.join(HERE, "golden"))
    key = hashlib.sha256(f"{os.path.abspath(model_path)}\n{TEXT}".encode()).hexdigest()[:16]
    path = os.path.join(folder, f"{os.path.basename(model_path.rstrip('/'))}-{key}.f32")
    if not os.path.exists(path):
        os.makedirs(folder, exist_ok=True)
        with stepwise.load(model_path) as m:
            ids = m.tokenize(TEXT)
            stepwise.write_logits(path, m.score(ids).logits, token_ids=ids)
    return path, stepwise.read(path).token_ids


def test_my_engine_matches_stepwise(model_path, golden):
    path, ids = golden
    report = stepwise.diff(path, my_engine_logits(model_path, ids), token_ids=ids, preset=PRESET)
    assert report.passed, report.summary()


def test_the_comparison_catches_a_nudged_logit(model_path, golden):
    """The comparison itself works: one logit moved by 1e-2 at position 2
    fails, and the report names position 2."""
    path, ids = golden
    logits = my_engine_logits(model_path, ids).copy()
    logits[2, 0] += 1e-2
    report = stepwise.diff(path, logits, token_ids=ids, preset=PRESET)
    assert not report.passed and report["first_pos"] == 2, report.summary()


def test_the_golden_file_is_whole(golden):
    path, ids = golden
    run = stepwise.read(path)
    assert run.logits.shape[0] == len(ids) and len(ids) > 1, json.dumps(run.token_ids)
