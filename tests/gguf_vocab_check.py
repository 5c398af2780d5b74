#!/usr/bin/python3
"""llama.cpp's own tokenizer test vectors against stepwise's encoder.

llama.cpp tests its tokenizers on vocabulary-only GGUF files
(ggml-vocab-NAME.gguf: the tokenizer's metadata, no tensors), each with test
strings (.inp, separated by a line __ggml_vocab_test__) and the ids Hugging
Face's tokenizer gives each (.out, one line a string, no special tokens
added). stepwise reads such a file as a tokenizer (`tokenize --model
FILE.gguf`) and must give the same ids for every string.

The files come from ../shared/vocab (beside $STEPWISE_MODELS); the check is
skipped, saying so, where they are absent.

usage: tests/gguf_vocab_check.py build/stepwise
"""
import json
import os
import subprocess
import sys

from check_util import Checks, TIMEOUT

SEPARATOR = "\n__ggml_vocab_test__\n"


def vectors(path):
    """(text, ids) pairs from FILE.inp and FILE.out, as llama.cpp's
    test-tokenizer-0 reads them."""
    texts = open(path + ".inp", encoding="utf-8", newline="").read().split(SEPARATOR)
    if texts and texts[-1] == "":  # the file ends with a separator
        texts.pop()
    lines = open(path + ".out", encoding="utf-8").read().split("\n")
    ids = [[int(x) for x in line.split()] for line in lines[:len(texts)]]
    return list(zip(texts, ids))


def main():
    binary = sys.argv[1] if len(sys.argv) > 1 else "build/stepwise"
    models = os.environ.get("STEPWISE_MODELS", "../shared/models")
    folder = os.path.join(os.path.dirname(os.path.abspath(models)), "vocab")
    names = sorted(f for f in os.listdir(folder) if f.endswith(".gguf")) if os.path.isdir(folder) else []
    if not names:
        print("gguf vocab check skipped: no ggml-vocab-*.gguf in %s" % folder)
        return 0
    check = Checks()
    for name in names:
        path = os.path.join(folder, name)
        pairs = vectors(path)
        lines = "".join(json.dumps(text) + "\n" for text, _ in pairs)
        run = subprocess.run([binary, "tokenize", "--model", path, "--no-bos", "--texts", "-"],
                             input=lines, capture_output=True, text=True, timeout=TIMEOUT)
        got = [json.loads(line)["ids"] for line in run.stdout.splitlines()]
        wrong = [(text, want, have) for (text, want), have in zip(pairs, got) if want != have]
        detail = "" if not wrong else "; first difference: %r -> %s, expected %s" % wrong[0]
        check(run.returncode == 0 and len(got) == len(pairs) and not wrong,
              "%s: %d/%d strings give llama.cpp's expected ids (the file has no tensors)%s%s"
              % (name, len(pairs) - len(wrong) if len(got) == len(pairs) else 0, len(pairs),
                 detail, (": " + run.stderr.strip()) if run.returncode else ""))
    return check.summary("gguf vocab")


if __name__ == "__main__":
    sys.exit(main())
