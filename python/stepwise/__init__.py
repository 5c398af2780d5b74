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
it in when build/libstepwise.so exists: `make lib`), three folders up (`make
install`'s PREFIX/lib beside PREFIX/lib/python3.X/dist-packages/stepwise),
or in the checkout's build/ folder. docs/library.md says more.
"""
import ctypes
import hashlib
import json
import os
import tempfile

import numpy as np

from . import _checks

__all__ = ["__version__", "load", "read", "diff", "write_logits", "write_trace", "write_candidate", "version", "StepwiseError", "Model", "Scores",
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
                ("weights_f32", ctypes.c_int), ("copy_weights", ctypes.c_int), ("gelu_ggml", ctypes.c_int),
                ("kv_dtype", ctypes.c_int), ("kv_rounding_ggml", ctypes.c_int)]


class _Shape(ctypes.Structure):
    _fields_ = [(n, ctypes.c_int) for n in ("vocab_size", "dim", "hidden_dim", "n_layers", "n_heads",
                                           "n_kv_heads", "head_dim", "seq_len")]


class _Sampler(ctypes.Structure):
    _fields_ = [("temperature", ctypes.c_float), ("top_k", ctypes.c_int), ("top_p", ctypes.c_float),
                ("min_p", ctypes.c_float), ("seed", ctypes.c_uint64)]


class _DiffOptions(ctypes.Structure):
    _fields_ = [("preset", ctypes.c_char_p), ("atol", ctypes.c_double), ("rtol", ctypes.c_double),
                ("names", ctypes.c_char_p), ("rope_halves", ctypes.c_int), ("teacher_forced", ctypes.c_int)]


class _DiffTensor(ctypes.Structure):
    _fields_ = [("hook", ctypes.c_char_p), ("data", ctypes.POINTER(ctypes.c_float)), ("width", ctypes.c_int)]


class _DiffReport(ctypes.Structure):
    _fields_ = [("passed", ctypes.c_int), ("positions", ctypes.c_int),
                ("inputs_checked", ctypes.c_int), ("inputs_compared", ctypes.c_int),
                ("inputs_differ_pos", ctypes.c_int), ("ref_token", ctypes.c_int),
                ("cand_token", ctypes.c_int), ("activations", ctypes.c_long),
                ("max_abs_logit", ctypes.c_double), ("kl_mean", ctypes.c_double),
                ("top1_agreement", ctypes.c_double), ("diverged", ctypes.c_int),
                ("first_hook", ctypes.c_char * 64), ("first_layer", ctypes.c_int),
                ("first_pos", ctypes.c_int), ("other_hook", ctypes.c_char * 64),
                ("fail_reason", ctypes.c_char * 160), ("max_abs_pos", ctypes.c_int),
                ("max_abs_token", ctypes.c_int)]


def _find_library():
    candidates = [os.environ.get("STEPWISE_LIB"), os.path.join(_HERE, "libstepwise.so"),
                  os.path.join(_HERE, "..", "..", "..", "libstepwise.so"),  # make install's
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
        "sw_diff_with": (I, [S, S, ctypes.POINTER(_DiffOptions), ctypes.POINTER(_DiffReport), E]),
        "sw_diff_arrays": (I, [S, F, I, I, IP, ctypes.POINTER(_DiffTensor), I, ctypes.POINTER(_DiffOptions),
                               ctypes.POINTER(_DiffReport), E]),
        "sw_diff_text": (I, [S, S, ctypes.POINTER(_DiffOptions), ctypes.POINTER(_DiffReport), ctypes.c_char_p,
                             ctypes.c_size_t,
                             ctypes.POINTER(ctypes.c_size_t), E]),
        "sw_diff_arrays_text": (I, [S, F, I, I, IP, ctypes.POINTER(_DiffTensor), I, ctypes.POINTER(_DiffOptions),
                                    ctypes.POINTER(_DiffReport), ctypes.c_char_p, ctypes.c_size_t,
                                    ctypes.POINTER(ctypes.c_size_t), E]),
    }
    for name, (res, args) in sigs.items():
        f = getattr(lib, name)
        f.restype, f.argtypes = res, args
    return lib


_lib = _declare(ctypes.CDLL(_find_library()))


def _check(status, err):
    if status != 0:
        raise StepwiseError(err.code, err.message.decode("utf-8", "replace"))


_path = _checks.path


def _ids(ids, vocab_size):
    a = _checks.ids(ids, vocab_size)
    return a, a.ctypes.data_as(ctypes.POINTER(ctypes.c_int))


def version():
    """The library's version and its API's: "stepwise 0.3.0 (api 4)"."""
    return _lib.stepwise_version().decode()


__version__ = version().split()[1]  # the library's, so the package and the .so never disagree


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

    def __init__(self, path, tokenizer=None, threads=1, kernels="fast", weights="stored",
                 copy_weights=False, gelu="exact", kv_dtype="f32", kv_rounding="none"):
        self._handle = None
        if kernels not in ("fast", "plain") or weights not in ("stored", "f32"):
            raise ValueError("kernels takes fast or plain, weights stored or f32")
        if gelu not in ("exact", "ggml") or kv_dtype not in ("f32", "f16", "bf16") \
                or kv_rounding not in ("none", "llama.cpp"):
            raise ValueError("gelu takes exact or ggml, kv_dtype f32, f16 or bf16, kv_rounding none or llama.cpp")
        threads = _checks.integer(threads, "threads", 0, 256)
        if not isinstance(copy_weights, bool):
            raise TypeError("copy_weights must be True or False")
        opt = _OpenOptions(threads=threads, plain_kernels=kernels == "plain", weights_f32=weights == "f32",
                           copy_weights=copy_weights, gelu_ggml=gelu == "ggml",
                           kv_dtype=("f32", "f16", "bf16").index(kv_dtype),
                           kv_rounding_ggml=kv_rounding == "llama.cpp")
        handle, err = ctypes.c_void_p(), _Error()
        _check(_lib.sw_model_open(_path(path, "the model's path"), _path(tokenizer, "the tokenizer's path"),
                                  ctypes.byref(opt), ctypes.byref(handle), ctypes.byref(err)), err)
        self._handle = handle
        s = _lib.sw_model_get_shape(handle)
        self.shape = {name: getattr(s, name) for name, _ in _Shape._fields_}

    def _open(self):
        """The handle, or an error when the model was closed."""
        if not self._handle:
            raise StepwiseError(2, "the model is closed (close() or the end of its with block)")
        return self._handle

    def close(self):
        """Free the model; later calls on it raise StepwiseError. Not while
        another thread is inside a call on it."""
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
        raw = _checks.text(text)
        if not isinstance(bos, bool):
            raise TypeError("bos must be True or False")
        handle = self._open()
        capacity = len(raw) + 8
        for _ in range(2):  # the library says how many when the first guess is short
            err, n = _Error(), ctypes.c_int()
            out = (ctypes.c_int * capacity)()
            status = _lib.sw_tokenize(handle, raw, int(bos), out, capacity, ctypes.byref(n), ctypes.byref(err))
            if status != 4 or n.value <= capacity:
                break
            capacity = n.value
        _check(status, err)
        return list(out[:n.value])

    def score(self, ids, hooks=None):
        """Teacher-force ids in one prefill: a Scores. hooks: a glob of hook
        names or a list of them ("blocks.*.mlp_out", "final_norm")."""
        model = self._open()
        hooks = _checks.hooks(hooks)
        a, p = _ids(ids, self.shape["vocab_size"])
        if not 2 <= len(a) <= self.shape["seq_len"]:
            raise ValueError("score takes 2 to %d ids (the model's positions), not %d"
                             % (self.shape["seq_len"], len(a)))
        handle, err = ctypes.c_void_p(), _Error()
        _check(_lib.sw_score(model, p, len(a), hooks, ctypes.byref(handle), ctypes.byref(err)), err)
        return Scores(handle)

    def generate(self, ids, max_new, temperature=0.0, top_k=0, top_p=1.0, min_p=0.0, seed=42):
        """The prompt ids then up to max_new drawn tokens, stopping at EOS or
        when the model's context is full (at most seq_len + 1 ids in all).
        seed: not 0, as the CLI's --seed (xorshift's state 0 never moves)."""
        model = self._open()
        a, p = _ids(ids, self.shape["vocab_size"])
        seq_len = self.shape["seq_len"]
        max_new = _checks.integer(max_new, "max_new", 1, _checks.INT32_MAX)
        if not 1 <= len(a) <= seq_len:
            raise ValueError("generate takes 1 to %d prompt ids (the model's positions), not %d"
                             % (seq_len, len(a)))
        s = _Sampler(temperature=_checks.float32(temperature, "temperature", 0, 1e30),
                     top_k=_checks.integer(top_k, "top_k", 0, _checks.INT32_MAX),
                     top_p=_checks.float32(top_p, "top_p", 0, 1),
                     min_p=_checks.float32(min_p, "min_p", 0, 1),
                     seed=_checks.integer(seed, "seed", 1, 2**64 - 1))
        capacity = min(len(a) + max_new, seq_len + 1)  # it stops when the context is full
        out, n, err = (ctypes.c_int * capacity)(), ctypes.c_int(), _Error()
        _check(_lib.sw_generate(model, p, len(a), ctypes.byref(s), max_new, out, capacity,
                                ctypes.byref(n), ctypes.byref(err)), err)
        return list(out[:n.value])


def load(model, tokenizer=None, **options):
    """Open a model (a GGUF file, a Hugging Face folder, a llama2.c checkpoint
    with its tokenizer, a .q8 or JSON model; None: the built-in tiny model).
    options: threads=1, kernels="fast"|"plain", weights="stored"|"f32",
    gelu="exact"|"ggml", kv_dtype="f32"|"f16"|"bf16", kv_rounding="none"|"llama.cpp"
    (to compute as llama.cpp does: docs/oracle.md),
    copy_weights=False (True: read the weight files into memory at open, so
    that a file truncated or replaced later cannot end the process with
    SIGBUS; the default maps them, docs/library.md). A Model may be shared by
    threads: its scores and generations run one at a time."""
    return Model(model, tokenizer, **options)


class Run:
    """A run as `stepwise diff` reads it (a trace or score file with its
    tensors file, a golden set's score file, .f32, .npy or .safetensors
    logits): logits [positions, vocab],
    positions, token_ids (None where the file states none), logprobs."""

    def __init__(self, path):
        handle, err = ctypes.c_void_p(), _Error()
        _check(_lib.sw_run_read(_path(path), ctypes.byref(handle), ctypes.byref(err)), err)
        if not handle:
            raise StepwiseError(3, "sw_run_read gave no run")
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
        self.folder = os.fsdecode(os.fspath(folder))
        path = os.path.join(self.folder, "manifest.json")
        # a regular file of a sane size, before it is opened: a FIFO would block the open for ever
        if _checks.regular_file(path, "the set's manifest.json") > 64 << 20:
            raise StepwiseError(2, "%s: over 64 MiB, not a golden set's manifest" % path)
        try:
            with open(path, "rb") as f:
                m = json.loads(f.read().decode("utf-8"))
        except (OSError, ValueError) as e:
            raise StepwiseError(2, "%s: not a readable JSON manifest (%s)" % (path, e)) from None
        except RecursionError:
            raise StepwiseError(2, "%s: not a golden set's manifest (nested too deep)" % path) from None
        files = m.get("files") if isinstance(m, dict) else None
        if (m.get("format") if isinstance(m, dict) else None) != "stepwise-golden" \
                or m.get("version") != 1 or not isinstance(files, list) or "shard" in m:
            raise StepwiseError(2, "%s is not a whole stepwise golden set's manifest (version 1; "
                                   "a part from --shard is joined by `stepwise golden merge` first)"
                                % path)
        self.manifest = m
        self._entries = {}
        for e in files:
            if not isinstance(e, dict):
                raise StepwiseError(2, "%s: each entry of \"files\" must be an object" % path)
            listed = [e] + ([e["tensors"]] if "tensors" in e else [])
            for f in listed:
                self._check_file(f)
            self._check_tensors_named(e)
            self._entries[e["file"]] = e
        self.names = list(self._entries)

    def _check_file(self, f):
        name = f.get("file") if isinstance(f, dict) else None
        if (not isinstance(name, str) or name in ("", ".", "..", "manifest.json") or "/" in name
                or any(ord(ch) < 32 for ch in name)):
            raise StepwiseError(2, "%s: a file entry needs a plain file name" % self.folder)
        path = os.path.join(self.folder, name)
        size, digest = _checks.regular_file(path, name), hashlib.sha256()
        if "bytes" in f and f["bytes"] != size:
            raise StepwiseError(2, "%s holds %d bytes, the manifest says %s" % (path, size, f["bytes"]))
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
        if digest.hexdigest() != f.get("sha256"):
            raise StepwiseError(2, "%s: its SHA-256 is not the one the manifest gives" % path)

    def _check_tensors_named(self, e):
        """A JSON Lines file names the tensors file its entry lists, and no other."""
        if not e["file"].endswith(".jsonl"):
            return
        named = []
        with open(os.path.join(self.folder, e["file"]), "rb") as fh:
            for line in fh:
                if b'"tensors"' not in line:
                    continue
                try:
                    event = json.loads(line)
                except (ValueError, RecursionError):
                    continue  # the run's reader refuses it, naming the line
                if isinstance(event, dict) and event.get("event") == "tensors":
                    named.append(event.get("file"))
        listed = [e["tensors"]["file"]] if isinstance(e.get("tensors"), dict) else []
        if named != listed:
            raise StepwiseError(2, "%s: %s names the tensors file%s %s but the manifest lists %s: "
                                   "the manifest and the files disagree"
                                % (self.folder, e["file"], "s" if len(named) != 1 else "",
                                   ", ".join(map(repr, named)) or "none", ", ".join(map(repr, listed)) or "none"))

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
    _path(path)  # a str, bytes or PathLike without NUL, or an error here
    if os.path.isdir(os.fspath(path)):
        return GoldenSet(path)
    return Run(path)


def write_logits(path, rows, token_ids=None, logprobs=False, first_pos=0):
    """rows [positions, vocab] as a raw float32 candidate (path ending in .f32)
    with its sidecar path.json: docs/oracle.md's format."""
    rows = np.asarray(rows)
    if rows.dtype.kind != "f" or rows.ndim != 2 or 0 in rows.shape:
        raise ValueError("rows must be floats [positions, vocab], not %s %s" % (rows.dtype, rows.shape))
    rows = np.ascontiguousarray(rows, dtype="<f4")
    _path(path)
    path = os.fsdecode(os.fspath(path))
    if not path.endswith(".f32"):
        raise ValueError("path must end in .f32")
    first_pos = _checks.integer(first_pos, "first_pos", 0, _checks.INT32_MAX - rows.shape[0])
    fields = {"format": "stepwise-logits-f32", "vocab_size": rows.shape[1], "positions": rows.shape[0],
              "first_pos": int(first_pos), "values": "logprobs" if logprobs else "logits"}
    if token_ids is not None:
        ids = _checks.ids(token_ids, _checks.INT32_MAX, "token_ids")
        if len(ids) != rows.shape[0]:
            raise ValueError("token_ids has %d ids for %d positions: one a position"
                             % (len(ids), rows.shape[0]))
        fields["token_ids"] = [int(t) for t in ids]
    rows.tofile(path)
    with open(path + ".json", "w") as f:
        json.dump(fields, f)
        f.write("\n")


_PER_HEAD = (".attn.scores", ".attn.pattern")  # stepwise's per-head hooks: a row a head


def _activation(hook, values, positions, keys):
    """One hook's values [positions, ...] as float32: [positions, width], or
    for a per-head hook [positions, heads, keys] (keys: the positions a row
    covers, up to the last; a wider one is cut there)."""
    _checks.text(hook, "a hook's name")
    values = np.asarray(values)
    if values.dtype.kind not in "fiu" or values.ndim < 1 or values.shape[0] != positions or values.size == 0:
        raise ValueError("activations[%r] must be numbers [positions, ...] with %d positions, not %s %s"
                         % (hook, positions, values.dtype, values.shape))
    if not hook.endswith(_PER_HEAD):
        return values.reshape(positions, -1).astype(np.float32)
    if values.ndim == 2 and values.shape[1] % keys == 0:
        values = values.reshape(positions, -1, keys)
    if values.ndim != 3 or values.shape[2] < keys:
        raise ValueError("activations[%r] is per head: [positions, heads, keys] with keys up to the last "
                         "position (%d), as score() gives it; not %s" % (hook, keys, values.shape))
    return values[:, :, :keys].astype(np.float32)


def write_trace(path, token_ids, logits=None, activations=None, first_pos=0):
    """A candidate as a JSON Lines trace `stepwise diff` walks hook by hook:
    per position, an activation event for each hook (activations: {hook:
    [positions, ...]}, under stepwise's names or another engine's with
    diff's names=) and a logits event (logits [positions, vocab]), each
    stating its input token (token_ids). The per-head hooks (attn.scores,
    attn.pattern) as score() gives them, [positions, heads, keys] (or
    [positions, heads x keys]) with keys up to the last position: an event
    a position and head of the keys that position sees, as a stepwise trace
    writes them. Values as float32; a value that is not finite is written as
    null, which diff reports."""
    _path(path)  # a str, bytes or PathLike without NUL, or an error here
    path = os.fsdecode(os.fspath(path))
    ids = _checks.ids(token_ids, _checks.INT32_MAX, "token_ids")
    first_pos = _checks.integer(first_pos, "first_pos", 0, _checks.INT32_MAX - len(ids))
    arrays = {hook: _activation(hook, values, len(ids), first_pos + len(ids))
              for hook, values in (activations or {}).items()}
    if logits is not None:
        logits = np.asarray(logits)
        if logits.dtype.kind != "f" or logits.ndim != 2 or logits.shape[0] != len(ids):
            raise ValueError("logits must be floats [%d positions, vocab], not %s %s"
                             % (len(ids), logits.dtype, logits.shape))
        logits = logits.astype(np.float32)

    def floats(row):
        return [float(v) if np.isfinite(v) else None for v in row]
    with open(path, "w") as f:
        for i, token in enumerate(ids):
            pos = first_pos + i
            for hook, values in arrays.items():
                if values.ndim == 3:  # per head: the keys 0..pos this query sees
                    for h in range(values.shape[1]):
                        f.write(json.dumps({"event": "activation", "hook": hook, "pos": pos, "head": h,
                                            "token": int(token), "data": floats(values[i, h, :pos + 1])}) + "\n")
                    continue
                f.write(json.dumps({"event": "activation", "hook": hook, "pos": pos, "token": int(token),
                                    "data": floats(values[i])}) + "\n")
            if logits is not None:
                f.write(json.dumps({"event": "logits", "pos": pos, "token": int(token),
                                    "logits": floats(logits[i])}) + "\n")


write_candidate = write_trace  # the name docs/oracle.md's candidate writer (trace/candidate.py) has here


class DiffReport(dict):
    """`stepwise diff`'s verdict and figures: passed, positions (logits
    rows compared), the inputs (inputs_checked: both runs state their
    tokens; inputs_compared: at how many positions; inputs_differ_pos: the
    first position fed another token, with ref_token and cand_token, or -1;
    inputs_matched), max_abs_logit (NaN or inf when a candidate's logit is)
    at max_abs_pos and max_abs_token, kl_mean, top1_agreement, and where it
    first diverged (first_hook, first_layer, first_pos; other_hook when the
    candidate's tensor there equals another hook's); text: the whole report
    as `stepwise diff` prints it (per-layer table, logits figures,
    tolerance, verdict)."""

    @property
    def passed(self):
        return self["passed"]

    @property
    def text(self):
        return self["text"]

    def summary(self):
        inputs = ("inputs differ from position %d (reference token %d, candidate %d)"
                  % (self["inputs_differ_pos"], self["ref_token"], self["cand_token"])
                  if self["inputs_differ_pos"] >= 0 else
                  "the same input tokens at %d positions" % self["inputs_compared"]
                  if self["inputs_checked"] else "input tokens not stated on both sides")
        if self["passed"]:
            return "within tolerance over %d positions; %s" % (self["positions"], inputs)
        where = ("first divergence %s at pos %d" % (self["first_hook"], self["first_pos"])
                 if self["diverged"] else "no tensor outside tolerance")
        if self["inputs_differ_pos"] >= 0:
            where = "%s; %s" % (inputs, where)
        return "%s: %s; max |dlogit| %.3g, mean KL %.3g, top-1 agreement %.1f%%" % (
            self["fail_reason"], where, self["max_abs_logit"], self["kl_mean"],
            100 * self["top1_agreement"])


def _dict_keys(side, label):
    unknown = set(side) - {"logits", "activations"}
    if unknown:
        raise ValueError("the %s dict holds %s: only logits and activations" % (label, sorted(unknown)))


def _held_candidate(side, token_ids):
    """A candidate given as logits [positions, vocab] or a dict of arrays,
    as sw_diff_arrays_text's arguments (args) over float32 copies it keeps
    alive (keep), and how the report names it (label)."""
    if isinstance(side, dict):
        _dict_keys(side, "candidate")
        logits, acts = side.get("logits"), side.get("activations") or {}
        label = "(the candidate arrays)"
    else:
        logits, acts, label = side, {}, "(the candidate array)"
    ids = None if token_ids is None else _checks.ids(token_ids, _checks.INT32_MAX, "token_ids")
    if logits is not None:
        logits = np.asarray(logits)
        if logits.dtype.kind != "f" or logits.ndim != 2 or 0 in logits.shape:
            raise ValueError("the candidate's logits must be floats [positions, vocab], not %s %s"
                             % (logits.dtype, logits.shape))
        logits = np.ascontiguousarray(logits, dtype=np.float32)
    positions = len(ids) if ids is not None else logits.shape[0]  # a dict comes with token_ids
    if logits is not None and logits.shape[0] != positions:
        raise ValueError("token_ids has %d ids for %d positions: one a position" % (positions, logits.shape[0]))
    if positions < 1:
        raise ValueError("the candidate holds no positions (token_ids is empty)")
    if not isinstance(acts, dict):
        raise TypeError("the candidate's activations must be a dict {hook: [positions, ...]}, not %s"
                        % type(acts).__name__)
    names, rows = [], []
    for hook, values in acts.items():
        a = _activation(hook, values, positions, positions)
        a = np.ascontiguousarray(a.reshape(positions, -1))  # per head: [positions, heads x positions]
        _checks.integer(a.shape[1], "activations[%r]'s width" % hook, 1, _checks.INT32_MAX)
        names.append(_checks.text(hook, "a hook's name"))
        rows.append(a)
    fp = ctypes.POINTER(ctypes.c_float)
    tensors = (_DiffTensor * max(len(rows), 1))(*[_DiffTensor(n, a.ctypes.data_as(fp), a.shape[1])
                                                  for n, a in zip(names, rows)])
    args = (logits.ctypes.data_as(fp) if logits is not None else None, positions,
            logits.shape[1] if logits is not None else 0,
            ids.ctypes.data_as(ctypes.POINTER(ctypes.c_int)) if ids is not None else None,
            tensors, len(rows))
    return {"args": args, "keep": (logits, ids, names, rows, tensors), "label": label}


def diff(reference, candidate, preset="fp32", token_ids=None, atol=None, rtol=None, names=None,
         rope_halves=False, teacher_forced=False):
    """Compare candidate with reference as `stepwise diff` does, with its
    options. Either side may be a path (any form the diff reads), logits
    [positions, vocab] (numpy), or a dict {"logits": [positions, vocab],
    "activations": {hook: [positions, ...]}} (the per-head attn.scores and
    attn.pattern as score() gives them), with token_ids for the inputs they
    were computed on. A candidate given so is compared from memory (no file
    is written); a reference so, through a file (write_logits, write_trace).
    Each hook is given once: two keys that name one hook (under two naming
    schemes) are an error.
    atol, rtol: a custom tolerance in the preset's rule; names: the
    candidate's hooks are that engine's ("hf", "llama.cpp", ...:
    data/hook-names.json), with rope_halves as --rope-halves; teacher_forced:
    inputs that differ are an error. A DiffReport. Runs fed other tokens
    fail (two score files: an error), naming the first position where they
    differ."""
    opt = _DiffOptions(preset=_checks.text(preset, "preset"),
                       atol=-1.0 if atol is None else _checks.number(atol, "atol", 0, 1e30),
                       rtol=-1.0 if rtol is None else _checks.number(rtol, "rtol", 0, 1e30),
                       names=None if names is None else _checks.text(names, "names"),
                       rope_halves=bool(rope_halves), teacher_forced=bool(teacher_forced))
    if rope_halves and names is None:
        raise ValueError("rope_halves goes with names (the engine whose names the candidate's hooks carry)")
    given = [side for side in (reference, candidate) if isinstance(side, (np.ndarray, dict))]
    if token_ids is not None and not given:
        raise ValueError("token_ids goes with logits given as an array; a file states its own")
    if any(isinstance(side, dict) for side in given) and token_ids is None:
        raise ValueError("a dict of arrays needs token_ids (the inputs they were computed on)")
    with tempfile.TemporaryDirectory() as tmp:
        paths, arrays, held = [], {}, None
        for side, label in ((reference, "reference"), (candidate, "candidate")):
            if label == "candidate" and isinstance(side, (np.ndarray, dict)):
                held = _held_candidate(side, token_ids)  # compared from memory: no file
                break
            if isinstance(side, np.ndarray):
                p = os.path.join(tmp, label + ".f32")
                write_logits(p, side, token_ids=token_ids)
                arrays[p] = "the %s array" % label
                side = p
            elif isinstance(side, dict):
                _dict_keys(side, label)
                p = os.path.join(tmp, label + ".jsonl")
                write_trace(p, token_ids, logits=side.get("logits"), activations=side.get("activations"))
                arrays[p] = "the %s arrays" % label
                side = p
            paths.append(_path(side, label))
        # one comparison gives the report and the command line's text; a text
        # longer than the first guess is asked for again at its size
        r, err, text = _DiffReport(), _Error(), ""
        needed, size = ctypes.c_size_t(0), 1 << 16
        while True:
            buf = ctypes.create_string_buffer(size)
            if held is not None:
                status = _lib.sw_diff_arrays_text(paths[0], *held["args"], ctypes.byref(opt), ctypes.byref(r), buf,
                                                  size, ctypes.byref(needed), ctypes.byref(err))
            else:
                status = _lib.sw_diff_text(paths[0], paths[1], ctypes.byref(opt), ctypes.byref(r), buf, size,
                                           ctypes.byref(needed), ctypes.byref(err))
            if status != 0 or needed.value <= size:
                break
            size = needed.value
        if held is not None:  # the C side names what it compared "(arrays)"
            arrays["(arrays)"] = held["label"]
        if status == 0:  # its temporary paths named as the caller knows them
            text = buf.value.decode("utf-8", "replace")
            for p, label in arrays.items():
                text = text.replace(p, label if p == "(arrays)" else "(" + label + ")")
    if status != 0:  # name the arrays as the caller knows them, not by their temporary files
        message = err.message.decode("utf-8", "replace")
        for p, label in arrays.items():
            message = message.replace(p + ".json", label + "'s token_ids").replace(p, label)
        raise StepwiseError(err.code, message)
    out = {name: getattr(r, name) for name, _ in _DiffReport._fields_}
    for k in ("first_hook", "other_hook", "fail_reason"):
        out[k] = out[k].decode()
    for k in ("passed", "diverged", "inputs_checked"):
        out[k] = bool(out[k])
    out["inputs_matched"] = out["inputs_checked"] and out["inputs_differ_pos"] < 0
    out["text"] = text
    return DiffReport(out)
