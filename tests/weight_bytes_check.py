#!/usr/bin/python3
"""A pass's weight bytes are every tensor it reads, counted from the files
(in `make test`, arch area). For each dense family make-model writes
(float32, so the bytes held are the bytes stored; DeepSeek-V2's latent
attention among them, whose kv_b a pass reads once to rebuild every
position's keys and values): a prefill of T tokens
reads each matrix and vector once, T rows of the token embedding (and of
GPT-2's position embedding) and, when the classifier is tied, the whole
embedding again as the classifier. The expected figure is summed here
from model.safetensors' own header, not from stepwise's shapes: a bias,
a q/k norm or a LayerNorm bias the count left out shows as a difference
of its bytes.

    /usr/bin/python3 tests/weight_bytes_check.py build/stepwise
"""
import json
import os
import struct
import sys
import tempfile

from check_util import Checks, run_stepwise

BIN = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/stepwise")
SHAPE = ["--dim", "32", "--hidden", "48", "--layers", "2", "--heads", "4", "--vocab", "64", "--seq-len", "16"]
TOKENS = [1, 5, 9]


def tensor_bytes(folder):
    """{name: bytes} from model.safetensors' header."""
    data = open(os.path.join(folder, "model.safetensors"), "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    return {k: v["data_offsets"][1] - v["data_offsets"][0] for k, v in header.items() if k != "__metadata__"}


def expected(folder):
    sizes = tensor_bytes(folder)
    config = json.load(open(os.path.join(folder, "config.json")))
    dim = config.get("hidden_size", config.get("n_embd"))
    total = sum(sizes.values())
    for name, size in sizes.items():  # tables read a row a token
        if name.endswith(("embed_tokens.weight", "wte.weight", "wpe.weight")):
            total += len(TOKENS) * dim * 4 - size
    tied = config.get("tie_word_embeddings", True) and not any(k.endswith("lm_head.weight") for k in sizes)
    if tied:  # the classifier reads the whole token embedding
        total += next(s for k, s in sizes.items() if k.endswith(("embed_tokens.weight", "wte.weight")))
    return total, tied


def main():
    check = Checks()
    with tempfile.TemporaryDirectory() as tmp:
        for arch, extra in (("llama", []), ("qwen2", []), ("qwen3", []), ("gpt2", ["--kv-heads", "4"]),
                            ("phi3", []), ("gemma2", []), ("llama", ["--untied"]),
                            ("deepseek2", ["--kv-heads", "4", "--head-dim", "12", "--qk-rope-dim", "4",
                                           "--kv-lora-rank", "16", "--q-lora-rank", "8"])):
            extra = extra if "--kv-heads" in extra else ["--kv-heads", "2"] + extra
            folder = os.path.join(tmp, arch + "".join(extra[2:]))
            r = run_stepwise(BIN, "make-model", "--format", "hf", "--arch", arch, *SHAPE, *extra, "--out", folder,
                             expect=(0, 2))
            if r.returncode != 0:
                check(False, f"make-model --arch {arch} {' '.join(extra)}: {r.stderr.strip()}")
                continue
            out = os.path.join(tmp, arch + ".jsonl")
            run_stepwise(BIN, "score", "--model", folder, "--tokens", ",".join(map(str, TOKENS)), "--top-n", "0",
                         "--out", out)
            work = next(json.loads(line) for line in open(out) if '"event":"work"' in line)
            want, tied = expected(folder)
            check(work["weight_bytes"] == want,
                  f"{arch} {' '.join(extra)}: a prefill of {len(TOKENS)} tokens reads "
                  f"{work['weight_bytes']:,} weight bytes; model.safetensors' tensors say {want:,}"
                  f"{' (tied classifier)' if tied else ''}")
    return check.summary("weight bytes")


if __name__ == "__main__":
    sys.exit(main())
