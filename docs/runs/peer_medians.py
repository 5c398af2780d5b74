#!/usr/bin/python3
"""Medians of a peer run record: FOLDER/rounds.txt (or the file given) holds one line a program a
round, "LABEL: " then stepwise's summary line or llama_time.mjs's JSON. For
each label, the medians of its prefill and decode tokens/s and their spread
across the rounds; then, for each A/B given, the ratios of A's medians to
B's, as the docs and closing notes quote them.

usage: peer_medians.py FOLDER|FILE "A/B" ...
"""
import json
import os
import re
import statistics
import sys

folder, pairs = sys.argv[1], [p.split("/", 1) for p in sys.argv[2:]]
rows = {}
for line in open(folder if os.path.isfile(folder) else os.path.join(folder, "rounds.txt")):
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
for a, b in pairs:
    print("%s / %s: prefill %.2f, decode %.2f" % (a, b, med[a][0] / med[b][0], med[a][1] / med[b][1]))
