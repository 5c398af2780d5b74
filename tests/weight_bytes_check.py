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
of its bytes. `inspect --json` is checked against the same headers: its
float32 weight bytes are the tensors' bytes, and its int8 figure is each
matrix's codes and scales (a scale per 32 values of a row) with every
vector (norms, biases, q/k norms, a mixture's router, GPT-2's position
table) kept as float32, for the families above and the mixtures.

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


def shapes(folder):
    """{name: shape} from model.safetensors' header."""
    data = open(os.path.join(folder, "model.safetensors"), "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    return {k: v["shape"] for k, v in header.items() if k != "__metadata__"}


def int8_bytes(folder):
    """What the file's tensors take with every matrix in int8, groups of 32:
    codes plus a float32 scale per group of a row. A matrix is a 2-D tensor
    but a position table or a mixture's router; GPT-2's Conv1D weights are
    stored [in, out], so their rows are the second dimension."""
    total = 0
    for name, shape in shapes(folder).items():
        floats = 1
        for n in shape:
            floats *= n
        vector = len(shape) != 2 or name.endswith(("wpe.weight", "mlp.gate.weight", "block_sparse_moe.gate.weight"))
        if vector:
            total += floats * 4
            continue
        conv1d = name.endswith(("c_attn.weight", "c_proj.weight", "c_fc.weight"))
        rows, cols = (shape[1], shape[0]) if conv1d else (shape[0], shape[1])
        total += rows * cols + rows * -(-cols // 32) * 4
    return total


def check_inspect(check, folder, label):
    """inspect's weight bytes, float32 and int8, from the file's own header."""
    r = run_stepwise(BIN, "inspect", "--model", folder, "--json", "--no-hash", expect=(0, 2))
    if r.returncode != 0:
        check(False, f"inspect {label}: {r.stderr.strip()}")
        return
    info = json.loads(r.stdout)
    f32, q8 = sum(tensor_bytes(folder).values()), int8_bytes(folder)
    got_f32, got_q8 = info["this_model"]["weight_bytes"], info["int8"]["weight_bytes"]
    check(got_f32 == f32 and got_q8 == q8,
          f"inspect {label}: weights {got_f32:,} bytes in float32 and {got_q8:,} in int8; "
          f"the file's tensors say {f32:,} and {q8:,}")


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
            check_inspect(check, folder, f"{arch} {' '.join(extra)}")
        for arch, extra in (("gemma3", ["--sliding-window", "4"]), ("mixtral", ["--experts", "4"]),
                            ("qwen3moe", ["--experts", "4", "--expert-hidden", "16"]),
                            ("deepseek2", ["--kv-heads", "4", "--head-dim", "12", "--qk-rope-dim", "4",
                                           "--kv-lora-rank", "16", "--q-lora-rank", "8", "--experts", "4",
                                           "--shared-experts", "1", "--expert-hidden", "16"])):
            extra = extra if "--kv-heads" in extra else ["--kv-heads", "2"] + extra
            folder = os.path.join(tmp, arch + "-inspect")
            r = run_stepwise(BIN, "make-model", "--format", "hf", "--arch", arch, *SHAPE, *extra, "--out", folder,
                             expect=(0, 2))
            check(r.returncode == 0, f"make-model --arch {arch}: {r.stderr.strip()}")
            if r.returncode == 0:
                check_inspect(check, folder, f"{arch} {' '.join(extra)}")
    return check.summary("weight bytes")


if __name__ == "__main__":
    sys.exit(main())
