#!/usr/bin/python3
"""The bad-input matrix: every input surface of stepwise given what it should
refuse (models, tokenizers, JSON models, requests, traces, diff inputs,
command-line options, output targets, signals).

Each case states the exit status it expects and the words the first error
line must contain. Every case runs under a timeout and within 1 GiB of
resident memory, and after each the scratch folder must hold only what the
case may create: no crash (a death by signal), no hang, no file written
beside its target, no PASS on nonsense.

usage: tests/bad_inputs.py build/stepwise [NAME-PART | --count]   (run by `make test`;
       NAME-PART runs only the cases whose names hold it)
"""
import json
import os
import resource
import shutil
import signal
import stat
import struct
import subprocess
import sys
import time

BIN = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/stepwise")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TMP = os.path.join(ROOT, "build", "tmp", "bad-inputs")
TINY = os.path.join(ROOT, "data", "tiny-model.json")
TIMEOUT = 20  # seconds a case may take; each is a fraction of a second when right
SETUP_TIMEOUT = 10 * TIMEOUT  # a fixture's run (make-model...): a hang fails, never waits


# ---------------------------------------------------------------- fixtures


def path(name):
    return os.path.join(TMP, name)


def write(name, data):
    with open(path(name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())
    return path(name)


def header(dim=8, hidden=16, layers=1, heads=2, kv_heads=2, vocab=13, seq_len=4):
    return struct.pack("<7i", dim, hidden, layers, heads, kv_heads, vocab, seq_len)


def checkpoint_floats(dim=8, hidden=16, layers=1, heads=2, kv_heads=2, vocab=13, seq_len=4):
    """Floats a tied llama2.c checkpoint of this shape holds (run.c's layout)."""
    head = dim // heads
    kv = kv_heads * head
    per_layer = dim + dim * dim + 2 * kv * dim + dim * dim + dim + 3 * dim * hidden
    return vocab * dim + layers * per_layer + dim + seq_len * head


def tokenizer_bin(entries, max_len=None):
    out = struct.pack("<i", max_len or max(len(p) for p, _ in entries))
    for piece, score in entries:
        out += struct.pack("<fi", score, len(piece)) + piece
    return out


def tiny_tokenizer_entries():
    model = json.load(open(TINY))
    return [(p.encode(), float(s)) for p, s in model["tokenizer"]]


def setup():
    shutil.rmtree(TMP, ignore_errors=True)
    os.makedirs(TMP)
    # A good checkpoint of the tiny model's vocabulary, and its tokenizer.
    subprocess.run([BIN, "make-model", "--dim", "8", "--hidden", "16", "--layers", "1",
                    "--heads", "2", "--vocab", "13", "--seq-len", "4", "--out", path("good.bin")],
                   check=True, capture_output=True, timeout=SETUP_TIMEOUT)
    subprocess.run([BIN, "make-model", "--dim", "8", "--hidden", "16", "--layers", "1",
                    "--heads", "2", "--vocab", "13", "--seq-len", "1", "--out", path("seq1.bin")],
                   check=True, capture_output=True, timeout=SETUP_TIMEOUT)
    subprocess.run([BIN, "make-model", "--dim", "8", "--hidden", "16", "--layers", "2",
                    "--heads", "2", "--vocab", "13", "--seq-len", "64", "--out", path("long.bin")],
                   check=True, capture_output=True, timeout=SETUP_TIMEOUT)
    subprocess.run([BIN, "quantize", "--model", path("good.bin"), "--group", "4",
                    "--out", path("good.q8")], check=True, capture_output=True, timeout=SETUP_TIMEOUT)
    write("tok.bin", tokenizer_bin(tiny_tokenizer_entries()))
    os.mkfifo(path("fifo"))
    os.mkdir(path("dir"))
    write("text.txt", "hello\n")
    # Traces the readers accept, to break one field at a time.
    subprocess.run([BIN, "generate", "--prompt", "cat", "--temperature", "1", "--top-k", "3",
                    "--reproducible", "--trace-kv", "--trace", path("good.jsonl")],
                   check=True, capture_output=True, timeout=SETUP_TIMEOUT)
    subprocess.run([BIN, "generate", "--prompt", "cat", "--trace-level", "layers",
                    "--reproducible", "--trace", path("layers.jsonl")], check=True,
                   capture_output=True, timeout=SETUP_TIMEOUT)
    # Big enough that a golden set takes seconds: a signal lands mid-set.
    subprocess.run([BIN, "make-model", "--dim", "384", "--hidden", "1536", "--layers", "4",
                    "--heads", "4", "--vocab", "13", "--seq-len", "256", "--out", path("big.bin")],
                   check=True, capture_output=True, timeout=SETUP_TIMEOUT)
    subprocess.run([BIN, "score", "--text", "cat sat", "--reproducible", "--trace-kv",
                    "--out", path("score.jsonl")], check=True, capture_output=True, timeout=SETUP_TIMEOUT)


FIXTURES = None  # the scratch folder's names after setup


# ---------------------------------------------------------------- cases

CASES = []


def case(name, args, status, words, files=None, creates=(), stream="stderr", check=None,
         stdin=None, timeout=TIMEOUT):
    """args: the command line after `stepwise` (strings; {x} is path(x)).
    files: {name: bytes} written before the run. creates: names the case may
    leave. words: what the first error line (stream) must contain."""
    CASES.append(dict(name=name, args=args, status=status, words=words, files=files or {},
                      creates=set(creates), stream=stream, check=check, stdin=stdin,
                      timeout=timeout))


M = ["--model", "{good.bin}", "--tokenizer", "{tok.bin}"]


def model_cases():
    n = checkpoint_floats()
    good = header() + struct.pack("<%df" % n, *([0.5] * n))
    bad = {
        "missing": (None, "cannot open"),
        "directory": ("{dir}", "folder without config.json"),
        "fifo": ("{fifo}", "is a FIFO"),
        "device": ("/dev/null", "is a character device"),
        "empty": (b"", "too short"),
        "short header": (header()[:12], "too short"),
        "zero dims": (header(dim=0) + good[28:], "dim"),
        "negative layers": (header(layers=-1) + good[28:], "n_layers"),
        "dim not divisible": (header(dim=9) + good[28:], "not divisible"),
        "kv heads above heads": (header(kv_heads=4) + good[28:], "n_kv_heads"),
        "vocab INT_MIN": (header(vocab=-2**31) + good[28:], "vocab_size"),
        "truncated weights": (good[:-4], "truncated"),
        "oversized": (good + b"\0" * 4, "oversized"),
        "huge seq_len": (header(seq_len=2**30) + good[28:], "model"),
        "huge shape": (header(dim=2**30, hidden=2**30, heads=1, kv_heads=1) + good[28:], "model"),
        "a text file": (b"this is not a model at all, just some text\n", "model"),
        "q8 bad version": (b"SWQ8" + struct.pack("<I", 99) + b"\0" * 64, "version"),
        "q8 truncated": (open(path("good.q8"), "rb").read()[:-10], "truncated"),
        "q8 oversized": (open(path("good.q8"), "rb").read() + b"\0", "oversized"),
        "q8 group 0": (open(path("good.q8"), "rb").read()[:36] + struct.pack("<i", 0) +
                       open(path("good.q8"), "rb").read()[40:], "group"),
    }
    for name, (data, words) in bad.items():
        if data is None:
            target = path("no-such-model.bin")
            files = {}
        elif isinstance(data, str):
            target, files = data, {}
        else:
            target, files = path("m.bin"), {"m.bin": data}
        case("model: " + name, ["generate", "--model", target, "--tokenizer", "{tok.bin}"], 2,
             [words], files=files)
    case("model: symlink to a FIFO", ["inspect", "--model", "{link}"], 2, ["FIFO"],
         files={"link": ("symlink", "fifo")})


def tokenizer_cases():
    e = tiny_tokenizer_entries()
    bad = {
        "missing": (None, "cannot open"),
        "fifo": ("{fifo}", "is a FIFO"),
        "directory": ("{dir}", "is a directory"),
        "empty": (b"", "max_token_length"),
        "max length 0": (struct.pack("<i", 0) + tokenizer_bin(e)[4:], "max_token_length"),
        "negative piece length": (struct.pack("<ifi", 8, 0.0, -1), "length -1"),
        "piece longer than max": (struct.pack("<ifi", 2, 0.0, 5) + b"hello", "outside"),
        "truncated record": (tokenizer_bin(e)[:-3], "truncated"),
        "other vocabulary": (tokenizer_bin(e[:-1]), "vocabulary has 13"),
        "NaN score": (tokenizer_bin(e[:5] + [(b"zz", float("nan"))] + e[6:]), "not a number"),
    }
    for name, (data, words) in bad.items():
        if data is None:
            target, files = path("no-such-tok.bin"), {}
        elif isinstance(data, str):
            target, files = data, {}
        else:
            target, files = path("t.bin"), {"t.bin": data}
        case("tokenizer: " + name, ["generate", "--model", "{good.bin}", "--tokenizer", target],
             2, [words], files=files)
    case("tokenizer: too few tokens", ["tokenize", "--tokenizer", "{t.bin}", "--text", "a"], 2,
         ["at least"], files={"t.bin": tokenizer_bin(e[:2])})


def json_model_cases():
    tiny = json.load(open(TINY))

    def variant(edit):
        m = json.loads(json.dumps(tiny))
        edit(m)
        return json.dumps(m).encode()

    def set_config(key, value):
        return lambda m: m["config"].__setitem__(key, value)

    bad = {
        "not JSON": (b"{\"config\": ", "not valid JSON"),
        "empty": (b"", "empty"),
        "NUL byte": (json.dumps(tiny).encode()[:40] + b"\0" + json.dumps(tiny).encode()[40:], "NUL"),
        "no config": (variant(lambda m: m.pop("config")), "config"),
        "fractional dim": (variant(set_config("dim", 2.5)), "config.dim must be an integer"),
        "dim 1e30": (variant(set_config("dim", 1e30)), "config.dim must be an integer"),
        "negative heads": (variant(set_config("n_heads", -1)), "n_heads"),
        "short embedding": (variant(lambda m: m["weights"]["token_embedding"].pop()), "token_embedding"),
        "weight not a number": (variant(lambda m: m["weights"]["rms_final"].__setitem__(0, "x")),
                                "rms_final[0]"),
        "weight beyond float": (variant(lambda m: m["weights"]["rms_final"].__setitem__(0, 1e300)),
                                "not a finite float32"),
        "tokenizer not pairs": (variant(lambda m: m["tokenizer"].__setitem__(3, ["a"])), "tokenizer[3]"),
        "tokenizer short": (variant(lambda m: m["tokenizer"].pop()), "tokenizer"),
        "rope_layout bogus": (variant(set_config("rope_layout", "spiral")), "rope_layout"),
        "rope_layout a number": (variant(set_config("rope_layout", 3)), "rope_layout"),
        "rope_theta negative": (variant(set_config("rope_theta", -1)), "rope_theta"),
        "norm_eps 2": (variant(set_config("norm_eps", 2)), "epsilon"),
        "head_dim odd": (variant(set_config("head_dim", 3)), "odd"),
        "head_dim 1e9": (variant(set_config("head_dim", 1e9)), "head_dim"),
        "qkv_bias without its weights": (variant(set_config("qkv_bias", True)), "bq"),
        "qk_norm a string": (variant(set_config("qk_norm", "yes")), "qk_norm"),
        "a bias the architecture lacks": (
            variant(lambda m: m["weights"]["layers"][0].__setitem__("bq", [0, 0])),
            "not part of this architecture"),
        "rope_scaling type bogus": (variant(set_config("rope_scaling", {"type": "yarn"})), "rope_scaling"),
        "llama3 scaling without its factors": (
            variant(set_config("rope_scaling", {"type": "llama3", "factor": 8})), "llama3"),
        "linear scaling factor 0": (
            variant(set_config("rope_scaling", {"type": "linear", "factor": 0})), "factor"),
    }
    for name, (data, words) in bad.items():
        case("json model: " + name, ["generate", "--model", "{m.json}", "--prompt", "cat"], 2,
             [words], files={"m.json": data})
    case("json model: a FIFO named .json", ["generate", "--model", "{f.json}"], 2, ["FIFO"],
         files={"f.json": ("fifo",)})


def request_cases():
    # The file as a whole: exit 2.
    whole = {
        "missing": (None, "cannot open"),
        "fifo": ("{fifo}", "is a FIFO"),
        "directory": ("{dir}", "is a directory"),
        "empty": (b"", "empty"),
        "NUL byte in a line": (b'{"id":"a","prompt":"cat"}\x00{"id":"b"}\n', "NUL byte"),
    }
    for name, (data, words) in whole.items():
        if data is None:
            target, files = path("no-such.jsonl"), {}
        elif isinstance(data, str):
            target, files = data, {}
        else:
            target, files = path("r.jsonl"), {"r.jsonl": data}
        case("requests: " + name, ["batch", "--requests", target, "--quiet"], 2, [words],
             files=files)
    # One line each: the line is refused (stdout), the others served, exit 1.
    ok = '{"id":"ok","prompt":"cat","max_tokens":2}\n'
    lines = {
        "arrival 1e12 (no sleep)": ('{"id":"x","prompt":"cat","arrival_ms":1e12}', "arrival_ms"),
        "arrival 1e400 (no busy loop)": ('{"id":"x","prompt":"cat","arrival_ms":1e400}', "arrival_ms"),
        "arrival negative": ('{"id":"x","prompt":"cat","arrival_ms":-1}', "arrival_ms"),
        "max_tokens 1e12": ('{"id":"x","prompt":"cat","max_tokens":1e12}', "max_tokens"),
        "max_tokens 2.5": ('{"id":"x","prompt":"cat","max_tokens":2.5}', "max_tokens"),
        "max_tokens 0": ('{"id":"x","prompt":"cat","max_tokens":0}', "at least 1"),
        "seed 1.5": ('{"id":"x","prompt":"cat","seed":1.5}', "seed must be a whole number"),
        "seed 0": ('{"id":"x","prompt":"cat","seed":0}', "seed"),
        "top_k 1.5": ('{"id":"x","prompt":"cat","top_k":1.5}', "top_k"),
        "top_k 1e300": ('{"id":"x","prompt":"cat","top_k":1e300}', "top_k"),
        "temperature 1e300": ('{"id":"x","prompt":"cat","temperature":1e300}', "temperature"),
        "top_p 2": ('{"id":"x","prompt":"cat","top_p":2}', "top-p"),
        "id 1e300": ('{"id":1e300,"prompt":"cat"}', "needs an \"id\""),
        "id with a slash": ('{"id":"../x","prompt":"cat"}', "may only use"),
        "unknown field": ('{"id":"x","prompt":"cat","colour":1}', "unknown field"),
        "not JSON": ('{"id":"x",', "not valid JSON"),
        "not an object": ('[1,2]', "not a JSON object"),
        "prompt and messages": ('{"id":"x","prompt":"a","messages":[]}', "either"),
        "bad role": ('{"id":"x","messages":[{"role":"wizard","content":"hi"}]}', "unknown role"),
        "prompt beyond the context": ('{"id":"x","prompt":"%s"}' % ("cat sat " * 4000), "context holds 8"),
        "a memory note beyond the context": ('{"id":"x","prompt":"cat","memory":["%s"]}' % ("cat " * 40),
                                             "alone has"),
        "a document beyond the context": ('{"id":"x","prompt":"cat","documents":[{"id":"d","text":"%s"}]}'
                                          % ("cat " * 40), "document:d alone has"),
        "memory not an array": ('{"id":"x","prompt":"cat","memory":"cat"}', "memory must be an array"),
        "a memory note not text": ('{"id":"x","prompt":"cat","memory":[3]}', "must be a string"),
        "a document without text": ('{"id":"x","prompt":"cat","documents":[{"id":"d"}]}', "\"text\""),
        "a document id with a slash": ('{"id":"x","prompt":"cat","documents":[{"id":"a/b","text":"c"}]}',
                                       "may only use"),
        "system with a plain prompt": ('{"id":"x","prompt":"cat","system":"s"}', "goes with"),
    }
    for name, (line, words) in lines.items():
        case("request: " + name, ["batch", "--requests", "{r.jsonl}", "--quiet"], 1, [words],
             files={"r.jsonl": ok + line + "\n"}, stream="stdout-error")


def trace_cases():
    good = open(path("good.jsonl")).read().splitlines()
    run = good[0]
    bad = {
        "run header alone": ('{"event":"run"}\n', "vocab_size"),
        "vocab 2^31": ('{"event":"run","model":{"vocab_size":2147483648},"prompt_tokens":[1]}\n',
                       "vocab_size"),
        "empty logits": ('{"event":"run","model":{"vocab_size":5},"prompt_tokens":[1]}\n'
                         '{"event":"logits","pos":0,"token":1,"logits":[]}\n', "1 to 5 logits"),
        "logits token out of range": ('{"event":"run","model":{"vocab_size":2},"prompt_tokens":[1]}\n'
                                      '{"event":"logits","pos":0,"token":7,"logits":[1,2]}\n',
                                      "token below vocab_size"),
        "logits pos not whole": ('{"event":"run","model":{"vocab_size":2},"prompt_tokens":[1]}\n'
                                 '{"event":"logits","pos":0.5,"token":1,"logits":[1,2]}\n', "pos"),
        "forward without n_tokens": (run + '\n{"event":"forward","pos":0}\n', "n_tokens"),
        "no prompt tokens": ('{"event":"run","model":{"vocab_size":2}}\n', "--pos"),
        "no run header": ('{"event":"logits","pos":0,"token":1,"logits":[1]}\n', "no run header"),
        "binary garbage": (b"\x00\xff\xfe garbage \x80\n", "no run header"),
        "empty file": (b"", "no run header"),
    }
    for name, (data, words) in bad.items():
        case("trace show: " + name, ["trace", "show", "{t.jsonl}"], 2, [words],
             files={"t.jsonl": data})
    for name, target, words in [("missing", path("none.jsonl"), "cannot open"),
                                ("fifo", "{fifo}", "is a FIFO"),
                                ("directory", "{dir}", "is a directory")]:
        case("trace show: " + name, ["trace", "show", target], 2, [words])
        case("trace validate: " + name, ["trace", "validate", target], 2, [words])
    # A path named inside a trace is never opened: a FIFO there cannot hang it.
    fifo_header = json.loads(run)
    fifo_header["environment"] = {"tokenizer_path": path("fifo")}
    case("trace show: tokenizer_path names a FIFO", ["trace", "show", "{t.jsonl}"], 0, [],
         files={"t.jsonl": "\n".join([json.dumps(fifo_header)] + good[1:]) + "\n"})
    # Valid traces without a sampler: a golden set's score and kv files.
    case("trace show: a score trace (no sampler)", ["trace", "show", "{score.jsonl}", "--pos", "1"],
         0, [])
    case("trace show: --pos beyond the trace", ["trace", "show", "{good.jsonl}", "--pos", "99"], 2,
         ["nothing recorded at position 99"])
    case("trace show: --pos -1", ["trace", "show", "{good.jsonl}", "--pos", "-1"], 2, ["--pos"])
    case("trace show: --top 0", ["trace", "show", "{good.jsonl}", "--top", "0"], 2, ["--top"])
    # The validator: violations are exit 1 with FILE:LINE, never "valid".
    layers = open(path("layers.jsonl")).read().splitlines()
    act = next(json.loads(l) for l in layers if '"event":"activation"' in l)
    act["shape"], act["data"] = [65536, 65536], []
    overflow = "\n".join(layers[:2] + [json.dumps(act)] + layers[2:]) + "\n"
    case("trace validate: a shape whose product overflows", ["trace", "validate", "{t.jsonl}"], 1,
         ["exceeds"], files={"t.jsonl": overflow}, stream="stdout")
    # pos + 1 at INT_MAX (found by fuzz_trace: a signed overflow under UBSan)
    case("trace validate: kv_snapshot at pos 2^31 - 1", ["trace", "validate", "{t.jsonl}"], 1,
         ["n_pos is not pos + 1"], files={"t.jsonl": run + '\n{"event":"kv_snapshot","layer":0,'
                                          '"pos":2147483647,"n_pos":4,"k":[[1]],"v":[[1]]}\n'},
         stream="stdout")
    case("trace validate: not JSON", ["trace", "validate", "{t.jsonl}"], 1, ["not valid JSON"],
         files={"t.jsonl": run + "\n{oops\n"}, stream="stdout")
    case("trace validate: truncated (no done)", ["trace", "validate", "{t.jsonl}"], 1,
         ["does not end"], files={"t.jsonl": "\n".join(good[:-1]) + "\n"}, stream="stdout")


def diff_cases():
    logit = lambda pos, values: json.dumps({"event": "logits", "pos": pos, "logits": values})
    kv = lambda layer, pos, k: json.dumps({"event": "kv", "layer": layer, "pos": pos, "k": k, "v": [1]})
    ref_kv = logit(0, [1, 2]) + "\n" + kv(-1, 0, [1]) + "\n"
    bad = {
        "first logits empty": ([logit(0, []), logit(1, [1, 2])], [logit(0, [1, 2])], 2,
                               "0 values"),
        "every logits empty": ([logit(0, [])], [logit(0, [])], 2, "0 values"),
        "kv without layer": ([logit(0, [1]), '{"event":"kv","k":[1],"v":[1]}'], [logit(0, [1])], 2,
                             "layer"),
        "kv negative layer": ([logit(0, [1]), kv(-1, 0, [1])], [logit(0, [1]), kv(-1, 0, [2])], 2,
                              "layer"),
        "pos not whole": ([logit(0.5, [1])], [logit(0, [1])], 2, "pos"),
        "positions not increasing": ([logit(1, [1]), logit(0, [1])], [logit(0, [1])], 2,
                                     "positions must increase"),
        "lengths differ": ([logit(0, [1, 2]), logit(1, [1])], [logit(0, [1])], 2,
                           "the first had 2"),
        "no logits at all": (['{"event":"run"}'], [logit(0, [1])], 2, "no logits"),
        "other vocabulary": ([logit(0, [1, 2])], [logit(0, [1, 2, 3])], 2, "vocabulary sizes differ"),
        "no position in common": ([logit(0, [1])], [logit(1, [1])], 2, "nothing to compare"),
        "malformed line": ([logit(0, [1]), "{oops"], [logit(0, [1])], 2, "not valid JSON"),
        "tensors event without its file": (
            [logit(0, [1])], ['{"event":"run"}', '{"event":"tensors","file":"none.safetensors",'
                              '"first_pos":0,"token_ids":[1],"tensors":[]}'], 2, "cannot open"),
        "tensors event without ids": (
            [logit(0, [1])], ['{"event":"tensors","file":"ref.jsonl","first_pos":0}'], 2,
            "a tensors event needs"),
        "two tensors events": (
            [logit(0, [1])], ['{"event":"tensors"}', '{"event":"tensors"}'], 2,
            "a second tensors event"),
    }
    for name, (ref, cand, status, words) in bad.items():
        case("diff: " + name, ["diff", "{ref.jsonl}", "{cand.jsonl}"], status, [words],
             files={"ref.jsonl": "\n".join(ref) + "\n", "cand.jsonl": "\n".join(cand) + "\n"},
             check=no_pass)
    # A real mismatch in a deep layer is a FAIL, not a PASS.
    case("diff: KV mismatch in layer 100", ["diff", "{ref.jsonl}", "{cand.jsonl}"], 1, ["FAIL"],
         files={"ref.jsonl": logit(0, [1]) + "\n" + kv(100, 0, [1]) + "\n",
                "cand.jsonl": logit(0, [1]) + "\n" + kv(100, 0, [2]) + "\n"},
         stream="stdout", check=no_pass)
    # a candidate that lacks a position, a hook, or was fed other tokens: reported, never a pass
    act = lambda hook, pos, data, **kw: json.dumps(dict({"event": "activation", "hook": hook,
                                                         "pos": pos, "data": data}, **kw))
    two = logit(0, [1, 2]) + "\n" + logit(1, [1, 2]) + "\n"
    case("diff: candidate lacks a position", ["diff", "{ref.jsonl}", "{cand.jsonl}"], 1,
         ["lacks logits"], files={"ref.jsonl": two, "cand.jsonl": logit(0, [1, 2]) + "\n"},
         stream="stdout", check=no_pass)
    hooks = act("blocks.0.mlp_out", 0, [1]) + "\n" + act("blocks.1.mlp_out", 0, [1]) + "\n"
    case("diff: candidate lacks a hook in one layer", ["diff", "{ref.jsonl}", "{cand.jsonl}"], 1,
         ["lacks activations"], files={"ref.jsonl": hooks,
                                       "cand.jsonl": act("blocks.0.mlp_out", 0, [1]) + "\n"},
         stream="stdout", check=no_pass)
    score = lambda ids: '{"event":"run","mode":"score"}\n' + "".join(
        json.dumps({"event": "logits", "pos": p, "token": t, "logits": [1, 2]}) + "\n"
        for p, t in enumerate(ids))
    case("diff: score files fed other tokens", ["diff", "{ref.jsonl}", "{cand.jsonl}"], 2,
         ["inputs differ from position 1"],
         files={"ref.jsonl": score([1, 5]), "cand.jsonl": score([1, 6])}, check=no_pass)
    bad_acts = {
        "unknown hook": (act("blocks.0.nothing", 0, [1]), "names none of stepwise's hooks"),
        "hook without layer": (act("blocks.x.mlp_out", 0, [1]), "no name map in data/hook-names.json"),
        "layer beyond 2^20": (act("blocks.99999999.mlp_out", 0, [1]), "names none of stepwise's hooks"),
        "llama.cpp's name without --names": (act("attn_norm-0", 0, [1]),
                                             "the name maps that name it: --names llama.cpp"),
        "Hugging Face's name without --names": (act("model.layers.0.input_layernorm", 0, [1]),
                                                "--names hf"),
        "no hook": ('{"event": "activation", "pos": 0, "data": [1]}', "needs a \"hook\""),
        "logits as a hook: a logits row": (act("logits", 0, [1]), "nothing to compare"),
        "empty data": (act("final_norm", 0, []), "needs"),
        "head not whole": (act("blocks.0.attn.pattern", 0, [1], head=0.5), "needs"),
        "token negative": (act("final_norm", 0, [1], token=-2), "needs"),
    }
    for name, (line, words) in bad_acts.items():
        case("diff activation: " + name, ["diff", "{ref.jsonl}", "{cand.jsonl}"], 2, [words],
             files={"ref.jsonl": line + "\n", "cand.jsonl": act("final_norm", 0, [1]) + "\n"},
             check=no_pass)
    for name, args, words in (("--names bogus", ["--names", "vllm"], "--names must be"),
                              ("--rope-halves alone", ["--rope-halves"], "goes with --names")):
        case("diff: " + name, ["diff", "{ref.jsonl}", "{cand.jsonl}"] + args, 2, [words],
             files={"ref.jsonl": two, "cand.jsonl": two}, check=no_pass)
    halves = act("Qcur-0", 0, [1, 2, 3])
    case("diff: halves without whole heads", ["diff", "{ref.jsonl}", "{cand.jsonl}", "--names",
                                              "llama.cpp", "--rope-halves"], 2, ["whole heads"],
         files={"ref.jsonl": '{"event":"run","model":{"head_dim":2}}\n' +
                act("blocks.0.attn.q", 0, [1, 2, 3]) + "\n", "cand.jsonl": halves + "\n"},
         check=no_pass)
    npy = lambda head, data=struct.pack("<2f", 1, 2): (b"\x93NUMPY\x01\x00" +
                                                       struct.pack("<H", len(head)) + head + data)
    good_head = b"{'descr': '<f4', 'fortran_order': False, 'shape': (1, 2), }\n"
    bad_npy = {
        "not numpy": (b"PK\x03\x04", "not a .npy"),
        "big-endian": (npy(good_head.replace(b"<f4", b">f4")), "not a .npy"),
        "float64": (npy(good_head.replace(b"<f4", b"<f8")), "not a .npy"),
        "Fortran order": (npy(good_head.replace(b"False", b"True")), "not a .npy"),
        "3-D": (npy(good_head.replace(b"(1, 2)", b"(1, 2, 1)")), "not a .npy"),
        "shape overflows": (npy(good_head.replace(b"(1, 2)", b"(99999999999999999999, 2)")),
                            "not a .npy"),
        "header length past the end": (b"\x93NUMPY\x01\x00\xff\xff{", "not a .npy"),
        "unterminated dict": (npy(b"{'descr': '<f4'"), "not a .npy"),
        "data short": (npy(good_head, struct.pack("<f", 1)), "promises"),
        "sidecar token_ids too many": (npy(good_head), "token_ids has 3 ids for 1 positions"),
    }
    for name, (blob, words) in bad_npy.items():
        files = {"c.npy": blob, "ref.jsonl": logit(0, [1, 2]) + "\n"}
        if "sidecar" in name:
            files["c.npy.json"] = json.dumps({"token_ids": [1, 2, 3]})
        case("diff npy: " + name, ["diff", "{ref.jsonl}", "{c.npy}"], 2, [words], files=files,
             check=no_pass)
    meta = lambda **kw: json.dumps(dict({"format": "stepwise-logits-f32", "vocab_size": 2,
                                         "positions": 1}, **kw))
    floats = struct.pack("<2f", 1, 2)
    raw = {
        "no sidecar": ({"r.f32": floats}, "cannot open"),
        "sidecar not JSON": ({"r.f32": floats, "r.f32.json": "{"}, "needs"),
        "sidecar vocab 0": ({"r.f32": floats, "r.f32.json": meta(vocab_size=0)}, "needs"),
        "sidecar vocab 1e300": ({"r.f32": floats, "r.f32.json": meta(vocab_size=1e300)}, "needs"),
        "sidecar negative positions": ({"r.f32": floats, "r.f32.json": meta(positions=-3)}, "needs"),
        "first_pos overflows": ({"r.f32": floats, "r.f32.json": meta(first_pos=2**31 - 1,
                                                                      positions=1, vocab_size=2)},
                                "needs"),
        "first_pos fractional": ({"r.f32": floats, "r.f32.json": meta(first_pos=0.5)}, "needs"),
        "size disagrees": ({"r.f32": floats + b"\0", "r.f32.json": meta()}, "promises"),
        "sidecar a FIFO": ({"r.f32": floats, "r.f32.json": ("fifo",)}, "FIFO"),
        "token_ids not whole": ({"r.f32": floats, "r.f32.json": meta(token_ids=[0.5])}, "needs"),
        "token_ids wrong count": ({"r.f32": floats, "r.f32.json": meta(token_ids=[1, 2])},
                                  "token_ids has 2 ids"),
        "values bogus": ({"r.f32": floats, "r.f32.json": meta(values="probs")}, "needs"),
    }
    for name, (files, words) in raw.items():
        files = dict(files)
        files["cand.jsonl"] = logit(0, [1, 2]) + "\n"
        case("diff raw: " + name, ["diff", "{r.f32}", "{cand.jsonl}"], 2, [words], files=files,
             check=no_pass)
    case("diff: a FIFO", ["diff", "{fifo}", "{good.jsonl}"], 2, ["FIFO"], check=no_pass)


def diff_round_four_cases():
    """Issue 67: a candidate gives each value once (a hook at a position and
    head, a KV row, a logits row; under one name or two that --names maps
    to one hook; in JSON Lines or safetensors), refused by name; a value
    that is not finite is reported as such (nan, inf with its place), a
    FAIL, never a PASS nor 0; inputs that differ from position 0 are a FAIL
    naming it."""
    act = lambda hook, pos, data, **kw: json.dumps(dict({"event": "activation", "hook": hook,
                                                         "pos": pos, "data": data}, **kw))
    logit = lambda pos, values, **kw: json.dumps(dict({"event": "logits", "pos": pos,
                                                       "logits": values}, **kw))
    kv = lambda layer, pos, k: json.dumps({"event": "kv", "layer": layer, "pos": pos, "k": k, "v": [1]})
    ref = "\n".join([act("blocks.0.mlp_out", 0, [1]), act("blocks.0.attn.pattern", 1, [0.5, 0.5], head=1),
                     kv(0, 1, [1]), logit(0, [1, 2]), logit(1, [1, 2])]) + "\n"
    twice = {
        "a hook at a position": ([act("blocks.0.mlp_out", 0, [1]), act("blocks.0.mlp_out", 0, [2])], [],
                                 "blocks.0.mlp_out at pos 0 twice"),
        "a head's row": ([act("blocks.0.attn.pattern", 1, [0.5, 0.5], head=1),
                          act("blocks.0.attn.pattern", 1, [0, 1], head=1)], [],
                         "blocks.0.attn.pattern at pos 1, head 1 twice"),
        "a KV row": ([logit(0, [1, 2]), kv(0, 1, [1]), kv(0, 1, [2])], [], "the KV row of layer 0 at pos 1 twice"),
        "a hook under llama.cpp's name and ours": ([act("ffn_out-0", 0, [2]), act("blocks.0.mlp_out", 0, [1])],
                                                   ["--names", "llama.cpp"], "blocks.0.mlp_out at pos 0 twice"),
        "a hook under two of Hugging Face's names": (
            [act("model.layers.0.mlp.down_proj", 0, [1]), act("blocks.0.mlp_out", 0, [3])], ["--names", "hf"],
            "blocks.0.mlp_out at pos 0 twice"),
        "a logits row": ([logit(0, [1, 2]), logit(0, [1, 3])], [], "a row is given once"),
        "a logits row and lm_head": ([logit(0, [1, 2]), act("lm_head", 0, [1, 3])], ["--names", "hf"],
                                     "a row is given once"),
    }
    for name, (lines, extra, words) in twice.items():
        case("diff twice: " + name, ["diff", "{ref.jsonl}", "{cand.jsonl}"] + extra, 2, [words],
             files={"ref.jsonl": ref, "cand.jsonl": "\n".join(lines) + "\n"}, check=no_pass)
    # a safetensors candidate whose two tensors --names maps to one hook
    head = json.dumps({"blocks.0.mlp_out": {"dtype": "F32", "shape": [1, 1], "data_offsets": [0, 4]},
                       "ffn_out-0": {"dtype": "F32", "shape": [1, 1], "data_offsets": [4, 8]}}).encode()
    blob = struct.pack("<Q", len(head)) + head + struct.pack("<2f", 1, 2)
    case("diff twice: two safetensors tensors of one hook", ["diff", "{ref.jsonl}", "{cand.safetensors}",
                                                              "--names", "llama.cpp"], 2,
         ["blocks.0.mlp_out at pos 0 twice"], files={"ref.jsonl": ref, "cand.safetensors": blob},
         check=no_pass)
    # non-finite candidate values: a FAIL (exit 1) with the figure nan or inf and its place
    meta = json.dumps({"format": "stepwise-logits-f32", "vocab_size": 3, "positions": 2})
    ref3 = struct.pack("<6f", 1, 2, 3, 3, 2, 1)
    nonfinite = {
        "a NaN logit before a larger difference": (struct.pack("<6f", 1, 2, float("nan"), 9, 2, 1),
                                                   "max |dlogit|        nan at pos 0, token 2"),
        "an inf logit after a larger finite one": (struct.pack("<6f", 9, 2, 3, 3, float("inf"), 1),
                                                   "max |dlogit|        inf at pos 1, token 1"),
        "a -inf logit": (struct.pack("<6f", 1, 2, 3, 3, 2, float("-inf")),
                         "max |dlogit|        inf at pos 1, token 2"),
    }
    for name, (floats, words) in nonfinite.items():
        case("diff nonfinite: " + name, ["diff", "{r.f32}", "{c.f32}"], 1, [words],
             files={"r.f32": ref3, "r.f32.json": meta, "c.f32": floats, "c.f32.json": meta},
             stream="stdout", check=no_pass)
    case("diff nonfinite: 1e999 in JSON is inf", ["diff", "{ref.jsonl}", "{cand.jsonl}"], 1,
         ["max |dlogit|        inf at pos 1, token 0"],
         files={"ref.jsonl": ref, "cand.jsonl": logit(0, [1, 2]) + "\n" + logit(1, [1e999, 2]).replace(
             "Infinity", "1e999") + "\n"}, stream="stdout", check=no_pass)
    case("diff nonfinite: NaN is not JSON", ["diff", "{ref.jsonl}", "{cand.jsonl}"], 2, ["not valid JSON"],
         files={"ref.jsonl": ref, "cand.jsonl": logit(0, [1, 2]).replace("2]", "NaN]") + "\n"}, check=no_pass)
    case("diff nonfinite: null in an activation is nan", ["diff", "{ref.jsonl}", "{cand.jsonl}"], 1,
         ["first divergence    blocks.0.mlp_out, layer 0, pos 0: max |d| nan"],
         files={"ref.jsonl": ref, "cand.jsonl": act("blocks.0.mlp_out", 0, [None]) + "\n"},
         stream="stdout", check=no_pass)
    # fed other tokens from position 0: a FAIL naming it, not an error
    fed = lambda tokens: "".join(logit(p, [1, 2], token=t) + "\n" for p, t in enumerate(tokens))
    for name, tokens in (("only at position 0", [9, 2]), ("at every position", [9, 8])):
        case("diff inputs differ " + name, ["diff", "{ref.jsonl}", "{cand.jsonl}"], 1,
             ["inputs     differ from position 0: ref 1, cand 9"],
             files={"ref.jsonl": fed([1, 2]), "cand.jsonl": fed(tokens)}, stream="stdout", check=no_pass)


def hf_cases():
    """Hugging Face folders: a good one (tests/hf_reference.py's writer), then
    one fault at a time in its config.json or its safetensors header."""
    import hf_reference as hf  # tests/ is this script's folder, first on sys.path
    cfg = dict(hf.BASE, architectures=["LlamaForCausalLM"])
    good = path("hf-good")
    hf.write_model_dir(good, cfg, hf.hf_tensors(cfg, 1), "F16")
    config = open(os.path.join(good, "config.json")).read()
    weights = open(os.path.join(good, "model.safetensors"), "rb").read()
    n = struct.unpack("<Q", weights[:8])[0]
    header, data = json.loads(weights[8:8 + n]), weights[8 + n:]

    def st(edit=None, raw=None):
        """model.safetensors with its header edited (or raw bytes)."""
        if raw is not None:
            return raw
        h = json.loads(json.dumps(header))
        edit(h)
        text = json.dumps(h).encode()
        return struct.pack("<Q", len(text)) + text + data

    def cfgd(**kw):
        c = json.loads(config)
        c.update(kw)
        return json.dumps(c)

    def offsets(name, begin, end):
        return lambda h: h[name].__setitem__("data_offsets", [begin, end])

    emb = "model.embed_tokens.weight"
    q = "model.layers.0.self_attn.q_proj.weight"
    first, second = sorted((k for k in header if k != "__metadata__"),
                           key=lambda k: header[k]["data_offsets"][0])[:2]
    bad = {
        "no config.json": ({"model.safetensors": weights}, "without config.json"),
        "config not JSON": ({"config.json": "{", "model.safetensors": weights}, "not a JSON object"),
        "unsupported architecture": ({"config.json": cfgd(architectures=["GPTNeoXForCausalLM"]),
                                      "model.safetensors": weights}, "GPT2LMHeadModel"),
        "attention_bias": ({"config.json": cfgd(attention_bias=True), "model.safetensors": weights},
                           "attention_bias"),
        "hidden_act gelu": ({"config.json": cfgd(hidden_act="gelu"), "model.safetensors": weights},
                            "hidden_act"),
        "rope_scaling yarn": ({"config.json": cfgd(rope_scaling={"rope_type": "yarn", "factor": 4}),
                               "model.safetensors": weights}, "yarn"),
        "longrope: 3 short factors for 2 turned pairs": (
            {"config.json": cfgd(rope_scaling={"type": "longrope", "short_factor": [1.0] * 3,
                                               "long_factor": [1.0] * 2}),
             "model.safetensors": weights}, "short_factor must list 2 factors"),
        "longrope: a long factor of 0": (
            {"config.json": cfgd(rope_scaling={"type": "longrope", "short_factor": [1.0] * 2,
                                               "long_factor": [1.0, 0]}),
             "model.safetensors": weights}, "long_factor[1] must be a number in (0, 1e6]"),
        "longrope: no long_factor": (
            {"config.json": cfgd(rope_scaling={"rope_type": "longrope", "short_factor": [1.0] * 2}),
             "model.safetensors": weights}, "long_factor must list 2 factors"),
        "longrope: original_max_position_embeddings 0": (
            {"config.json": cfgd(original_max_position_embeddings=0, rope_scaling={
                "type": "longrope", "short_factor": [1.0] * 2, "long_factor": [1.0] * 2}),
             "model.safetensors": weights}, "original_max_position_embeddings"),
        "longrope: attention_factor -1": (
            {"config.json": cfgd(rope_scaling={"type": "longrope", "short_factor": [1.0] * 2,
                                               "long_factor": [1.0] * 2, "attention_factor": -1}),
             "model.safetensors": weights}, "attention_factor"),
        "Phi-3's partial_rotary_factor 1.5": ({"config.json": cfgd(architectures=["Phi3ForCausalLM"],
                                                                   partial_rotary_factor=1.5),
                                               "model.safetensors": weights}, "partial_rotary_factor"),
        "Phi-3's partial_rotary_factor turning an odd count": (
            {"config.json": cfgd(architectures=["Phi3ForCausalLM"], partial_rotary_factor=0.3),
             "model.safetensors": weights}, "must be even"),
        "a Phi-3 folder without its fused qkv_proj": ({"config.json": cfgd(architectures=["Phi3ForCausalLM"]),
                                                       "model.safetensors": weights}, "qkv_proj.weight is missing"),
        "max_position_embeddings of 2^30": ({"config.json": cfgd(max_position_embeddings=1 << 30),
                                             "model.safetensors": weights},
                                            "the context length is not believable"),
        "vocab disagrees with the embedding": ({"config.json": cfgd(vocab_size=12),
                                                "model.safetensors": weights}, "wrong shape"),
        "config claims more than the files hold": (
            {"config.json": cfgd(hidden_size=4096, intermediate_size=11008),
             "model.safetensors": weights}, "implies"),
        "no weights file": ({"config.json": config}, "cannot open"),
        "header length beyond the file": ({"config.json": config, "model.safetensors":
                                           st(raw=struct.pack("<Q", 1 << 40) + weights[8:])},
                                          "header length"),
        "header not JSON": ({"config.json": config,
                             "model.safetensors": st(raw=struct.pack("<Q", 4) + b"{{{{")},
                            "not a JSON object"),
        "offsets past the end": ({"config.json": config, "model.safetensors":
                                  st(offsets(emb, 0, len(data) + 2))}, "data_offsets"),
        "negative offset": ({"config.json": config,
                             "model.safetensors": st(offsets(emb, -2, 0))}, "data_offsets"),
        "overlapping tensors": ({"config.json": config, "model.safetensors": st(
            offsets(second, header[first]["data_offsets"][0],
                    header[first]["data_offsets"][0] + header[second]["data_offsets"][1] -
                    header[second]["data_offsets"][0]))}, "overlap"),
        "dtype I64": ({"config.json": config, "model.safetensors":
                       st(lambda h: h[q].__setitem__("dtype", "I64"))}, "dtype I64"),
        "shape disagrees with its bytes": ({"config.json": config, "model.safetensors":
                                            st(lambda h: h[q].__setitem__("shape", [3, 3]))},
                                           "holds"),
        "a tensor missing": ({"config.json": config, "model.safetensors":
                              st(lambda h: h.__setitem__(q + ".renamed", h.pop(q)))},
                             "is missing"),
        "a shard missing": ({"config.json": config, "model.safetensors.index.json":
                             json.dumps({"weight_map": {emb: "model-00001-of-00002.safetensors"}})},
                            "cannot open"),
        "a shard outside the folder": ({"config.json": config, "model.safetensors.index.json":
                                        json.dumps({"weight_map": {emb: "../model.safetensors"}})},
                                       "a file name in the folder"),
    }
    for name, (files, words) in bad.items():
        case("hf: " + name, ["generate", "--model", "{hf}", "--tokenizer", TINY],
             2, [words], files={"hf/" + k: v for k, v in files.items()}, creates=("hf",))
    start = header[second]["data_offsets"][0]  # as the safetensors library places an empty one
    case("hf: an empty tensor at another's start (valid)",
         ["generate", "--model", "{hf}", "--tokenizer", TINY, "--steps", "2"], 0, [],
         files={"hf/config.json": config, "hf/model.safetensors": st(lambda h: h.__setitem__(
             "extra.empty", {"dtype": "F16", "shape": [0, 4], "data_offsets": [start, start]}))},
         creates=("hf",), stream="stdout")
    case("hf: no tokenizer.json and no --tokenizer", ["generate", "--model", "{hf-good}"], 2,
         ["has no tokenizer.json", "--tokenizer"])
    # looked for before the weights are read: a folder whose weights are broken
    # is still refused for its missing tokenizer.json
    case("hf: no tokenizer.json, checked before the weights", ["generate", "--model", "{hf}"], 2,
         ["has no tokenizer.json"], files={"hf/config.json": config, "hf/model.safetensors": b"broken"},
         creates=("hf",))
    # ids in, no pieces out: no tokenizer needed, for a checkpoint or a folder without one
    for model in ("{good.bin}", "{hf-good}"):
        case("score --tokens --top-n 0 with no tokenizer: " + model,
             ["score", "--model", model, "--tokens", "1,2,3", "--top-n", "0", "--out", "{s.jsonl}"], 0, [],
             creates=("s.jsonl",))
    case("score --tokens with --top-n 5 still needs the checkpoint's tokenizer",
         ["score", "--model", "{good.bin}", "--tokens", "1,2,3", "--out", "{s.jsonl}"], 2,
         ["--tokenizer is required"])


def header_editor(weights):
    from hf_reference import header_editor as editor  # tests/ is first on sys.path
    return editor(weights)


def gpt2_cases():
    """GPT-2: a good folder (tests/gpt2_check.py's writer) and the GGUF file
    `convert` makes of it, one fault at a time in their GPT-2 keys and
    tensors."""
    import gpt2_check
    import hf_reference as hf
    cfg = gpt2_check.config(d=16, layers=1, heads=2, vocab=13, positions=16)
    good = path("gpt2-good")
    hf.write_model_dir(good, cfg, gpt2_check.random_tensors(cfg, 3), "F32")
    weights = open(os.path.join(good, "model.safetensors"), "rb").read()
    st = header_editor(weights)

    qkv = "transformer.h.0.attn.c_attn.weight"
    bad = {
        "n_inner 0": (dict(cfg, n_inner=0), weights, "n_inner"),
        "layer_norm_epsilon -1": (dict(cfg, layer_norm_epsilon=-1), weights, "layer_norm_epsilon"),
        "activation_function relu": (dict(cfg, activation_function="relu"), weights, "activation_function"),
        "scale_attn_weights false": (dict(cfg, scale_attn_weights=False), weights, "scale_attn_weights"),
        "c_attn of another shape": (cfg, st(lambda h: h[qkv].__setitem__("shape", [48, 16])), "wrong shape"),
        "no position embedding": (cfg, st(lambda h: h.__setitem__("transformer.wpe.x",
                                                                      h.pop("transformer.wpe.weight"))),
                                  "transformer.wpe.weight is missing"),
    }
    for name, (c, w, words) in bad.items():
        case("gpt2 folder: " + name, ["score", "--model", "{hf}", "--tokens", "1,2", "--top-n", "0",
                                      "--out", "{s.jsonl}"], 2, [words],
             files={"hf/config.json": json.dumps(c), "hf/model.safetensors": w}, creates=("hf",))
    gguf = path("gpt2-good.gguf")
    subprocess.run([BIN, "convert", "--model", good, "--tokenizer", TINY, "--out", gguf],
                   check=True, capture_output=True, timeout=SETUP_TIMEOUT)
    blob = open(gguf, "rb").read()
    key = b"gpt2.attention.layer_norm_epsilon\x06\x00\x00\x00"  # then the float32
    at = blob.index(key) + len(key)
    for name, broken, words in (
            ("layer_norm_epsilon -1", blob[:at] + struct.pack("<f", -1) + blob[at + 4:], "must be in (0, 1)"),
            ("no position_embd", blob.replace(b"position_embd.weight", b"position_embx.weight", 1),
             "position_embd.weight is missing")):
        case("gguf gpt2: " + name, ["score", "--model", "{m.gguf}", "--tokens", "1,2", "--top-n", "0",
                                    "--out", "{s.jsonl}"], 2, [words], files={"m.gguf": broken})


def gemma_cases():
    """Gemma 2 and Gemma 3: a good folder (tests/gemma_check.py's writer) and
    the GGUF file `convert` makes of it, one fault at a time in Gemma's keys
    and tensors; and the models convert refuses to write as llama.cpp's."""
    import gemma_check
    import hf_reference as hf
    cfg = gemma_check.config(True, d=16, layers=2, heads=2, kv=1, hd=8, vocab=13, positions=16)
    good = path("gemma-good")
    hf.write_model_dir(good, cfg, gemma_check.random_tensors(cfg, 3), "F32")
    weights = open(os.path.join(good, "model.safetensors"), "rb").read()
    st = header_editor(weights)

    post = "model.layers.0.post_feedforward_layernorm.weight"
    bad = {
        "hidden_activation silu": (dict(cfg, hidden_activation="silu"), weights, "hidden_activation silu"),
        "query_pre_attn_scalar 0": (dict(cfg, query_pre_attn_scalar=0), weights, "query_pre_attn_scalar"),
        "final_logit_softcapping a string": (dict(cfg, final_logit_softcapping="30"), weights,
                                             "final_logit_softcapping"),
        "sliding_window -4": (dict(cfg, sliding_window=-4), weights, "sliding_window"),
        "attn_logit_softcapping 0": (dict(cfg, attn_logit_softcapping=0), weights,
                                     "attn_logit_softcapping must be a positive number or null"),
        "layer_types not a list": (dict(cfg, layer_types="sliding_attention"), weights, "layer_types"),
        "layer_types with another kind": (dict(cfg, layer_types=["sliding_attention", "chunked_attention"]),
                                          weights, "chunked_attention"),
        "sliding_window_pattern 0": (dict({k: v for k, v in cfg.items() if k != "layer_types"},
                                          sliding_window_pattern=0), weights, "sliding_window_pattern"),
        "rope_local_base_freq -1": (dict(cfg, rope_local_base_freq=-1), weights, "rope_local_base_freq"),
        "no post-feedforward norm": (cfg, st(lambda h: h.__setitem__(post + "x", h.pop(post))),
                                     post + " is missing"),
        "a post-feedforward norm of another width": (cfg, st(lambda h: h[post].__setitem__("shape", [8])),
                                                     "its shape and dtype need"),
    }
    for name, (c, w, words) in bad.items():
        case("gemma folder: " + name, ["score", "--model", "{hf}", "--tokens", "1,2", "--top-n", "0",
                                       "--out", "{s.jsonl}"], 2, [words],
             files={"hf/config.json": json.dumps(c), "hf/model.safetensors": w}, creates=("hf",))
    gguf = path("gemma-good.gguf")
    made = path("gemma-made")
    subprocess.run([BIN, "make-model", "--format", "hf", "--arch", "gemma3", "--dim", "16", "--hidden", "32",
                    "--layers", "2", "--heads", "2", "--kv-heads", "1", "--vocab", "13", "--seq-len", "16",
                    "--sliding-window", "4", "--out", made], check=True, capture_output=True, timeout=SETUP_TIMEOUT)
    subprocess.run([BIN, "convert", "--model", made, "--tokenizer", TINY, "--out", gguf],
                   check=True, capture_output=True, timeout=SETUP_TIMEOUT)
    blob = open(gguf, "rb").read()
    key = b"gemma3.attention.sliding_window\x04\x00\x00\x00"  # then the uint32
    at = blob.index(key) + len(key)
    for name, broken, words in (
            ("sliding_window a string", blob[:at - 4] + struct.pack("<I", 8) + blob[at:], "sliding_window"),
            ("no post_ffw_norm", blob.replace(b"blk.1.post_ffw_norm.weight", b"blk.1.post_ffw_norx.weight", 1),
             "post_ffw_norm.weight is missing"),
            ("no post_attention_norm", blob.replace(b"blk.0.post_attention_norm.weight",
                                                    b"blk.0.post_attention_norx.weight", 1),
             "post_attention_norm.weight is missing")):
        case("gguf gemma3: " + name, ["score", "--model", "{m.gguf}", "--tokens", "1,2", "--top-n", "0",
                                      "--out", "{s.jsonl}"], 2, [words], files={"m.gguf": broken})
    for name, extra, words in (
            ("a sliding pattern llama.cpp's gemma3 does not have", ["--sliding-pattern", "2"], "layer 1"),
            ("a local RoPE base other than 10000", ["--rope-local-theta", "500"], "RoPE base of 10000"),
            ("a query scale llama.cpp would not derive", ["--query-scale", "100"], "query_pre_attn_scalar")):
        folder = path("gemma-refused-%d" % len(extra[0]))
        subprocess.run([BIN, "make-model", "--format", "hf", "--arch", "gemma3", "--dim", "16", "--hidden", "32",
                        "--layers", "2", "--heads", "2", "--vocab", "13", "--seq-len", "16", "--sliding-window",
                        "4", "--out", folder, *extra], check=True, capture_output=True, timeout=SETUP_TIMEOUT)
        case("convert gemma3: " + name, ["convert", "--model", folder, "--tokenizer", TINY,
                                         "--out", "{c.gguf}"], 2, [words])


def moe_cases():
    """A mixture of experts: a good Mixtral and Qwen3-MoE folder
    (tests/moe_check.py's writer), one fault at a time in their expert
    counts and expert tensors."""
    import moe_check
    import hf_reference as hf
    for qwen in (False, True):
        cfg = moe_check.config(qwen, layers=2)
        good = path("moe-good-%d" % qwen)
        hf.write_model_dir(good, cfg, moe_check.random_tensors(cfg, 4), "F32")
        weights = open(os.path.join(good, "model.safetensors"), "rb").read()
        st = header_editor(weights)
        experts = "num_experts" if qwen else "num_local_experts"
        block = "model.layers.1." + ("mlp." if qwen else "block_sparse_moe.")
        down = block + ("experts.3.down_proj.weight" if qwen else "experts.3.w2.weight")
        family = "qwen3-moe" if qwen else "mixtral"
        bad = {
            experts + " 0": (dict(cfg, **{experts: 0}), weights, experts),
            "num_experts_per_tok 5 of 4 experts": (dict(cfg, num_experts_per_tok=5), weights,
                                                   "num_experts_per_tok must be a whole number in [1, "),
            "no num_experts_per_tok": ({k: v for k, v in cfg.items() if k != "num_experts_per_tok"}, weights,
                                       "num_experts_per_tok"),
            experts + " 5 (the files hold 4)": (dict(cfg, **{experts: 5}), weights,
                                                 "the safetensors files hold"),
            "an expert's down projection of another shape": (
                cfg, st(lambda h: h[down].__setitem__("shape", [8 if qwen else 24, 16])), "wrong shape"),
            "a router of another width": (cfg, st(lambda h: h[block + "gate.weight"].__setitem__("shape", [4, 8])),
                                          "its shape and dtype need"),
        }
        if qwen:
            bad.update({
                "mlp_only_layers [7] of 2 layers": (dict(cfg, mlp_only_layers=[7]), weights, "mlp_only_layers"),
                "decoder_sparse_step 0": (dict(cfg, decoder_sparse_step=0), weights, "decoder_sparse_step"),
                "norm_topk_prob 1": (dict(cfg, norm_topk_prob=1), weights, "norm_topk_prob"),
                "no moe_intermediate_size": ({k: v for k, v in cfg.items() if k != "moe_intermediate_size"},
                                             weights, "moe_intermediate_size")})
        for name, (c, w, words) in bad.items():
            case(f"{family} folder: {name}", ["score", "--model", "{hf}", "--tokens", "1,2", "--top-n", "0",
                                              "--out", "{s.jsonl}"], 2, [words],
                 files={"hf/config.json": json.dumps(c), "hf/model.safetensors": w}, creates=("hf",))
    made, gguf = path("moe-made"), path("moe-made.gguf")  # GGUF: the expert counts against the tensors
    subprocess.run([BIN, "make-model", "--format", "hf", "--arch", "mixtral", "--experts", "4", "--dim", "16",
                    "--hidden", "24", "--layers", "2", "--heads", "4", "--vocab", "13", "--seq-len", "16",
                    "--out", made], check=True, capture_output=True, timeout=SETUP_TIMEOUT)
    subprocess.run([BIN, "convert", "--model", made, "--tokenizer", TINY, "--out", gguf], check=True,
                   capture_output=True, timeout=SETUP_TIMEOUT)
    blob = open(gguf, "rb").read()
    key = b"llama.expert_count\x04\x00\x00\x00"
    at = blob.index(key) + len(key)
    used = b"llama.expert_used_count\x04\x00\x00\x00"
    at_used = blob.index(used) + len(used)
    for name, broken, words in (
            ("expert_count 5 (the tensors hold 4)", blob[:at] + struct.pack("<I", 5) + blob[at + 4:],
             "the file holds"),
            ("expert_count 0", blob[:at] + struct.pack("<I", 0) + blob[at + 4:], "expert_count"),
            ("expert_used_count 6 of 4", blob[:at_used] + struct.pack("<I", 6) + blob[at_used + 4:],
             "1 <= k <= E"),
            ("no ffn_up_exps in layer 1", blob.replace(b"blk.1.ffn_up_exps.weight", b"blk.1.ffn_up_expx.weight", 1),
             "ffn_up_exps.weight is missing")):
        case("gguf mixtral: " + name, ["score", "--model", "{m.gguf}", "--tokens", "1,2", "--top-n", "0",
                                       "--out", "{s.jsonl}"], 2, [words], files={"m.gguf": broken})
    for extra, words in ((["--arch", "llama", "--experts", "4"], "--experts needs --arch mixtral, qwen3moe or deepseek2"),
                         (["--arch", "mixtral"], "needs --experts E"),
                         (["--arch", "mixtral", "--experts", "4", "--moe-step", "2"], "--moe-step needs --arch qwen3moe"),
                         (["--arch", "qwen3moe", "--experts", "4", "--experts-used", "5"], "1 <= k <= E"),
                         (["--arch", "qwen3moe", "--experts", "4", "--dense-layers", "0,x"], "--dense-layers")):
        case("make-model: " + " ".join(extra), ["make-model", "--format", "hf", *extra, "--dim", "16", "--hidden",
                                                 "24", "--layers", "2", "--heads", "4", "--vocab", "13",
                                                 "--seq-len", "16", "--out", "{m}"], 2, [words], creates=("m",))


def deepseek2_cases():
    """DeepSeek-V2: a good folder (tests/deepseek2_check.py's writer), one
    fault at a time in its MLA widths and routing keys; its GGUF (as
    convert writes it), one fault at a time in the keys llama.cpp's
    deepseek2 reads."""
    import deepseek2_check as ds
    import hf_reference as hf
    cfg = ds.config(layers=2)
    good = path("ds-good")
    hf.write_model_dir(good, cfg, ds.random_tensors(cfg, 4), "F32")
    weights = open(os.path.join(good, "model.safetensors"), "rb").read()
    bad = {
        "no qk_nope_head_dim": ({k: v for k, v in cfg.items() if k != "qk_nope_head_dim"}, "qk_nope_head_dim"),
        "qk_rope_head_dim 3 (odd)": (dict(cfg, qk_rope_head_dim=3), "even qk_rope_head_dim"),
        "kv_lora_rank 0": (dict(cfg, kv_lora_rank=0), "kv_lora_rank"),
        "kv_lora_rank 13 (the files hold 12)": (dict(cfg, kv_lora_rank=13), "the safetensors files hold"),
        "moe_layer_freq 2": (dict(cfg, moe_layer_freq=2), "moe_layer_freq"),
        "topk_method group_limited_greedy": (dict(cfg, topk_method="group_limited_greedy"), "topk_method"),
        "topk_method noaux_tc (V3's)": (dict(cfg, topk_method="noaux_tc"), "topk_method noaux_tc is not"),
        "n_group 3 of 4 experts": (dict(cfg, topk_method="group_limited_greedy", n_group=3, topk_group=1),
                                   "must divide n_experts"),
        "topk_group 3 of 2 groups": (dict(cfg, topk_method="group_limited_greedy", n_group=2, topk_group=3),
                                     "at most as many groups"),
        "1 group of 1 expert used for k 2": (dict(cfg, topk_method="group_limited_greedy", n_group=4, topk_group=1),
                                             "holding at least n_experts_used"),
        "scoring_func sigmoid": (dict(cfg, scoring_func="sigmoid"), "scoring_func"),
        "first_k_dense_replace 3 of 2 layers": (dict(cfg, first_k_dense_replace=3), "first_k_dense_replace"),
        "num_key_value_heads 2 of 4 heads": (dict(cfg, num_key_value_heads=2), "as many KV heads"),
        "yarn without its original context": (dict(cfg, rope_scaling={"type": "yarn", "factor": 4}),
                                              "original_max_position_embeddings"),
        "n_shared_experts 1 and no routed ones": (dict({k: v for k, v in cfg.items() if k != "n_routed_experts"},
                                                       n_routed_experts=None), "is missing"),
    }
    for name, (c, words) in bad.items():
        case(f"deepseek2 folder: {name}", ["score", "--model", "{hf}", "--tokens", "1,2", "--top-n", "0",
                                           "--out", "{s.jsonl}"], 2, [words],
             files={"hf/config.json": json.dumps(c), "hf/model.safetensors": weights}, creates=("hf",))
    case("deepseek2 folder: --quant-kv int8", ["score", "--model", good, "--tokens", "1,2", "--top-n", "0",
                                               "--quant-kv", "int8", "--out", "{s.jsonl}"], 2,
         ["int8 cache of MLA's latents"])
    gguf = path("ds-good.gguf")
    subprocess.run([BIN, "convert", "--model", good, "--tokenizer", TINY, "--out", gguf], check=True,
                   capture_output=True, timeout=SETUP_TIMEOUT)
    blob = open(gguf, "rb").read()

    def u32(key, value):
        k = key.encode() + b"\x04\x00\x00\x00"
        at = blob.index(k) + len(k)
        return blob[:at] + struct.pack("<I", value) + blob[at + 4:]
    for name, broken, words in (
            ("expert_shared_count 0", u32("deepseek2.expert_shared_count", 0), "shared ones"),
            ("kv_lora_rank 13 (the tensors hold 12)", u32("deepseek2.attention.kv_lora_rank", 13), "the file holds"),
            ("leading_dense_block_count 9 of 2 layers", u32("deepseek2.leading_dense_block_count", 9),
             "leading_dense_block_count"),
            ("rope.dimension_count 0", u32("deepseek2.rope.dimension_count", 0), "rope.dimension_count"),
            ("no attn_kv_b in layer 1", blob.replace(b"blk.1.attn_kv_b.weight", b"blk.1.attn_kv_x.weight", 1),
             "attn_kv_b.weight")):
        case("gguf deepseek2: " + name, ["score", "--model", "{m.gguf}", "--tokens", "1,2", "--top-n", "0",
                                         "--out", "{s.jsonl}"], 2, [words], files={"m.gguf": broken})


def longrope_cases():
    """Phi-3's longrope in GGUF (rope_factors_long and _short, and its
    rope.scaling keys, as convert writes them), one fault at a time."""
    import hf_reference as hf
    cfg = dict(hf.BASE, architectures=["Phi3ForCausalLM"], original_max_position_embeddings=8,
               rope_scaling={"rope_type": "longrope", "short_factor": [1.0, 1.5], "long_factor": [2.0, 7.0]})
    folder, gguf = path("longrope-good"), path("longrope-good.gguf")
    hf.write_model_dir(folder, cfg, hf.hf_tensors(cfg, 2), "F32")
    subprocess.run([BIN, "convert", "--model", folder, "--tokenizer", TINY, "--out", gguf],
                   check=True, capture_output=True, timeout=SETUP_TIMEOUT)
    blob = open(gguf, "rb").read()
    key = b"phi3.rope.scaling.attn_factor\x06\x00\x00\x00"  # then the float32
    at = blob.index(key) + len(key)
    nan = blob[:at] + struct.pack("<f", float("nan")) + blob[at + 4:]
    made, plain = path("phi3-plain"), path("phi3-plain.gguf")
    subprocess.run([BIN, "make-model", "--format", "hf", "--arch", "phi3", "--dim", "16", "--hidden", "24",
                    "--layers", "2", "--heads", "4", "--vocab", "13", "--seq-len", "16", "--out", made],
                   check=True, capture_output=True, timeout=SETUP_TIMEOUT)
    subprocess.run([BIN, "convert", "--model", made, "--tokenizer", TINY, "--out", plain],
                   check=True, capture_output=True, timeout=SETUP_TIMEOUT)
    matrix = open(plain, "rb").read().replace(b"blk.1.attn_output.weight", b"rope_factors_long.weight", 1)
    for name, broken, words in (
            ("attn_factor NaN", nan, "attn_factor must be a number in (0, 1000]"),
            ("no original_context_length", blob.replace(b"phi3.rope.scaling.original_context_length",
                                                        b"phi3.rope.scaling.original_context_lengtx", 1),
             "original_context_length"),
            ("no rope_factors_short", blob.replace(b"rope_factors_short.weight", b"rope_factors_shorx.weight", 1),
             "rope_factors_short.weight must be"),
            ("a matrix called rope_factors_long", matrix, "rope_factors_long.weight must be 2 float32 factors")):
        case("gguf phi3 longrope: " + name, ["score", "--model", "{m.gguf}", "--tokens", "1,2", "--top-n", "0",
                                             "--out", "{s.jsonl}"], 2, [words], files={"m.gguf": broken})


def tokenizer_json_cases():
    """tokenizer.json and tokenizer_config.json (tests/tokenizer_json_write.py
    writes good small ones), one fault at a time, and the commands' inputs
    that go with them: texts, JSON Lines, conversations."""
    import tokenizer_json_write as w
    tok, config = w.byte_level()
    good = json.dumps(tok)

    def edited(edit):
        t = json.loads(good)
        edit(t)
        return json.dumps(t)

    bad = {
        "not JSON": ({"tokenizer.json": "{"}, "not a JSON object"),
        "unknown model type": ({"tokenizer.json": edited(
            lambda t: t["model"].__setitem__("type", "Unigram"))}, "model type Unigram"),
        "a vocabulary id twice": ({"tokenizer.json": edited(
            lambda t: t["model"]["vocab"].__setitem__("zz", 0))}, "id 0 is given"),
        "an id out of range": ({"tokenizer.json": edited(
            lambda t: t["model"]["vocab"].__setitem__("zz", 1 << 30))}, "no id in [0, 2^24)"),
        "a merge of unknown tokens": ({"tokenizer.json": edited(
            lambda t: t["model"]["merges"].append(["q", "nope"]))}, "not in the vocabulary"),
        "a regex that does not compile": ({"tokenizer.json": edited(
            lambda t: t["pre_tokenizer"]["pretokenizers"][0]["pattern"].__setitem__(
                "Regex", "(\\p{L"))}, "pre_tokenizer Split"),
        "an unknown normalizer": ({"tokenizer.json": edited(
            lambda t: t.__setitem__("normalizer", {"type": "BertNormalizer"}))},
            "normalizer BertNormalizer is not supported"),
        "an unknown pre-tokenizer": ({"tokenizer.json": edited(
            lambda t: t.__setitem__("pre_tokenizer", {"type": "Whitespace"}))},
            "pre_tokenizer Whitespace is not supported"),
        "an added token without content": ({"tokenizer.json": edited(
            lambda t: t["added_tokens"][0].__setitem__("content", ""))}, "added_tokens[0]"),
        "config not JSON": ({"tokenizer.json": good, "tokenizer_config.json": "[1"},
                            "tokenizer_config.json is not a JSON object"),
        "config names an EOS that is no token": (
            {"tokenizer.json": good, "tokenizer_config.json": json.dumps(
                dict(config, eos_token="<|nope|>"))}, "eos_token '<|nope|>' is not a token"),
    }
    for name, (files, words) in bad.items():
        case("tokenizer.json: " + name, ["tokenize", "--tokenizer", "{tj}", "--text", "a"], 2,
             [words], files={"tj/" + k: v for k, v in files.items()}, creates=("tj",))
    good_files = {"tj/tokenizer.json": good, "tj/tokenizer_config.json": json.dumps(config)}
    case("tokenizer.json: more ids than the model's vocabulary",
         ["generate", "--model", "{hf-good}", "--tokenizer", "{tj/tokenizer.json}"], 2,
         ["but the model's vocabulary has 13"], files=good_files, creates=("tj",))
    case("tokenizer.json: text not UTF-8", ["tokenize", "--tokenizer", "{tj}", "--text", b"a\xff"],
         2, ["not valid UTF-8"], files=good_files, creates=("tj",))
    case("tokenize --texts: a line that is no JSON string",
         ["tokenize", "--tokenizer", "{tj}", "--texts", "{lines.jsonl}"], 2,
         ["line 2 is not a JSON string"],
         files=dict(good_files, **{"lines.jsonl": '"a"\n{"text": 1}\n'}), creates=("tj",))
    case("tokenize --chat: not an object", ["tokenize", "--tokenizer", "{tj}", "--chat", "{c.json}"],
         2, ["not a JSON object"], files=dict(good_files, **{"c.json": "[]"}), creates=("tj",))
    case("tokenize --chat: a template stepwise does not know",
         ["tokenize", "--tokenizer", "{tj}", "--chat", "{c.json}"], 2, ["--chat-template"],
         files={"tj/tokenizer.json": good, "tj/tokenizer_config.json": json.dumps(
             dict(config, chat_template="{{ messages }}")),
             "c.json": json.dumps({"messages": [{"role": "user", "content": "hi"}]})},
         creates=("tj",))
    case("tokenize --chat: roles out of order",
         ["tokenize", "--tokenizer", "{tj}", "--chat", "{c.json}"], 2, ["alternate"],
         files=dict(good_files, **{"c.json": json.dumps(
             {"messages": [{"role": "assistant", "content": "hi"}]})}), creates=("tj",))
    case("tokenize --chat-template: unknown name",
         ["tokenize", "--tokenizer", "{tj}", "--text", "a", "--chat-template", "vicuna"], 2,
         ["unknown --chat-template 'vicuna'"], files=good_files, creates=("tj",))


def gguf_cases():
    """GGUF files: a tiny llama written from the spec (tests/gguf_write.py),
    broken one field at a time."""
    import gguf_write
    good = gguf_write.tiny_gguf("llama")
    n_tensors, n_kv = struct.unpack("<QQ", good[8:24])

    def patch(at, fmt, value):
        return good[:at] + struct.pack(fmt, value) + good[at + struct.calcsize(fmt):]

    def replace(old, new):
        assert old in good
        return good.replace(old, new, 1)

    bad = {
        "not GGUF": (b"GGUX" + good[4:], "no GGUF magic"),
        "version 9": (patch(4, "<I", 9), "version 9"),
        "tensor count 2^60": (patch(8, "<Q", 1 << 60), "counts do not fit"),
        "metadata count 2^40": (patch(16, "<Q", 1 << 40), "counts do not fit"),
        "truncated": (good[:200], "counts do not fit"),
        "truncated in the tensor data": (good[:-100], "outside the data"),
        "architecture gpt2x": (replace(b"\x05\x00\x00\x00\x00\x00\x00\x00llama", b"\x05\x00\x00\x00\x00\x00\x00\x00gpt2x"),
                              "not supported"),
        "a string past the end": (replace(b"general.architecture\x08\x00\x00\x00\x05",
                                          b"general.architecture\x08\x00\x00\x00\xff"),
                                  "malformed"),
        "n_dims 5": (replace(b"token_embd.weight\x02\x00\x00\x00", b"token_embd.weight\x05\x00\x00\x00"),
                     "more than 4 dims"),
        "a Q4_0 tensor of rows shorter than a block": (
            replace(b"output_norm.weight\x01\x00\x00\x00\x04\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00",
                    b"output_norm.weight\x01\x00\x00\x00\x04\x00\x00\x00\x00\x00\x00\x00\x02\x00\x00\x00"),
            "not whole blocks of 32"),
        "a tensor of type Q5_1 (not read)": (
            replace(b"output_norm.weight\x01\x00\x00\x00\x04\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00",
                    b"output_norm.weight\x01\x00\x00\x00\x04\x00\x00\x00\x00\x00\x00\x00\x07\x00\x00\x00"),
            "type 7, which stepwise does not read"),
        "a Q6_K tensor of rows shorter than a super-block": (
            replace(b"output_norm.weight\x01\x00\x00\x00\x04\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00",
                    b"output_norm.weight\x01\x00\x00\x00\x04\x00\x00\x00\x00\x00\x00\x00\x0e\x00\x00\x00"),
            "not whole blocks of 256"),
    }
    for name, (data, words) in bad.items():
        case("gguf: " + name, ["generate", "--model", "{m.gguf}"], 2, [words],
             files={"m.gguf": data})
    case("gguf: a FIFO", ["generate", "--model", "{f.gguf}"], 2, ["FIFO"], files={"f.gguf": ("fifo",)})
    vocab_only = b"GGUF" + struct.pack("<IQQ", 3, 0, 4) + b"".join(gguf_write.llama_tokenizer_kvs()[:4])
    case("gguf: a vocabulary-only file as a model", ["generate", "--model", "{v.gguf}"], 2,
         ["holds no tensors (a vocabulary-only file)"], files={"v.gguf": vocab_only})
    case("gguf: a vocabulary-only file as a tokenizer (valid)",
         ["tokenize", "--model", "{v.gguf}", "--text", "cats", "--json"], 0, [],
         # by hand: only "\u2581c" of the pairs' merges is a piece ("\u2581ca", "at", "ts"
         # are not), so BOS, then \u2581c a t s
         files={"v.gguf": vocab_only}, check=lambda r: json.loads(r.stdout)["ids"] ==
         [1, 3, 4, 5, 7] or "ids " + r.stdout)
    import tokenizer_json_write
    tj = tokenizer_json_write.byte_level()[0]
    for pre, words in (("falcon", "tokenizer.ggml.pre falcon is not supported"),):
        kvs, n = gguf_write.gpt2_tokenizer_kvs(tj, pre)
        case("gguf: gpt2 tokenizer, pre " + pre, ["tokenize", "--model", "{m.gguf}", "--text", "a"],
             2, [words], files={"m.gguf": gguf_write.tiny_gguf("llama", kvs, n)})
    yarn = gguf_write.llama_tokenizer_kvs() + [gguf_write.kv_str("llama.rope.scaling.type", "yarn")]
    case("gguf: RoPE scaling yarn", ["generate", "--model", "{m.gguf}"], 2,
         ["RoPE scaling yarn is not supported"], files={"m.gguf": gguf_write.tiny_gguf("llama", yarn)})
    freqs = replace(b"token_embd.weight", b"rope_freqs.weight")  # the same length
    case("gguf: a rope_freqs.weight of the wrong size", ["generate", "--model", "{m.gguf}"], 2,
         ["rope_freqs.weight must hold head_dim / 2"], files={"m.gguf": freqs})
    kvs, n = gguf_write.gpt2_tokenizer_kvs(tj, "llama-bpe")
    case("gguf: gpt2 tokenizer larger than the embedding",
         ["tokenize", "--model", "{m.gguf}", "--text", "a"], 2, ["more than 8 tokens"],
         files={"m.gguf": gguf_write.tiny_gguf("llama", kvs, 8)})


def gguf_round_four_cases():
    """Issue 67: a GGUF key value the reader does not implement is refused
    by name (the gating function, llama.cpp's expert groups, pooling,
    non-causal attention), and so is a deepseek2 layer holding kv_b in two
    forms; a tensor the reader does not read is warned about, not run on in
    silence. The files: a tiny llama (tests/gguf_write.py) with one key
    added, and a DeepSeek-V2 folder's GGUF (convert) rewritten by
    tests/gguf_split_mla.py."""
    import deepseek2_check as ds
    import gguf_split_mla
    import gguf_write
    import hf_reference as hf
    score = ["score", "--model", "{m.gguf}", "--tokens", "1,2", "--top-n", "0", "--out", "{s.jsonl}"]
    for name, kv, words in (
            ("expert_gating_func 2", gguf_write.kv_u32("llama.expert_gating_func", 2),
             "llama.expert_gating_func 2 (sigmoid) is not implemented"),
            ("expert_gating_func 3", gguf_write.kv_u32("llama.expert_gating_func", 3),
             "llama.expert_gating_func 3 (softmax_weight) is not implemented"),
            ("expert_gating_func 9 (unknown)", gguf_write.kv_u32("llama.expert_gating_func", 9),
             "llama.expert_gating_func 9 is not a gating function"),
            ("expert_gating_func a string", gguf_write.kv_str("llama.expert_gating_func", "sigmoid"),
             "llama.expert_gating_func must be a whole number"),
            ("expert_group_count 2", gguf_write.kv_u32("llama.expert_group_count", 2),
             "llama.expert_group_count 2: llama.cpp's group-limited routing"),
            ("pooling_type 1 (mean)", gguf_write.kv_u32("llama.pooling_type", 1), "llama.pooling_type 1"),
            ("attention.causal false", gguf_write.gguf_string("llama.attention.causal") + struct.pack("<IB", 7, 0),
             "llama.attention.causal false")):
        data = gguf_write.tiny_gguf("llama", gguf_write.llama_tokenizer_kvs() + [kv])
        case("gguf round four: " + name, score, 2, [words], files={"m.gguf": data})
    # A key given twice: the first copy ran, so an accepted value hid a refused one.
    for order in ((1, 2), (2, 1)):
        data = gguf_write.tiny_gguf("llama", gguf_write.llama_tokenizer_kvs() + [
            gguf_write.kv_u32("llama.expert_gating_func", v) for v in order])
        case("gguf round four: expert_gating_func given twice, %d then %d" % order, score, 2,
             ["key llama.expert_gating_func appears twice"], files={"m.gguf": data})
    cfg = ds.config(layers=2)
    folder, gguf = path("ds4"), path("ds4.gguf")
    hf.write_model_dir(folder, cfg, ds.random_tensors(cfg, 5), "F32")
    subprocess.run([BIN, "convert", "--model", folder, "--tokenizer", TINY, "--out", gguf], check=True,
                   capture_output=True, timeout=SETUP_TIMEOUT)
    for name, kw, words in (
            ("deepseek2 expert_gating_func 2 (DeepSeek-V3's sigmoid)",
             dict(mla=False, extra_kvs=[gguf_write.kv_u32("deepseek2.expert_gating_func", 2)]),
             "deepseek2.expert_gating_func 2 (sigmoid) is not implemented"),
            ("deepseek2 attn_kv_b beside attn_k_b and attn_v_b", dict(keep_kv_b=True),
             "blk.0 holds kv_b twice")):
        out = path("ds4-bad.gguf")
        gguf_split_mla.split(gguf, out, **kw)
        data = open(out, "rb").read()
        os.remove(out)
        case("gguf round four: " + name, score, 2, [words], files={"m.gguf": data})
    E = cfg["n_routed_experts"]
    bias = ("blk.1.exp_probs_b.bias", [E], 0, struct.pack("<%df" % E, *[5.0] * E))
    out = path("ds4-bias.gguf")
    gguf_split_mla.split(gguf, out, mla=False, extra_tensors=[bias])
    data = open(out, "rb").read()
    os.remove(out)
    case("gguf round four: deepseek2 with exp_probs_b (DeepSeek-V3's, not read): warned, runs", score, 0, [],
         files={"m.gguf": data}, creates=("s.jsonl",),
         check=lambda r: "stepwise: warning: " in r.stderr and "1 tensor is not used by the architecture "
         "(blk.1.exp_probs_b.bias)" in r.stderr or "stderr " + r.stderr)


def no_pass(result):
    return "PASS" not in result.stdout or "a PASS on nonsense"


def option_cases():
    o = [
        ("unknown command", ["frobnicate"], "unknown command"),
        ("unknown option", ["generate", "--frob"], "--frob"),
        ("missing value", ["generate", "--steps"], "--steps"),
        ("--steps 0", ["generate", "--steps", "0"], "--steps"),
        ("--steps abc", ["generate", "--steps", "abc"], "--steps"),
        ("--steps 1e99", ["generate", "--steps", "99999999999999999999"], "--steps"),
        ("--temperature nan", ["generate", "--temperature", "nan"], "--temperature"),
        ("--temperature -1", ["generate", "--temperature", "-1"], "temperature"),
        ("--top-p 2", ["generate", "--top-p", "2"], "top-p"),
        ("--top-k -1", ["generate", "--top-k", "-1"], "top-k"),
        ("--min-p 1.5", ["generate", "--min-p", "1.5"], "min-p"),
        ("--seed 0", ["generate", "--seed", "0"], "seed"),
        ("--sampler-order bogus", ["generate", "--sampler-order", "bogus"], "bogus"),
        ("--rng bogus", ["generate", "--rng", "bogus"], "bogus"),
        ("--trace-level bogus", ["generate", "--trace-level", "bogus"], "--trace-level"),
        ("--trace-layers 99 on a 1-layer model", ["generate", "--trace-layers", "99"],
         "--trace-layers 99"),
        ("--trace-layers x", ["generate", "--trace-layers", "x"], "--trace-layers"),
        ("--trace-positions 9-1", ["generate", "--trace-positions", "9-1"], "--trace-positions"),
        ("--context 1", ["generate", "--context", "1"], "--context"),
        ("--context beyond seq_len", ["generate", "--context", "99"], "--context"),
        ("--context-policy bogus", ["generate", "--context-policy", "bogus"], "bogus"),
        ("--quant-weights int4", ["generate", "--quant-weights", "int4"], "int4"),
        ("--quant-group 0", ["generate", "--quant-group", "0"], "--quant-group"),
        ("--kernels bogus", ["generate", "--kernels", "turbo"], "--kernels"),
        ("--weights bogus", ["generate", "--weights", "bf16"], "--weights takes stored or f32, got 'bf16'"),
        ("--gelu bogus", ["generate", "--gelu", "erf"], "--gelu takes exact or ggml, got 'erf'"),
        ("--kv-dtype bogus", ["generate", "--kv-dtype", "f8"], "--kv-dtype takes f32, f16 or bf16, got 'f8'"),
        ("--kv-rounding without --kv-dtype f16", ["generate", "--kv-rounding", "llama.cpp"],
         "--kv-rounding llama.cpp goes with --kv-dtype f16"),
        ("--kv-dtype with --quant-kv int8", ["generate", "--kv-dtype", "f16", "--quant-kv", "int8"],
         "the cache holds one type"),
        ("--gelu ggml on a SwiGLU model", ["generate", "--gelu", "ggml"], "has no GELU (SwiGLU)"),
        ("score --weights missing value", ["score", "--text", "cat", "--out", "{o.jsonl}", "--weights"],
         "--weights"),
        ("--threads 0", ["generate", "--threads", "0"], "--threads"),
        ("--threads 257", ["score", *M, "--text", "a", "--out", "{o.jsonl}", "--threads", "257"],
         "--threads"),
        ("--threads x on batch", ["batch", *M, "--requests", "{r.jsonl}", "--threads", "x"],
         "--threads"),
        ("--threads -1 on compare-quant", ["compare-quant", "--threads", "-1"], "--threads"),
        ("golden --threads 0", ["golden", *M, "--out", "{g}", "--threads", "0"], "--threads"),
        ("golden --shard 0/3", ["golden", *M, "--out", "{g}", "--shard", "0/3"], "--shard"),
        ("golden --shard 4/3", ["golden", *M, "--out", "{g}", "--shard", "4/3"], "--shard"),
        ("golden --shard 1/3x", ["golden", *M, "--out", "{g}", "--shard", "1/3x"], "--shard"),
        ("golden merge without --out", ["golden", "merge", "{g}"], "--out"),
        ("golden merge of a folder with no manifest", ["golden", "merge", "{.}", "--out", "{g}"],
         "manifest.json"),
        ("make-model --preset bogus", ["make-model", "--preset", "gpt-5", "--out", "{o.bin}"],
         "--preset"),
        ("make-model --preset qwen3 as llama2.c", ["make-model", "--preset", "qwen3-0.6b",
                                                   "--format", "llama2c", "--out", "{o.bin}"],
         "--format hf"),
        ("inspect --preset bogus", ["inspect", "--preset", "gpt-5"], "--preset"),
        ("--prefix-cache-bytes -5", ["batch", *M, "--requests", "{r.jsonl}",
                                     "--prefix-cache-bytes", "-5"], "--prefix-cache-bytes"),
        ("inspect --preset and --model", ["inspect", "--preset", "qwen3-0.6b", *M[:2]],
         "not both"),
        ("make-model --format bogus", ["make-model", "--format", "gguf", "--out", "{o.bin}"],
         "--format"),
        ("make-model --arch bogus", ["make-model", "--format", "hf", "--arch", "gpt5", "--out",
                                     "{o.bin}"], "--arch"),
        ("make-model --dtype bogus", ["make-model", "--format", "hf", "--dtype", "f8", "--out",
                                      "{o.bin}"], "--dtype"),
        ("make-model --shards 0", ["make-model", "--format", "hf", "--shards", "0", "--out",
                                   "{o.bin}"], "--shards"),
        ("make-model --format hf into an existing folder",
         ["make-model", "--format", "hf", "--dim", "4", "--hidden", "4", "--layers", "1",
          "--heads", "1", "--vocab", "4", "--seq-len", "4", "--out", "{dir}"], "File exists"),
        ("make-model --head-dim without --format hf",
         ["make-model", "--head-dim", "4", "--dim", "4", "--hidden", "4", "--layers", "1",
          "--heads", "1", "--vocab", "4", "--seq-len", "4", "--out", "{o.bin}"], "--format hf"),
        ("score --kernels bogus", ["score", "--text", "cat", "--kernels", "x", "--out", "{o.jsonl}"],
         "--kernels"),
        ("unexpected argument", ["generate", "stray"], "stray"),
        # the option tables' own checks (ref/cli/options.c): required options,
        # operand counts, and the ranges of numbers
        ("make-model without --out", ["make-model", "--dim", "4"], "--out is required"),
        ("quantize stray argument", ["quantize", "--model", "{good.bin}", "--out", "{o.q8}",
                                     "stray"], "unexpected argument 'stray'"),
        ("diff with one file", ["diff", "{good.bin}"], "expects REF and CANDIDATE"),
        ("diff with three files", ["diff", "{good.bin}", "{good.bin}", "{good.bin}"],
         "expects REF and CANDIDATE"),
        ("golden merge without parts", ["golden", "merge", "--out", "{dir}"], "expects the parts"),
        ("trace show without a file", ["trace", "show"], "expects one trace file"),
        ("make-model --rope-theta 0.5", ["make-model", "--format", "hf", "--rope-theta", "0.5",
                                         "--out", "{o.bin}"], "--rope-theta must be in [1,"),
        ("make-model --query-scale nan", ["make-model", "--format", "hf", "--query-scale", "nan",
                                          "--out", "{o.bin}"], "NaN"),
        ("make-model --attn-softcap -1", ["make-model", "--format", "hf", "--attn-softcap", "-1",
                                          "--out", "{o.bin}"], "--attn-softcap must be in [0,"),
        ("make-model --experts 5000", ["make-model", "--experts", "5000", "--out", "{o.bin}"],
         "--experts must be in [0, 4096]"),
        ("generate --top-p x", ["generate", "--top-p", "x"], "--top-p expects a number"),
        ("generate --top-p inf", ["generate", "--top-p", "inf"], "must be finite"),
        ("score without input", ["score", "--out", "{o.jsonl}"], "exactly one"),
        ("score token outside the vocabulary", ["score", "--tokens", "1,99999", "--out", "{o.jsonl}"],
         "vocabulary"),  # its --out gets the trace with an error event: see the check below
        ("score --tokens-file a FIFO", ["score", "--tokens-file", "{fifo}", "--out", "{o.jsonl}"],
         "FIFO"),
        ("inspect --requests 0", ["inspect", "--requests", "0"], "--requests"),
        ("make-model --dim 0", ["make-model", "--dim", "0", "--hidden", "2", "--layers", "1",
                                "--heads", "1", "--vocab", "4", "--seq-len", "2", "--out", "{o.bin}"],
         "dim"),
        ("quantize --group 0", ["quantize", "--model", "{good.bin}", "--group", "0", "--out", "{o.q8}"],
         "--group"),
        ("convert --type q4_k", ["convert", "--model", "{good.bin}", "--tokenizer", "{tok.bin}",
                                 "--type", "q4_k", "--out", "{o.gguf}"], "--type"),
        ("convert --out without .gguf", ["convert", "--model", "{good.bin}", "--tokenizer",
                                         "{tok.bin}", "--out", "{o.bin}"], ".gguf"),
        ("convert a checkpoint without a tokenizer", ["convert", "--model", "{good.bin}", "--out",
                                                      "{o.gguf}"], "--tokenizer"),
        ("convert --tokenizer with --no-tokenizer",
         ["convert", "--model", "{good.bin}", "--tokenizer", "{tok.bin}", "--no-tokenizer",
          "--out", "{o.gguf}"], "contradict"),
        ("sample --logits empty", ["sample", "--logits", ""], "--logits"),
        ("sample --step without --from-trace", ["sample", "--logits", "1,2", "--step", "1"],
         "go with --from-trace"),
        ("sample --from-trace without a step", ["sample", "--from-trace", "{good.jsonl}"],
         "needs --step N or --pos N"),
        ("sample --from-trace and --logits", ["sample", "--logits", "1", "--from-trace",
                                              "{good.jsonl}", "--step", "1"], "give --logits or"),
        ("sample --from-trace a step beyond", ["sample", "--from-trace", "{good.jsonl}", "--step",
                                               "99"], "there is no step 99"),
        ("trace show --step 0", ["trace", "show", "{good.jsonl}", "--step", "0"], "--step"),
        ("view without a trace", ["view"], "expects one or two traces"),
        ("view --example with a trace", ["view", "--example", "{good.jsonl}", "-o", "{o.html}"],
         "expects one or two traces"),
        ("view three traces", ["view", "{good.jsonl}", "{good.jsonl}", "{good.jsonl}", "-o",
                               "{o.html}"], "expects one or two traces"),
        ("view a file that is no trace", ["view", "{text.txt}", "-o", "{o.html}"], "not valid JSON"),
        ("view stdin without -o", ["view", "-"], "give -o"),
        ("trace show --step and --pos", ["trace", "show", "{good.jsonl}", "--step", "1", "--pos",
                                         "0"], "not both"),
        ("tokenize without text", ["tokenize"], "--text"),
        ("trace with no subcommand", ["trace"], "show or validate"),
        ("batch without requests", ["batch"], "--requests"),
        ("golden without out", ["golden", "--model", "{good.bin}", "--tokenizer", "{tok.bin}"],
         "--out"),
    ]
    for name, args, words in o:
        case("option: " + name, args, 2, [words], creates=("o.jsonl",),
             check=lambda r: not os.path.exists(path("o.jsonl")) or
             '"event":"error"' in open(path("o.jsonl")).read() or "o.jsonl without its error")
    big = "Once upon a time " * 7000  # 119 KB: fails at once, before any encoding
    case("option: a 119 KB prompt", ["generate", "--prompt", big], 2, ["context holds 8"],
         timeout=5)
    case("option: a 119 KB prompt on a 64-position model",
         ["generate", "--model", "{long.bin}", "--tokenizer", "{tok.bin}", "--prompt", big], 2,
         ["context holds 64"], timeout=5)
    # A model with seq_len 1 runs with the defaults (stop policy).
    case("option: --memory note beyond the window",
         ["generate", *M, "--memory", "{note.txt}", "--context", "4"], 2, ["alone has"],
         files={"note.txt": b"cat sat cat sat cat sat cat sat\n"})
    case("option: --document whose file name is no id",
         ["generate", *M, "--document", "{a b.txt}"], 2, ["document's id"],
         files={"a b.txt": b"cat\n"})
    for name, extra, words in (
            ("--retrieve-k 0", ["--context-policy", "retrieve", "--retrieve-k", "0"], "--retrieve-k"),
            ("--retrieve-k -1", ["--context-policy", "retrieve", "--retrieve-k", "-1"], "--retrieve-k"),
            ("--summary-prompt empty", ["--context-policy", "summarize", "--summary-prompt", ""],
             "{span}"),
            ("--summary-tokens 0", ["--context-policy", "summarize", "--summary-tokens", "0"],
             "--summary-tokens"),
            ("--summary-tokens as long as the span", ["--context-policy", "summarize",
                                                      "--context-drop", "2", "--summary-tokens", "2"],
             "shorter"),
            ("retrieve with no room", ["--context-policy", "retrieve", "--context-drop", "3",
                                       "--keep", "1"],
             "drop/2")):
        case("option: " + name, ["generate", *M, "--context", "4", *extra], 2, [words])
    case("option: inspect --prefix-cache-bytes 0",
         ["inspect", "--prefix-cache-bytes", "0"], 2, ["--prefix-cache-bytes"])
    case("option: inspect --prefix-cache-bytes 1e99",
         ["inspect", "--prefix-cache-bytes", "99999999999999999999999"], 2, ["--prefix-cache-bytes"])
    for what, value in (("an unknown unit", "10XB"), ("a fraction", "1.5GB"), ("zero", "0"),
                        ("past 2^62 bytes", "5000000TiB"), ("a unit alone", "GiB")):
        case("option: inspect --memory " + what, ["inspect", "--preset", "llama-2-7b", "--memory", value], 2,
             ["--memory", "unit"])
    case("option: --memory missing", ["generate", *M, "--memory", "{nothing.txt}"], 2,
         ["cannot open"])
    case("option: --memory a directory", ["generate", *M, "--memory", "{dir}"], 2,
         ["is a directory"])
    case("option: --prefix-cache-bytes below one position's rows",
         ["batch", *M, "--requests", "{r.jsonl}", "--prefix-cache-bytes", "1"], 2,
         ["cannot hold one position"], files={"r.jsonl": b'{"id": "a", "prompt": "hi"}\n'})
    case("option: a model with seq_len 1", ["generate", "--model", "{seq1.bin}", "--tokenizer",
                                            "{tok.bin}", "--steps", "3"], 0, [])
    case("option: seq_len 1 with drop-oldest", ["generate", "--model", "{seq1.bin}",
                                                "--tokenizer", "{tok.bin}", "--context-policy",
                                                "drop-oldest"], 2, ["cannot drop"])


def numeric_class_cases():
    """Every float option at its bounds and where its meaning changes: a
    value that changes class as a float32 (nonzero to 0, finite to
    infinity: ref/util/float_class.h) is refused naming the option, never
    read as "0 = off"; 0 and the smallest float32 (1e-45) keep their
    meanings."""
    costs = {"c.json": json.dumps({
        "format": "stepwise-step-costs", "version": 1, "seq_len": 512,
        "kv_bytes_per_position": 1280,
        "decode": {"fixed_s": 1e-3, "per_row_s": 0, "per_attended_s": 0},
        "prefill": {"fixed_s": 2e-3, "per_row_s": 0, "per_attended_s": 0}}).encode()}
    sim = ["serve-sim", "--step-costs", "{c.json}"]
    diff = ["diff", "{good.jsonl}", "{good.jsonl}"]
    made = ["make-model", "--format", "hf", "--arch", "gemma2", "--dim", "16", "--hidden", "32",
            "--layers", "1", "--heads", "2", "--kv-heads", "1", "--vocab", "32", "--seq-len", "16",
            "--out", "{o}"]
    changes = [  # (the command line with the value v, the option named)
        (lambda v: ["inspect", "--bandwidth", v], "--bandwidth"),
        (lambda v: ["inspect", "--bandwidth", "1", "--peak", v], "--peak"),
        (lambda v: sim + ["--rate", v], "--rate"),
        (lambda v: ["generate", "--temperature", v], "--temperature"),
        (lambda v: ["generate", "--top-p", v], "--top-p"),
        (lambda v: ["generate", "--min-p", v], "--min-p"),
        (lambda v: ["generate", "--trace-temperatures", "1," + v], "--trace-temperatures"),
        (lambda v: ["sample", "--logits", "1," + v], "--logits"),
        (lambda v: ["sample", "--logits", "1,2", "--temperature", "1," + v], "--temperature"),
        (lambda v: diff + ["--atol", v], "--atol"),
        (lambda v: diff + ["--rtol", v], "--rtol"),
        (lambda v: made + ["--attn-softcap", v], "--attn-softcap"),
        (lambda v: made + ["--final-softcap", v], "--final-softcap"),
        (lambda v: made + ["--rope-theta", v], "--rope-theta"),
    ]
    for argv, option in changes:
        for value, words in (("1e-50", "rounds to 0 as a float32"),
                             ("1e39", "overflows a float32 to infinity")):
            args = argv(value)
            case("numeric: %s %s %s" % (args[0], option, value), args, 2, [option, words],
                 files=costs if args[0] == "serve-sim" else None)
    # The range and the finite rule, at their edges.
    for name, argv, words in (
            ("inspect --bandwidth -1", ["inspect", "--bandwidth", "-1"], "--bandwidth must be in"),
            ("inspect --bandwidth 1000001", ["inspect", "--bandwidth", "1000001"], "--bandwidth must be in"),
            ("inspect --bandwidth inf", ["inspect", "--bandwidth", "inf"], "--bandwidth must be finite"),
            ("inspect --bandwidth nan", ["inspect", "--bandwidth", "nan"], "NaN"),
            ("inspect --peak without --bandwidth", ["inspect", "--peak", "5"], "--peak goes with"),
            ("inspect --peak -1e-45", ["inspect", "--bandwidth", "1", "--peak", "-1e-45"], "--peak must be in"),
            ("serve-sim --rate -1e-45", sim + ["--rate", "-1e-45"], "--rate must be in"),
            ("serve-sim --rate 1000001", sim + ["--rate", "1000001"], "--rate must be in"),
            ("serve-sim --rate nan", sim + ["--rate", "nan"], "NaN"),
            ("generate --temperature -1e-45", ["generate", "--temperature", "-1e-45"], "temperature"),
            ("generate --temperature inf", ["generate", "--temperature", "inf"], "--temperature must be finite"),
            ("sample --temperature 1,1e-400", ["sample", "--logits", "1,2", "--temperature", "1,1e-400"],
             "rounds to 0"),
            ("sample --logits -1e39", ["sample", "--logits", "1,-1e39"], "overflows")):
        case("numeric: " + name, argv, 2, [words], files=costs if argv[0] == "serve-sim" else None)
    # A request file's sampler fields, by the same rule (serve/requests.c).
    ok = '{"id":"ok","prompt":"cat","max_tokens":2}\n'
    for field in ("temperature", "top_p", "min_p"):
        case("numeric: request %s 1e-50" % field, ["batch", "--requests", "{r.jsonl}", "--quiet"], 1,
             [field, "rounds to 0 as a float32"], stream="stdout-error",
             files={"r.jsonl": ok + '{"id":"x","prompt":"cat","%s":1e-50}\n' % field})
    # What stays accepted: 0 means off, the smallest float32 is on.
    roof = lambda on: lambda r: ("roofline at" in r.stdout) == on or \
        "roofline %s" % ("missing" if on else "printed")
    case("numeric: inspect --bandwidth 0 is no roofline", ["inspect", "--bandwidth", "0"], 0, [],
         check=roof(False))
    case("numeric: inspect --bandwidth 1e-45 is a roofline", ["inspect", "--bandwidth", "1e-45"], 0,
         [], check=roof(True))
    case("numeric: serve-sim --rate 0 is all at once", sim + ["--rate", "0"], 0, ["all at once"],
         files=costs, stream="stdout")
    case("numeric: serve-sim --rate 1e-45 is Poisson", sim + ["--rate", "1e-45", "--num-requests", "2"],
         0, ["Poisson arrivals"], files=costs, stream="stdout")
    case("numeric: generate --temperature 0 is greedy", ["generate", "--temperature", "0", "--steps",
                                                         "2"], 0, [])
    # A cleanup that freed what was never set (the class of serve-sim's
    # step costs): tokenize with a model that does not load.
    case("numeric: tokenize with a model that does not load", ["tokenize", "--model", "{nothing}",
                                                                "--text", "hi"], 2,
         ["--tokenizer is required"])


def output_cases():
    """Outputs: a directory is refused before the run; a device, a FIFO and
    a symlink stay what they were."""
    for cmd in (["generate", "--prompt", "cat", "--trace"],
                ["score", "--text", "cat", "--out"],
                ["make-model", "--dim", "2", "--hidden", "2", "--layers", "1", "--heads", "1",
                 "--vocab", "4", "--seq-len", "2", "--out"],
                ["quantize", "--model", "{good.bin}", "--out"],
                ["batch", "--requests", "{r.jsonl}", "--out"],
                ["batch", "--requests", "{r.jsonl}", "--metrics-json"],
                ["view", "--example", "-o"]):
        case("output: %s %s a directory" % (cmd[0], cmd[-1]), cmd + ["{dir}"], 2,
             ["is a directory"], files={"r.jsonl": '{"id":"a","prompt":"cat"}\n'}, timeout=5)
    case("output: --trace in a missing folder", ["generate", "--prompt", "cat", "--trace",
                                                 "{nowhere/t.jsonl}"], 2, ["nowhere"])
    case("output: --trace a dangling symlink", ["generate", "--prompt", "cat", "--trace",
                                                "{dangling}"], 2, ["symbolic link"],
         files={"dangling": ("symlink", "no-such-target")})
    case("output: --trace /dev/null", ["generate", "--prompt", "cat", "--trace", "/dev/null"], 0,
         [], check=lambda r: stat.S_ISCHR(os.stat("/dev/null").st_mode) or "/dev/null replaced")
    case("output: --trace /dev/full", ["generate", "--prompt", "cat", "--trace", "/dev/full"], 2,
         ["/dev/full: write failed: No space left on device"],
         check=lambda r: stat.S_ISCHR(os.stat("/dev/full").st_mode) or "/dev/full replaced")
    case("output: --trace - (stdout)", ["generate", "--prompt", "cat", "--quiet", "--trace", "-"],
         0, [], check=lambda r: '"event":"done"' in r.stdout or "no trace on stdout")
    case("output: --trace a symlink to a file", ["generate", "--prompt", "cat", "--trace",
                                                 "{link.jsonl}"], 0, [],
         files={"real.jsonl": b"old\n", "link.jsonl": ("symlink", "real.jsonl")},
         check=symlink_kept)
    case("output: --trace a FIFO with a reader", ["generate", "--prompt", "cat", "--trace",
                                                  "{out.fifo}"], 0, [],
         files={"out.fifo": ("fifo",)}, check=fifo_kept, creates=("fifo-read",))
    case("output: batch --trace under a file", ["batch", "--requests", "{r.jsonl}", "--trace",
                                                "{text.txt}"], 2, ["text.txt"],
         files={"r.jsonl": '{"id":"a","prompt":"cat"}\n'})
    case("output: batch --trace, every trace fails", ["batch", "--requests", "{r.jsonl}",
                                                      "--trace", "{tdir}", "--quiet"], 2,
         ["could not be written"],
         files={"r.jsonl": '{"id":"a","prompt":"cat"}\n', "tdir/a.jsonl/x": b""},
         creates=("tdir", "tdir/a.jsonl", "tdir/a.jsonl/x"))
    case("output: golden into a folder of other files",
         ["golden", "--model", "{good.bin}", "--tokenizer", "{tok.bin}", "--out", "{mine}"], 2,
         ["not empty"], files={"mine/keep.txt": b"mine\n"}, creates=("mine", "mine/keep.txt"),
         check=lambda r: open(path("mine/keep.txt")).read() == "mine\n" or "golden touched it")
    case("output: golden --out a file", ["golden", "--model", "{good.bin}", "--tokenizer",
                                         "{tok.bin}", "--out", "{text.txt}"], 2, ["not a folder"])
    case("output: golden with a model that fails", ["golden", "--model", "{seq1.bin}",
                                                    "--tokenizer", "{tok.bin}", "--out", "{g}"],
         2, ["context holds 1"], check=lambda r: not os.path.exists(path("g")) or "a partial golden set")


def output_alias_cases():
    """Issue 67, bug 9: an output that names one of the command's own inputs,
    by the same path, through a symlink or through a hard link, is refused
    (exit 2, one line naming both) before anything is written, and the input
    is left byte for byte. make-model has no such case: its one input,
    --tokenizer-from, goes with --format hf, whose --out must not exist."""
    model = open(path("good.bin"), "rb").read()
    tok = open(path("tok.bin"), "rb").read()
    trace = open(path("good.jsonl"), "rb").read()
    request = b'{"id":"r","prompt":"cat"}\n'
    # convert writes only FILE.gguf, and golden's prompts need 70 positions
    for made in (["convert", "--model", path("good.bin"), "--tokenizer", path("tok.bin"),
                  "--out", path("alias.gguf")],
                 ["make-model", "--dim", "8", "--hidden", "16", "--layers", "1", "--heads", "2",
                  "--vocab", "13", "--seq-len", "128", "--out", path("alias-long.bin")]):
        subprocess.run([BIN] + made, check=True, capture_output=True, timeout=SETUP_TIMEOUT)
    gguf = open(path("alias.gguf"), "rb").read()
    long_model = open(path("alias-long.bin"), "rb").read()

    def kept(inputs, link=None, link_name="out"):
        """A check: each input {name: bytes} as it was, the link still one,
        and stderr a single line."""
        def check(result):
            for name, data in inputs.items():
                if not os.path.isfile(path(name)) or open(path(name), "rb").read() != data:
                    return "%s was changed or removed" % name
            if link is not None:
                linked, target = link
                if linked == "symlink" and not os.path.islink(path(link_name)):
                    return "the symlink was replaced"
                if linked == "hardlink" and os.stat(path(link_name)).st_ino != os.stat(
                        path(target)).st_ino:
                    return "the hard link was replaced"
            lines = result.stderr.strip().splitlines()
            return len(lines) == 1 or "%d lines on stderr" % len(lines)
        return check

    def three_ways(title, args, option, input_option, name, data, files=None, how="file",
                   link="out"):
        """The case for each way of naming input `name` (holding data) as
        the output, a link named `link` for the two links: args holds {OUT}
        where the output goes."""
        for way in ("path", "symlink", "hardlink"):
            out = name if way == "path" else link
            made = dict(files or {}, **{name: data})
            if way != "path":
                made[link] = (way, name)
            line = [a.replace("{OUT}", "{%s}" % out) for a in args]
            words = ["%s %s is the %s %s %s" % (option, path(out), input_option, how, path(name))]
            case("output alias: %s, by %s" % (title, way), line, 2, words, files=made,
                 check=kept({name: data}, None if way == "path" else (way, name), link))

    three_ways("quantize --out the model", ["quantize", "--model", "{a.bin}", "--out", "{OUT}"],
               "--out", "--model", "a.bin", model)
    three_ways("convert --out the model", ["convert", "--model", "{a.gguf}", "--out", "{OUT}"],
               "--out", "--model", "a.gguf", gguf, link="out.gguf")
    three_ways("score --out the model", ["score", "--model", "{a.bin}", "--tokenizer", "{tok.bin}",
                                         "--text", "cat", "--out", "{OUT}"],
               "--out", "--model", "a.bin", model)
    # --tensors writes only F.safetensors: a tokenizer.bin by that name
    three_ways("score --tensors the tokenizer", ["score", "--model", "{good.bin}", "--tokenizer",
                                                 "{a.safetensors}", "--text", "cat", "--out",
                                                 "{s.jsonl}", "--tensors", "{OUT}"],
               "--tensors", "--tokenizer", "a.safetensors", tok, link="out.safetensors")
    three_ways("score --out the --tokens-file", ["score", "--tokens-file", "{ids.txt}", "--out",
                                                 "{OUT}"], "--out", "--tokens-file", "ids.txt",
               b"1 2 3\n")
    three_ways("generate --trace the tokenizer", ["generate", "--model", "{good.bin}",
                                                  "--tokenizer", "{a.tok}", "--trace", "{OUT}"],
               "--trace", "--tokenizer", "a.tok", tok)
    three_ways("generate --trace a --document", ["generate", "--model", "{long.bin}",
                                                 "--tokenizer", "{tok.bin}", "--steps", "3",
                                                 "--document", "{doc.txt}", "--trace", "{OUT}"],
               "--trace", "--document", "doc.txt", b"a document\n")
    three_ways("batch --out the requests", ["batch", *M, "--requests", "{r.jsonl}", "--out",
                                            "{OUT}"], "--out", "--requests", "r.jsonl", request)
    three_ways("batch --metrics-json the model", ["batch", "--model", "{a.bin}", "--tokenizer",
                                                  "{tok.bin}", "--requests", "{r.jsonl}",
                                                  "--metrics-json", "{OUT}"],
               "--metrics-json", "--model", "a.bin", model, files={"r.jsonl": request})
    three_ways("serve-sim --save-costs the requests", ["serve-sim", "--model", "{long.bin}",
                                                       "--tokenizer", "{tok.bin}", "--requests",
                                                       "{r.jsonl}", "--save-costs", "{OUT}"],
               "--save-costs", "--requests", "r.jsonl", request)
    three_ways("view -o the trace", ["view", "{t.jsonl}", "-o", "{OUT}"], "--out", "trace",
               "t.jsonl", trace)
    three_ways("view -o the tokenizer", ["view", "{good.jsonl}", "--tokenizer", "{a.tok}", "-o",
                                         "{OUT}"], "--out", "--tokenizer", "a.tok", tok)
    # view's default page, TRACE.html, is no option: a link there to the trace
    for way in ("symlink", "hardlink"):
        case("output alias: view's default page the trace, by " + way, ["view", "{t.jsonl}"], 2,
             ["-o %s is the trace file %s" % (path("t.html"), path("t.jsonl"))],
             files={"t.jsonl": trace, "t.html": (way, "t.jsonl")},
             check=lambda r: open(path("t.jsonl"), "rb").read() == trace or "t.jsonl changed")
    # An output folder holds an input: batch would write --trace DIR/r.jsonl
    # over the requests; golden would replace the older set holding the model.
    case("output alias: batch --trace the requests' folder", ["batch", *M, "--requests",
                                                              "{t/r.jsonl}", "--trace", "{t}"],
         2, ["--trace %s holds the --requests file %s" % (path("t"), path("t/r.jsonl"))],
         files={"t/r.jsonl": request}, check=kept({"t/r.jsonl": request}))
    old_set = {"g/manifest.json": golden_manifest({"m.bin": long_model}), "g/m.bin": long_model}
    for way, model_arg in (("path", "{g/m.bin}"), ("symlink", "{ml}")):
        files = dict(old_set, ml=("symlink", "g/m.bin")) if way == "symlink" else dict(old_set)
        case("output alias: golden --out the model's folder, by " + way,
             ["golden", "--model", model_arg, "--tokenizer", "{tok.bin}", "--out", "{g}"], 2,
             ["--out %s holds the --model file %s" % (path("g"), expand(model_arg))],
             files=files, check=kept({"g/m.bin": long_model}))
    case("output alias: golden merge --out a part", ["golden", "merge", "{p1}", "{p2}", "--out",
                                                     "{p1}"], 2,
         ["--out %s is the part folder %s" % (path("p1"), path("p1"))], files=golden_parts(),
         check=kept({"p1/a.jsonl": b"A\n", "p2/b.jsonl": b"B\n"}))
    # A folder's files are its inputs: score --out a Hugging Face model's own file.
    subprocess.run([BIN, "make-model", "--format", "hf", "--dim", "8", "--hidden", "16",
                    "--layers", "1", "--heads", "2", "--vocab", "13", "--seq-len", "4", "--out",
                    path("alias-hf")], check=True, capture_output=True, timeout=SETUP_TIMEOUT)
    config = open(path("alias-hf/config.json"), "rb").read()
    case("output alias: score --out a file of the model's folder",
         ["score", "--model", "{alias-hf}", "--tokenizer", "{tok.bin}", "--text", "cat", "--out",
          "{alias-hf/config.json}"], 2,
         ["--out %s is a file of the --model folder %s" % (path("alias-hf/config.json"),
                                                           path("alias-hf"))],
         check=kept({"alias-hf/config.json": config}))
    # Not aliases: the same inode number on another device (the roots of
    # /proc and /dev/pts are both inode 1 on Linux), where batch goes on to
    # refuse the tokenizer, before --trace is written; and a new output.
    def identity(p):
        try:
            return os.stat(p).st_dev, os.stat(p).st_ino
        except OSError:
            return None
    proc = identity("/proc")
    twins = [d for d in ("/dev/pts", "/sys") if proc and identity(d)
             and identity(d)[1] == proc[1] and identity(d)[0] != proc[0]]
    if twins:
        case("output alias: one inode number on two devices", ["batch", "--requests", "{r.jsonl}",
                                                               "--tokenizer", "/proc", "--trace",
                                                               twins[0]], 2,
             ["tokenizer /proc: is a directory"], files={"r.jsonl": request})
    case("output alias: quantize into a new file", ["quantize", "--model", "{a.bin}", "--out",
                                                    "{a.q8}"], 0, [], files={"a.bin": model},
         creates=("a.q8",))


def nan_checkpoint(first=200, count=1, value=float("nan")):
    """good.bin with `count` weights from float `first` on set to value
    (float 200 lies in blocks.0.attn.wk: 13*8 embedding, 8 rms_att, 64 wq)."""
    data = bytearray(open(path("good.bin"), "rb").read())
    for i in range(first, first + count):
        data[28 + 4 * i:32 + 4 * i] = struct.pack("<f", value)
    return bytes(data)


def golden_manifest(files, shard=None):
    """A stepwise golden manifest listing files {name: bytes}."""
    import hashlib
    m = {"format": "stepwise-golden", "version": 1, "model": {"file": "m.bin"},
         "files": [{"index": i, "file": name, "sha256": hashlib.sha256(data).hexdigest(),
                    "bytes": len(data)} for i, (name, data) in enumerate(files.items())]}
    if shard is not None:
        m["shard"] = shard
    return json.dumps(m)


def golden_parts(second_data=b"B\n"):
    """Two parts of a two-file golden set, by hand (merge reads only the
    manifests and the files' bytes)."""
    a, b = {"a.jsonl": b"A\n"}, {"b.jsonl": b"B\n"}
    m1 = json.loads(golden_manifest(a, {"count": 2, "index": 1, "files_in_set": 2}))
    m2 = json.loads(golden_manifest(b, {"count": 2, "index": 2, "files_in_set": 2}))
    m2["files"][0]["index"] = 1
    files = {"p1/manifest.json": json.dumps(m1), "p1/a.jsonl": a["a.jsonl"],
             "p2/manifest.json": json.dumps(m2)}
    if second_data is not None:
        files["p2/b.jsonl"] = second_data
    return files


def untouched(folder, expected):
    """A check: folder holds exactly `expected` ({relative name: bytes}) and
    nothing named like it was left beside it."""
    def check(result):
        for name, data in expected.items():
            p = path(os.path.join(folder, name))
            if data is None:
                if not os.path.isdir(p):
                    return "%s is gone" % name
            elif not os.path.isfile(p) or open(p, "rb").read() != data:
                return "%s was changed or removed" % name
        beside = [n for n in os.listdir(TMP) if n.startswith(folder + ".")]
        return not beside or "left beside it: %s" % beside
    return check


def hostile_round_two_cases():
    """Issue 28's findings, each a case: data loss, endless copies,
    quadratic parsers, unbounded growth, NaN weights, garbage accepted, a
    valid file refused. Each must end within 10 s."""
    web = {"web/manifest.json": '{"name": "app", "start_url": "/"}',
           "web/index.html": "<html></html>", "web/assets/app.js": "1;"}
    keep = {"manifest.json": b'{"name": "app", "start_url": "/"}', "index.html": b"<html></html>",
            "assets": None, "assets/app.js": b"1;"}
    G = ["golden", "--model", "{good.bin}", "--tokenizer", "{tok.bin}"]
    case("round 2: golden --out a web app's folder (its own manifest.json)", G + ["--out", "{web}"],
         2, ["not a stepwise golden set's"], files=web, creates=("web", "web/assets"),
         check=untouched("web", keep), timeout=10)
    case("round 2: golden merge --out a web app's folder", ["golden", "merge", "{p1}", "{p2}",
                                                            "--out", "{web}"],
         2, ["not a stepwise golden set's"], files=dict(golden_parts(), **web),
         creates=("web", "web/assets", "p1", "p2"), check=untouched("web", keep), timeout=10)
    set_files = {"g/manifest.json": golden_manifest({"a.jsonl": b"A\n"}), "g/a.jsonl": b"A\n",
                 "g/mine.txt": b"mine\n"}
    case("round 2: golden --out a set with a file it does not list", G + ["--out", "{g}"], 2,
         ["holds mine.txt, which is not a file of its golden set"], files=set_files,
         creates=("g",), check=untouched("g", {"mine.txt": b"mine\n", "a.jsonl": b"A\n"}),
         timeout=10)
    case("round 2: golden --out a symlink", G + ["--out", "{gl}"], 2, ["symbolic link"],
         files={"gl": ("symlink", "dir")}, timeout=10)
    old_set = {"out/manifest.json": golden_manifest({"a.jsonl": b"old\n"}), "out/a.jsonl": b"old\n"}
    bad_sum = golden_parts(second_data=b"C\n")
    case("round 2: a failed merge over an old set leaves it, and nothing beside it",
         ["golden", "merge", "{p1}", "{p2}", "--out", "{out}"], 2, ["SHA-256"],
         files=dict(bad_sum, **old_set), creates=("out", "p1", "p2"),
         check=untouched("out", {"a.jsonl": b"old\n"}), timeout=10)
    case("round 2: merge replaces an old set (the good case)",
         ["golden", "merge", "{p1}", "{p2}", "--out", "{out}"], 0, [],
         files=dict(golden_parts(), **old_set), creates=("out", "out/b.jsonl", "p1", "p2"),
         check=untouched("out", {"a.jsonl": b"A\n", "b.jsonl": b"B\n"}), timeout=10)
    for name, target, words in (("a symlink to /dev/zero", ("symlink", "/dev/zero"),
                                 "character device"),
                                ("a FIFO", ("fifo",), "FIFO"),
                                ("longer than its manifest says", b"B\nmore\n", "its manifest says 2")):
        files = golden_parts(second_data=None)
        files["p2/b.jsonl"] = target
        case("round 2: merge, a part's file is " + name, ["golden", "merge", "{p1}", "{p2}",
                                                          "--out", "{gm}"],
             2, [words], files=files, creates=("p1", "p2"), timeout=10)
    big = golden_parts(second_data=None)
    big["p2/b.jsonl"] = ("sparse", 1 << 30)
    m2 = json.loads(big["p2/manifest.json"])
    m2["files"][0]["bytes"] = 1 << 30
    big["p2/manifest.json"] = json.dumps(m2)
    case("round 2: merge of a 1 GiB file, SIGTERM mid-copy: 143 within a second, nothing left",
         ["golden", "merge", "{p1}", "{p2}", "--out", "{gm}"], 128 + 15, ["interrupted (SIGTERM)"],
         files=big, creates=("p1", "p2"), stdin=("signal", signal.SIGTERM, 0.3), timeout=3)

    # Linear parsing: 200,000 tensors (all empty) in a GGUF file.
    import gguf_write
    n = 200000
    many = b"GGUF" + struct.pack("<IQQ", 3, n, 0) + b"".join(
        gguf_write.gguf_string("t%d" % i) + struct.pack("<IQIQ", 1, 0, 0, 0) for i in range(n))
    many += b"\0" * (-len(many) % 32)
    case("round 2: GGUF of 200,000 tensors is read in linear time", ["inspect", "--model", "{m.gguf}"],
         2, ["general.architecture"], files={"m.gguf": many}, timeout=10)
    twice = many.replace(b"t199999", b"t100000", 1)
    case("round 2: GGUF of 200,000 tensors, one name twice", ["inspect", "--model", "{m.gguf}"], 2,
         ["t100000 appears twice"], files={"m.gguf": twice}, timeout=10)

    # Bounded tokenization.
    import tokenizer_json_write as w
    tok = w.byte_level()[0]

    def tj(edit):
        t = json.loads(json.dumps(tok))
        edit(t)
        return {"tj/tokenizer.json": json.dumps(t)}

    case("round 2: a Split pattern a*a*b|. over 48 KB", ["tokenize", "--tokenizer", "{tj}", "--text",
                                                        "a" * 48000],
         2, ["pathological"], creates=("tj",), timeout=10, files=tj(
             lambda t: t["pre_tokenizer"]["pretokenizers"][0]["pattern"].__setitem__(
                 "Regex", "a*a*b|.")))
    base = len(tok["model"]["vocab"]) + len(tok["added_tokens"])
    case("round 2: 150,000 added tokens over 100,000 characters (valid)",
         ["tokenize", "--tokenizer", "{tj}", "--json", "--text", "x" * 99990 + "x000007"], 0, [],
         creates=("tj",), timeout=10, files=tj(lambda t: t["added_tokens"].extend(
             {"id": base + i, "content": "x%06d" % i, "special": True} for i in range(150000))),
         check=lambda r: json.loads(r.stdout)["ids"][-1] == base + 7 or "x000007 not found")
    case("round 2: 16 Replace normalizers a -> aaaaaaaa", ["tokenize", "--tokenizer", "{tj}",
                                                           "--text", "a"],
         2, ["normalizers grow"], creates=("tj",), timeout=10, files=tj(
             lambda t: t.__setitem__("normalizer", {"type": "Sequence", "normalizers": [
                 {"type": "Replace", "pattern": {"String": "a"}, "content": "a" * 8}] * 16})))
    case("round 2: a vocabulary id of 16,777,215", ["tokenize", "--tokenizer", "{tj}", "--text", "a"],
         2, ["ids reach 16777215"], creates=("tj",), timeout=10,
         files=tj(lambda t: t["model"]["vocab"].__setitem__("zz", (1 << 24) - 1)))
    case("round 2: an added token of 2,000 bytes", ["tokenize", "--tokenizer", "{tj}", "--text", "a"],
         2, ["1 to 1024 bytes"], creates=("tj",), timeout=10,
         files=tj(lambda t: t["added_tokens"].append({"id": base, "content": "q" * 2000})))
    case("round 2: a tokenizer.json followed by more JSON", ["tokenize", "--tokenizer", "{tj}",
                                                             "--text", "a"],
         2, ["not a JSON object"], creates=("tj",), timeout=10,
         files={"tj/tokenizer.json": json.dumps(tok) + '{"x": 1}'})
    pieces = list(gguf_write.PIECES)
    pieces[-1] = "a" * 300000
    kvs = [gguf_write.kv_str("tokenizer.ggml.model", "llama"),
           gguf_write.kv_array("tokenizer.ggml.tokens", 8, pieces, None),
           gguf_write.kv_array("tokenizer.ggml.scores", 6, [0.0] * len(pieces), "<f"),
           gguf_write.kv_u32("tokenizer.ggml.bos_token_id", 1),
           gguf_write.kv_u32("tokenizer.ggml.eos_token_id", 2)]
    case("round 2: --trace-bpe on a 100,000-symbol piece (a GGUF piece of 300 KB)",
         ["generate", "--model", "{m.gguf}", "--prompt", "a" * 100000, "--trace-bpe", "--trace",
          "{t.jsonl}"], 2, ["--trace-bpe: a piece of"],
         files={"m.gguf": gguf_write.tiny_gguf("llama", kvs)}, timeout=10)

    # NaN and infinity.
    nan = {"nan.bin": nan_checkpoint()}
    NM = ["--model", "{nan.bin}", "--tokenizer", "{tok.bin}"]
    case("round 2: convert --type q8_0 of NaN weights", ["convert", *NM, "--type", "q8_0", "--out",
                                                       "{n.gguf}"],
         2, ["blocks.0.attn.wk [8, 8] holds nan at row 3, column 0"], files=nan, timeout=10)
    case("round 2: convert of an infinite weight", ["convert", *NM, "--out", "{n.gguf}"], 2,
         ["blocks.0.attn.wk [8, 8] holds inf"], files={"nan.bin": nan_checkpoint(value=float("inf"))},
         timeout=10)
    case("round 2: inspect --check-weights of NaN weights", ["inspect", "--model", "{nan.bin}",
                                                             "--check-weights"],
         2, ["blocks.0.attn.wk"], files=nan, timeout=10)
    case("round 2: inspect --check-weights of a good model", ["inspect", "--model", "{good.bin}",
                                                              "--check-weights"],
         0, [], timeout=10, check=lambda r: "every weight is a finite number" in r.stderr or
         "no word that the weights were checked")
    case("round 2: score of NaN weights", ["score", *NM, "--tokens", "1,5,6", "--out", "{s.jsonl}"],
         2, ["first appears at position 0, hook blocks.0.attn.k_pre"], files=nan,
         creates=("s.jsonl",), timeout=10,
         check=lambda r: json.loads(open(path("s.jsonl")).read().splitlines()[-1])["event"] ==
         "error" or "the score file does not end with its error")
    case("round 2: generate with NaN weights", ["generate", *NM, "--prompt", "cat", "--trace",
                                                "{g.jsonl}"],
         2, ["first appears at position 0, hook blocks.0.attn.k_pre"], files=nan,
         creates=("g.jsonl",), timeout=10,
         check=lambda r: '"event":"done"' not in open(path("g.jsonl")).read() or "a done event")
    case("round 2: compare-quant of NaN weights", ["compare-quant", *NM, "--text", "{text.txt}"], 2,
         ["not finite"], files=nan, check=no_pass, timeout=10)
    case("round 2: compare-quant of a block of NaNs in the MLP", ["compare-quant", *NM, "--text",
                                                                 "{text.txt}"],
         2, ["not finite"], files={"nan.bin": nan_checkpoint(first=13 * 8 + 8 + 4 * 64 + 8,
                                                             count=32)},
         check=lambda r: "100.00%" not in r.stdout or "a table of results", timeout=10)

    # Garbage refused, a valid file accepted.
    lines = open(path("good.jsonl")).read().splitlines()
    for i, line in enumerate(lines):
        e = json.loads(line)
        if e["event"] == "tokenize":
            e["ids"] = 5
            lines[i] = json.dumps(e)
    case("round 2: view of a trace whose tokenize ids is 5", ["view", "{t.jsonl}", "-o", "{v.html}"],
         2, ["$.ids: expected array"], files={"t.jsonl": "\n".join(lines) + "\n"}, timeout=10)
    case("round 2: view of standard input", ["view", "-", "-o", "{v.html}"], 2,
         ["save standard input to a file"], timeout=10)


def hostile_round_three_cases():
    """Issue 45's command-line findings: a tensors file of the wrong shape
    accepted by trace validate and view, a safetensors candidate run on
    other ids passed, safetensors oddities, Mistral's and Phi-3's
    sliding_window values ignored."""
    subprocess.run([BIN, "score", "--model", TINY, "--tokens", "1,5,9", "--hooks", "none",
                    "--out", path("r3.jsonl"), "--tensors", path("r3.safetensors")],
                   check=True, capture_output=True, timeout=SETUP_TIMEOUT)
    trace = open(path("r3.jsonl"), "rb").read()
    st = header_editor(open(path("r3.safetensors"), "rb").read())
    swapped = st(lambda h: h["logits"].__setitem__("shape", [13, 3]))  # [3, 13] declared [13, 3]
    named = {"t3/r3.jsonl": trace, "t3/r3.safetensors": swapped}
    case("round 3: trace validate, a tensors file of another shape than its event lists",
         ["trace", "validate", "{t3/r3.jsonl}"], 1,
         ["r3.safetensors: tensor logits is not the one its tensors event lists"], files=named,
         creates=("t3",), stream="stdout")
    case("round 3: view, a tensors file of another shape (no page written)",
         ["view", "{t3/r3.jsonl}", "-o", "{t3/v.html}"], 2,
         ["tensor logits is not the one its tensors event lists"], files=named, creates=("t3",))
    case("round 3: trace show, a tensors file of another shape", ["trace", "show", "{t3/r3.jsonl}"], 2,
         ["tensor logits is not the one its tensors event lists"], files=named, creates=("t3",))
    other = st(lambda h: h["__metadata__"].__setitem__("token_ids", "[1,5,10]"))
    case("round 3: diff, a safetensors candidate run on other ids: FAIL, naming the position",
         ["diff", "{r3.jsonl}", "{c.safetensors}"], 1,
         ["verdict: FAIL (the candidate was fed other tokens"], files={"c.safetensors": other},
         stream="stdout", check=no_pass)
    for name, edit, words in (
            ("a number in __metadata__", lambda h: h["__metadata__"].__setitem__("first_pos", 0),
             '"first_pos" must be a string'),
            ("__metadata__ a list", lambda h: h.__setitem__("__metadata__", ["x"]), "__metadata__"),
            ("a tensor named logits NUL x", lambda h: h.__setitem__("logits\u0000x", h.pop("logits")),
             "escaped NUL"),
            ("a tensor named with a newline", lambda h: h.__setitem__("logits\nx", h.pop("logits")),
             "control character"),
            ("a tensor with an empty name", lambda h: h.__setitem__("", h.pop("logits")), "name")):
        case("round 3: diff, safetensors with " + name, ["diff", "{r3.jsonl}", "{c.safetensors}"], 2,
             [words], files={"c.safetensors": st(edit)}, check=no_pass)
    import hf_reference as hf  # tests/ is this script's folder, first on sys.path
    for arch in ("MistralForCausalLM", "Phi3ForCausalLM"):
        cfg = dict(hf.BASE, architectures=[arch])
        for window in (0, -3, "16", 1.5, True):
            case("round 3: %s's sliding_window %r" % (arch[:-11], window),
                 ["generate", "--model", "{hf}", "--tokenizer", TINY], 2,
                 ["sliding_window must be a whole number in [1, 2^30]"],
                 files={"hf/config.json": json.dumps(dict(cfg, sliding_window=window))},
                 creates=("hf",))


def symlink_kept(result):
    if not os.path.islink(path("link.jsonl")):
        return "the symlink was replaced"
    text = open(path("real.jsonl")).read()
    return '"event":"run"' in text or "the link's target was not written"


def fifo_kept(result):
    if not stat.S_ISFIFO(os.stat(path("out.fifo")).st_mode):
        return "the FIFO was replaced"
    text = open(path("fifo-read")).read()
    return '"event":"done"' in text or "the reader got no trace"


def signal_cases():
    """SIGTERM, SIGHUP and SIGINT: the exit status is 128 + the signal, no
    temporary file is left, and a trace being written ends with its error."""
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        case("signal: generate, %s mid-run" % sig.name,
             ["generate", "--model", "{long.bin}", "--tokenizer", "{tok.bin}", "--steps", "1000000",
              "--context-policy", "drop-oldest", "--trace-level", "full", "--trace", "{sig.jsonl}"],
             128 + sig, ["interrupted (%s)" % sig.name], creates=("sig.jsonl",),
             check=trace_ends_with_error, stdin=("signal", sig))
    case("signal: batch, SIGTERM mid-run",
         ["batch", "--model", "{long.bin}", "--tokenizer", "{tok.bin}", "--requests", "{r.jsonl}",
          "--trace", "{bt}", "--quiet"], 128 + 15, ["interrupted (SIGTERM)"],
         files={"r.jsonl": "".join('{"id":"r%d","prompt":"cat","max_tokens":1000,"arrival_ms":%d}\n'
                                   % (i, 300 * i) for i in range(20))},
         creates=("bt",) + tuple("bt/r%d.jsonl" % i for i in range(20)),
         stdin=("signal", signal.SIGTERM), stream="stderr")
    case("signal: score, SIGTERM mid-pass ends its file with an error event",
         ["score", "--model", "{big.bin}", "--tokenizer", "{tok.bin}", "--kernels", "plain",
          "--tokens", ",".join(["5"] * 250), "--out", "{sc.jsonl}"], 128 + 15,
         ["interrupted (SIGTERM)"], creates=("sc.jsonl",), stdin=("signal", signal.SIGTERM, 0.3),
         check=lambda r: '"event":"error"' in open(path("sc.jsonl")).read().splitlines()[-1]
         or "sc.jsonl does not end with its error event")
    # a folder of about 270 MB (bf16), written in about a second: the signal lands mid-write
    case("signal: make-model --format hf, SIGTERM mid-write leaves no partial folder",
         ["make-model", "--format", "hf", "--dim", "512", "--hidden", "2048", "--layers", "24",
          "--heads", "8", "--vocab", "32000", "--seq-len", "64", "--dtype", "bf16", "--out", "{mmsig}"],
         128 + 15, ["interrupted"], stdin=("signal", signal.SIGTERM, 0.3),
         check=lambda r: not any(n.startswith("mmsig") for n in os.listdir(TMP)) or "left " + str(
             [n for n in os.listdir(TMP) if n.startswith("mmsig")]))
    case("signal: golden, SIGTERM mid-run leaves no partial set",
         ["golden", "--model", "{big.bin}", "--tokenizer", "{tok.bin}", "--out", "{gs}"],
         128 + 15, ["interrupted"], stdin=("signal", signal.SIGTERM, 0.3),
         check=lambda r: not any(n.startswith("gs") for n in os.listdir(TMP)) or "left " + str(
             [n for n in os.listdir(TMP) if n.startswith("gs")]))


def trace_ends_with_error(result):
    lines = open(path("sig.jsonl")).read().splitlines()
    last = json.loads(lines[-1]) if lines else {}
    if last.get("event") != "error":
        return "the trace does not end with an error event"
    v = subprocess.run([BIN, "trace", "validate", path("sig.jsonl")], capture_output=True, text=True,
                       timeout=SETUP_TIMEOUT)
    return v.returncode == 0 or "the interrupted trace is not valid: " + v.stdout[-300:]


# ---------------------------------------------------------------- running


def expand(arg):
    if isinstance(arg, bytes):  # an argument that is no UTF-8 text
        return arg
    if arg.startswith("{") and arg.endswith("}"):
        return path(arg[1:-1])
    return arg


def make_files(files):
    for name, data in files.items():
        os.makedirs(os.path.dirname(path(name)), exist_ok=True)
        if isinstance(data, tuple) and data[0] == "fifo":
            os.mkfifo(path(name))
        elif isinstance(data, tuple) and data[0] == "symlink":
            os.symlink(data[1], path(name))
        elif isinstance(data, tuple) and data[0] == "hardlink":  # to a name made before it
            os.link(path(data[1]), path(name))
        elif isinstance(data, tuple) and data[0] == "sparse":  # a large file of zeros, no disk
            with open(path(name), "wb") as f:
                f.truncate(data[1])
        else:
            write(name, data)


def listing():
    found = set()
    for dirpath, dirnames, filenames in os.walk(TMP):
        for n in dirnames + filenames:
            found.add(os.path.relpath(os.path.join(dirpath, n), TMP))
    return found


def remove(names):
    for name in sorted(names, key=len, reverse=True):
        p = path(name)
        if os.path.islink(p) or not os.path.isdir(p):
            os.unlink(p)
        else:
            shutil.rmtree(p, ignore_errors=True)


MEMORY_LIMIT_KB = 1 << 20  # a case may take at most 1 GiB resident


def children_peak_kb():
    """The largest resident size of any child waited for so far (a running
    maximum: it passes the limit at the case that took more)."""
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss


def run_case(c):
    make_files(c["files"])
    try:
        problem = run_case_made(c)
    finally:  # even when it hung: the next case needs a clean folder
        remove(listing() - FIXTURES)
    peak = children_peak_kb()
    if peak > MEMORY_LIMIT_KB and peak > run_case.peak_before:
        problem = "; ".join(p for p in (problem, "peak resident memory %d MiB, above 1 GiB"
                                        % (peak >> 10)) if p)
    run_case.peak_before = peak
    return problem


run_case.peak_before = 0


def run_case_made(c):
    args = [BIN] + [expand(a) for a in c["args"]]
    reader = None
    if c["name"].startswith("output: --trace a FIFO"):
        reader = subprocess.Popen(["sh", "-c", 'cat "$1" > "$2"', "sh", path("out.fifo"),
                                   path("fifo-read")])
    start = time.monotonic()
    if c["stdin"] and c["stdin"][0] == "signal":
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                errors="replace")
        time.sleep(c["stdin"][2] if len(c["stdin"]) > 2 else 0.4)
        proc.send_signal(c["stdin"][1])
        try:
            out, err = proc.communicate(timeout=c["timeout"])
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate(timeout=TIMEOUT)
            return "hung after the signal"
        result = subprocess.CompletedProcess(args, proc.returncode, out, err)
    else:
        try:
            result = subprocess.run(args, capture_output=True, text=True, errors="replace",
                                    timeout=c["timeout"], stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            return "hung (no exit within %d s)" % c["timeout"]
    if reader is not None:
        reader.wait(timeout=10)
    elapsed = time.monotonic() - start
    problems = []
    if result.returncode < 0:
        problems.append("died by signal %d" % -result.returncode)
    elif result.returncode != c["status"]:
        problems.append("exit %d, expected %d" % (result.returncode, c["status"]))
    for tool in ("AddressSanitizer", "runtime error", "LeakSanitizer"):
        if tool in result.stderr:
            problems.append(tool + " reported: " + result.stderr[-400:])
    if c["words"]:
        if c["stream"] == "stdout-error":
            errors = [json.loads(l)["error"] for l in result.stdout.splitlines()
                      if l.startswith("{") and '"error"' in l]
            line = errors[0] if errors else ""
        elif c["stream"] == "stdout":
            line = result.stdout
        else:
            lines = [l for l in result.stderr.splitlines() if "error" in l]
            line = lines[0] if lines else ""
            if lines and not line.startswith("stepwise: error: "):
                problems.append("first error line not 'stepwise: error: ...': " + line)
        for w in c["words"]:
            if w not in line:
                problems.append("error line lacks %r: %r" % (w, line[:300]))
    if c["check"] is not None:
        verdict = c["check"](result)
        if verdict is not True:
            problems.append(str(verdict))
    made = listing() - FIXTURES - set(c["files"]) - c["creates"]
    made -= {os.path.dirname(n) for n in c["files"]} - {""}
    if made:
        problems.append("left files outside its target: " + ", ".join(sorted(made)))
    remove(listing() - FIXTURES)
    if elapsed > c["timeout"]:
        problems.append("took %.1f s" % elapsed)
    return "; ".join(problems)


def serve_sim_cases():
    good = {"format": "stepwise-step-costs", "version": 1, "seq_len": 512,
            "kv_bytes_per_position": 1280,
            "decode": {"fixed_s": 1e-3, "per_row_s": 0, "per_attended_s": 0},
            "prefill": {"fixed_s": 2e-3, "per_row_s": 0, "per_attended_s": 0}}
    dump = lambda **edit: json.dumps({**good, **edit}).encode()
    files = {
        "not JSON": (b"{", "not a JSON object"),
        "two documents": (dump() + b" {}", "not a JSON object"),
        "another format": (dump(format="stepwise-golden"), "format"),
        "version 2": (dump(version=2), "version"),
        "seq_len 2^31": (dump(seq_len=2 ** 31), "seq_len"),
        "seq_len 1.5": (dump(seq_len=1.5), "seq_len"),
        "kv bytes 0": (dump(kv_bytes_per_position=0), "kv_bytes_per_position"),
        "threads -1": (dump(threads=-1), "threads"),
        "decode a string": (dump(decode="fast"), "decode"),
        "a cost of NaN": (dump().replace(b'"fixed_s": 0.001', b'"fixed_s": NaN'),
                          "not a JSON object"),
        "a cost of 1e400": (dump().replace(b'"fixed_s": 0.001', b'"fixed_s": 1e400'), "fixed_s"),
        "a cost over an hour": (dump(prefill={"fixed_s": 3601, "per_row_s": 0,
                                             "per_attended_s": 0}), "prefill.fixed_s"),
        "NUL byte": (dump()[:10] + b"\x00" + dump()[10:], "NUL byte"),
        "every cost 0 (no time passes: 0 tokens/s)": (
            dump(decode={"fixed_s": 0, "per_row_s": 0, "per_attended_s": 0},
                 prefill={"fixed_s": 0, "per_row_s": 0, "per_attended_s": 0}), "every cost is 0"),
        "a decode of 1e-320 s (tokens/s past a double's range, was inf)": (
            dump(decode={"fixed_s": 1e-320, "per_row_s": 0, "per_attended_s": 0},
                 prefill={"fixed_s": 0, "per_row_s": 0, "per_attended_s": 0}), "past a double's range"),
    }
    for name, (data, words) in files.items():
        case("step costs: " + name, ["serve-sim", "--step-costs", "{c.json}"], 2, [words],
             files={"c.json": data})
    case("step costs: a directory", ["serve-sim", "--step-costs", "{dir}"], 2, ["is a directory"])
    case("step costs: a FIFO", ["serve-sim", "--step-costs", "{fifo}"], 2, ["is a FIFO"])
    options = {
        "--num-requests 0": (["--num-requests", "0"], "--num-requests"),
        "--new-tokens 3:x": (["--new-tokens", "3:x"], "--new-tokens"),
        "--prompt-tokens 0": (["--prompt-tokens", "0"], "--prompt-tokens"),
        "--rate inf": (["--rate", "inf"], "--rate"),
        "--kv-memory lots": (["--kv-memory", "lots"], "--kv-memory"),
        "--block-size 0": (["--block-size", "0"], "--block-size"),
        "--save-costs with --step-costs": (["--save-costs", "{out.json}"], "--save-costs"),
    }
    for name, (args, words) in options.items():
        case("serve-sim: " + name, ["serve-sim", "--step-costs", "{c.json}", *args], 2, [words],
             files={"c.json": dump()})
    case("serve-sim: --save-costs a directory", ["serve-sim", "--save-costs", "{dir}"], 2,
         ["is a directory"])
    case("serve-sim: --requests with a bad line", ["serve-sim", *M, "--threads", "1",
                                                   "--requests", "{r.jsonl}"], 2,
         ["request b"], files={"r.jsonl": b'{"id":"a","prompt":"cat"}\n{"id":"b"}\n'})


def alias_link_cases():
    """On output_alias_cases' Hugging Face folder (made there, before): an
    output that is a symlink, outside the model's folder, to one of the
    folder's files: the file written would be the folder's own (the alias
    rule resolves the output's folder; by the output's name alone it is the
    current folder, and the model's config.json was replaced)."""
    config = open(path("alias-hf/config.json"), "rb").read()
    case("output alias: score --out a symlink to a file of the model's folder",
         ["score", "--model", "{alias-hf}", "--tokenizer", "{tok.bin}", "--text", "cat", "--out",
          "{cfg-link}"], 2,
         ["--out %s is a file of the --model folder %s" % (path("cfg-link"), path("alias-hf"))],
         files={"cfg-link": ("symlink", "alias-hf/config.json")},
         check=lambda r: open(path("alias-hf/config.json"), "rb").read() == config
         or "the model's config.json was changed")
    # A Hugging Face cache's snapshot: the folder's weights a link to a blob
    # elsewhere, and the output that blob (it was replaced, exit 0).
    os.makedirs(path("hf-snapshot"), exist_ok=True)
    os.makedirs(path("hf-blobs"), exist_ok=True)
    shutil.copyfile(path("alias-hf/config.json"), path("hf-snapshot/config.json"))
    shutil.copyfile(path("alias-hf/model.safetensors"), path("hf-blobs/weights"))
    if not os.path.lexists(path("hf-snapshot/model.safetensors")):
        os.symlink("../hf-blobs/weights", path("hf-snapshot/model.safetensors"))
    weights = open(path("hf-blobs/weights"), "rb").read()
    case("output alias: quantize --out the blob a model folder's weights link to",
         ["quantize", "--model", "{hf-snapshot}", "--out", "{hf-blobs/weights}"], 2,
         ["--out %s is a file of the --model folder %s" % (path("hf-blobs/weights"), path("hf-snapshot"))],
         check=lambda r: open(path("hf-blobs/weights"), "rb").read() == weights
         or "the model's weights were replaced")


def family_table_cases():
    """Names the family table (ref/family.c) does not hold, each refused in
    one line that lists the ones it does: make-model's --arch is
    case-sensitive, config.json names a class (not make-model's name), and
    llama.cpp has no mistral or mixtral architecture (both are llama)."""
    import gguf_write
    import hf_reference as hf
    case("family: make-model --arch Llama", ["make-model", "--format", "hf", "--arch", "Llama", "--dim", "16",
                                             "--hidden", "24", "--layers", "1", "--heads", "4", "--vocab", "13",
                                             "--seq-len", "16", "--out", "{m}"], 2,
         ["--arch is llama, mistral, qwen2", "qwen3moe or deepseek2, not 'Llama'"], creates=("m",))
    cfg = dict(hf.BASE, architectures=["LlamaForCausalLM"])
    good = path("family-hf")
    hf.write_model_dir(good, cfg, hf.hf_tensors(cfg, 1), "F32")
    weights = open(os.path.join(good, "model.safetensors"), "rb").read()
    case("family: config.json architectures [\"llama\"]", ["generate", "--model", "{hf}", "--tokenizer", TINY],
         2, ["architecture llama is not supported", "LlamaForCausalLM, MistralForCausalLM"],
         files={"hf/config.json": json.dumps(dict(cfg, architectures=["llama"])),
                "hf/model.safetensors": weights}, creates=("hf",))
    tiny = gguf_write.tiny_gguf("llama")
    for arch in (b"mistral", b"mixtral"):
        blob = tiny.replace(b"\x05\x00\x00\x00\x00\x00\x00\x00llama",
                            struct.pack("<Q", len(arch)) + arch, 1)
        case("family: GGUF general.architecture " + arch.decode(),
             ["score", "--model", "{m.gguf}", "--tokens", "1,2", "--top-n", "0", "--out", "{s.jsonl}"], 2,
             ["general.architecture %s is not supported (llama, qwen2, qwen3, gpt2, phi3, gemma2, gemma3, "
              "qwen3moe, deepseek2)" % arch.decode()], files={"m.gguf": blob})


def attack_cases():
    """A name a file gives, holding control characters (a newline, a carriage
    return, an escape, a tab), in the message that refuses it: the error stays
    one line (step_fail writes each control character as '?'), the rest of
    the name as given. From a GGUF file's general.architecture and a
    config.json's architectures."""
    import gguf_write
    import hf_reference as hf
    one_line = lambda r: len(r.stderr.splitlines()) == 1 or "stderr is %d lines: %r" % (
        len(r.stderr.splitlines()), r.stderr[:300])
    name = b"ll\nama\r\x1b[31m"
    key = gguf_write.gguf_string("general.architecture")
    plain = gguf_write.kv_str
    gguf_write.kv_str = lambda k, v: (key + struct.pack("<IQ", 8, len(name)) + name
                                      if k == "general.architecture" else plain(k, v))
    try:
        blob = gguf_write.tiny_gguf("llama")
    finally:
        gguf_write.kv_str = plain
    case("attack: GGUF general.architecture with a newline and an escape",
         ["score", "--model", "{m.gguf}", "--tokens", "1,2", "--top-n", "0", "--out", "{s.jsonl}"], 2,
         ["general.architecture ll?ama??[31m is not supported (llama, qwen2"], files={"m.gguf": blob},
         check=one_line)
    cfg = dict(hf.BASE, architectures=["LlamaForCausalLM"])
    good = path("attack-hf")
    hf.write_model_dir(good, cfg, hf.hf_tensors(cfg, 1), "F32")
    weights = open(os.path.join(good, "model.safetensors"), "rb").read()
    case("attack: config.json architectures with a newline and a tab", ["generate", "--model", "{hf}",
                                                                       "--tokenizer", TINY],
         2, ["architecture Llama?For?Causal?LM is not supported"],
         files={"hf/config.json": json.dumps(dict(cfg, architectures=["Llama\nFor\tCausal\u001bLM"])),
                "hf/model.safetensors": weights}, creates=("hf",), check=one_line)
    # Hugging Face's Auto classes pick the model by model_type: a config.json whose
    # model_type is another family's than its class's would run as another model there
    for model_type, shown in (("qwen2", "qwen2"), (5, "(not a string)")):
        case("attack: config.json LlamaForCausalLM with model_type %r" % (model_type,),
             ["generate", "--model", "{hf}", "--tokenizer", TINY], 2,
             ["model_type %s is not LlamaForCausalLM's llama" % shown],
             files={"hf/config.json": json.dumps(dict(cfg, model_type=model_type)),
                    "hf/model.safetensors": weights}, creates=("hf",))
    # a llama2.c checkpoint has no place for a family's traits: --arch gemma2 (or a GPT-2
    # preset) written as one was a plain llama, the family dropped without a word
    for extra, family in ((["--arch", "gemma2", "--dim", "16", "--hidden", "24", "--layers", "1", "--heads", "4",
                            "--vocab", "13", "--seq-len", "16"], "gemma2"),
                          (["--preset", "gpt2", "--format", "llama2c", "--layers", "1", "--seq-len", "16"], "gpt2")):
        case("attack: make-model " + " ".join(extra[:2]) + " as a llama2.c checkpoint",
             ["make-model", *extra, "--out", "{m.bin}"], 2,
             ["a llama2.c checkpoint holds llama's block alone, not %s's: use --format hf" % family])


def main():
    global FIXTURES
    os.chdir(ROOT)
    setup()
    for make in (model_cases, tokenizer_cases, json_model_cases, request_cases, trace_cases,
                 diff_cases, diff_round_four_cases, option_cases, numeric_class_cases, output_cases, output_alias_cases, signal_cases, hf_cases, gpt2_cases, gemma_cases, moe_cases, deepseek2_cases, longrope_cases, gguf_cases, gguf_round_four_cases,
                 tokenizer_json_cases, hostile_round_two_cases, hostile_round_three_cases,
                 serve_sim_cases, alias_link_cases, family_table_cases, attack_cases):
        make()
    FIXTURES = listing()  # after the cases, some of which make their fixtures
    only = sys.argv[2] if len(sys.argv) > 2 else None  # a part of the names: those cases alone
    if only == "--count":  # how many cases there are (the README quotes it)
        print("bad inputs: %d cases" % len(CASES))
        return 0
    failed = 0
    if only is not None:
        CASES[:] = [c for c in CASES if only in c["name"]]
    for c in CASES:
        problem = run_case(c)
        if problem:
            failed += 1
            print("FAIL  %s: %s" % (c["name"], problem))
    passed = len(CASES) - failed
    print("bad inputs: %d passed, %d failed" % (passed, failed))
    if len(CASES) < 100 and only is None:
        print("bad inputs: only %d cases (at least 100 expected)" % len(CASES))
        return 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
