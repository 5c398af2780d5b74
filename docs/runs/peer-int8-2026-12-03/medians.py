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
    v = rows[k]
    print("%-18s prefill %.1f decode %.1f tokens/s (%d rounds; prefill from %.0f to %.0f, decode from %.1f to %.1f)"
          % (k, p, d, len(v), min(x for x, _ in v), max(x for x, _ in v), min(y for _, y in v), max(y for _, y in v)))
for a, b in (("int8 after", "int8 before"), ("int8 after", "llama.cpp q8_0")):
    print("%s / %s: prefill %.2f, decode %.2f" % (a, b, med[a][0] / med[b][0], med[a][1] / med[b][1]))
