"""`stepwise diff` held to the acceptance of its first-divergence search (in
`make test`):

1. a copy of a reference with one hook scaled by 1 + 1e-4 (every hook kind,
   random layers, positions and heads) is reported at exactly that hook,
   layer, position and head;
2. a deliberately broken build (make inject) whose error flows on through
   the network is reported where it was put in;
3. a candidate whose inputs differ from position p (it sampled otherwise) is
   reported as such, and nothing from p on is counted; with two score files
   or --teacher-forced that is an error;
4. a golden set with activations, checked against itself, passes; an
   independent float32 engine (tests/numpy_engine.py) passes the default
   preset hook by hook, and with a float16 KV cache passes f16-kv and fails
   fp32;
5. what a candidate lacks (a KV layer, a hook) fails, never in silence; a
   custom tolerance is reported as custom; .npy, .f32 with token ids and
   log-probability candidates compare as the trace does;
6. a candidate under Hugging Face's or llama.cpp's names (data/hook-names.json),
   q/k rows in RoPE's halves where that engine keeps them, passes with
   --names, and a perturbed hook is still reported under stepwise's name.

    /usr/bin/python3 tests/diff_check.py build/stepwise build/inject/stepwise
"""
import json
import os
import random
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "trace"))
from candidate import write_logits  # noqa: E402

sys.path.insert(0, HERE)
from check_util import Checks, run_stepwise, TIMEOUT  # noqa: E402

ROOT = os.path.dirname(HERE)
MODELS = os.path.abspath(os.path.join(ROOT, os.environ.get("STEPWISE_MODELS", "../shared/models")))
BIN = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/stepwise")
INJECT = os.path.abspath(sys.argv[2] if len(sys.argv) > 2 else "build/inject/stepwise")
MODEL = ["--model", os.path.join(MODELS, "stories260K.bin"), "--tokenizer",
         os.path.join(MODELS, "tok512.bin")]
TEXT = "Once upon a time, there was a little girl"
check = Checks()


def run(binary, *args, expect=(0,), env=None):
    return run_stepwise(binary, *args, expect=expect, env=dict(os.environ, **(env or {})))


def diff(ref, cand, *extra, expect=(0, 1)):
    r = run(BIN, "diff", ref, cand, "--json", *extra, expect=expect)
    return json.loads(r.stdout) if r.returncode in (0, 1) else r


def events(path):
    return [json.loads(line) for line in open(path)]


def write(path, evs):
    with open(path, "w") as f:
        for e in evs:
            f.write(json.dumps(e) + "\n")


def where(d):
    f = d["first_divergence"]
    return None if f is None else (f["hook"], f.get("layer", -1), f["pos"], f.get("head", -1))


def check_perturbations(tmp, ref):
    evs = events(ref)
    acts = [i for i, e in enumerate(evs) if e["event"] == "activation"]
    by_hook = {}
    for i in acts:
        by_hook.setdefault(evs[i]["hook"].split(".", 2)[-1] if evs[i]["hook"].startswith("blocks.")
                           else evs[i]["hook"], []).append(i)
    rng = random.Random(7)
    picks = [rng.choice(v) for v in by_hook.values()] + rng.sample(acts, 20)
    picks += [i for i, e in enumerate(evs) if e["event"] == "logits"][3:4]
    right = 0
    for i in picks:
        e = evs[i]
        scaled = [dict(x) for x in evs]
        key = "data" if e["event"] == "activation" else "logits"
        scaled[i][key] = [v * (1 + 1e-4) for v in e[key]]
        cand = os.path.join(tmp, "scaled.jsonl")
        write(cand, scaled)
        d = diff(ref, cand)
        want = (e.get("hook", "logits"), e.get("layer", -1), e["pos"], e.get("head", -1))
        if where(d) == want and d["verdict"] == "fail":
            right += 1
        else:
            print(f"      {want}: reported {where(d)}")
    check(right == len(picks), f"one hook x (1 + 1e-4): reported at that hook, layer, position "
          f"and head in {right} of {len(picks)} cases ({len(by_hook)} hook kinds)")


def check_inject(tmp, ref):
    cases = [("blocks.2.mlp_out", 5, -1), ("blocks.0.attn.k", 3, -1), ("blocks.4.attn.pattern", 7, 0),
             ("blocks.1.ln2", 0, -1)]
    right = 0
    for hook, pos, head in cases:
        bug = os.path.join(tmp, "bug.jsonl")
        run(INJECT, "score", *MODEL, "--text", TEXT, "--hooks", "*", "--out", bug,
            env={"STEPWISE_INJECT_BUG": f"{hook}@{pos}*1.0001"})
        d = diff(ref, bug)
        layer = int(hook.split(".")[1])
        ok = where(d) == (hook, layer, pos, head) and d["verdict"] == "fail"
        right += ok
        if not ok:
            print(f"      {hook}@{pos}: reported {where(d)}")
    check(right == len(cases), f"a broken build (x 1.0001 at one hook, the error flowing on): "
          f"reported where it was put in, {right} of {len(cases)}")


def check_inputs(tmp):
    greedy, sampled = os.path.join(tmp, "greedy.jsonl"), os.path.join(tmp, "sampled.jsonl")
    common = ["generate", *MODEL, "--prompt", "Once upon a time", "--steps", "40",
              "--trace-level", "logits", "--quiet"]
    run(BIN, *common, "--temperature", "0", "--trace", greedy)
    run(BIN, *common, "--temperature", "1", "--seed", "5", "--trace", sampled)
    inputs = lambda path: {e["pos"]: e["token"] for e in events(path) if e["event"] == "logits"}
    a, b = inputs(greedy), inputs(sampled)
    p = min(q for q in a if q in b and a[q] != b[q])
    d = diff(greedy, sampled)
    check(d["inputs"]["differ_from"] == p and d["positions"] == len([q for q in a if q < p])
          and d["inputs"]["reference_token"] == a[p] and d["inputs"]["candidate_token"] == b[p]
          and d["verdict"] == "fail" and "fed other tokens" in d["reason"],
          f"a candidate that sampled otherwise: inputs differ from position {p}, "
          f"{d['positions']} positions compared, none after; the verdict fails: {d['reason']}")
    text = run(BIN, "diff", greedy, sampled, expect=(1,)).stdout
    check(f"inputs     differ from position {p}: ref {a[p]} '" in text,
          "the text report names the position and both tokens with their pieces")
    r = run(BIN, "diff", greedy, sampled, "--teacher-forced", expect=(2,))
    check("inputs differ from position" in r.stderr, "--teacher-forced: an error, exit 2")
    s1, s2 = os.path.join(tmp, "s1.jsonl"), os.path.join(tmp, "s2.jsonl")
    run(BIN, "score", *MODEL, "--text", "Once upon a time", "--out", s1)
    run(BIN, "score", *MODEL, "--text", "Once upon a dog", "--out", s2)
    r = run(BIN, "diff", s1, s2, expect=(2,))
    check("inputs differ from position 4" in r.stderr, "two score files with other tokens: exit 2")


def check_golden(tmp):
    gold = os.path.join(tmp, "golden")
    run(BIN, "golden", *MODEL, "--out", gold)
    manifest = json.load(open(os.path.join(gold, "manifest.json")))
    files = [f["file"] for f in manifest["files"]]
    passed = all(diff(os.path.join(gold, f), os.path.join(gold, f))["verdict"] == "pass"
                 for f in files)
    with_acts = sum(1 for f in files if '"event":"activation"' in open(os.path.join(gold, f)).read())
    stated = True
    for f in files:  # each file states its token ids plainly
        evs = events(os.path.join(gold, f))
        fed = [e["token"] for e in evs if e["event"] == "logits"]
        end = [e for e in evs if e["event"] in ("scored", "done")][-1]
        ids = end.get("token_ids", end.get("tokens"))
        stated = stated and ids is not None and (ids == fed if end["event"] == "scored"
                                                 else ids[len(ids) - len(fed) - 1:-1] == fed)
    check(stated, "every golden file states its token ids: score files' scored.token_ids, "
          "generations' done.tokens, each the inputs its logits were computed on")
    text = json.dumps(manifest)
    check(passed and with_acts == 4 and tmp not in text and MODELS not in text,
          f"a golden set ({len(files)} files, {with_acts} with activations) passes against itself; "
          "its manifest holds no absolute path")


def check_engines(tmp):
    gguf = os.path.join(tmp, "s.gguf")
    run(BIN, "convert", *MODEL, "--out", gguf)
    text = open(os.path.join(ROOT, "data", "text", "the-lost-kite.txt")).read()
    ids = json.loads(run(BIN, "tokenize", "--model", gguf, "--text", text, "--json").stdout)["ids"][:120]
    ids = ",".join(map(str, ids))
    ref = os.path.join(tmp, "ref-engine.jsonl")
    run(BIN, "score", "--model", gguf, "--tokens", ids, "--hooks", "default", "--out", ref)
    results = {}
    for kv in ("f32", "f16"):
        cand = os.path.join(tmp, f"numpy-{kv}.jsonl")
        extra = ["--kv", "f16"] if kv == "f16" else []
        subprocess.run(["/usr/bin/python3", os.path.join(HERE, "numpy_engine.py"), gguf, ids, cand]
                       + extra, check=True, capture_output=True, timeout=TIMEOUT)
        for preset in ("fp32", "f16-kv", "fp32-elementwise"):
            results[kv, preset] = diff(ref, cand, "--preset", preset)
    worst = lambda d: max(c["relative"] for row in d["layers"] for k, c in row.items() if k != "layer")
    d = results["f32", "fp32"]
    check(d["verdict"] == "pass" and d["activations"] > 0,
          f"an independent float32 engine passes fp32 hook by hook (worst hook {worst(d):.2g} of its "
          f"tensor's scale, max |dlogit| {d['max_abs']['value']:.2g})")
    e = results["f32", "fp32-elementwise"]
    print(f"      (fp32-elementwise: {e['verdict']}, {e['tolerance']['outside']} logits outside)")
    h = results["f16", "fp32"]
    check(results["f16", "f16-kv"]["verdict"] == "pass" and h["verdict"] == "fail",
          f"with a float16 KV cache it passes f16-kv and fails fp32 (worst hook "
          f"{worst(results['f16', 'f16-kv']):.2g})")


def check_missing_and_formats(tmp, ref):
    kv = os.path.join(tmp, "kv.jsonl")
    run(BIN, "score", *MODEL, "--text", TEXT, "--trace-kv", "--out", kv)
    evs = events(kv)
    write(os.path.join(tmp, "no-layer4.jsonl"),
          [e for e in evs if not (e["event"] == "kv" and e["layer"] == 4)])
    d = diff(kv, os.path.join(tmp, "no-layer4.jsonl"))
    check(d["verdict"] == "fail" and d["missing"]["kv_rows"] == 13,
          "a candidate without layer 4's KV rows fails, naming the 13 rows it lacks")
    evs = events(ref)
    write(os.path.join(tmp, "no-hook.jsonl"),
          [e for e in evs if not (e["event"] == "activation" and e["hook"] == "blocks.3.mlp_out")])
    d = diff(ref, os.path.join(tmp, "no-hook.jsonl"))
    check(d["verdict"] == "fail" and d["missing"]["first_activation"] == "blocks.3.mlp_out",
          "a candidate without one hook fails, naming it")
    d = diff(ref, ref, "--atol", "0.001")
    check(d["tolerance"]["preset"] == "custom", "--atol is reported as custom")
    logits = np.array([e["logits"] for e in evs if e["event"] == "logits"], dtype=np.float32)
    ids = [e["token"] for e in evs if e["event"] == "logits"]
    lp = logits - np.log(np.exp(logits - logits.max(1, keepdims=True)).sum(1, keepdims=True)) \
        - logits.max(1, keepdims=True)
    ok = True
    for name, rows, kw in (("c.npy", logits, {}), ("c.f32", logits, {}),
                           ("lp.f32", lp, {"logprobs": True})):
        path = os.path.join(tmp, name)
        write_logits(path, rows, token_ids=ids, **kw)
        d = diff(ref, path)
        ok = ok and d["verdict"] == "pass" and d["inputs"]["checked"] and d["positions"] == len(ids)
        ok = ok and d["logprobs"] == ("logprobs" in kw)
    bad = list(ids)
    bad[6] = (bad[6] + 1) % 512
    write_logits(os.path.join(tmp, "bad.npy"), logits, token_ids=bad)
    d = diff(ref, os.path.join(tmp, "bad.npy"))
    check(ok and d["inputs"]["differ_from"] == 6 and d["positions"] == 6,
          ".npy, .f32 with token_ids and log-probabilities compare as the trace does; "
          "the sidecar's token_ids are checked")


def check_score_quant(tmp, ref):
    """score takes the quantization options its --help lists."""
    q = os.path.join(tmp, "q.jsonl")
    run(BIN, "score", *MODEL, "--text", TEXT, "--quant-weights", "int8", "--quant-kv", "int8",
        "--out", q)
    quant = [e for e in events(q) if e["event"] == "run"][0]["quant"]
    d8, d32 = diff(ref, q, "--preset", "int8"), diff(ref, q)
    check(quant["weights"] == "int8" and quant["kv"] == "int8" and d8["verdict"] == "pass"
          and d32["verdict"] == "fail",
          f"score --quant-weights int8 --quant-kv int8: int8 in its run event, passes the int8 "
          f"preset (mean KL {d8['kl']['mean']:.2g}) and fails fp32")


def renamed(evs, engine, halves_for):
    """The events with each hook under engine's name, and the rows of the
    hooks in halves_for moved from interleaved pairs to halves per head of 8."""
    names = json.load(open(os.path.join(ROOT, "data", "hook-names.json")))["engines"][engine]["names"]
    out = []
    for e in evs:
        if e["event"] != "activation":
            out.append(e)
            continue
        hook, layer = e["hook"], e.get("layer")
        key = hook if layer is None else hook.replace(f"blocks.{layer}.", "blocks.{L}.", 1)
        if key not in names:
            continue
        e = dict(e, hook=names[key].replace("{L}", str(layer)))
        if key in halves_for:
            x = np.array(e["data"], dtype=np.float64).reshape(-1, 4, 2)  # [heads, i, j]: row 2i + j
            e["data"] = x.transpose(0, 2, 1).reshape(-1).tolist()  # to row j * 4 + i
        out.append(e)
    return out


def check_names(tmp, ref):
    evs = events(ref)
    hf = renamed(evs, "hf", {"blocks.{L}.attn.q_pre", "blocks.{L}.attn.k_pre"})
    path = os.path.join(tmp, "hf.jsonl")
    write(path, hf)
    d = diff(ref, path, "--names", "hf")
    n_hf = sum(1 for e in hf if e["event"] == "activation")
    check(d["verdict"] == "pass" and d["activations"] == n_hf and "resid_mid" in d["not_compared"],
          f"Hugging Face names: {n_hf} activations compared (q_proj/k_proj moved from halves), "
          "the hooks no module outputs reported as not compared")
    for e in hf:
        if e["event"] == "activation" and e["hook"] == "model.layers.3.self_attn.k_proj" and e["pos"] == 4:
            e["data"] = [v * (1 + 1e-4) for v in e["data"]]
    write(path, hf)
    d = diff(ref, path, "--names", "hf")
    check(where(d) == ("blocks.3.attn.k_pre", 3, 4, -1),
          "a perturbed k_proj is reported as blocks.3.attn.k_pre, layer 3, pos 4")
    cpp = renamed(evs, "llama.cpp", {"blocks.{L}.attn.q", "blocks.{L}.attn.k"})
    path = os.path.join(tmp, "cpp.jsonl")
    write(path, cpp)
    good = diff(ref, path, "--names", "llama.cpp", "--rope-halves")
    bad = diff(ref, path, "--names", "llama.cpp")
    check(good["verdict"] == "pass" and where(bad)[:3] == ("blocks.0.attn.q", 0, 0),
          "llama.cpp names: Qcur/Kcur in halves pass with --rope-halves; without it the first "
          "divergence is blocks.0.attn.q at pos 0")
    r = run(BIN, "diff", ref, path, "--names", "vllm", expect=(2,))
    check("--names must be hf, hf-gpt2, hf-gemma, llama.cpp or llama.cpp-2025-02, not 'vllm'" in r.stderr,
          "an unknown --names is refused, naming the maps there are")
    check_old_llama_cpp(tmp, ref, evs)


def check_old_llama_cpp(tmp, ref, evs):
    """A candidate from a llama.cpp before its 2025 graph rework: there
    kqv_out-L is the attention's output after wo (stepwise's attn_out) and
    the merged heads before wo are kqv_merged_cont-L. Under today's map its
    kqv_out-0 lands on blocks.0.attn.z and fails; the report must say that
    it is blocks.0.attn_out's tensor, and which map fits. Under its own map
    it passes."""
    names = json.load(open(os.path.join(ROOT, "data", "hook-names.json")))["engines"]
    old = names["llama.cpp-2025-02"]["names"]
    check(old["blocks.{L}.attn_out"] == "kqv_out-{L}" and old["blocks.{L}.attn.z"] == "kqv_merged_cont-{L}"
          and names["llama.cpp"]["names"]["blocks.{L}.attn.z"] == "kqv_out-{L}",
          "data/hook-names.json: kqv_out is attn.z for llama.cpp, attn_out for llama.cpp-2025-02")
    cand = renamed(evs, "llama.cpp-2025-02", {"blocks.{L}.attn.q", "blocks.{L}.attn.k"})
    path = os.path.join(tmp, "cpp-2025-02.jsonl")
    write(path, cand)
    good = diff(ref, path, "--names", "llama.cpp-2025-02", "--rope-halves")
    # the dump of the names today's map knows (kqv_merged_cont is not among them)
    path = os.path.join(tmp, "cpp-2025-02-known.jsonl")
    write(path, [e for e in cand if not e.get("hook", "").startswith("kqv_merged_cont-")])
    bad = diff(ref, path, "--names", "llama.cpp", "--rope-halves")
    first = bad.get("first_divergence") or {}
    other = first.get("matches_other_hook") or {}
    check(good["verdict"] == "pass", "a pre-2025 llama.cpp candidate passes under --names llama.cpp-2025-02")
    check(bad["verdict"] == "fail" and first.get("hook") == "blocks.0.attn.z"
          and other.get("hook") == "blocks.0.attn_out" and other.get("candidate_name") == "kqv_out-0"
          and other.get("maps_that_fit") == ["llama.cpp-2025-02"],
          f"under --names llama.cpp it fails at {first.get('hook')}, reported as the candidate's "
          f"{other.get('candidate_name')} matching {other.get('hook')}, a name of "
          f"{other.get('maps_that_fit')}")
    text = run(BIN, "diff", ref, path, "--names", "llama.cpp", "--rope-halves", expect=(1,)).stdout
    want = ("the candidate's kqv_out-0 matches blocks.0.attn_out: is the name map right for this "
            "engine version? (it is llama.cpp-2025-02's name for it: --names)")
    check(want in text, "the text report asks whether the name map fits the engine's version")
    plain = diff(ref, ref)
    check(plain["verdict"] == "pass" and "matches_other_hook" not in json.dumps(plain),
          "a passing diff says nothing of other hooks")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        ref = os.path.join(tmp, "ref.jsonl")
        run(BIN, "score", *MODEL, "--text", TEXT, "--hooks", "*", "--out", ref)
        check_perturbations(tmp, ref)
        check_inject(tmp, ref)
        check_inputs(tmp)
        check_golden(tmp)
        check_engines(tmp)
        check_missing_and_formats(tmp, ref)
        check_names(tmp, ref)
        check_score_quant(tmp, ref)
    return check.summary("diff check")


if __name__ == "__main__":
    sys.exit(main())
