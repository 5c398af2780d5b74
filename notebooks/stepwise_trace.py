"""stepwise_trace: run the built stepwise binary and read its traces.

The one helper the notebooks share: the standard library and numpy only.
Traces are JSON Lines (docs/trace-format.md): read_trace gives a list of
events (dicts), and the functions below pick them apart.
"""
import json
import os
import subprocess

import numpy as np

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
BIN = os.path.join(ROOT, "build", "stepwise")
OUT = os.path.join(ROOT, "build", "notebooks")
MODELS = os.environ.get("STEPWISE_MODELS", os.path.join(ROOT, "..", "shared", "models"))
if not os.path.isabs(MODELS):
    MODELS = os.path.join(ROOT, MODELS)
os.makedirs(OUT, exist_ok=True)


def legend_covers_data(fig):
    """The data a legend of fig hides: (legend, what) for every plotted
    point (a line's, a scatter's) inside a legend's box and every bar that
    reaches into it. A figure on a projector must show all its data."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    legends = [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None] + list(fig.legends)
    hidden = []
    for legend in legends:
        box = legend.get_window_extent(renderer)
        for ax in fig.axes:
            for line in ax.get_lines():
                xy = line.get_transform().transform(np.asarray(line.get_xydata(), dtype=float))
                if any(box.contains(x, y) for x, y in xy if np.isfinite(x) and np.isfinite(y)):
                    hidden.append((legend, "line %s" % line.get_label()))
            for collection in ax.collections:
                xy = collection.get_offset_transform().transform(collection.get_offsets())
                if any(box.contains(x, y) for x, y in xy if np.isfinite(x) and np.isfinite(y)):
                    hidden.append((legend, "points %s" % collection.get_label()))
            for patch in ax.patches:
                if patch.get_window_extent(renderer).overlaps(box):
                    hidden.append((legend, "bar %s" % patch.get_label()))
    return hidden


def show_figure(name, dpi=80):
    """Save the current figure as build/notebooks/NAME (the docs show some of
    these PNGs) and display it inline, so that the executed notebook and its
    HTML hold the picture itself; then close it. A legend that hides data
    fails the cell (legend_covers_data): place it outside the axes."""
    import matplotlib.pyplot as plt
    from IPython.display import Image, display
    hidden = legend_covers_data(plt.gcf())
    assert not hidden, "%s: a legend covers data: %s" % (name, ", ".join(sorted({w for _, w in hidden})))
    path = os.path.join(OUT, name)
    # No Software line (matplotlib's version): the PNG's bytes are the
    # drawing's alone, the same from two runs of the same code, as the pages
    # of docs/notebooks/ are compared (tests/notebook_pages.py).
    plt.savefig(path, dpi=dpi, bbox_inches="tight", metadata={"Software": None})
    plt.close()
    display(Image(filename=path))
    return path


def model(name):
    """Path of a real model file; a clear error when it is missing."""
    path = os.path.join(MODELS, name)
    if not os.path.exists(path):
        raise FileNotFoundError("%s not found: set STEPWISE_MODELS or run `make models`" % path)
    return path


def stories():
    """--model/--tokenizer arguments for stories260K."""
    return ["--model", model("stories260K.bin"), "--tokenizer", model("tok512.bin")]


# The commands that take --threads. A notebook's timings run on one thread
# unless a cell says otherwise: the default (every core) competes with the
# rest of a shared or busy machine, and one run's figures then turn upside
# down (a classroom's projector is rarely an idle machine). The numbers
# themselves are the same bits on any count.
THREADED = ("generate", "score", "batch", "serve-sim", "compare-quant", "golden")


def run(*args):
    """Run `stepwise ARGS...` (on one thread, for the commands that take
    --threads, unless ARGS give their own); returns its stdout (raises on
    failure)."""
    if args and args[0] in THREADED and "--threads" not in args:
        args = (*args, "--threads", "1")
    done = subprocess.run([BIN, *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError("stepwise %s failed: %s" % (" ".join(args), done.stderr.strip()))
    return done.stdout


def run_json(*args):
    return json.loads(run(*args))


def read_trace(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def generate(name, *args):
    """Run generate with a trace at build/notebooks/NAME.jsonl; returns its events."""
    path = os.path.join(OUT, name + ".jsonl")
    run("generate", *args, "--trace", path, "--quiet")
    return read_trace(path)


def events(trace, name):
    return [e for e in trace if e["event"] == name]


def softmax(logits, temperature=1.0):
    z = np.asarray(logits, dtype=np.float64) / temperature
    z -= z.max()
    p = np.exp(z)
    return p / p.sum()


def vocab_pieces(tokenizer_bin):
    """id -> piece of every token of a llama2.c tokenizer.bin (int32 max
    length, then per token a float32 score, an int32 length, the bytes)."""
    import struct
    data = open(tokenizer_bin, "rb").read()
    at, out = 4, {}
    while at < len(data):
        n = struct.unpack_from("<i", data, at + 4)[0]
        out[len(out)] = data[at + 8:at + 8 + n].decode("utf-8", "replace").strip("\n")
        at += 8 + n
    return out


def pieces(trace, tokenizer_bin=None):
    """id -> piece for every token the trace names, and with tokenizer_bin
    (stories260K's tok512.bin by default when it is there) every token of
    the vocabulary, so that a bar or a table never shows a bare id."""
    known = {}
    if tokenizer_bin is None and os.path.exists(os.path.join(MODELS, "tok512.bin")):
        tokenizer_bin = os.path.join(MODELS, "tok512.bin")
    vocab = trace[0].get("model", {}).get("vocab_size") if trace else None
    if tokenizer_bin is not None and vocab == 512:
        known.update(vocab_pieces(tokenizer_bin))
    for e in events(trace, "tokenize"):
        known.update(zip(e["ids"], e["pieces"]))
    for e in events(trace, "token"):
        known[e["token"]] = e["piece"]
    return known
