"""A deepseek2 GGUF in llama.cpp's legacy form (attn_kv_b, as `stepwise
convert` writes it) rewritten as llama.cpp's converter writes DeepSeek
files since its MLA support (convert_hf_to_gguf.py's DeepseekV2Model): each
layer's kv_b_proj [H x (nope + v), rank] split per head into attn_k_b, the
key rows transposed, [H, rank, nope] (GGUF ne [nope, rank, H]), and
attn_v_b [H, v, rank] (ne [rank, v, H]); attention.key_length and
value_length then the latent's (rank + rope, rank), key_length_mla and
value_length_mla a head's, and head_count_kv 1 (llama.cpp attends MQA-wise
over the latents). Written from the GGUF spec; every other key and
tensor is copied as it is. llama.cpp runs the result (llama_cpp_check.py),
so it, not this file, says whether the layout is right.

    /usr/bin/python3 tests/gguf_split_mla.py IN.gguf OUT.gguf

split()'s other arguments write the hostile files tests/bad_inputs.py needs:
a disagreeing attn_kv_b (the legacy one negated) kept beside the split
form (keep_kv_b), no split at
all (mla False), and entries or tensors added (extra_kvs: whole entries'
bytes; extra_tensors: (name, ne, ggml type, bytes)).
"""
import os
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gguf_read import Reader  # noqa: E402
from gguf_write import gguf_string  # noqa: E402

NUMPY = {0: np.float32, 1: np.float16}  # the element types this rewrites


def u32_entry(key, value):
    return gguf_string(key) + struct.pack("<II", 4, value)


def split(src, dst, mla=True, keep_kv_b=False, extra_kvs=(), extra_tensors=(), drop=()):
    data = open(src, "rb").read()
    r = Reader(data)
    assert data[:4] == b"GGUF" and struct.unpack_from("<I", data, 4)[0] == 3, "a GGUF v3 file"
    r.at = 8
    n_tensors, n_kv = r.take("<Q"), r.take("<Q")
    entries, values = [], {}
    for _ in range(n_kv):  # each entry's bytes as they are, and the scalars' values
        begin = r.at
        key = r.string()
        t = r.take("<I")
        if t in (4, 5, 10):  # the whole numbers this reads
            values[key] = struct.unpack_from({4: "<I", 5: "<i", 10: "<Q"}[t], data, r.at)[0]
        r.value(t)  # read past it
        entries.append((key, data[begin:r.at]))
    align = values.get("general.alignment", 32)
    infos = []
    for _ in range(n_tensors):
        name = r.string()
        dims = [r.take("<Q") for _ in range(r.take("<I"))]
        infos.append((name, dims, r.take("<I"), r.take("<Q")))
    start = (r.at + align - 1) // align * align
    if mla:  # any GGUF otherwise (a deepseek2 one here)
        H = values["deepseek2.attention.head_count"]
        rank = values["deepseek2.attention.kv_lora_rank"]
        rope = values["deepseek2.rope.dimension_count"]
        head, v = values["deepseek2.attention.key_length"], values["deepseek2.attention.value_length"]
        nope = head - rope
    out_tensors = []  # (name, ne, type, bytes)
    for name, dims, qtype, offset in infos:
        count = int(np.prod(dims))
        if not mla or not name.endswith("attn_kv_b.weight"):
            size = {0: 4, 1: 2, 30: 2}.get(qtype)
            size = count * size if size else count // 32 * 34  # Q8_0's blocks
            out_tensors.append((name, dims, qtype, data[start + offset:start + offset + size]))
            continue
        kv_b = np.frombuffer(data, NUMPY[qtype], count, start + offset).reshape(H, nope + v, rank)
        if keep_kv_b:
            out_tensors.append((name, dims, qtype, (-kv_b).tobytes()))
        k_b = np.ascontiguousarray(kv_b[:, :nope, :].transpose(0, 2, 1))  # [H, rank, nope]
        v_b = np.ascontiguousarray(kv_b[:, nope:, :])  # [H, v, rank]
        layer = name[:-len("attn_kv_b.weight")]
        for part, ne, raw in (("attn_k_b.weight", [nope, rank, H], k_b), ("attn_v_b.weight", [rank, v, H], v_b)):
            if part not in drop:  # drop: a split form with one half missing
                out_tensors.append((layer + part, ne, qtype, raw.tobytes()))
    # llama.cpp attends MLA as MQA over the latents: one KV head (the converter sets
    # num_key_value_heads to 1)
    new = {"deepseek2.attention.head_count_kv": 1,
           "deepseek2.attention.key_length": rank + rope, "deepseek2.attention.value_length": rank,
           "deepseek2.attention.key_length_mla": head, "deepseek2.attention.value_length_mla": v} if mla else {}
    kv = [u32_entry(k, new[k]) if k in new else raw for k, raw in entries]
    kv += [u32_entry(k, new[k]) for k in ("deepseek2.attention.key_length_mla",
                                           "deepseek2.attention.value_length_mla") if mla and k not in values]
    kv += list(extra_kvs)
    out_tensors += list(extra_tensors)
    body, info, at = b"", b"", 0
    for name, ne, qtype, raw in out_tensors:
        info += gguf_string(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", d) for d in ne)
        info += struct.pack("<IQ", qtype, at)
        pad = (len(raw) + align - 1) // align * align - len(raw)
        body += raw + b"\0" * pad
        at += len(raw) + pad
    head_bytes = b"GGUF" + struct.pack("<IQQ", 3, len(out_tensors), len(kv)) + b"".join(kv) + info
    head_bytes += b"\0" * ((len(head_bytes) + align - 1) // align * align - len(head_bytes))
    with open(dst, "wb") as f:
        f.write(head_bytes + body)


if __name__ == "__main__":
    split(sys.argv[1], sys.argv[2])
