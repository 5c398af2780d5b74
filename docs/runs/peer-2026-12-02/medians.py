#!/usr/bin/python3
"""Medians of rounds.txt (beside this file): prefill and decode tokens/s of
each build, and the ratios, as docs/performance.md quotes them."""
import json
import os
import re
import statistics

rows = {"before": ([], []), "after": ([], []), "llama.cpp": ([], [])}
for line in open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "rounds.txt")):
    m = re.search(r"prefill \d+ tokens, ([\d.]+) tokens/s \| decode \d+ tokens, ([\d.]+)", line)
    if m:
        k = "before" if line.startswith("/tmp/base") else "after"
        rows[k][0].append(float(m.group(1)))
        rows[k][1].append(float(m.group(2)))
    elif line.startswith("llama.cpp: "):
        d = json.loads(line.split(": ", 1)[1])
        rows["llama.cpp"][0].append(d["prefill_tok_s"])
        rows["llama.cpp"][1].append(d["decode_tok_s"])
med = {k: (statistics.median(p), statistics.median(d)) for k, (p, d) in rows.items()}
for k, (p, d) in med.items():
    print("%s: %d rounds, prefill %.0f, decode %.1f" % (k, len(rows[k][1]), p, d))
for a, b in (("after", "before"), ("after", "llama.cpp")):
    print("%s / %s: prefill %.2f, decode %.2f" % (a, b, med[a][0] / med[b][0], med[a][1] / med[b][1]))
