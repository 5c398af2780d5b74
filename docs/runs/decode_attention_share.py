#!/usr/bin/python3
"""From docs/runs/2026-12-06-decode-attention-profile.txt: the decode's
attention samples (scores, weights, values) against its matrix kernel's,
before (A) and after (C). The decode's own samples are the D = 128 run's
less the D = 1 run's (the prefills alone), scaled by how the prefill-only
head_scores_kt came out in the two runs (the sampler's count of the same
prefill moves with the machine). Prints, for A and C: the attention's
samples, the matrix kernel's, and their ratio.

    /usr/bin/python3 docs/runs/decode_attention_share.py
"""
import re

text = open("docs/runs/2026-12-06-decode-attention-profile.txt").read()
runs = {name: {f.split(".")[0]: int(n) for n, f in re.findall(r"^ +[0-9.]+% +(\d+) +\[.\] (\S+)", body, re.M)}
        for name, body in re.findall(r"== (\w+ D=\d+)\n((?:(?!==).*\n?)*)", text)}
ATTENTION = ("head_scores4", "head_values", "group_", "softmax", "exp_chunk")
for build in "AC":
    one, many = runs[build + " D=1"], runs[build + " D=128"]
    k = many["head_scores_kt"] / one["head_scores_kt"]
    decode = {f: many[f] - k * one.get(f, 0) for f in many}
    attention = sum(x for f, x in decode.items() if f.startswith(ATTENTION))
    matrix = decode["four_avx512_f16"]
    print(build, round(attention), round(matrix), "%.2f" % (attention / matrix))
