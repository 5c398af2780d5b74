"""stepwise from Python: the reference engine (libstepwise.so, through
ctypes) for an engine's test suite. numpy is the only dependency.

    import stepwise
    m = stepwise.load("model.gguf")               # any format stepwise reads
    ids = m.tokenize("Once upon a time")
    r = m.score(ids, hooks="blocks.*.mlp_out")
    r.logits                                      # float32 [T, vocab], the CLI's bits
    r.activations["blocks.0.mlp_out"]             # float32 [T, dim]
    report = stepwise.diff(golden_path, my_logits, token_ids=ids)
    assert report.passed, report.summary()

The library is found at $STEPWISE_LIB, beside this file (pip install copies
it in when build/libstepwise.so exists: `make lib`), or in the checkout's
build/ folder. docs/library.md says more.
"""
import ctypes
import hashlib
import json
import os
import tempfile

import numpy as np

__all__ = ["load", "read", "diff", "write_logits", "version", "StepwiseError", "Model", "Scores",
           "Run", "GoldenSet", "DiffReport"]

_HERE = os.path.dirname(os.path.abspath(__file__))


class StepwiseError(Exception):
    """What libstepwise said went wrong: the one-line message, and its code
    (2: bad input, 3: out of memory, 4: an array too small)."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


class _Error(ctypes.Structure):
    _fields_ = [("code", ctypes.c_int), ("message", ctypes.c_char * 512)]


class _OpenOptions(ctypes.Structure):
    _fields_ = [("threads", ctypes.c_int), ("plain_kernels", ctypes.c_int),
                ("weights_f32", ctypes.c_int)]


class _Shape(ctypes.Structure):
    _fields_ = [(n, ctypes.c_int) for n in ("vocab_size", "dim", "hidden_dim", "n_layers", "n_heads",
                                           "n_kv_heads", "head_dim", "seq_len")]


class _Sampler(ctypes.Structure):
    _fields_ = [("temperature", ctypes.c_float), ("top_k", ctypes.c_int), ("top_p", ctypes.c_float),
                ("min_p", ctypes.c_float), ("seed", ctypes.c_uint64)]


class _DiffReport(ctypes.Structure):
    _fields_ = [("passed", ctypes.c_int), ("positions", ctypes.c_int), ("activations", ctypes.c_long),
                ("max_abs_logit", ctypes.c_double), ("kl_mean", ctypes.c_double),
                ("top1_agreement", ctypes.c_double), ("diverged", ctypes.c_int),
                ("first_hook", ctypes.c_char * 64), ("first_layer", ctypes.c_int),
                ("first_pos", ctypes.c_int), ("other_hook", ctypes.c_char * 64),
                ("fail_reason", ctypes.c_char * 160)]


def _find_library():
    candidates = [os.environ.get("STEPWISE_LIB"), os.path.join(_HERE, "libstepwise.so"),
                  os.path.join(_HERE, "..", "..", "build", "libstepwise.so")]
    for path in candidates:
        if path and os.path.exists(path):
            return os.path.abspath(path)
    raise ImportError("libstepwise.so not found: run `make lib` in the checkout, or set STEPWISE_LIB")


def _declare(lib):
    P, I, F, D = ctypes.c_void_p, ctypes.c_int, ctypes.POINTER(ctypes.c_float), ctypes.c_double
    IP, E, S = ctypes.POINTER(ctypes.c_int), ctypes.POINTER(_Error), ctypes.c_char_p
    sigs = {
        "stepwise_version": (S, []),
        "sw_model_open": (I, [S, S, ctypes.POINTER(_OpenOptions), ctypes.POINTER(P), E]),
        "sw_model_free": (None, [P]),
        "sw_model_get_shape": (_Shape, [P]),
        "sw_tokenize": (I, [P, S, I, IP, I, IP, E]),
        "sw_score": (I, [P, IP, I, S, ctypes.POINTER(P), E]),
        "sw_scores_free": (None, [P]),
        "sw_scores_positions": (I, [P]),
        "sw_scores_vocab_size": (I, [P]),
        "sw_scores_logits": (F, [P]),
        "sw_scores_cross_entropy": (D, [P]),
        "sw_scores_hook_count": (I, [P]),
        "sw_scores_hook_name": (S, [P, I]),
        "sw_scores_hook_values": (F, [P, I, IP]),
        "sw_generate": (I, [P, IP, I, ctypes.POINTER(_Sampler), I, IP, I, IP, E]),
        "sw_run_read": (I, [S, ctypes.POINTER(P), E]),
        "sw_run_free": (None, [P]),
        "sw_run_positions": (I, [P]),
        "sw_run_vocab_size": (I, [P]),
        "sw_run_logits": (F, [P]),
        "sw_run_logprobs": (I, [P]),
        "sw_run_position_ids": (IP, [P]),
        "sw_run_token": (I, [P, I]),
        "sw_diff": (I, [S, S, S, ctypes.POINTER(_DiffReport), E]),
    }
    for name, (res, args) in sigs.items():
        f = getattr(lib, name)
        f.restype, f.argtypes = res, args
    return lib


_lib = _declare(ctypes.CDLL(_find_library()))


def _check(status, err):
    if status != 0:
        raise StepwiseError(err.code, err.message.decode("utf-8", "replace"))


def _path(p):
    return None if p is None else os.fspath(p).encode()


def _ids(ids):
    a = np.ascontiguousarray(ids, dtype=np.intc)
    return a, a.ctypes.data_as(ctypes.POINTER(ctypes.c_int))


def version():
    """"stepwise 1 (api 1)"."""
    return _lib.stepwise_version().decode()


class Scores:
    """One scored sequence: logits [T, vocab] (float32), activations
    {hook name: [T, width]} (attn.scores and attn.pattern: [T, heads, T],
    each head's row padded past its position with -inf and 0, as the causal
    mask makes them), and the cross-entropy of the tokens after the first,
    in nats a token. The arrays are copies: they outlive the call."""

    def __init__(self, handle):
        try:
            T, V = _lib.sw_scores_positions(handle), _lib.sw_scores_vocab_size(handle)
            self.logits = np.ctypeslib.as_array(_lib.sw_scores_logits(handle), shape=(T, V)).copy()
            self.cross_entropy = _lib.sw_scores_cross_entropy(handle)
            self.activations = {}
            for i in range(_lib.sw_scores_hook_count(handle)):
                width = ctypes.c_int()
                values = _lib.sw_scores_hook_values(handle, i, ctypes.byref(width))
                name = _lib.sw_scores_hook_name(handle, i).decode()
                rows = np.ctypeslib.as_array(values, shape=(T, width.value)).copy()
                if name.endswith((".attn.scores", ".attn.pattern")):  # [T, heads, T]
                    rows = rows.reshape(T, width.value // T, T)
                self.activations[name] = rows
        finally:
            _lib.sw_scores_free(handle)


class Model:
    """A model opened by libstepwise; close() (or a with block) frees it."""

    def __init__(self, path, tokenizer=None, threads=1, kernels="fast", weights="stored"):
        self._handle = None
        if kernels not in ("fast", "plain") or weights not in ("stored", "f32"):
            raise ValueError("kernels takes fast or plain, weights stored or f32")
        opt = _OpenOptions(threads=threads, plain_kernels=kernels == "plain", weights_f32=weights == "f32")
        handle, err = ctypes.c_void_p(), _Error()
        _check(_lib.sw_model_open(_path(path), _path(tokenizer), ctypes.byref(opt), ctypes.byref(handle),
                                  ctypes.byref(err)), err)
        self._handle = handle
        s = _lib.sw_model_get_shape(handle)
        self.shape = {name: getattr(s, name) for name, _ in _Shape._fields_}

    def close(self):
        if self._handle:
            _lib.sw_model_free(self._handle)
            self._handle = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        self.close()

    def tokenize(self, text, bos=True):
        """The ids of text, BOS first when bos and the tokenizer puts one."""
        err, n = _Error(), ctypes.c_int()
        raw = text.encode()
        capacity = len(raw) + 8
        out = (ctypes.c_int * capacity)()
        _check(_lib.sw_tokenize(self._handle, raw, int(bos), out, capacity, ctypes.byref(n),
                                ctypes.byref(err)), err)
        return list(out[:n.value])

    def score(self, ids, hooks=None):
        """Teacher-force ids in one prefill: a Scores. hooks: a glob of hook
        names or a list of them ("blocks.*.mlp_out", "final_norm")."""
        if isinstance(hooks, (list, tuple)):
            hooks = ",".join(hooks)
        a, p = _ids(ids)
        handle, err = ctypes.c_void_p(), _Error()
        _check(_lib.sw_score(self._handle, p, len(a), _path(hooks), ctypes.byref(handle), ctypes.byref(err)),
               err)
        return Scores(handle)

    def generate(self, ids, max_new, temperature=0.0, top_k=0, top_p=1.0, min_p=0.0, seed=42):
        """The prompt ids then up to max_new drawn tokens (stopping at EOS)."""
        a, p = _ids(ids)
        capacity = len(a) + max_new + 1
        out, n, err = (ctypes.c_int * capacity)(), ctypes.c_int(), _Error()
        s = _Sampler(temperature=temperature, top_k=top_k, top_p=top_p, min_p=min_p, seed=seed)
        _check(_lib.sw_generate(self._handle, p, len(a), ctypes.byref(s), max_new, out, capacity,
                                ctypes.byref(n), ctypes.byref(err)), err)
        return list(out[:n.value])


def load(model, tokenizer=None, **options):
    """Open a model (a GGUF file, a Hugging Face folder, a llama2.c checkpoint
    with its tokenizer, a .q8 or JSON model; None: the built-in tiny model).
    options: threads=1, kernels="fast"|"plain", weights="stored"|"f32"."""
    return Model(model, tokenizer, **options)


class Run:
    """A run as `stepwise diff` reads it (a trace or score file with its
    tensors file, a golden set's score file, .f32, .npy or .safetensors
    logits): logits [positions, vocab],
    positions, token_ids (None where the file states none), logprobs."""

    def __init__(self, path):
        handle, err = ctypes.c_void_p(), _Error()
        _check(_lib.sw_run_read(_path(path), ctypes.byref(handle), ctypes.byref(err)), err)
        try:
            n, V = _lib.sw_run_positions(handle), _lib.sw_run_vocab_size(handle)
            self.logits = (np.ctypeslib.as_array(_lib.sw_run_logits(handle), shape=(n, V)).copy()
                           if n > 0 else np.zeros((0, V), dtype=np.float32))
            self.positions = (np.ctypeslib.as_array(_lib.sw_run_position_ids(handle), shape=(n,)).copy()
                              if n > 0 else np.zeros(0, dtype=np.intc))
            tokens = [_lib.sw_run_token(handle, int(p)) for p in self.positions]
            self.token_ids = None if all(t < 0 for t in tokens) else tokens
            self.logprobs = bool(_lib.sw_run_logprobs(handle))
        finally:
            _lib.sw_run_free(handle)


class GoldenSet:
    """A golden set folder (`stepwise golden`): its manifest, and each file
    as a Run, read when asked for (set["score-00.jsonl"]). Reading the set
    checks its manifest and every file it lists, tensors files included:
    each a regular file of the size and SHA-256 the manifest gives.

    names: the files in the set's order; kind(name): "score", "greedy",
    "seeded" or "kv"; entry(name): the manifest's entry; scores: the score
    files' names."""

    def __init__(self, folder):
        self.folder = os.fspath(folder)
        path = os.path.join(self.folder, "manifest.json")
        try:
            with open(path, "rb") as f:
                m = json.loads(f.read().decode("utf-8"))
        except (OSError, ValueError) as e:
            raise StepwiseError(2, "%s: not a readable JSON manifest (%s)" % (path, e)) from None
        files = m.get("files") if isinstance(m, dict) else None
        if (m.get("format") if isinstance(m, dict) else None) != "stepwise-golden" \
                or m.get("version") != 1 or not isinstance(files, list) or "shard" in m:
            raise StepwiseError(2, "%s is not a whole stepwise golden set's manifest (version 1; "
                                   "a part from --shard is joined by `stepwise golden merge` first)"
                                % path)
        self.manifest = m
        self._entries = {}
        for e in files:
            listed = [e] + ([e["tensors"]] if isinstance(e, dict) and "tensors" in e else [])
            for f in listed:
                self._check_file(f)
            self._entries[e["file"]] = e
        self.names = list(self._entries)

    def _check_file(self, f):
        name = f.get("file") if isinstance(f, dict) else None
        if not isinstance(name, str) or name in ("", ".", "..", "manifest.json") or "/" in name:
            raise StepwiseError(2, "%s: a file entry needs a plain file name" % self.folder)
        path = os.path.join(self.folder, name)
        if not os.path.isfile(path):
            raise StepwiseError(2, "%s: %s is not a regular file" % (self.folder, name))
        size, digest = os.path.getsize(path), hashlib.sha256()
        if "bytes" in f and f["bytes"] != size:
            raise StepwiseError(2, "%s holds %d bytes, the manifest says %s" % (path, size, f["bytes"]))
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
        if digest.hexdigest() != f.get("sha256"):
            raise StepwiseError(2, "%s: its SHA-256 is not the one the manifest gives" % path)

    def __iter__(self):
        return iter(self.names)

    def __len__(self):
        return len(self.names)

    def __contains__(self, name):
        return name in self._entries

    def entry(self, name):
        return self._entries[name]

    def kind(self, name):
        return self._entries[name].get("kind")

    @property
    def scores(self):
        return [n for n in self.names if self.kind(n) == "score"]

    def __getitem__(self, name):
        if name not in self._entries:
            raise KeyError("%s is not a file of the golden set in %s" % (name, self.folder))
        return Run(os.path.join(self.folder, name))


def read(path):
    """A golden or trace file, in any form `stepwise diff` reads (a Run), or
    a golden set's folder (a GoldenSet, its files checked)."""
    if os.path.isdir(os.fspath(path)):
        return GoldenSet(path)
    return Run(path)


def write_logits(path, rows, token_ids=None, logprobs=False, first_pos=0):
    """rows [positions, vocab] as a raw float32 candidate (path ending in .f32)
    with its sidecar path.json: docs/oracle.md's format."""
    rows = np.ascontiguousarray(rows, dtype="<f4")
    if rows.ndim != 2:
        raise ValueError("rows must be [positions, vocab]")
    path = os.fspath(path)
    if not path.endswith(".f32"):
        raise ValueError("path must end in .f32")
    fields = {"format": "stepwise-logits-f32", "vocab_size": rows.shape[1], "positions": rows.shape[0],
              "first_pos": int(first_pos), "values": "logprobs" if logprobs else "logits"}
    if token_ids is not None:
        if len(token_ids) != rows.shape[0]:
            raise ValueError("one token id per position")
        fields["token_ids"] = [int(t) for t in token_ids]
    rows.tofile(path)
    with open(path + ".json", "w") as f:
        json.dump(fields, f)
        f.write("\n")


class DiffReport(dict):
    """`stepwise diff`'s verdict and figures: passed, positions,
    max_abs_logit, kl_mean, top1_agreement, and where it first diverged
    (first_hook, first_layer, first_pos; other_hook when the candidate's
    tensor there equals another hook's)."""

    @property
    def passed(self):
        return self["passed"]

    def summary(self):
        if self["passed"]:
            return "within tolerance over %d positions" % self["positions"]
        where = ("first divergence %s at pos %d" % (self["first_hook"], self["first_pos"])
                 if self["diverged"] else "no tensor outside tolerance")
        return "%s: %s; max |dlogit| %.3g, mean KL %.3g, top-1 agreement %.1f%%" % (
            self["fail_reason"], where, self["max_abs_logit"], self["kl_mean"],
            100 * self["top1_agreement"])


def diff(reference, candidate, preset="fp32", token_ids=None):
    """Compare candidate with reference as `stepwise diff` does. Either may be
    a path (any form the diff reads) or logits [positions, vocab] (numpy),
    with token_ids for the inputs they were computed on. A DiffReport."""
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for i, side in enumerate((reference, candidate)):
            if isinstance(side, np.ndarray):
                p = os.path.join(tmp, "side%d.f32" % i)
                write_logits(p, side, token_ids=token_ids)
                side = p
            paths.append(_path(side))
        r, err = _DiffReport(), _Error()
        _check(_lib.sw_diff(paths[0], paths[1], _path(preset), ctypes.byref(r), ctypes.byref(err)), err)
    out = {name: getattr(r, name) for name, _ in _DiffReport._fields_}
    for k in ("first_hook", "other_hook", "fail_reason"):
        out[k] = out[k].decode()
    out["passed"] = bool(out["passed"])
    out["diverged"] = bool(out["diverged"])
    return DiffReport(out)
