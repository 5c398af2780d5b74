"""A GGUF reader written from the spec (v2 and v3), independent of
stepwise's C reader, for the tests that check what `stepwise convert`
writes: metadata as Python values, tensors as (type, shape fastest first,
raw bytes).

    meta, tensors = read_gguf(path)
"""
import struct

SCALAR = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q",
          11: "<q", 12: "<d"}
# ggml type: (values per block, bytes per block)
BLOCKS = {0: (1, 4), 1: (1, 2), 8: (32, 34), 30: (1, 2)}


class Reader:
    def __init__(self, data):
        self.data, self.at = data, 0

    def take(self, fmt):
        v = struct.unpack_from(fmt, self.data, self.at)[0]
        self.at += struct.calcsize(fmt)
        return v

    def string(self):
        n = self.take("<Q")
        s = self.data[self.at:self.at + n].decode("utf-8")
        self.at += n
        return s

    def value(self, t):
        if t == 8:
            return self.string()
        if t == 9:
            item, n = self.take("<I"), self.take("<Q")
            return [self.value(item) for _ in range(n)]
        return self.take(SCALAR[t])


def read_gguf(path):
    data = open(path, "rb").read()
    r = Reader(data)
    assert data[:4] == b"GGUF", "not a GGUF file"
    r.at = 4
    version = r.take("<I")
    assert version in (2, 3), version
    n_tensors, n_kv = r.take("<Q"), r.take("<Q")
    meta = {}
    for _ in range(n_kv):
        key = r.string()
        meta[key] = r.value(r.take("<I"))
    infos = []
    for _ in range(n_tensors):
        name = r.string()
        dims = [r.take("<Q") for _ in range(r.take("<I"))]
        infos.append((name, dims, r.take("<I"), r.take("<Q")))
    align = meta.get("general.alignment", 32)
    start = (r.at + align - 1) // align * align
    tensors = {}
    for name, dims, qtype, offset in infos:
        per, size = BLOCKS[qtype]
        count = 1
        for d in dims:
            count *= d
        begin = start + offset
        tensors[name] = (qtype, dims, data[begin:begin + count // per * size])
    return meta, tensors
