#!/usr/bin/python3
"""Medians of rounds.txt (round.sh's lines) and the ratios docs and the closing note quote."""
import json
import os
import re
import statistics

rows = {}
for line in open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "rounds.txt")):
    label, _, rest = line.partition(": ")
    if rest.startswith("{"):
        r = json.loads(rest)
        p, d = r["prefill_tok_s"], r["decode_tok_s"]
    else:
        m = re.search(r"prefill \d+ tokens, ([\d.]+) tokens/s \| decode \d+ tokens, ([\d.]+)", rest)
        p, d = float(m.group(1)), float(m.group(2))
    rows.setdefault(label, []).append((p, d))
med = {k: (statistics.median(p for p, _ in v), statistics.median(d for _, d in v)) for k, v in rows.items()}
for k, (p, d) in med.items():
    print("%-14s prefill %.1f decode %.1f tokens/s (%d rounds)" % (k, p, d, len(rows[k])))
for a, b in (("f32 after", "f32 before"), ("f32 after", "llama.cpp f32"), ("f16 stored", "f16 as f32"),
             ("f16 stored", "llama.cpp f16")):
    print("%s / %s: prefill %.2f, decode %.2f" % (a, b, med[a][0] / med[b][0], med[a][1] / med[b][1]))
