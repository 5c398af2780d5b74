#!/usr/bin/python3
"""libstepwise and the Python package (python/stepwise) against the command
line, which the other checks hold to llama2.c, numpy and llama.cpp (in
`make test`, after `make lib`):

1. load(...).score(ids).logits and .activations (attn.pattern and
   attn.scores as [T, heads, T], padded with 0 and -inf) are the bits
   `stepwise score` writes, for a GGUF file, a Hugging Face folder and a checkpoint
   with its tokenizer, plain and fast kernels; tokenize gives `stepwise
   tokenize`'s ids, generate `stepwise generate`'s tokens (greedy and
   sampled with a seed); read() gives a score file's logits back, and
   reads a golden set folder (golden --tensors): its files in order, each
   score file's logits the bits of the JSON set's logits events; a
   tampered file, a part of a sharded set and a folder that is no set are
   errors.
2. diff() passes an independent engine (tests/numpy_engine.py) and fails a
   nudged one where it was nudged; with the command line's options
   (activations as numpy arrays, llama.cpp's hook names, a custom tolerance,
   teacher-forced inputs) it gives the CLI's verdicts.
3. Errors are exceptions with the library's one-line message and code: a
   missing file, an id outside the vocabulary, tokenize without a tokenizer.
4. libstepwise.so exports only sw_* and stepwise_* names.
5. `pip install --no-index --no-build-isolation ./python` works offline
   in a virtual environment that sees Debian's numpy and pip, copies
   libstepwise.so in, and the installed package runs.
6. python/examples/test_my_engine.py passes under pytest.

    /usr/bin/python3 tests/python_api_check.py build/stepwise
"""
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "python"))
from check_util import Checks, models_dir, run_stepwise, TIMEOUT  # noqa: E402

MODELS = models_dir()
BIN = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/stepwise")
IDS = [1, 403, 407, 261, 378, 267, 130, 302, 297, 263]
check = Checks()


def cli_score(model, tmp, *extra):
    """The CLI's logits [T, V] and activations {hook: [T, width]} as float32."""
    out = os.path.join(tmp, "cli.jsonl")
    run_stepwise(BIN, "score", "--model", model, "--tokens", ",".join(map(str, IDS)), "--top-n", "0",
                 "--out", out, *extra)
    logits, acts, heads = [], {}, {}
    for line in open(out, encoding="utf-8"):
        e = json.loads(line)
        if e["event"] == "logits":
            logits.append(e["logits"])
        elif e["event"] == "activation" and "head" in e:  # [T, heads, T], padded as the docs say
            heads.setdefault(e["hook"], []).append(e)
        elif e["event"] == "activation":
            acts.setdefault(e["hook"], []).append(e["data"])
    f32 = lambda x: np.array(x, dtype=np.float32)  # noqa: E731
    acts = {k: f32(v) for k, v in acts.items()}
    T = len(logits)
    for hook, rows in heads.items():
        a = np.full((T, 1 + max(e["head"] for e in rows), T), -np.inf if hook.endswith("scores") else 0,
                    dtype=np.float32)
        for e in rows:
            a[e["pos"], e["head"], :e["pos"] + 1] = e["data"]
        acts[hook] = a
    return f32(logits), acts, out


def same_bits(a, b):
    return a.shape == b.shape and np.array_equal(a.view(np.uint32), b.view(np.uint32))


def check_scores(stepwise, tmp, folder):
    cases = [("stories260K.gguf", os.path.join(MODELS, "stories260K.gguf"), None),
             ("a Hugging Face folder (qwen3, bf16)", folder, None),
             ("stories260K.bin with tok512.bin", os.path.join(MODELS, "stories260K.bin"),
              os.path.join(MODELS, "tok512.bin"))]
    hooks = "blocks.*.mlp_out,final_norm,blocks.1.attn.q,blocks.0.attn.pattern,blocks.1.attn.scores"
    for label, model, tok in cases:
        want, want_acts, _ = cli_score(model, tmp, "--hooks", hooks)
        for kernels in ("plain", "fast"):
            with stepwise.load(model, tok, kernels=kernels, threads=2) as m:
                got = m.score(IDS, hooks=hooks.split(","))
            acts_same = (sorted(got.activations) == sorted(want_acts)
                         and all(same_bits(got.activations[k], want_acts[k]) for k in want_acts))
            check(same_bits(got.logits, want) and acts_same,
                  f"{label}, {kernels} kernels: score's logits {got.logits.shape} and "
                  f"{len(got.activations)} hooks are the CLI's bits")


def check_llama_cpp_options(stepwise, tmp):
    """load(gelu="ggml") on a GPT-2 folder and load(kv_dtype="f16",
    kv_rounding="llama.cpp") on stories260K give the CLI's bits with
    --gelu ggml and --kv-dtype f16 --kv-rounding llama.cpp, and differ from
    the defaults."""
    gpt2 = os.path.join(tmp, "gpt2")
    run_stepwise(BIN, "make-model", "--format", "hf", "--arch", "gpt2", "--dim", "32", "--hidden", "64",
                 "--layers", "2", "--heads", "4", "--vocab", "512", "--seq-len", "32", "--out", gpt2)
    story = os.path.join(MODELS, "stories260K.gguf")
    for label, model, opts, flags in (
            ("gelu ggml (GPT-2)", gpt2, {"gelu": "ggml"}, ["--gelu", "ggml"]),
            ("a float16 cache, llama.cpp's rounding", story, {"kv_dtype": "f16", "kv_rounding": "llama.cpp"},
             ["--kv-dtype", "f16", "--kv-rounding", "llama.cpp"])):
        want, _, _ = cli_score(model, tmp, *flags)
        plain, _, _ = cli_score(model, tmp)
        with stepwise.load(model, **opts) as m:
            got = m.score(IDS).logits
        check(same_bits(got, want) and not same_bits(got, plain),
              f"load(**{opts}) on {label}: the CLI's bits with {' '.join(flags)}, not the defaults'")


def check_tokens(stepwise, tmp):
    model = os.path.join(MODELS, "stories260K.gguf")
    text = "Once upon a time, there was a little girl named Lily."
    out = run_stepwise(BIN, "tokenize", "--model", model, "--text", text, "--json").stdout
    with stepwise.load(model) as m:
        ids = m.tokenize(text)
        check(ids == json.loads(out)["ids"], f"tokenize gives the CLI's {len(ids)} ids")
        for args, kw in ((["--temperature", "0"], {}),
                         (["--temperature", "0.9", "--top-k", "40", "--seed", "7"],
                          {"temperature": 0.9, "top_k": 40, "seed": 7})):
            trace = os.path.join(tmp, "g.jsonl")
            run_stepwise(BIN, "generate", "--model", model, "--prompt", text, "--steps", "20",
                         "--trace", trace, "--quiet", *args)
            done = [json.loads(line) for line in open(trace) if '"event":"done"' in line][0]
            got = m.generate(ids, 20, **kw)
            check(got == done["tokens"], f"generate {' '.join(args)}: the CLI's {len(got)} tokens")
    _, _, path = cli_score(model, tmp)
    want = cli_score(model, tmp)[0]
    run = stepwise.read(path)
    check(same_bits(run.logits, want) and run.token_ids == IDS and list(run.positions) == list(range(len(IDS))),
          "read() of a score file gives its logits, positions and token ids")


def check_golden_set(stepwise, tmp):
    model = ["--model", os.path.join(MODELS, "stories260K.bin"), "--tokenizer",
             os.path.join(MODELS, "tok512.bin")]
    plain, tensors = os.path.join(tmp, "golden"), os.path.join(tmp, "golden-tensors")
    run_stepwise(BIN, "golden", *model, "--hooks", "none", "--out", plain)
    run_stepwise(BIN, "golden", *model, "--hooks", "none", "--tensors", "--out", tensors)
    gs = stepwise.read(tensors)
    manifest = json.load(open(os.path.join(tensors, "manifest.json")))
    good = gs.names == [f["file"] for f in manifest["files"]] and len(gs.scores) == 4
    for name in gs.scores:
        rows = [json.loads(line)["logits"] for line in open(os.path.join(plain, name))
                if '"event":"logits"' in line]
        run = gs[name]
        good &= same_bits(run.logits, np.array(rows, dtype=np.float32)) and run.token_ids is not None
    check(good, "read(folder) of a --tensors golden set: its %d files in order; each score file's "
                "logits are the bits of the JSON set's logits events" % len(gs))
    t = gs.entry("score-02.jsonl")["tensors"]
    with open(os.path.join(tensors, t["file"]), "r+b") as f:
        f.seek(t["bytes"] - 1)
        last = f.read(1)[0]
        f.seek(t["bytes"] - 1)
        f.write(bytes([last ^ 1]))
    expect_error(stepwise, "read(folder) with a tampered tensors file",
                 lambda: stepwise.read(tensors), 2, "score-02.safetensors: its SHA-256 is not the one")
    part = os.path.join(tmp, "part")
    run_stepwise(BIN, "golden", *model, "--hooks", "none", "--shard", "1/2", "--out", part)
    expect_error(stepwise, "read(folder) of one part of a sharded set",
                 lambda: stepwise.read(part), 2, "golden merge")
    expect_error(stepwise, "read(folder) of a folder that is no golden set",
                 lambda: stepwise.read(HERE), 2, "manifest.json")


def check_diff(stepwise, tmp):
    import numpy_engine
    from gguf_read import read_gguf
    model = os.path.join(MODELS, "stories260K.gguf")
    meta, tensors = read_gguf(model)
    theirs = numpy_engine.forward(meta, tensors, IDS)[0]
    with stepwise.load(model) as m:
        ours = m.score(IDS).logits
    good = stepwise.diff(ours, theirs, token_ids=IDS)
    nudged = theirs.copy()
    nudged[4, 9] += 1e-2
    bad = stepwise.diff(ours, nudged, token_ids=IDS)
    check(good.passed and good["positions"] == len(IDS) and good["max_abs_logit"] > 0,
          f"diff passes numpy's engine (max |dlogit| {good['max_abs_logit']:.2g}, not 0: another engine)")
    check(not bad.passed and (bad["first_hook"], bad["first_pos"]) == ("logits", 4)
          and "first divergence logits at pos 4" in bad.summary(),
          f"diff fails it nudged at pos 4, and says so: {bad.summary()}")


def check_diff_options(stepwise, tmp):
    """diff with the command line's options: activations given as numpy arrays
    under stepwise's names and under llama.cpp's (names=), a custom tolerance,
    teacher-forced inputs; each verdict the CLI's on the same files."""
    model = os.path.join(MODELS, "stories260K.gguf")
    with stepwise.load(model) as m:
        r = m.score(IDS, hooks="blocks.*.mlp_out")
    ref = os.path.join(tmp, "opt-ref.jsonl")
    run_stepwise(BIN, "score", "--model", model, "--tokens", ",".join(map(str, IDS)), "--top-n", "0",
                 "--trace-level", "layers", "--trace-hooks", "blocks.*.mlp_out", "--out", ref)
    acts = {k: v.copy() for k, v in r.activations.items()}
    same = stepwise.diff(ref, {"logits": r.logits, "activations": acts}, token_ids=IDS)
    acts["blocks.2.mlp_out"][3, 5] += 1e-2
    nudged = stepwise.diff(ref, {"logits": r.logits, "activations": acts}, token_ids=IDS)
    loose = stepwise.diff(ref, {"logits": r.logits, "activations": acts}, token_ids=IDS, atol=0.1)
    cand = os.path.join(tmp, "opt-cand.jsonl")
    stepwise.write_trace(cand, IDS, logits=r.logits, activations=acts)
    cli = [run_stepwise(BIN, "diff", ref, cand, *extra, expect=(0, 1)).returncode for extra in ([], ["--atol", "0.1"])]
    cli_text = run_stepwise(BIN, "diff", ref, cand, expect=(1,)).stdout
    from_file = stepwise.diff(ref, cand)
    check(from_file.text == cli_text and "per layer" in cli_text and "verdict: FAIL" in cli_text
          and nudged.text.replace("(the candidate arrays)", cand) == cli_text,
          f"the report's text is the CLI's, line for line ({len(cli_text.splitlines())} lines; the arrays' "
          "temporary file named as such)")
    check(same.passed and same["activations"] == len(acts) * len(IDS) and not nudged.passed
          and (nudged["first_hook"], nudged["first_pos"]) == ("blocks.2.mlp_out", 3) and loose.passed
          and cli == [1, 0],
          f"diff with activations as arrays: {same['activations']} compared and passed; one nudged at "
          f"blocks.2.mlp_out pos 3 found there ({nudged['first_hook']} pos {nudged['first_pos']}), passed with "
          f"atol=0.1; the CLI's verdicts on the same files: exit {cli}")
    # the C API's sw_diff_arrays, straight from numpy's memory: the same verdicts, where
    import ctypes
    lib = stepwise._lib

    def c_arrays(logits, tensors, names=None):
        keep = [np.ascontiguousarray(logits, np.float32)] + [np.ascontiguousarray(v, np.float32)
                                                            for v in tensors.values()]
        fp = ctypes.POINTER(ctypes.c_float)
        ts = (stepwise._DiffTensor * len(tensors))(*[
            stepwise._DiffTensor(k.encode(), a.ctypes.data_as(fp), a.shape[1]) for k, a in zip(tensors, keep[1:])])
        ids = (ctypes.c_int * len(IDS))(*IDS)
        opt = stepwise._DiffOptions(atol=-1.0, rtol=-1.0, names=names.encode() if names else None)
        rep, err = stepwise._DiffReport(), stepwise._Error()
        status = lib.sw_diff_arrays(ref.encode(), keep[0].ctypes.data_as(fp), len(IDS), keep[0].shape[1], ids, ts,
                                    len(tensors), ctypes.byref(opt), ctypes.byref(rep), ctypes.byref(err))
        return status, rep
    s1, c_same = c_arrays(r.logits, r.activations)
    s2, c_nudged = c_arrays(r.logits, acts)
    s3, c_named = c_arrays(r.logits, {"ffn_out-%s" % k.split(".")[1]: v for k, v in r.activations.items()},
                           "llama.cpp")
    check(s1 == s2 == s3 == 0 and c_same.passed and c_same.activations == same["activations"]
          and not c_nudged.passed and (c_nudged.first_hook.decode(), c_nudged.first_pos) == ("blocks.2.mlp_out", 3)
          and c_named.passed and c_named.activations == same["activations"],
          f"sw_diff_arrays from numpy's memory: {c_same.activations} activations, the nudge found at "
          f"{c_nudged.first_hook.decode()} pos {c_nudged.first_pos}, llama.cpp's names mapped: the same verdicts")
    theirs = {"ffn_out-%s" % k.split(".")[1]: v for k, v in r.activations.items()}
    named = stepwise.diff(ref, {"logits": r.logits, "activations": theirs}, token_ids=IDS, names="llama.cpp")
    try:
        stepwise.diff(ref, {"logits": r.logits, "activations": theirs}, token_ids=IDS)
        hint = "no error"
    except stepwise.StepwiseError as e:
        hint = str(e)
    check(named.passed and named["activations"] == same["activations"] and "--names llama.cpp" in hint,
          f"llama.cpp's hook names with names='llama.cpp': {named['activations']} compared; without it: {hint}")
    other = list(IDS)
    other[4] = other[4] + 1
    try:
        stepwise.diff(ref, {"logits": r.logits}, token_ids=other, teacher_forced=True)
        forced = "no error"
    except stepwise.StepwiseError as e:
        forced = str(e)
    loose_inputs = stepwise.diff(ref, {"logits": r.logits}, token_ids=other)
    check("inputs differ from position 4" in forced and not loose_inputs.passed
          and loose_inputs["inputs_differ_pos"] == 4,
          f"teacher_forced=True: other inputs are an error ({forced}); without it a fail at position 4")


def check_diff_round_four(stepwise, tmp):
    """Issue 67. A run diffed against itself passes in every form the package
    produces, per-head hooks included (score()'s [T, heads, T] attn.scores
    and attn.pattern, as a dict, as write_trace's file, as sw_diff_arrays'
    tensors and as a reference dict), comparing what the reference holds:
    layers x (T + 2 x heads x T) activations, counted from the shapes; a
    hook given twice is refused by name in each form; a NaN or inf logit is
    reported as such with its place; a candidate given as arrays is
    compared from memory, no file written."""
    import ctypes
    model = os.path.join(MODELS, "stories260K.gguf")
    hooks = "blocks.*.attn.scores,blocks.*.attn.pattern,blocks.*.mlp_out"
    with stepwise.load(model) as m:
        r = m.score(IDS, hooks=hooks)
        L, H = m.shape["n_layers"], m.shape["n_heads"]
    T = len(IDS)
    ref = os.path.join(tmp, "r4-ref.jsonl")
    run_stepwise(BIN, "score", "--model", model, "--tokens", ",".join(map(str, IDS)), "--top-n", "0",
                 "--trace-level", "layers", "--trace-hooks", hooks, "--out", ref)
    want = L * (T + 2 * H * T)
    cand = {"logits": r.logits, "activations": r.activations}
    written = os.path.join(tmp, "r4-cand.jsonl")
    stepwise.write_trace(written, IDS, logits=r.logits, activations=r.activations)
    cli = run_stepwise(BIN, "diff", ref, written, expect=(0, 1, 2))
    fp = ctypes.POINTER(ctypes.c_float)

    def c_arrays(tensors, names=None):
        keep = [np.ascontiguousarray(v.reshape(T, -1), np.float32) for v in tensors.values()]
        ts = (stepwise._DiffTensor * len(keep))(*[stepwise._DiffTensor(k.encode(), a.ctypes.data_as(fp), a.shape[1])
                                                  for k, a in zip(tensors, keep)])
        logits = np.ascontiguousarray(r.logits, np.float32)
        opt = stepwise._DiffOptions(atol=-1.0, rtol=-1.0, names=names.encode() if names else None)
        rep, err = stepwise._DiffReport(), stepwise._Error()
        status = stepwise._lib.sw_diff_arrays(ref.encode(), logits.ctypes.data_as(fp), T, logits.shape[1],
                                              (ctypes.c_int * T)(*IDS), ts, len(keep), ctypes.byref(opt),
                                              ctypes.byref(rep), ctypes.byref(err))
        return status, rep, err.message.decode()
    sys.path.insert(0, os.path.join(ROOT, "trace"))
    import candidate  # the writer docs/oracle.md gives engines outside the package
    outside = os.path.join(tmp, "r4-candidate-py.jsonl")
    candidate.write_trace(outside, IDS, logits=r.logits, activations=r.activations)
    forms = {"a dict": stepwise.diff(ref, cand, token_ids=IDS),
             "write_trace's file": stepwise.diff(ref, written),
             "trace/candidate.py's file": stepwise.diff(ref, outside),
             "a reference dict": stepwise.diff(cand, written, token_ids=IDS),
             "two dicts": stepwise.diff(cand, cand, token_ids=IDS)}
    status, c_rep, _ = c_arrays(r.activations)
    seen = {k: (v.passed, v["activations"]) for k, v in forms.items()}
    seen["sw_diff_arrays"] = (status == 0 and bool(c_rep.passed), c_rep.activations)
    check(all(v == (True, want) for v in seen.values()) and cli.returncode == 0
          and f"{want} activations" in cli.stdout,
          f"a run diffed against itself passes in every form, per-head hooks compared head by head "
          f"({want} = {L} x ({T} + 2 x {H} x {T}) activations): {seen}; the CLI on write_trace's file: exit "
          f"{cli.returncode}")
    nudged = {k: v.copy() for k, v in r.activations.items()}
    nudged["blocks.1.attn.pattern"][6, 3, 2] += 0.01
    bad = stepwise.diff(ref, {"logits": r.logits, "activations": nudged}, token_ids=IDS)
    check(not bad.passed and (bad["first_hook"], bad["first_pos"]) == ("blocks.1.attn.pattern", 6)
          and "blocks.1.attn.pattern, layer 1, pos 6, head 3" in bad.text,
          f"a pattern nudged at pos 6, head 3 is found there: {bad.summary()}")
    # the other shapes diff() documents for a per-head hook: [T, heads x T],
    # and keys wider than T (a longer run's rows), cut at T; the columns past
    # T hold a value far from any probability, so a cut at the wrong end fails
    pattern = r.activations["blocks.1.attn.pattern"]
    wider = np.concatenate([pattern, np.full(pattern.shape[:2] + (3,), 7.0, np.float32)], axis=2)
    shapes = {"[T, heads x T]": pattern.reshape(T, -1), "[T, heads, T + 3]": wider}
    got = {k: stepwise.diff(ref, {"logits": r.logits, "activations": dict(r.activations, **{
        "blocks.1.attn.pattern": v})}, token_ids=IDS) for k, v in shapes.items()}
    check(all(v.passed and v["activations"] == want for v in got.values()),
          "a per-head hook as [T, heads x T] and as [T, heads, T + 3] compares as [T, heads, T]: "
          + "; ".join(f"{k}: {v.summary()}" for k, v in got.items()))
    # a hook given twice, in every form: a dict mixing two naming schemes (either
    # order), write_trace's file of it under --names, the C arrays
    mlp = r.activations["blocks.0.mlp_out"]
    mixed = [{"blocks.0.mlp_out": mlp, "ffn_out-0": mlp + 1}, {"ffn_out-0": mlp + 1, "blocks.0.mlp_out": mlp}]
    messages = []
    for acts in mixed:
        try:
            stepwise.diff(ref, {"logits": r.logits, "activations": acts}, token_ids=IDS, names="llama.cpp")
            messages.append("no error")
        except stepwise.StepwiseError as e:
            messages.append(str(e))
    twice = os.path.join(tmp, "r4-twice.jsonl")
    stepwise.write_trace(twice, IDS, logits=r.logits, activations=mixed[0])
    cli = run_stepwise(BIN, "diff", ref, twice, "--names", "llama.cpp", expect=(0, 1, 2))
    try:
        stepwise.diff(ref, twice, names="llama.cpp")
        messages.append("no error")
    except stepwise.StepwiseError as e:
        messages.append(str(e))
    status, _, c_message = c_arrays(mixed[1], "llama.cpp")
    check(all("both blocks.0.mlp_out" in m for m in messages[:2]) and cli.returncode == 2
          and cli.stderr.count("\n") == 1 and "blocks.0.mlp_out at pos 0 twice" in cli.stderr
          and "blocks.0.mlp_out at pos 0 twice" in messages[2] and status == 2 and "both blocks.0.mlp_out" in c_message,
          f"a hook given twice is refused in every form: {messages}; CLI exit {cli.returncode}: "
          f"{cli.stderr.strip()}; sw_diff_arrays {status}: {c_message}")
    # non-finite logits, reported as such where they are
    nan, inf = r.logits.copy(), r.logits.copy()
    nan[3, 7], nan[8, 0] = np.nan, nan[8, 0] + 50
    inf[2, 9], inf[6, 11] = inf[2, 9] + 50, np.inf
    got = [stepwise.diff(ref, x, token_ids=IDS) for x in (nan, inf)]
    check(np.isnan(got[0]["max_abs_logit"]) and (got[0]["max_abs_pos"], got[0]["max_abs_token"]) == (3, 7)
          and "max |dlogit|        nan at pos 3, token 7" in got[0].text
          and np.isinf(got[1]["max_abs_logit"]) and (got[1]["max_abs_pos"], got[1]["max_abs_token"]) == (6, 11)
          and "max |dlogit|        inf at pos 6, token 11" in got[1].text and not any(g.passed for g in got),
          f"a NaN logit at (3, 7) is max |dlogit| {got[0]['max_abs_logit']} at ({got[0]['max_abs_pos']}, "
          f"{got[0]['max_abs_token']}) though 50 follows it; an inf at (6, 11): {got[1]['max_abs_logit']} at "
          f"({got[1]['max_abs_pos']}, {got[1]['max_abs_token']})")
    # a candidate as arrays stays in memory: no writer is called ...
    saved = stepwise.write_trace, stepwise.write_logits

    def no_file(*args, **kwargs):
        raise AssertionError("a candidate in memory was written to a file")
    stepwise.write_trace = stepwise.write_logits = no_file
    try:
        in_memory = [stepwise.diff(ref, cand, token_ids=IDS).passed, stepwise.diff(ref, r.logits, token_ids=IDS).passed]
    except AssertionError as e:
        in_memory = [str(e)]
    finally:
        stepwise.write_trace, stepwise.write_logits = saved
    # ... so [256, 32000] logits as a dict take about the array's time (a JSON
    # trace of them took 14-16 s, the array 0.3 s); the margin is generous
    big = np.random.default_rng(67).standard_normal((256, 32000)).astype(np.float32)
    big_ref = os.path.join(tmp, "r4-big.f32")
    stepwise.write_logits(big_ref, big)
    ids = [1] * 256
    t0 = time.perf_counter()
    as_array = stepwise.diff(big_ref, big, token_ids=ids)
    t1 = time.perf_counter()
    as_dict = stepwise.diff(big_ref, {"logits": big}, token_ids=ids)
    t2 = time.perf_counter()
    check(in_memory == [True, True] and as_array.passed and as_dict.passed and t2 - t1 <= 2 * (t1 - t0) + 1.0,
          f"a dict or array candidate is compared from memory (no writer called: {in_memory}); [256, 32000] "
          f"logits as a dict {t2 - t1:.2f} s, as an array {t1 - t0:.2f} s")


def expect_error(stepwise, what, fn, code, words):
    try:
        fn()
    except stepwise.StepwiseError as e:
        check(e.code == code and words in str(e), f"{what}: StepwiseError {e.code}: {e}")
        return
    check(False, f"{what}: no error")


def check_errors(stepwise, tmp):
    expect_error(stepwise, "a missing model", lambda: stepwise.load(os.path.join(tmp, "none.gguf")), 2,
                 "none.gguf")
    with stepwise.load(os.path.join(MODELS, "stories260K.gguf")) as m:
        try:  # the binding checks its inputs before the call (tests/python_hostile_check.py)
            m.score([1, 512])
            check(False, "an id outside the vocabulary: no error")
        except ValueError as e:
            check("ids[1] is 512, outside the vocabulary [0, 512)" in str(e),
                  f"an id outside the vocabulary: ValueError before the call: {e}")
    with stepwise.load(os.path.join(MODELS, "stories260K.bin")) as m:
        expect_error(stepwise, "tokenize on a checkpoint opened without a tokenizer",
                     lambda: m.tokenize("x"), 2, "without a tokenizer")
        check(m.score(IDS).logits.shape == (len(IDS), 512), "that checkpoint still scores ids")


def check_exports():
    """libstepwise.so exports the API and nothing else (nm's dynamic symbols):
    no engine function, no ifunc resolver of a fast kernel, to clash with a
    name of the engine under test."""
    lib = os.path.join(os.path.dirname(BIN), "libstepwise.so")
    out = subprocess.run(["nm", "-D", "--defined-only", lib], capture_output=True, text=True, check=True,
                         timeout=TIMEOUT).stdout
    names = [line.split()[-1] for line in out.splitlines() if line.strip()]
    other = [n for n in names if not n.startswith(("sw_", "stepwise_"))]
    check(len(names) > 20 and not other, f"libstepwise.so exports {len(names)} names, all sw_* or stepwise_*"
          + (f"; also {other}" if other else ""))


def check_install(tmp):
    """In a virtual environment that sees Debian's packages (numpy, pip), as
    a user on Debian 12 would install it (its system Python refuses pip)."""
    venv = os.path.join(tmp, "venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", venv],
                   check=True, timeout=TIMEOUT)
    py = os.path.join(venv, "bin", "python")
    r = subprocess.run([py, "-m", "pip", "install", "--no-index", "--no-build-isolation", "--quiet",
                        os.path.join(ROOT, "python")], capture_output=True, text=True, cwd=tmp, timeout=TIMEOUT)
    site = subprocess.run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, timeout=TIMEOUT).stdout.strip()
    shipped = os.path.exists(os.path.join(site, "stepwise", "libstepwise.so"))
    env = {k: v for k, v in os.environ.items() if k not in ("STEPWISE_LIB", "PYTHONPATH")}
    probe = subprocess.run([py, "-c", "import stepwise; m = stepwise.load(None); "
                            "print(stepwise.__file__, m.score([1, 5, 9]).logits.shape)"],
                           capture_output=True, text=True, env=env, cwd=tmp, timeout=TIMEOUT)
    check(r.returncode == 0 and shipped and probe.returncode == 0 and site in probe.stdout,
          f"pip install --no-index ./python works offline in a venv, ships libstepwise.so, and runs: "
          f"{probe.stdout.strip() or r.stderr.strip()[-300:] or probe.stderr.strip()[-300:]}")


def check_pytest_example():
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        os.path.join(ROOT, "python", "examples", "test_my_engine.py")],
                       capture_output=True, text=True, env=env, cwd=ROOT, timeout=TIMEOUT)
    last = r.stdout.strip().splitlines()[-1] if r.stdout.strip() else r.stderr.strip()
    check(r.returncode == 0 and "3 passed" in last, f"the pytest example: {last}")


def main():
    import stepwise
    print(stepwise.version())
    with tempfile.TemporaryDirectory() as tmp:
        folder = os.path.join(tmp, "qwen3")
        run_stepwise(BIN, "make-model", "--format", "hf", "--arch", "qwen3", "--dtype", "bf16", "--dim", "64",
                     "--hidden", "96", "--layers", "2", "--heads", "4", "--kv-heads", "2", "--vocab", "512",
                     "--seq-len", "64", "--out", folder)
        if not os.path.exists(os.path.join(MODELS, "stories260K.gguf")):
            print(f"python api check skipped: no stories260K.gguf in {MODELS}")
            return 0
        check_scores(stepwise, tmp, folder)
        check_tokens(stepwise, tmp)
        check_llama_cpp_options(stepwise, tmp)
        check_golden_set(stepwise, tmp)
        check_diff(stepwise, tmp)
        check_diff_options(stepwise, tmp)
        check_diff_round_four(stepwise, tmp)
        check_errors(stepwise, tmp)
        check_exports()
        check_install(tmp)
    check_pytest_example()
    return check.summary("python api check")


if __name__ == "__main__":
    sys.exit(main())
