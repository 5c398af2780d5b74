"""What an engine team copies into its test suite: stepwise's logits for
fixed ids, made once and kept (a golden file), and the engine's own logits
for the same ids compared with them position by position. A failing
comparison's assertion message says where the engine first parts from the
reference.

Here "my engine" is tests/numpy_engine.py, float32 numpy written from
llama.cpp's graph, sharing nothing with stepwise but the GGUF file; put your
engine's call in my_engine_logits. Run with

    PYTHONPATH=python /usr/bin/python3 -m pytest python/examples/test_my_engine.py
"""
import os
import sys

import numpy as np
import pytest

import stepwise

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODELS = os.path.join(ROOT, os.environ.get("STEPWISE_MODELS", "../shared/models"))
MODEL = os.path.join(MODELS, "stories260K.gguf")
TEXT = "Once upon a time, there was a little girl named Lily."

sys.path.insert(0, os.path.join(ROOT, "tests"))
if not os.path.exists(MODEL):
    pytest.skip(f"no {MODEL}", allow_module_level=True)


def my_engine_logits(ids):
    """The engine under test: logits [len(ids), vocab] for the ids, teacher-forced."""
    import numpy_engine
    from gguf_read import read_gguf
    meta, tensors = read_gguf(MODEL)
    return numpy_engine.forward(meta, tensors, ids)[0]


@pytest.fixture(scope="session")
def ids():
    with stepwise.load(MODEL) as m:
        return m.tokenize(TEXT)


@pytest.fixture(scope="session")
def golden(ids, tmp_path_factory):
    """Made once (in a real suite: committed, or rebuilt with `stepwise golden`)."""
    path = tmp_path_factory.mktemp("golden") / "stories260K.f32"
    with stepwise.load(MODEL) as m:
        stepwise.write_logits(path, m.score(ids).logits, token_ids=ids)
    return path


def test_logits_match_the_reference(golden, ids):
    report = stepwise.diff(golden, my_engine_logits(ids), token_ids=ids)
    assert report.passed, report.summary()


def test_a_broken_engine_is_caught_where_it_breaks(golden, ids):
    """The same engine with one logit nudged at position 5: the comparison
    must fail, and say position 5."""
    logits = my_engine_logits(ids).copy()
    logits[5, 7] += 1e-2
    report = stepwise.diff(golden, logits, token_ids=ids)
    assert not report.passed
    assert (report["first_hook"], report["first_pos"]) == ("logits", 5), report.summary()


def test_the_golden_file_reads_back(golden, ids):
    run = stepwise.read(golden)
    assert run.token_ids == ids and run.logits.shape == (len(ids), 512)
