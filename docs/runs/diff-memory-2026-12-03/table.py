#!/usr/bin/python3
"""The table docs/oracle.md quotes, from output.txt (run.sh's lines): the
peak memory of `stepwise diff` before and after rows were read one at a
time, as the compared files grow."""
import os
import re

here = os.path.dirname(os.path.abspath(__file__))
print("| diff of two files | bytes each | before: peak | after: peak |")
print("|---|---|---|---|")
for line in open(os.path.join(here, "output.txt")):
    m = re.match(r"random (\w+), (\d+) positions: before (\d+) KiB, after (\d+) KiB, files (\d+) bytes", line)
    if m:
        form, P, before, after, size = m.groups()
        print(f"| .{form}, {int(P):,} positions x 32,000 | {int(size):,} | {int(before):,} KiB | {int(after):,} KiB |")
    m = re.match(r"15M score with --tensors, (\d+) positions: diff before (\d+) KiB, after (\d+) KiB; "
                 r"trace show before (\d+) KiB, after (\d+) KiB; tensors file (\d+) bytes", line)
    if m:
        P, before, after, show_before, show_after, size = (int(x) for x in m.groups())
        print(f"| a 15M score's JSON Lines + tensors against itself, {P} positions | {size:,} | "
              f"{before:,} KiB | {after:,} KiB |")
        print(f"| (trace show of its last position) | {size:,} | {show_before:,} KiB | {show_after:,} KiB |")
    if "are the same bytes" in line:
        print("The two builds' reports: the same bytes.")
