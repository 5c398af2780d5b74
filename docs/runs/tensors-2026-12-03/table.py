#!/usr/bin/python3
"""The table docs/oracle.md quotes, from output.txt (run.sh's lines): for each
run the seconds the score took after loading (measured in the run) and the
JSON Lines file's bytes, the JSON form beside the tensors form."""
import os
import re

rows, last = {}, None
for line in open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "output.txt")):
    m = re.match(r"(.+), (json|tensors):", line)
    if m:
        last = (m.group(1), m.group(2))
    m = re.search(r"JSON Lines file (\d+) bytes; measured in the run: ([\d.]+) s", line)
    if m and last:
        rows.setdefault(last[0], {})[last[1]] = (int(m.group(1)), float(m.group(2)))
    m = re.search(r"tensors file (\d+) bytes; 4 x 64 x 128256 = (\d+)", line)
    if m:
        tensors, floor = int(m.group(1)), int(m.group(2))
print("| run | JSON form: file, seconds | tensors form: JSON Lines file, seconds | JSON / tensors time |")
print("|---|---|---|---|")
for run, forms in rows.items():
    (jb, js), (tb, ts) = forms["json"], forms["tensors"]
    print("| %s | %s bytes, %.2f s | %s bytes, %.2f s | %.1f |" % (run, f"{jb:,}", js, f"{tb:,}", ts, js / ts))
print("tensors file on the 1B shape: %s bytes, %.4f of 4 x positions x vocab" % (f"{tensors:,}", tensors / floor))
