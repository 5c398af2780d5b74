#!/usr/bin/python3
"""score --tensors (issue 30): a score file's numbers as safetensors tensors,
checked against the JSON form and an independent reader (in `make test`):

1. The same run written both ways: `diff` of the JSON and the tensors forms,
   both ways round, finds max |d| 0 in every logit, hook and KV row; numpy,
   reading the safetensors file by its published layout (an 8-byte length,
   a JSON header, little-endian data), finds the JSON's floats bit for bit.
   The per-head attention hooks are [positions, heads, positions] tensors,
   padded past each position with 0 (pattern) and -inf (scores).
2. trace show, sample --from-trace and view (its heatmaps too) read the
   tensors form and print what they print for the JSON form.
3. A safetensors file written by another engine (tests/numpy_engine.py's
   logits and hooks, in the format's layout by numpy here) is a candidate
   on its own, with its ids in __metadata__.
4. Sizes: on a Llama-3-vocabulary shape (128,256 ids) over 64 positions,
   the JSON Lines file stays under 2 MB and the tensors file within 10% of
   4 x positions x vocab bytes.
5. Memory stays flat as the files grow: diff of two safetensors, .f32
   and .npy files of 256 positions x 32,000 ids (32 MB each) peaks within
   4 MiB of the same diff over 16 positions; trace show and sample
   --from-trace of a score over 64 positions of 128,256 ids, within 4 MiB of
   the same over 8 positions. Their rows stay in the file, mapped, read a
   row at a time (trace/diff_run.h).
6. Hostile: a tensors file missing, truncated, another run's, or of 4 logits rows for 3 stated ids; --tensors
   not ending in .safetensors or naming --out; rows a position filter left
   with gaps: exit 2, one line, nothing written.

    /usr/bin/python3 tests/tensors_check.py build/stepwise
"""
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from check_util import Checks, run_stepwise, TIMEOUT  # noqa: E402

ROOT = os.path.dirname(HERE)
MODELS = os.path.abspath(os.path.join(ROOT, os.environ.get("STEPWISE_MODELS", "../shared/models")))
BIN = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/stepwise")
IDS = "1,403,407,261,378,267,130,302,297,263"
check = Checks()


def read_safetensors(path):
    """{name: float32 array}, and the metadata, by the format's own layout."""
    blob = open(path, "rb").read()
    n = struct.unpack("<Q", blob[:8])[0]
    header = json.loads(blob[8:8 + n])
    meta = header.pop("__metadata__", {})
    out = {}
    for name, t in header.items():
        begin, end = t["data_offsets"]
        assert t["dtype"] == "F32"
        out[name] = np.frombuffer(blob[8 + n + begin:8 + n + end], dtype="<f4").reshape(t["shape"])
    return out, meta


def write_safetensors(path, tensors, meta):
    """The layout again, for a candidate another engine writes."""
    header, data, at = {"__metadata__": meta}, b"", 0
    for name, x in tensors.items():
        raw = np.ascontiguousarray(x, dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(x.shape), "data_offsets": [at, at + len(raw)]}
        data, at = data + raw, at + len(raw)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)


def events(path):
    return [json.loads(line) for line in open(path, encoding="utf-8")]


def diff_json(a, b, *extra):
    r = run_stepwise(BIN, "diff", a, b, "--json", *extra, expect=(0, 1))
    return json.loads(r.stdout)


def all_zero(d):
    cells = [v["max_abs"] for layer in d["layers"] for v in layer.values() if isinstance(v, dict)]
    kv = [x for layer in d.get("kv_layers", []) for x in (layer["max_abs_k"], layer["max_abs_v"])]
    return d["verdict"] == "pass" and d["max_abs"]["value"] == 0 and all(c == 0 for c in cells + kv)


def check_forms(tmp):
    model = os.path.join(MODELS, "stories260K.gguf")
    j, t, st = (os.path.join(tmp, n) for n in ("j.jsonl", "t.jsonl", "t.safetensors"))
    common = ["score", "--model", model, "--tokens", IDS, "--hooks", "*", "--trace-kv", "--reproducible"]
    run_stepwise(BIN, *common, "--out", j)
    run_stepwise(BIN, *common, "--out", t, "--tensors", st)
    d1, d2 = diff_json(j, t), diff_json(t, j)
    check(all_zero(d1) and all_zero(d2) and d1["activations"] == d2["activations"] > 0,
          f"diff of the JSON and the tensors forms, both ways: max |d| 0 over "
          f"{d1['positions']} positions, {d1['activations']} activations and the KV rows")
    tensors, meta = read_safetensors(st)
    evs = events(j)
    logits = np.array([e["logits"] for e in evs if e["event"] == "logits"], dtype=np.float32)
    mlp = np.array([e["data"] for e in evs if e["event"] == "activation"
                    and e["hook"] == "blocks.2.mlp_out"], dtype=np.float32)
    k = np.array([e["k"] for e in evs if e["event"] == "kv" and e["layer"] == 1], dtype=np.float32)
    same = (np.array_equal(tensors["logits"].view(np.uint32), logits.view(np.uint32))
            and np.array_equal(tensors["blocks.2.mlp_out"].view(np.uint32), mlp.view(np.uint32))
            and np.array_equal(tensors["kv.1.k"].view(np.uint32), k.view(np.uint32)))
    check(same and json.loads(meta["token_ids"]) == [int(i) for i in IDS.split(",")],
          f"numpy reads the tensors file ({len(tensors)} tensors): logits {tensors['logits'].shape}, "
          "a hook and a KV layer are the JSON's floats bit for bit, and its ids are the run's")
    kept = [e for e in events(t) if e["event"] in ("logits", "kv", "activation")]
    check(not kept, f"the JSON Lines file keeps no logits, KV or activation event ({len(kept)})")
    P, good = len(logits), True
    for hook, pad in (("blocks.1.attn.pattern", 0.0), ("blocks.1.attn.scores", -np.inf)):
        rows = [e for e in evs if e["event"] == "activation" and e["hook"] == hook]
        heads = 1 + max(e["head"] for e in rows)
        want = np.full((P, heads, P), pad, dtype=np.float32)
        for e in rows:
            want[e["pos"], e["head"], :e["pos"] + 1] = e["data"]
        good &= tensors[hook].shape == (P, heads, P) and np.array_equal(tensors[hook].view(np.uint32),
                                                                        want.view(np.uint32))
    check(good, f"the per-head hooks are [positions, heads, positions] tensors: the JSON's rows bit for bit, "
                f"padded past each position with 0 (pattern) and -inf (scores)")
    for args in (["trace", "show", "{}", "--pos", "4"],
                 ["sample", "--from-trace", "{}", "--pos", "3", "--temperature", "0.7", "--seed", "5"]):
        outs = [run_stepwise(BIN, *[a.replace("{}", p) for a in args]).stdout.replace(p, "T")
                for p in (j, t)]
        check(outs[0] == outs[1] and len(outs[0]) > 100,
              f"{args[0]} {args[1]}: the same output from either form")
    pages = []
    for p in (j, t):
        page = os.path.join(tmp, "page.html")
        run_stepwise(BIN, "view", p, "-o", page)
        pages.append(open(page, encoding="utf-8").read().replace(os.path.basename(p), "T"))
    check(pages[0] == pages[1], "view: the same page from either form")
    return j, t, st


def check_candidate(tmp, ref):
    import numpy_engine
    from gguf_read import read_gguf
    model = os.path.join(MODELS, "stories260K.gguf")
    ids = [int(i) for i in IDS.split(",")]
    logits, acts = numpy_engine.forward(*read_gguf(model), ids)
    cand = os.path.join(tmp, "numpy.safetensors")
    write_safetensors(cand, {"logits": logits, **acts}, {"token_ids": json.dumps(ids)})
    d = diff_json(ref, cand)
    check(d["verdict"] == "pass" and d["activations"] == len(ids) * len(acts) and d["inputs"]["checked"],
          f"a safetensors file from numpy's engine is a candidate: pass, {d['activations']} "
          f"activations, inputs checked, max |dlogit| {d['max_abs']['value']:.2g}")
    write_safetensors(cand, {"logits": logits}, {"token_ids": json.dumps([1] + ids[1:-1] + [5])})
    r = run_stepwise(BIN, "diff", ref, cand, "--teacher-forced", expect=(2,))
    check("inputs differ from position 9" in r.stderr, "its ids are its inputs: " + r.stderr.strip())


def check_sizes(tmp):
    """A Llama-3-sized vocabulary on a small body: the output files' sizes."""
    folder = os.path.join(tmp, "big-vocab")
    run_stepwise(BIN, "make-model", "--format", "hf", "--dim", "64", "--hidden", "128", "--layers", "2",
                 "--heads", "4", "--vocab", "128256", "--seq-len", "128", "--out", folder)
    ids = ",".join(str(1 + 1999 * i % 128000) for i in range(64))
    out, st, js = (os.path.join(tmp, n) for n in ("s.jsonl", "s.safetensors", "sj.jsonl"))
    run_stepwise(BIN, "score", "--model", folder, "--tokens", ids, "--top-n", "0", "--hooks", "default",
                 "--out", out, "--tensors", st)
    run_stepwise(BIN, "score", "--model", folder, "--tokens", ids, "--top-n", "0", "--hooks", "default",
                 "--out", js)
    floor = 4 * 64 * 128256
    jl, tb, jb = os.path.getsize(out), os.path.getsize(st), os.path.getsize(js)
    check(jl < 2_000_000 and floor <= tb <= 1.1 * floor,
          f"64 positions x 128,256 ids: the JSON Lines file {jl:,} bytes (< 2 MB), the tensors "
          f"{tb:,} ({tb / floor:.3f} x 4 x positions x vocab); the JSON form alone {jb:,}")


# Run in a fresh, small interpreter: a forked child's peak counts the
# pages it shared with its parent before exec, and this one holds arrays.
MEASURE = """
import os, sys
pid = os.fork()
if pid == 0:
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1), os.dup2(null, 2)
    os.execv(sys.argv[1], sys.argv[1:])
_, status, usage = os.wait4(pid, 0)
print(usage.ru_maxrss, os.waitstatus_to_exitcode(status))
"""


def peak_kib(*args):
    """The peak resident memory (KiB) of `stepwise ARGS...`, which must succeed."""
    r = subprocess.run([sys.executable, "-S", "-c", MEASURE, BIN, *args], capture_output=True, text=True,
                       timeout=TIMEOUT)
    peak, status = map(int, r.stdout.split())
    if status != 0:
        raise SystemExit(f"{' '.join(args)}: exit {status}")
    return peak


def write_logits_forms(folder, rows, ids):
    """rows [positions, vocab] as FOLDER/x.safetensors, x.f32 (with its
    sidecar) and x.npy, each by its format's layout."""
    os.makedirs(folder)
    write_safetensors(os.path.join(folder, "x.safetensors"), {"logits": rows},
                      {"token_ids": json.dumps(ids)})
    rows.astype("<f4").tofile(os.path.join(folder, "x.f32"))
    json.dump({"format": "stepwise-logits-f32", "vocab_size": rows.shape[1], "positions": rows.shape[0],
               "token_ids": ids}, open(os.path.join(folder, "x.f32.json"), "w"))
    np.save(os.path.join(folder, "x.npy"), rows.astype("<f4"))


def check_flat_memory(tmp):
    rng = np.random.default_rng(7)
    peaks = {}
    for P in (16, 256):
        rows = rng.standard_normal((P, 32000)).astype(np.float32)
        ids = [int(i) for i in rng.integers(0, 32000, P)]
        for side, x in (("ref", rows), ("cand", rows + np.float32(1e-6))):
            write_logits_forms(os.path.join(tmp, f"flat-{side}-{P}"), x, ids)
        for form in ("safetensors", "f32", "npy"):
            peaks[form, P] = peak_kib("diff", os.path.join(tmp, f"flat-ref-{P}", f"x.{form}"),
                                      os.path.join(tmp, f"flat-cand-{P}", f"x.{form}"))
    grown = 2 * 240 * 32000 * 4 / 1024
    for form in ("safetensors", "f32", "npy"):
        small, big = peaks[form, 16], peaks[form, 256]
        check(big - small < 4096, f"diff of two .{form} files: peak {small:,} KiB over 16 positions, "
                                  f"{big:,} KiB over 256 (the files grew by {grown:,.0f} KiB)")
    folder = os.path.join(tmp, "big-vocab")
    for P in (8, 64):
        ids = ",".join(str(1 + 1999 * i % 128000) for i in range(P))
        out, st = os.path.join(tmp, f"m{P}.jsonl"), os.path.join(tmp, f"m{P}.safetensors")
        run_stepwise(BIN, "score", "--model", folder, "--tokens", ids, "--top-n", "0", "--out", out,
                     "--tensors", st)
        peaks["show", P] = peak_kib("trace", "show", out, "--pos", str(P - 1))
        peaks["sample", P] = peak_kib("sample", "--from-trace", out, "--pos", str(P - 1), "--seed", "1")
    for what in ("show", "sample"):
        small, big = peaks[what, 8], peaks[what, 64]
        name = "trace show" if what == "show" else "sample --from-trace"
        check(big - small < 4096, f"{name} of a score's tensors: peak {small:,} KiB over 8 positions "
                                  f"of 128,256 ids, {big:,} KiB over 64 (its tensors grew by "
                                  f"{56 * 128256 * 4 / 1024:,.0f} KiB)")


def check_hostile(tmp, t, st):
    model = os.path.join(MODELS, "stories260K.gguf")
    moved = st + ".away"

    def refused(what, words, *args):
        r = subprocess.run([BIN, *args], capture_output=True, text=True, timeout=TIMEOUT)
        lines = r.stderr.strip().splitlines()
        check(r.returncode == 2 and len(lines) == 1 and words in lines[0],
              f"{what}: exit {r.returncode}, {lines[0] if lines else 'no message'}")

    os.rename(st, moved)
    refused("the tensors file missing", "cannot open", "diff", t, t)
    shutil.copy(moved, st)
    with open(st, "r+b") as f:
        f.truncate(os.path.getsize(moved) - 100)
    refused("the tensors file truncated", "t.safetensors", "diff", t, t)
    other = os.path.join(tmp, "other.jsonl")
    run_stepwise(BIN, "score", "--model", model, "--tokens", "1,5,9", "--out", other, "--tensors",
                 os.path.join(tmp, "other.safetensors"))
    shutil.copy(os.path.join(tmp, "other.safetensors"), st)
    refused("another run's tensors file", "is not the tensors file", "trace", "show", t)
    os.replace(moved, st)
    # a file of 4 logits rows whose run (event and metadata alike) states 3 ids
    from hf_reference import header_editor
    four = os.path.join(tmp, "four.jsonl")
    run_stepwise(BIN, "score", "--model", model, "--tokens", "1,5,9,11", "--out", four, "--tensors",
                 os.path.join(tmp, "four.safetensors"))
    edit = header_editor(open(os.path.join(tmp, "four.safetensors"), "rb").read())
    open(os.path.join(tmp, "four.safetensors"), "wb").write(
        edit(lambda h: h["__metadata__"].__setitem__("token_ids", "[1,5,9]")))
    lines = open(four, encoding="utf-8").read().replace('"token_ids":[1,5,9,11]', '"token_ids":[1,5,9]')
    open(four, "w", encoding="utf-8").write(lines)
    refused("4 logits rows for 3 stated ids", "logits has 4 rows for 3 token ids", "trace", "show", four)
    out = os.path.join(tmp, "never.jsonl")
    refused("--tensors not ending in .safetensors", "must end in .safetensors",
            "score", "--model", model, "--tokens", IDS, "--out", out, "--tensors", out + ".bin")
    refused("--tensors naming --out", "the same file", "score", "--model", model, "--tokens", IDS,
            "--out", out + ".safetensors", "--tensors", out + ".safetensors")
    refused("hook rows with gaps (--trace-positions 1,3)", "consecutive positions", "score", "--model",
            model, "--tokens", IDS, "--hooks", "default", "--trace-positions", "1,3", "--out", out,
            "--tensors",
            os.path.join(tmp, "never.safetensors"))
    check(not os.path.exists(out) and not os.path.exists(os.path.join(tmp, "never.safetensors")),
          "nothing was written by the refused runs")


def main():
    if not os.path.exists(os.path.join(MODELS, "stories260K.gguf")):
        print(f"tensors check skipped: no stories260K.gguf in {MODELS}")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        j, t, st = check_forms(tmp)
        check_candidate(tmp, j)
        check_sizes(tmp)
        check_flat_memory(tmp)
        check_hostile(tmp, t, st)
    return check.summary("tensors check")


if __name__ == "__main__":
    sys.exit(main())
