"""Tiny GGUF files written by hand from the GGUF spec (v3, alignment 32):
llama, qwen2 (q/k/v biases) and qwen3 (q/k norms), each with an embedded
llama (sentencepiece-style) tokenizer. Used as fuzz seeds
(tests/fuzz/make_seeds.sh) and as the good file the bad-input matrix breaks
one field at a time (tests/bad_inputs.py); never committed as files.

    /usr/bin/python3 tests/gguf_write.py OUT_DIR   # writes OUT_DIR/{llama,qwen2,qwen3}
"""
import os
import struct
import sys

GGUF_F32, GGUF_F16, GGUF_BF16 = 0, 1, 30
DTYPE_OF_ARCH = {"llama": GGUF_F32, "qwen2": GGUF_F16, "qwen3": GGUF_BF16}
PIECES = ["<unk>", "<s>", "</s>", "\u2581c", "a", "t", "\u2581cat", "s", "\u2581s", "<0x41>"]


def gguf_string(x):
    b = x.encode()
    return struct.pack("<Q", len(b)) + b


def kv_u32(k, v):
    return gguf_string(k) + struct.pack("<II", 4, v)


def kv_f32(k, v):
    return gguf_string(k) + struct.pack("<If", 6, v)


def kv_str(k, v):
    return gguf_string(k) + struct.pack("<I", 8) + gguf_string(v)


def kv_array(k, item_type, items, fmt):
    if item_type == 8:
        body = b"".join(gguf_string(i) for i in items)
    else:
        body = b"".join(struct.pack(fmt, i) for i in items)
    return gguf_string(k) + struct.pack("<IIQ", 9, item_type, len(items)) + body


def llama_tokenizer_kvs():
    """The embedded llama (sentencepiece-style) tokenizer of PIECES."""
    vocab = len(PIECES)
    return [kv_str("tokenizer.ggml.model", "llama"),
            kv_array("tokenizer.ggml.tokens", 8, PIECES, None),
            kv_array("tokenizer.ggml.scores", 6, [0.0] * 3 + [-1.0 * i for i in range(3, vocab)], "<f"),
            kv_u32("tokenizer.ggml.bos_token_id", 1), kv_u32("tokenizer.ggml.eos_token_id", 2)]


def gpt2_tokenizer_kvs(tokenizer_json, pre):
    """A tokenizer.json's byte-level vocabulary as llama.cpp's converter
    embeds it: tokens by id, token types (1 normal, 3 control, 4
    user-defined), merges as "a b", and the pre-tokenizer's name.
    Returns (kvs, number of tokens)."""
    model = tokenizer_json["model"]
    n = 1 + max(list(model["vocab"].values()) + [a["id"] for a in tokenizer_json["added_tokens"]])
    tokens, types = ["[PAD%d]" % i for i in range(n)], [1] * n
    for t, i in model["vocab"].items():
        tokens[i] = t
    for a in tokenizer_json["added_tokens"]:
        tokens[a["id"]], types[a["id"]] = a["content"], 3 if a["special"] else 4
    merges = [m if isinstance(m, str) else " ".join(m) for m in model["merges"]]
    return [kv_str("tokenizer.ggml.model", "gpt2"), kv_str("tokenizer.ggml.pre", pre),
            kv_array("tokenizer.ggml.tokens", 8, tokens, None),
            kv_array("tokenizer.ggml.token_type", 5, types, "<i"),
            kv_array("tokenizer.ggml.merges", 8, merges, None)], n


def tiny_gguf(arch, tokenizer_kvs=None, vocab=None):
    """The bytes of a one-layer model: dim 4, hidden 4, 2 heads, 1 KV head;
    its vocabulary PIECES (a llama tokenizer) unless tokenizer_kvs and
    vocab say otherwise."""
    dtype = DTYPE_OF_ARCH[arch]
    d, h, nh, nkv, n_layers = 4, 4, 2, 1, 1
    vocab = vocab or len(PIECES)
    hd, kvd = d // nh, nkv * (d // nh)
    tensors = [("token_embd.weight", [d, vocab]), ("output_norm.weight", [d])]
    for n, shape in (("attn_norm.weight", [d]), ("attn_q.weight", [d, d]), ("attn_k.weight", [d, kvd]),
                     ("attn_v.weight", [d, kvd]), ("attn_output.weight", [d, d]),
                     ("ffn_norm.weight", [d]), ("ffn_gate.weight", [d, h]),
                     ("ffn_down.weight", [h, d]), ("ffn_up.weight", [d, h])):
        tensors.append(("blk.0." + n, shape))
    if arch == "qwen2":
        tensors += [("blk.0.attn_q.bias", [d]), ("blk.0.attn_k.bias", [kvd]), ("blk.0.attn_v.bias", [kvd])]
    if arch == "qwen3":
        tensors += [("blk.0.attn_q_norm.weight", [hd]), ("blk.0.attn_k_norm.weight", [hd])]
    kvs = [kv_str("general.architecture", arch), kv_u32(arch + ".context_length", 8),
           kv_u32(arch + ".embedding_length", d), kv_u32(arch + ".feed_forward_length", h),
           kv_u32(arch + ".block_count", n_layers), kv_u32(arch + ".attention.head_count", nh),
           kv_u32(arch + ".attention.head_count_kv", nkv), kv_f32(arch + ".rope.freq_base", 10000.0),
           kv_f32(arch + ".attention.layer_norm_rms_epsilon", 1e-5)]
    kvs += tokenizer_kvs if tokenizer_kvs is not None else llama_tokenizer_kvs()
    size = 4 if dtype == GGUF_F32 else 2
    infos, data, off = b"", b"", 0
    for name, shape in tensors:
        n = 1
        for x in shape:
            n *= x
        infos += gguf_string(name) + struct.pack("<I", len(shape))
        infos += b"".join(struct.pack("<Q", x) for x in shape) + struct.pack("<IQ", dtype, off)
        if size == 4:
            blob = b"".join(struct.pack("<f", 0.25 * ((i % 7) - 3)) for i in range(n))
        else:  # 1.0 in F16 (0x3C00) or BF16 (0x3F80)
            blob = struct.pack("<H", 0x3C00 if dtype == GGUF_F16 else 0x3F80) * n
        blob += b"\0" * (-len(blob) % 32)
        data += blob
        off += len(blob)
    head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs)) + b"".join(kvs) + infos
    head += b"\0" * (-len(head) % 32)
    return head + data


if __name__ == "__main__":
    for arch in DTYPE_OF_ARCH:
        with open(os.path.join(sys.argv[1], arch), "wb") as f:
            f.write(tiny_gguf(arch))
