#!/usr/bin/python3
"""The Python package given what it must refuse (issue 45, in `make test`
after `make lib`): each case a TypeError, ValueError or StepwiseError that
names the problem, raised before libstepwise is called, or the right
answer; never a wrong one. Where it matters, a case shows that the bad
value would have reached C (ctypes turns 1.9 into 1, 2**32 + 40 into 40,
and ends a string at NUL) by the answer it would have given.

1. ids: floats, bools, 2-D input, values past int32, negative ids and ids
   past the vocabulary, naming the first bad index; hooks matching nothing
   (listing what fires), an empty list; NUL in text and paths; a bytes
   path works; a closed model says so; seed=0; a max_new of 2**31 - 10
   stops when the context is full, without allocating for it.
2. tokenize of text whose ids outnumber its bytes + 8 (ten spaces under a
   tokenizer that widens a space to U+2581 and falls back to its 3 bytes):
   the CLI's ids.
3. read() of a set whose manifest.json is a FIFO (no hang), nested 100,000
   deep (StepwiseError, not RecursionError), or whose entries are not
   objects.
4. diff() of logits computed on other ids: a fail naming the position.
5. One model shared by 4 Python threads (ctypes releases the GIL): each
   score the bits of one thread.
6. copy_weights=True: the model's file truncated while open, scores
   unchanged; without it the same truncation kills the process with SIGBUS
   (the risk docs/library.md states), and the library installs no handler.

    /usr/bin/python3 tests/python_hostile_check.py build/stepwise
"""
import ctypes
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "python"))
from check_util import Checks, models_dir, run_stepwise  # noqa: E402
from tokenizer_json_write import sentencepiece_style  # noqa: E402

MODELS = models_dir()
BIN = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/stepwise")
GGUF = os.path.join(MODELS, "stories260K.gguf")
IDS = [1, 403, 407, 261, 378, 267, 130, 302, 297, 263]
check = Checks()


def refused(what, fn, kinds, words):
    """fn() must raise one of kinds with words in its message, within 10 s."""
    start = time.monotonic()
    try:
        fn()
    except kinds as e:
        took = time.monotonic() - start
        check(words in str(e) and took < 10,
              f"{what}: {type(e).__name__}: {e}" + (f" ({took:.1f} s)" if took > 1 else ""))
        return
    except Exception as e:  # noqa: BLE001: any other exception is the failure being reported
        check(False, f"{what}: {type(e).__name__} instead: {e}")
        return
    check(False, f"{what}: no error")


def check_inputs(stepwise):
    import stepwise as sw
    bad = (TypeError, ValueError, sw.StepwiseError)
    with stepwise.load(GGUF) as m:
        want = m.score(IDS[:3]).logits
        floor = m.score([1, 40, 41]).logits
        check(not np.array_equal(want, floor), "the ids below give other logits than [1, 40, 41] "
              "(so a wrapped or truncated id would show)")
        refused("floats as ids", lambda: m.score([1.0, 40.7, 41.9]), TypeError,
                "ids[0] is 1.0 (float), not an integer id")
        refused("a numpy float array", lambda: m.score(np.array([1.0, 40.0])), TypeError,
                "must hold integers, not float64")
        refused("a bool among ids", lambda: m.score([1, True, 5]), TypeError, "ids[1] is True")
        refused("2-D ids", lambda: m.score([[1, 40, 41], [1, 50, 51]]), ValueError,
                "must be 1-D (one sequence of ids), not of shape (2, 3)")
        refused("2**32 + 40 (a Python int)", lambda: m.score([1, 2**32 + 40, 41]), ValueError,
                "ids[1] is 4294967336, outside the vocabulary [0, 512)")
        refused("2**32 + 40 (numpy int64)", lambda: m.score(np.array([1, 40, 2**32 + 40])), ValueError,
                "ids[2] is 4294967336, outside the vocabulary")
        refused("a negative id", lambda: m.score([1, -3]), ValueError, "ids[1] is -3")
        refused("an id of 512 (the vocabulary's size)", lambda: m.generate([1, 512], 2), ValueError,
                "ids[1] is 512")
        check(np.array_equal(m.score(np.array(IDS[:3], dtype=np.uint16)).logits, want)
              and np.array_equal(m.score(tuple(IDS[:3])).logits, want),
              "ids as a uint16 array or a tuple: the same logits as the list")
        refused("a hook name with a typo", lambda: m.score(IDS, hooks="blocks.*.mlp_outt"), sw.StepwiseError,
                "matches no hook of this model; it fires")
        refused("the list of hooks it fires names mlp_out",
                lambda: m.score(IDS, hooks=["final_norm", "blocks.*.mlp_outt"]), sw.StepwiseError,
                "blocks.N.mlp_out")
        refused("hooks=[] (not None)", lambda: m.score(IDS, hooks=[]), ValueError, "empty list")
        refused("a hook holding a comma", lambda: m.score(IDS, hooks=["a,b"]), ValueError, "no comma")
        refused("NUL in text", lambda: m.tokenize("ab\0cd"), ValueError, "NUL character at 2")
        refused("seed=0", lambda: m.generate(IDS, 2, temperature=1.0, seed=0), ValueError,
                "seed is 0, outside [1,")
        refused("seed=0 when greedy", lambda: m.generate(IDS, 2, seed=0), ValueError, "seed is 0")
        refused("seed a float", lambda: m.generate(IDS, 2, seed=7.5), TypeError, "seed must be an integer")
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        start = time.monotonic()
        huge = m.generate(IDS, 2**31 - 10)
        took, grown = time.monotonic() - start, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
        check(huge == m.generate(IDS, 128) and len(huge) <= 129 and took < 10 and grown < 64 * 1024,
              f"max_new=2**31-10 on a 128-position model: stops when the context is full, as max_new=128 "
              f"({len(huge)} ids, {took:.2f} s, peak grew {grown} KiB)")
        refused("a prompt longer than the context", lambda: m.generate(IDS * 13, 1), ValueError,
                "generate takes 1 to 128 prompt ids")
        refused("max_new=0", lambda: m.generate(IDS, 0), ValueError, "max_new is 0")
        refused("temperature a string", lambda: m.generate(IDS, 2, temperature="1"), TypeError,
                "temperature must be a number")
        refused("top_p 1.5", lambda: m.generate(IDS, 2, top_p=1.5), ValueError, "top_p is 1.5")
        for name in ("temperature", "top_p", "min_p"):  # 0 means greedy or off: 1e-50 must not
            refused(f"{name}=1e-50 (0 as a float32)", lambda: m.generate(IDS, 2, **{name: 1e-50}),
                    ValueError, "rounds to 0 as a float32")
        refused("score of 1 id", lambda: m.score([1]), ValueError, "2 to 128 ids")
    refused("NUL in a path", lambda: stepwise.load(GGUF + "\0x"), ValueError, "NUL character at")
    refused("a path that is an int", lambda: stepwise.load(3), TypeError, "must be a str, bytes or os.PathLike")
    with stepwise.load(os.fsencode(GGUF)) as m:
        check(np.array_equal(m.score(IDS[:3]).logits, want), "a bytes path opens the model")
    m.close()
    refused("a closed model", lambda: m.score(IDS), sw.StepwiseError, "the model is closed")


def widening_folder(tmp):
    """A Hugging Face folder whose tokenizer has no "▁": a space becomes
    U+2581, which falls back to its three bytes."""
    folder = os.path.join(tmp, "widening")
    run_stepwise(BIN, "make-model", "--format", "hf", "--arch", "llama", "--dim", "32", "--hidden", "48",
                 "--layers", "1", "--heads", "2", "--kv-heads", "2", "--vocab", "320", "--seq-len", "64",
                 "--out", folder)
    tok, config = sentencepiece_style()
    vocab = {p: i for p, i in tok["model"]["vocab"].items() if "▁" not in p}
    tok["model"]["vocab"] = {p: i for i, p in enumerate(sorted(vocab, key=vocab.get))}
    tok["model"]["merges"] = [m for m in tok["model"]["merges"] if "▁" not in m]
    json.dump(tok, open(os.path.join(folder, "tokenizer.json"), "w", encoding="utf-8"))
    json.dump(config, open(os.path.join(folder, "tokenizer_config.json"), "w"))
    return folder


def check_tokenize_widening(stepwise, tmp):
    folder = widening_folder(tmp)
    text = " " * 10
    cli = json.loads(run_stepwise(BIN, "tokenize", "--model", folder, "--text", text, "--json").stdout)["ids"]
    with stepwise.load(folder) as m:
        got = m.tokenize(text)
    check(got == cli and len(cli) > len(text) + 8,
          f"tokenize of ten spaces (each 3 byte-fallback ids): the CLI's {len(cli)} ids, "
          f"more than bytes + 8 = {len(text) + 8}")


def check_read(stepwise, tmp):
    import stepwise as sw
    fifo = os.path.join(tmp, "fifo-set")
    os.makedirs(fifo)
    os.mkfifo(os.path.join(fifo, "manifest.json"))
    refused("read() of a set whose manifest.json is a FIFO", lambda: stepwise.read(fifo), sw.StepwiseError,
            "is not a regular file")
    deep = os.path.join(tmp, "deep-set")
    os.makedirs(deep)
    open(os.path.join(deep, "manifest.json"), "w").write("[" * 100000 + "]" * 100000)
    refused("read() of a manifest nested 100,000 deep", lambda: stepwise.read(deep), sw.StepwiseError,
            "manifest.json")
    flat = os.path.join(tmp, "flat-set")
    os.makedirs(flat)
    json.dump({"format": "stepwise-golden", "version": 1, "files": [3, "x"]},
              open(os.path.join(flat, "manifest.json"), "w"))
    refused("read() of a manifest whose entries are not objects", lambda: stepwise.read(flat),
            sw.StepwiseError, "manifest.json")
    refused("read() of a path with NUL", lambda: stepwise.read(flat + "\0"), ValueError, "NUL")


def check_diff(stepwise, tmp):
    out = os.path.join(tmp, "ref.jsonl")
    run_stepwise(BIN, "score", "--model", GGUF, "--tokens", ",".join(map(str, IDS)), "--top-n", "0",
                 "--out", out)
    with stepwise.load(GGUF) as m:
        same = m.score(IDS).logits
    other = list(IDS)
    other[3] = 77
    good = stepwise.diff(out, same, token_ids=IDS)
    bad = stepwise.diff(out, same, token_ids=other)
    check(good.passed and good["inputs_matched"] and good["inputs_compared"] == len(IDS),
          f"diff on the same ids: {good.summary()}")
    check(not bad.passed and bad["inputs_differ_pos"] == 3 and (bad["ref_token"], bad["cand_token"]) == (261, 77)
          and not bad["inputs_matched"] and "inputs differ from position 3" in bad.summary(),
          f"diff of logits computed on other ids (the same numbers): {bad.summary()}")
    refused("diff with token_ids of the wrong length", lambda: stepwise.diff(out, same, token_ids=IDS[:4]),
            ValueError, "token_ids has 4 ids for 10 positions")
    refused("token_ids beside two files", lambda: stepwise.diff(out, out, token_ids=IDS), ValueError,
            "a file states its own")
    # issue 67: a per-head hook of another shape, and a dict's activations not a dict, refused by name
    T = len(IDS)
    short_keys = {"logits": same, "activations": {"blocks.0.attn.pattern": np.zeros((T, 8, T - 1), np.float32)}}
    refused("diff of a per-head hook with fewer keys than positions",
            lambda: stepwise.diff(out, short_keys, token_ids=IDS), ValueError,
            "activations['blocks.0.attn.pattern'] is per head: [positions, heads, keys]")
    refused("write_trace of a per-head hook whose width is no whole heads",
            lambda: stepwise.write_trace(os.path.join(tmp, "w.jsonl"), IDS,
                                         activations={"blocks.0.attn.scores": np.zeros((T, 8 * T + 1))}),
            ValueError, "is per head")
    refused("diff of a dict whose activations are a list",
            lambda: stepwise.diff(out, {"logits": same, "activations": [same]}, token_ids=IDS), TypeError,
            "must be a dict")


def check_threads(stepwise):
    with stepwise.load(GGUF, threads=2) as m:
        want = {i: m.score(IDS[: 4 + i]).logits for i in range(4)}
        wrong, errors = [], []

        def work(i):
            try:
                for _ in range(25):
                    got = m.score(IDS[: 4 + i]).logits
                    if not np.array_equal(got.view(np.uint32), want[i].view(np.uint32)):
                        wrong.append(i)
                    m.generate(IDS[:3], 4)
            except Exception as e:  # noqa: BLE001: reported below
                errors.append(repr(e))

        threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        alive = any(t.is_alive() for t in threads)
    check(not alive and not wrong and not errors,
          f"one model (threads=2) shared by 4 Python threads, 100 scores and generates: the bits of one "
          f"thread{'; hung' if alive else ''}{'; wrong in ' + str(wrong) if wrong else ''}"
          f"{'; ' + errors[0] if errors else ''}")


TRUNCATE = """
import ctypes, os, sys
sys.path.insert(0, {python!r})
import numpy as np, stepwise
path, copy = sys.argv[1], sys.argv[2] == "copy"
with stepwise.load(path, copy_weights=copy) as m:
    before = m.score({ids!r}).logits
    libc = ctypes.CDLL(None)
    act = ctypes.create_string_buffer(256)  # a struct sigaction: its handler comes first
    libc.sigaction(7, None, act)  # SIGBUS
    handler = int.from_bytes(act.raw[:8], "little")
    with open(path, "r+b") as f:
        f.truncate(4096)
    after = m.score({ids!r}).logits
print(json.dumps({{"same": bool(np.array_equal(before.view(np.uint32), after.view(np.uint32))),
                  "sigbus_handler": handler}}))
""".replace("print(json", "import json\nprint(json")


def check_copy_weights(tmp):
    script = TRUNCATE.format(python=os.path.join(ROOT, "python"), ids=IDS)
    results = {}
    for mode in ("copy", "map"):
        path = os.path.join(tmp, f"{mode}.gguf")
        shutil.copy(GGUF, path)
        results[mode] = subprocess.run([sys.executable, "-c", script, path, mode], capture_output=True,
                                       text=True, timeout=60)
    c, mapped = results["copy"], results["map"]
    got = json.loads(c.stdout) if c.returncode == 0 and c.stdout.strip() else {}
    check(got.get("same") is True, "copy_weights=True: its file truncated to 4 KiB while open, the "
          f"scores unchanged (exit {c.returncode}{'; ' + c.stderr.strip()[-200:] if c.returncode else ''})")
    check(got.get("sigbus_handler") == 0, "the library installed no SIGBUS handler (SIG_DFL after load)")
    check(mapped.returncode == -signal.SIGBUS,
          f"mapped (the default), the same truncation ends the process with SIGBUS (exit {mapped.returncode}): "
          "the risk copy_weights removes")


def main():
    import stepwise
    if not os.path.exists(GGUF):
        print(f"python hostile check skipped: no stories260K.gguf in {MODELS}")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        check_inputs(stepwise)
        check_tokenize_widening(stepwise, tmp)
        check_read(stepwise, tmp)
        check_diff(stepwise, tmp)
        check_threads(stepwise)
        check_copy_weights(tmp)
    return check.summary("python hostile check")


if __name__ == "__main__":
    sys.exit(main())
