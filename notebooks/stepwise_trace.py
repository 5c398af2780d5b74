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


def show_figure(name, dpi=80):
    """Save the current figure as build/notebooks/NAME (the docs show some of
    these PNGs) and display it inline, so that the executed notebook and its
    HTML hold the picture itself; then close it."""
    import matplotlib.pyplot as plt
    from IPython.display import Image, display
    path = os.path.join(OUT, name)
    plt.savefig(path, dpi=dpi, bbox_inches="tight")
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


def run(*args):
    """Run `stepwise ARGS...`; returns its stdout (raises on failure)."""
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


def pieces(trace):
    """id -> piece for every token the trace names."""
    known = {}
    for e in events(trace, "tokenize"):
        known.update(zip(e["ids"], e["pieces"]))
    for e in events(trace, "token"):
        known[e["token"]] = e["piece"]
    return known
