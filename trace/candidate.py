"""Writing a candidate for `stepwise diff` from numpy arrays: the formats of
docs/oracle.md, so that an engine's test harness need not know them.

    import sys; sys.path.insert(0, "trace")
    from candidate import write_logits, write_trace

    # logits [positions, vocab] for the token ids that were fed in
    write_logits("cand.f32", logits, token_ids=ids)      # raw float32 + cand.f32.json
    write_logits("cand.npy", logits, token_ids=ids)      # numpy's .npy + cand.npy.json
    write_logits("cand.f32", logprobs, token_ids=ids, logprobs=True)

    # logits and activations under stepwise's hook names, one array of
    # [positions, ...] per hook: a JSON Lines trace that diff walks hook by hook
    write_trace("cand.jsonl", ids, logits=logits,
                activations={"blocks.0.resid_post": h0, "final_norm": f})

Positions are 0, 1, ... unless first_pos says otherwise. Values are written
as float32, little-endian.
"""
import json

import numpy as np


def _sidecar(path, fields):
    with open(path + ".json", "w") as f:
        json.dump(fields, f)
        f.write("\n")


def write_logits(path, rows, token_ids=None, first_pos=0, logprobs=False):
    """rows [positions, vocab] as FILE.f32 or FILE.npy, with the sidecar
    FILE.f32.json / FILE.npy.json (format, shape, first_pos, token_ids, values)."""
    rows = np.ascontiguousarray(rows, dtype="<f4")
    if rows.ndim != 2:
        raise ValueError("rows must be [positions, vocab]")
    fields = {"first_pos": int(first_pos), "values": "logprobs" if logprobs else "logits"}
    if token_ids is not None:
        if len(token_ids) != rows.shape[0]:
            raise ValueError("one token id per position")
        fields["token_ids"] = [int(t) for t in token_ids]
    if path.endswith(".npy"):
        np.save(path, rows)
    elif path.endswith(".f32"):
        rows.tofile(path)
        fields = dict({"format": "stepwise-logits-f32", "vocab_size": rows.shape[1],
                       "positions": rows.shape[0]}, **fields)
    else:
        raise ValueError("path must end in .f32 or .npy")
    _sidecar(path, fields)


def _floats(x):
    return [None if not np.isfinite(v) else float(v) for v in np.asarray(x, dtype=np.float32).ravel()]


def write_trace(path, token_ids, logits=None, activations=None, first_pos=0):
    """A JSON Lines candidate: per position, an activation event for each
    hook (stepwise's names, docs/trace-format.md) and a logits event, each
    stating its input token. The per-head attn.scores and attn.pattern,
    [positions, heads, keys] (keys up to the last position), are an event a
    position and head of the keys that position sees, as stepwise writes them."""
    activations = activations or {}
    with open(path, "w") as f:
        for i, token in enumerate(token_ids):
            pos = first_pos + i
            for hook, values in activations.items():
                if hook.endswith((".attn.scores", ".attn.pattern")) and np.ndim(values) == 3:
                    for h in range(np.shape(values)[1]):
                        f.write(json.dumps({"event": "activation", "hook": hook, "pos": pos, "head": h,
                                            "token": int(token),
                                            "data": _floats(values[i][h][:pos + 1])}) + "\n")
                    continue
                f.write(json.dumps({"event": "activation", "hook": hook, "pos": pos,
                                    "token": int(token), "data": _floats(values[i])}) + "\n")
            if logits is not None:
                f.write(json.dumps({"event": "logits", "pos": pos, "token": int(token),
                                    "logits": _floats(logits[i])}) + "\n")
