#!/usr/bin/env bash
# Write the fuzz targets' seed corpora (OUT/T) from stepwise's own outputs:
# small, valid inputs of each kind, from which the fuzzer mutates. Run by
# `make fuzz-seeds` into build/fuzz/seeds: generated, never committed (the
# checkpoints, Hugging Face folders and GGUF files among them are models).
#   bash tests/fuzz/make_seeds.sh STEPWISE_BINARY OUT
set -euo pipefail
S=${1:?usage: make_seeds.sh STEPWISE_BINARY OUT}
C=${2:?usage: make_seeds.sh STEPWISE_BINARY OUT}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
KINDS="checkpoint tokenizer tokenizer_json model_json requests trace diff safetensors gguf golden tensors step_costs"
for k in $KINDS; do rm -rf "${C:?}/$k" && mkdir -p "$C/$k"; done

# checkpoints: tied and untied, MHA and GQA, and a .q8 of each
$S make-model --dim 8 --hidden 16 --layers 1 --heads 2 --vocab 16 --seq-len 4 --out "$C/checkpoint/tied.bin" 2>/dev/null
$S make-model --dim 8 --hidden 8 --layers 2 --heads 4 --kv-heads 2 --vocab 8 --seq-len 2 --untied \
    --out "$C/checkpoint/gqa-untied.bin" 2>/dev/null
$S quantize --model "$C/checkpoint/tied.bin" --group 4 --out "$C/checkpoint/tied.q8" 2>/dev/null
$S quantize --model "$C/checkpoint/gqa-untied.bin" --group 8 --out "$C/checkpoint/gqa-untied.q8" 2>/dev/null

# tokenizers: the tiny model's vocabulary as tokenizer.bin, plus byte pieces,
# after a 2-byte text length and the text to encode
/usr/bin/python3 - "$C/tokenizer" <<'PY'
import json, struct, sys
model = json.load(open("data/tiny-model.json"))
pieces = [(p, s) for p, s in model["tokenizer"]]
with_bytes = pieces + [("<0x%02X>" % b, -100.0) for b in (0x0A, 0x41, 0xC3, 0xA9)]
def tokenizer_bin(entries):
    out = struct.pack("<i", max(len(p.encode()) for p, _ in entries))
    for p, s in entries:
        b = p.encode()
        out += struct.pack("<fi", s, len(b)) + b
    return out
for name, entries, text in [("tiny", pieces, "cat sat"), ("bytes", with_bytes, "caté\nA  sat")]:
    t = text.encode()
    open(f"{sys.argv[1]}/{name}", "wb").write(struct.pack("<H", len(t)) + t + tokenizer_bin(entries))
PY

# JSON models: the tiny one, and the tiny one with every architecture option
cp data/tiny-model.json "$C/model_json/tiny.json"
/usr/bin/python3 - "$C/model_json" <<'PY'
import json, sys
m = json.load(open("data/tiny-model.json"))
m["config"].update(rope_layout="halves", rope_theta=50.0, norm_eps=1e-6, qkv_bias=True,
                   qk_norm=True, head_dim=2,
                   rope_scaling={"type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                 "high_freq_factor": 4.0, "original_max_position_embeddings": 4})
for layer in m["weights"]["layers"]:
    layer.update(bq=[0.1, -0.1], bk=[0.2, 0.0], bv=[0.0, 0.3], q_norm=[1.0, 0.9], k_norm=[1.1, 1.0])
json.dump(m, open(sys.argv[1] + "/arch.json", "w"))
m["config"] = {k: v for k, v in m["config"].items() if k not in ("qkv_bias", "qk_norm")}
m["config"]["rope_scaling"] = {"type": "linear", "factor": 2.0}
json.dump(m, open(sys.argv[1] + "/arch-extra-weights.json", "w"))
PY

# requests, for the tiny model
printf '%s\n' '{"id":"a","prompt":"cat","max_tokens":3}' \
    '{"id":"b","prompt":"cat sat","max_tokens":2,"temperature":1,"top_k":2,"top_p":0.9,"min_p":0.1,"seed":7,"sampler_order":"vllm","arrival_ms":1}' \
    '{"id":"c","system":"cat","messages":[{"role":"user","content":"cat"},{"role":"assistant","content":"sat"},{"role":"user","content":"cat"}]}' \
    > "$C/requests/mixed.jsonl"
printf '%s\n' '{"id":1,"prompt":"cat"}' '{"id":"x","prompt":"cat","max_tokens":-1}' 'not json' > "$C/requests/errors.jsonl"
printf '%s\n' '{"id":"m","prompt":"cat","memory":["sat","cat sat"],"documents":[{"id":"d.txt","text":"cat"}]}' \
    '{"id":"n","system":"cat","memory":["sat"],"documents":[{"id":"d","text":"sat"}],"messages":[{"role":"user","content":"cat"}]}' \
    '{"id":"o","prompt":"cat","documents":[{"id":"a/b","text":"x"}],"memory":[1]}' > "$C/requests/parts.jsonl"

# traces of the tiny model: full with KV and merges, sampled, scored
$S generate --prompt cat --trace-level full --trace-kv=full --trace-bpe --reproducible \
    --trace "$C/trace/full.jsonl" >/dev/null 2>&1
$S generate --prompt "cat sat" --temperature 1 --top-k 3 --top-p 0.9 --min-p 0.05 \
    --trace-temperatures 0.5,2 --all-logits --reproducible --trace "$C/trace/sampled.jsonl" >/dev/null 2>&1
$S score --text "cat sat" --reproducible --trace-kv --out "$C/trace/score.jsonl" 2>/dev/null
$S generate --prompt "cat sat cat sat cat sat cat sat cat" --reproducible \
    --trace "$C/trace/error.jsonl" >/dev/null 2>&1 || true

# diff: [mode][2-byte length][reference][candidate]; raw sides are
# [2-byte length][sidecar][float32 data]
/usr/bin/python3 - "$C" <<'PY'
import json, struct, sys
C = sys.argv[1]
def with_len(b): return struct.pack("<H", len(b)) + b
score = open(f"{C}/trace/score.jsonl", "rb").read()
sampled = open(f"{C}/trace/sampled.jsonl", "rb").read()
meta = json.dumps({"format": "stepwise-logits-f32", "vocab_size": 4, "positions": 2,
                   "first_pos": 1}).encode()
raw = with_len(meta) + struct.pack("<8f", 1, 2, 3, 4, 4, 3, 2, 1)
raw2 = with_len(meta) + struct.pack("<8f", 1, 2, 3, 4.5, 4, 3, 2, 1)
# .npy (numpy's header by hand: magic, version 1.0, length, dict padded to 64),
# with a sidecar of token ids
def npy(rows, vocab):
    head = ("{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %d), }" % (len(rows) // vocab, vocab))
    head = head + " " * (63 - (10 + len(head)) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(head)) + head.encode() + struct.pack("<%df" % len(rows), *rows)
npy_side = with_len(json.dumps({"token_ids": [1, 2], "values": "logprobs"}).encode()) + npy([1, 2, 3, 4, 4, 3, 2, 1], 4)
# activations under llama.cpp's names, q in halves (bit 6)
acts = b"".join(json.dumps(e).encode() + b"\n" for e in [
    {"event": "run", "mode": "score", "model": {"head_dim": 2}},
    {"event": "activation", "hook": "Qcur-0", "pos": 0, "token": 1, "data": [1, 2, 3, 4]},
    {"event": "activation", "hook": "blocks.0.attn.q", "pos": 0, "token": 1, "data": [1, 2, 3, 4]},
    {"event": "activation", "hook": "result_output", "pos": 0, "token": 1, "data": [1, 2, 3, 4]},
    {"event": "logits", "pos": 1, "token": 2, "logits": [1, 2, 3, 4]}])
# a mixture of experts' routing events, one token's experts swapped in the candidate
def routed(swap):
    events = [{"event": "run", "mode": "score", "model": {"head_dim": 2}}]
    for pos in range(3):
        for layer in range(2):
            experts = [1, 3] if (swap and pos == 1 and layer == 1) else [1, 2]
            events.append({"event": "routing", "layer": layer, "pos": pos, "token": pos + 1,
                           "experts": experts, "weights": [0.6, 0.4], "probs": [0.5, 0.3]})
        events.append({"event": "logits", "pos": pos, "token": pos + 1, "logits": [1, 2, 3, 4]})
    return b"".join(json.dumps(e).encode() + b"\n" for e in events)
for name, mode, ref, cand in [("routing", 0, routed(False), routed(True)),
                              ("traces", 0, score, score), ("two-traces", 4, score, sampled),
                              ("raw", 3, raw, raw2), ("mixed", 1, raw, score),
                              ("npy", 2 | 16, score, npy_side), ("npy-both", 1 | 2 | 8 | 16, npy_side, npy_side),
                              ("names", 64, acts, acts), ("forced", 32, score, sampled)]:
    open(f"{C}/diff/{name}", "wb").write(bytes([mode]) + with_len(ref) + cand)
PY
# tensors: [mode][2-byte length][score file][its tensors file] (bit 0), or a
# safetensors candidate on its own, by score --tensors
$S score --text "cat sat" --reproducible --trace-kv --hooks '*' --out "$tmp/t.jsonl" \
    --tensors "$tmp/t.safetensors" 2>/dev/null
/usr/bin/python3 - "$C" "$tmp" <<'PY'
import struct, sys
C, T = sys.argv[1], sys.argv[2]
jsonl, tensors = open(f"{T}/t.jsonl", "rb").read(), open(f"{T}/t.safetensors", "rb").read()
open(f"{C}/tensors/score", "wb").write(bytes([1]) + struct.pack("<H", len(jsonl)) + jsonl + tensors)
open(f"{C}/tensors/score-patterns", "wb").write(bytes([5]) + struct.pack("<H", len(jsonl)) + jsonl + tensors)
open(f"{C}/tensors/alone", "wb").write(bytes([0]) + tensors)
open(f"{C}/tensors/names", "wb").write(bytes([2]) + tensors)
PY
# Hugging Face folders: [2-byte length][config.json][model.safetensors], tiny,
# one per architecture and dtype, by tests/hf_reference.py's own writer
SEED_OUT="$C/safetensors" SEED_TMP="$tmp" /usr/bin/python3 - <<'PY'
import importlib.util, json, os, struct
spec = importlib.util.spec_from_file_location("hf", "tests/hf_reference.py")
hf = importlib.util.module_from_spec(spec)
spec.loader.exec_module(hf)
out, tmp = os.environ["SEED_OUT"], os.environ["SEED_TMP"]
base = {"hidden_size": 4, "intermediate_size": 4, "num_hidden_layers": 1,
        "num_attention_heads": 2, "num_key_value_heads": 1, "vocab_size": 5,
        "max_position_embeddings": 4, "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
        "tie_word_embeddings": True}
for i, (arch, dtype) in enumerate([("LlamaForCausalLM", "F16"), ("Qwen2ForCausalLM", "F32"),
                                   ("Qwen3ForCausalLM", "BF16"), ("Phi3ForCausalLM", "F16")]):
    cfg = dict(base, architectures=[arch])
    d = os.path.join(tmp, "hf%d" % i)
    hf.write_model_dir(d, cfg, hf.hf_tensors(cfg, i), dtype)
    config = open(os.path.join(d, "config.json"), "rb").read()
    weights = open(os.path.join(d, "model.safetensors"), "rb").read()
    open(os.path.join(out, arch.lower()), "wb").write(struct.pack("<H", len(config)) + config + weights)
# Phi-3 with a partial RoPE (head_dim 4, factor 0.5: 2 dims turn)
cfg = dict(base, architectures=["Phi3ForCausalLM"], partial_rotary_factor=0.5, num_attention_heads=1,
           num_key_value_heads=1)
d = os.path.join(tmp, "phi3-partial")
hf.write_model_dir(d, cfg, hf.hf_tensors(cfg, 9), "F32")
config = open(os.path.join(d, "config.json"), "rb").read()
weights = open(os.path.join(d, "model.safetensors"), "rb").read()
open(os.path.join(out, "phi3-partial-rotary"), "wb").write(struct.pack("<H", len(config)) + config + weights)
# GPT-2: its own keys and Conv1D tensors, by tests/gpt2_check.py's writer
import sys
sys.path.insert(0, "tests")
import gpt2_check
cfg = gpt2_check.config(d=4, layers=1, heads=2, inner=8, vocab=5, positions=4)
for i, (prefix, dtype) in enumerate([("transformer.", "F32"), ("", "BF16")]):
    d = os.path.join(tmp, "gpt2-%d" % i)
    hf.write_model_dir(d, cfg, gpt2_check.random_tensors(cfg, i, prefix), dtype)
    config = open(os.path.join(d, "config.json"), "rb").read()
    weights = open(os.path.join(d, "model.safetensors"), "rb").read()
    open(os.path.join(out, "gpt2lmheadmodel-%d" % i), "wb").write(struct.pack("<H", len(config)) + config + weights)
# Gemma 2 and 3: soft-caps, a window, layer_types or sliding_window_pattern,
# post-norms, by tests/gemma_check.py's writer
import gemma_check
for i, (gemma3, dtype) in enumerate([(False, "F32"), (True, "BF16")]):
    cfg = gemma_check.config(gemma3, d=4, layers=2, heads=2, kv=1, hd=2, vocab=5, positions=4, sliding_window=2)
    if gemma3:
        cfg = dict({k: v for k, v in cfg.items() if k != "layer_types"}, sliding_window_pattern=2)
    d = os.path.join(tmp, "gemma-%d" % i)
    hf.write_model_dir(d, cfg, gemma_check.random_tensors(cfg, i), dtype)
    config = open(os.path.join(d, "config.json"), "rb").read()
    weights = open(os.path.join(d, "model.safetensors"), "rb").read()
    open(os.path.join(out, "gemma%d" % (3 if gemma3 else 2)), "wb").write(struct.pack("<H", len(config)) + config + weights)
# a mixture of experts: Mixtral, and Qwen3-MoE with a dense layer, by tests/moe_check.py's writer
import moe_check
for qwen in (False, True):
    cfg = moe_check.config(qwen, d=4, layers=2, heads=2, kv=1, experts=3, used=2, vocab=5,
                           **({"mlp_only_layers": [0], "head_dim": 2, "moe_intermediate_size": 2} if qwen else {}))
    cfg["intermediate_size"] = 4
    d = os.path.join(tmp, "moe-%d" % qwen)
    hf.write_model_dir(d, cfg, moe_check.random_tensors(cfg, 5), "BF16" if qwen else "F32")
    config = open(os.path.join(d, "config.json"), "rb").read()
    weights = open(os.path.join(d, "model.safetensors"), "rb").read()
    open(os.path.join(out, "qwen3moe" if qwen else "mixtral"), "wb").write(struct.pack("<H", len(config)) + config + weights)
# DeepSeek-V2: latent attention, the query direct and through its low-rank path, YaRN, shared experts,
# a dense first layer, by tests/deepseek2_check.py's writer
import deepseek2_check as ds
for i, cfg in enumerate([ds.config(d=8, layers=2, heads=2, nope=2, rope=2, v=2, kv_rank=4, experts=3),
                         ds.config(d=8, layers=2, heads=2, nope=2, rope=2, v=3, kv_rank=4, q_rank=3,
                                   experts=0, rope_scaling=ds.YARN)]):
    cfg["intermediate_size"] = 4
    d = os.path.join(tmp, "ds-%d" % i)
    hf.write_model_dir(d, cfg, ds.random_tensors(cfg, 7), "BF16" if i else "F32")
    config = open(os.path.join(d, "config.json"), "rb").read()
    weights = open(os.path.join(d, "model.safetensors"), "rb").read()
    open(os.path.join(out, "deepseek2-%d" % i), "wb").write(struct.pack("<H", len(config)) + config + weights)
PY
# GGUF: tiny llama, qwen2 and qwen3 files with an embedded llama tokenizer,
# written following the GGUF spec by tests/gguf_write.py
/usr/bin/python3 tests/gguf_write.py "$C/gguf"
# and as `stepwise convert` writes them: the tiny JSON model in each type
for t in f32 f16 q8_0; do
  "$S" convert --model data/tiny-model.json --type $t --out "$C/gguf/converted-$t.gguf" 2> /dev/null
done
# gemma2 and gemma3 files (soft-caps, a window, post-norms, q/k norms)
for a in gemma2 gemma3; do
  "$S" make-model --format hf --arch $a --dim 8 --hidden 8 --layers 2 --heads 2 --kv-heads 1 \
      --vocab 13 --seq-len 8 --sliding-window 3 --out "$tmp/$a" 2> /dev/null
  "$S" convert --model "$tmp/$a" --tokenizer data/tiny-model.json --out "$C/gguf/$a.gguf" 2> /dev/null
done
# a mixture of experts: Mixtral as llama with stacked experts, and qwen3moe
"$S" make-model --format hf --arch mixtral --experts 3 --dim 8 --hidden 8 --layers 2 --heads 2 \
    --vocab 13 --seq-len 8 --out "$tmp/mixtral" 2> /dev/null
"$S" make-model --format hf --arch qwen3moe --experts 3 --expert-hidden 4 --head-dim 4 --dim 8 \
    --hidden 8 --layers 2 --heads 2 --vocab 13 --seq-len 8 --out "$tmp/qwen3moe" 2> /dev/null
"$S" make-model --format hf --arch deepseek2 --experts 3 --expert-hidden 4 --shared-experts 1 \
    --dense-layers 0 --head-dim 4 --qk-rope-dim 2 --kv-lora-rank 4 --q-lora-rank 3 --dim 8 \
    --hidden 8 --layers 2 --heads 2 --vocab 13 --seq-len 8 --out "$tmp/deepseek2" 2> /dev/null
for a in mixtral qwen3moe deepseek2; do
  "$S" convert --model "$tmp/$a" --tokenizer data/tiny-model.json --out "$C/gguf/$a.gguf" 2> /dev/null
done
# deepseek2 as llama.cpp's converter writes it now: kv_b split into attn_k_b and attn_v_b
/usr/bin/python3 tests/gguf_split_mla.py "$C/gguf/deepseek2.gguf" "$C/gguf/deepseek2-split.gguf"
# issue 67's refusals, a key's value or a tensor away: kv_b in both forms, the gating
# function (1, run; 2, refused), an exp_probs_b nothing reads (warned about), and a llama
# with llama.cpp's expert groups, pooling and causal keys at the values that run
/usr/bin/python3 - "$C/gguf" <<'PY'
import struct, sys
sys.path.insert(0, "tests")
import gguf_split_mla as s, gguf_write as w
out = sys.argv[1]
src = f"{out}/deepseek2.gguf"
s.split(src, f"{out}/deepseek2-both-forms.gguf", keep_kv_b=True)
for v in (1, 2):
    s.split(src, f"{out}/deepseek2-gating-{v}.gguf", mla=False, extra_kvs=[w.kv_u32("deepseek2.expert_gating_func", v)])
s.split(src, f"{out}/deepseek2-exp-probs-b.gguf", mla=False,
        extra_tensors=[("blk.1.exp_probs_b.bias", [3], 0, struct.pack("<3f", 1, 2, 3))])
modes = [w.kv_u32("llama.expert_group_count", 1), w.kv_u32("llama.pooling_type", 0),
         w.gguf_string("llama.attention.causal") + struct.pack("<IB", 7, 1)]
open(f"{out}/llama-modes.gguf", "wb").write(w.tiny_gguf("llama", w.llama_tokenizer_kvs() + modes))
PY

# tokenizer.json: [2-byte length][text][2-byte length][tokenizer_config.json][tokenizer.json],
# one of each supported form, written to the format by tests/tokenizer_json_write.py
/usr/bin/python3 - "$C/tokenizer_json" <<'PY'
import json, struct, sys
sys.path.insert(0, "tests")
import tokenizer_json_write as w
texts = ["The cat sat. IT'S 12345!\n\n  caf\u00e9 \u65e5\u672c \U0001F600",
         "<|im_start|>user\nthe cat<|im_end|>", "<s>the cat</s> at\u00df"]
for name, (tok, config) in w.tokenizers().items():
    for i, text in enumerate(texts):
        t, c = text.encode(), json.dumps(config).encode() if i != 2 else b""
        body = json.dumps(tok).encode()
        open(f"{sys.argv[1]}/{name}-{i}", "wb").write(
            struct.pack("<H", len(t)) + t + struct.pack("<H", len(c)) + c + body)
PY

# GGUF with quantized matrices (Q8_0, Q4_0, Q4_1), written by tests/gguf_quant_check.py's writer
/usr/bin/python3 - "$C/gguf" <<'PY'
import sys
sys.path.insert(0, "tests")
import gguf_quant_check as q
for name, t in (("q8_0", q.Q8_0), ("q4_0", q.Q4_0), ("q4_1", q.Q4_1)):
    open(f"{sys.argv[1]}/llama-{name}", "wb").write(q.model_gguf(q.weights_of(1), t))
import numpy as np
base = q.weights_of(2, d=256, h=256)
for name, t in (("q4_k", q.Q4_K), ("q5_k", q.Q5_K), ("q6_k", q.Q6_K)):
    rng = np.random.default_rng(t)
    blobs = {n: q.random_k(x.shape, t, rng)[0] for n, x in base.items() if x.ndim == 2}
    open(f"{sys.argv[1]}/llama-{name}", "wb").write(q.model_gguf(base, t, blobs=blobs))
# a gpt2 (byte-level) embedded tokenizer, with a chat template
import gguf_write, tokenizer_json_write
tj, config = tokenizer_json_write.byte_level()
kvs, n = gguf_write.gpt2_tokenizer_kvs(tj, "llama-bpe")
kvs.append(gguf_write.kv_str("tokenizer.chat_template", "<|im_start|>"))
open(f"{sys.argv[1]}/llama-gpt2-tokenizer", "wb").write(gguf_write.tiny_gguf("llama", kvs, n))
# Llama 3's RoPE scaling as a rope_freqs.weight tensor, as tests/gguf_reference.py writes it
import gguf_reference, hf_reference as hf
cfg = dict(hf.BASE, architectures=["LlamaForCausalLM"], head_dim=6, rope_theta=100.0,
           rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                         "high_freq_factor": 4.0, "original_max_position_embeddings": 16})
open(f"{sys.argv[1]}/llama-rope-freqs", "wb").write(
    gguf_reference.gguf_bytes("llama", cfg, hf.hf_tensors(cfg, 3), gguf_reference.GGUF_F32))
PY

# golden sets: the two parts of a sharded set, as `golden --shard K/2`
# writes them (a model's run is too long for a seed: the manifests are
# written here, in the same fields), and a part paired with itself; each
# seed a 2-byte length, then the two parts' manifest.json
/usr/bin/python3 - "$C/golden" <<'PY'
import json, struct, sys
def part(k):
    files = [{"index": i, "file": f"score-{i:02d}.jsonl", "kind": "score", "what": "scores",
              "command": f"stepwise score --text 'x' --out score-{i:02d}.jsonl", "sha256": f"{i:064x}"}
             for i in range(5) if i % 2 == k - 1]
    m = {"format": "stepwise-golden", "version": 1, "stepwise_version": "0.1",
         "build": {"compiler": "gcc", "cflags": "-O2"},
         "model": {"file": "m.bin", "sha256": "ab" * 32}, "tokenizer": {"file": "t.bin", "sha256": "cd" * 32},
         "options": {"hooks": "default"}, "how_to_compare": "stepwise diff", "files": files,
         "shard": {"index": k, "count": 2, "files_in_set": 5}}
    return json.dumps(m, indent="\t").encode()
a, b = part(1), part(2)
open(f"{sys.argv[1]}/two-parts", "wb").write(struct.pack("<H", len(a)) + a + b)
open(f"{sys.argv[1]}/same-part", "wb").write(struct.pack("<H", len(a)) + a + a)
PY

# Issue 28's reproducers, small: the fuzzers start from what once broke.
/usr/bin/python3 - "$C" <<'PY'
import json, math, struct, sys
sys.path.insert(0, "tests")
import gguf_write, tokenizer_json_write as w
C = sys.argv[1]
# GGUF: 2,000 empty tensors (the duplicate check was quadratic), one name twice
many = b"GGUF" + struct.pack("<IQQ", 3, 2000, 0) + b"".join(
    gguf_write.gguf_string("t%d" % i) + struct.pack("<IQIQ", 1, 0, 0, 0) for i in range(2000))
many += b"\0" * (-len(many) % 32)
open(f"{C}/gguf/many-empty-tensors", "wb").write(many)
open(f"{C}/gguf/a-name-twice", "wb").write(many.replace(b"t1999", b"t1000", 1))
# tokenizer.json: a pathological Split pattern, a Replace chain, far ids,
# many added tokens sharing prefixes, and a second document after the first
tok, config = w.byte_level()
def seed(name, t, text, tail=b""):
    body = json.dumps(t).encode() + tail
    x = text.encode()
    open(f"{C}/tokenizer_json/{name}", "wb").write(
        struct.pack("<H", len(x)) + x + struct.pack("<H", 0) + body)
t = json.loads(json.dumps(tok)); t["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "a*a*b|."
seed("regex-a-star-a-star-b", t, "a" * 300)
t = json.loads(json.dumps(tok))
t["normalizer"] = {"type": "Sequence", "normalizers": [
    {"type": "Replace", "pattern": {"String": "a"}, "content": "aaaaaaaa"}] * 8}
seed("replace-chain", t, "aa")
t = json.loads(json.dumps(tok)); t["model"]["vocab"]["zz"] = (1 << 24) - 1
seed("far-id", t, "a")
t = json.loads(json.dumps(tok)); n = len(t["model"]["vocab"]) + 3
t["added_tokens"] += [{"id": n + i, "content": "x" * (i % 7 + 1) + "%d" % i,
                       "single_word": i % 3 == 0, "lstrip": i % 5 == 0, "rstrip": i % 4 == 0,
                       "special": True} for i in range(200)]
seed("added-prefixes", t, "xx1 xxx2x xxxxxxx199 x0" * 4)
seed("trailing-document", tok, "a", b'{"x": 1}')
# safetensors: an empty tensor at another's start (valid)
for src in ("llamaforcausallm",):
    data = open(f"{C}/safetensors/{src}", "rb").read()
    n_cfg = struct.unpack("<H", data[:2])[0]
    cfg, weights = data[2:2 + n_cfg], data[2 + n_cfg:]
    n = struct.unpack("<Q", weights[:8])[0]
    header = json.loads(weights[8:8 + n])
    start = sorted(v["data_offsets"][0] for k, v in header.items() if k != "__metadata__")[1]
    header["extra.empty"] = {"dtype": "F16", "shape": [0, 4], "data_offsets": [start, start]}
    text = json.dumps(header).encode()
    open(f"{C}/safetensors/empty-tensor-at-a-start", "wb").write(
        data[:2 + n_cfg] + struct.pack("<Q", len(text)) + text + weights[8 + n:])
# golden: parts whose files give their bytes, and a web app's manifest
def part(k, extra):
    files = [dict({"index": i, "file": f"f{i}.jsonl", "sha256": f"{i:064x}"}, **extra)
             for i in range(4) if i % 2 == k - 1]
    return json.dumps({"format": "stepwise-golden", "version": 1, "model": {"file": "m"},
                       "files": files, "shard": {"index": k, "count": 2, "files_in_set": 4}}).encode()
a, b = part(1, {"bytes": 12}), part(2, {"bytes": -1})
open(f"{C}/golden/parts-with-bytes", "wb").write(struct.pack("<H", len(a)) + a + b)
web = b'{"name": "app", "start_url": "/", "icons": []}'
open(f"{C}/golden/web-app-manifest", "wb").write(struct.pack("<H", len(web)) + web + a)
# golden --tensors: each score file's tensors file under its entry
a = part(1, {"tensors": {"file": "t.safetensors", "sha256": "ef" * 32, "bytes": 8}})
b = part(2, {"tensors": {"file": "t.safetensors", "sha256": "ef" * 32}})
open(f"{C}/golden/parts-with-tensors", "wb").write(struct.pack("<H", len(a)) + a + b)
PY
# Issue 45's reproducers: a score file as merge scans it (its tensors event
# naming a file; one that names two), and tensors files whose header
# disagrees with the score file (logits declared [13, 3] for [3, 13], other
# ids, a number in __metadata__, a name holding NUL or a newline)
/usr/bin/python3 - "$C" "$tmp" <<'PY'
import json, struct, sys
C, T = sys.argv[1], sys.argv[2]
run = b'{"event":"run","mode":"score"}\n'
tensors = b'{"event":"tensors","file":"t.safetensors","tensors":[],"first_pos":0,"token_ids":[1]}\n'
for name, first, body in (("score-naming-tensors", 1, run + tensors + b'{"event":"scored"}\n'),
                          ("score-naming-two", 2, run + tensors + tensors),
                          ("score-no-newline", 3, run + tensors[:-1])):
    m = bytes([first]) + b'{"format":"stepwise-golden"}'
    open(f"{C}/golden/{name}", "wb").write(struct.pack("<H", len(m)) + m + body)
sys.path.insert(0, "tests")
from hf_reference import header_editor
jsonl, st = open(f"{T}/t.jsonl", "rb").read(), open(f"{T}/t.safetensors", "rb").read()
edited = header_editor(st)
n = struct.unpack("<Q", st[:8])[0]
rows = json.loads(st[8:8 + n])["logits"]["shape"]
for name, edit in (("logits-shape-swapped", lambda h: h["logits"].__setitem__("shape", rows[::-1])),
                   ("other-ids", lambda h: h["__metadata__"].__setitem__("token_ids", "[1,2]")),
                   ("metadata-number", lambda h: h["__metadata__"].__setitem__("first_pos", 0)),
                   ("name-with-nul", lambda h: h.__setitem__("logits\u0000x", h.pop("logits"))),
                   ("name-with-newline", lambda h: h.__setitem__("logits\nx", h.pop("logits")))):
    body = edited(edit)
    open(f"{C}/tensors/{name}", "wb").write(bytes([1]) + struct.pack("<H", len(jsonl)) + jsonl + body)
    open(f"{C}/tensors/{name}-alone", "wb").write(bytes([0]) + body)
PY
# checkpoints with a NaN and an infinity among the weights
/usr/bin/python3 - "$C/checkpoint" <<'PY'
import struct, sys
d = bytearray(open(sys.argv[1] + "/tied.bin", "rb").read())
d[28 + 4 * 200:32 + 4 * 200] = struct.pack("<f", float("nan"))
open(sys.argv[1] + "/tied-nan.bin", "wb").write(bytes(d))
d[28 + 4 * 40:32 + 4 * 40] = struct.pack("<f", float("-inf"))
open(sys.argv[1] + "/tied-nan-inf.bin", "wb").write(bytes(d))
PY
# step costs (serve-sim): measured on the tiny model, and edited
$S serve-sim --threads 1 --save-costs "$C/step_costs/tiny.json" --num-requests 2 >/dev/null 2>&1
/usr/bin/python3 - "$C/step_costs" <<'PY'
import json, sys
c = json.load(open(sys.argv[1] + "/tiny.json"))
c.pop("points")
json.dump(c, open(sys.argv[1] + "/no-points.json", "w"))
for name, key, value in (("seq-len-1", "seq_len", 1), ("huge-cost", "decode", {"fixed_s": 3600, "per_row_s": 3600, "per_attended_s": 3600}),
                         ("zero-cost", "prefill", {"fixed_s": 0, "per_row_s": 0, "per_attended_s": 0})):
    json.dump({**c, key: value}, open(f"{sys.argv[1]}/{name}.json", "w"))
PY
