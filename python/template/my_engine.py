"""The one function an engine team fills in: its own engine's logits for
token ids, teacher-forced (every position's next-token logits from one
pass over the ids, no sampling), as float32 [len(ids), vocab].

test_against_stepwise.py imports it from this folder. Replace the body with
a call into your engine (its Python binding, a subprocess that writes a
.f32 file, ...); keep the signature.
"""
import numpy as np


def my_engine_logits(model_path, ids):
    """Logits [len(ids), vocab] of the model at model_path for ids."""
    raise NotImplementedError(
        "python/template/my_engine.py: put your engine's call in my_engine_logits(model_path, ids); "
        f"it must return float32 [len(ids), vocab] for {len(ids)} ids of {model_path}")


def as_logits(rows):
    """Your engine's rows as the float32 array the comparison takes."""
    return np.ascontiguousarray(np.asarray(rows, dtype=np.float32))
