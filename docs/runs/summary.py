#!/usr/bin/python3
"""The summary at the top of docs/performance.md, from the latest committed
records beside llama.cpp at each size (nothing is run):

  15M  2026-12-06-peer-15m-spread.txt  f32 and F16 GGUF, 1 thread, 3 rounds
  1B   2026-12-06-bench-1b-spread.json (make bench-1b) F16, BF16, Q8_0, 1 and
       2 threads, prompts of 64 and 512, 3 rounds
  8B   2026-12-06-8b-check.txt, its warm rounds: F16, 2 threads, 2 rounds

Each cell is the median over the record's rounds (the mean of two, for the
8B check); a ratio is stepwise's median over llama.cpp's. Two shares of a
ceiling, each at most about 1:

- decode / read ceiling: a decode's tokens a second times the seconds the
  same process took, at its fastest, to merely re-read one step's bytes
  (tests/bench/forward.c's decode_read_seconds), the median over processes;
- prefill / multiply ceiling: the prefill's multiply-adds a second (the
  record's prefill_macs over its prompt, times the prefill's tokens a
  second) over the threads times one core's rate of separate vector
  multiplies, the median of the gcc rows of 2026-12-05-ports.txt: under
  the no-fusion rule a multiply-add is a multiply and an add, so it cannot
  go faster than the multiplies alone. Not for Q8_0, whose int8 x int8
  prefill runs on integer instructions (vpdpbusd), nor for 15M, whose
  record keeps no multiply-add count.

Prints the summary table (the 1B rows with the 512-token prompt), then
one line of the ranges over every 1B row and the ports' rate.

    /usr/bin/python3 docs/runs/summary.py
"""
import json
import os
import re
import statistics

RUNS = os.path.dirname(os.path.abspath(__file__))


def read(name):
    return open(os.path.join(RUNS, name), encoding="utf-8").read()


def ports_mul():
    """One core's separate-multiply rate, G lane operations a second."""
    gcc = re.findall(r"^gcc +(\{.*\})$", read("2026-12-05-ports.txt"), re.M)
    return statistics.median(json.loads(j)["mul"] for j in gcc)


def row(model, file, threads, prompt, ours_p, theirs_p, ours_d, theirs_d, read_share, mul_share):
    share = "%.2f" % mul_share if mul_share is not None else "-"
    read_cell = "%.2f" % read_share if read_share is not None else "-"
    def rate(x):  # as the records print them
        return "%.1f" % x if x >= 100 else "%.2f" % x
    return "| %s | %s | %d | %d | %.1f | %.1f | %.2f | %s | %s | %.2f | %s | %s |" % (
        model, file, threads, prompt, ours_p, theirs_p, ours_p / theirs_p, rate(ours_d), rate(theirs_d),
        ours_d / theirs_d, read_cell, share)


def rows_15m():
    by_file = {}
    for f, _, op, tp, _, od, td, _ in re.findall(r"^\| (\w+) \| (\d) \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \| "
                                                 r"([\d.]+) \| ([\d.]+) \| ([\d.]+) \|$",
                                                 read("2026-12-06-peer-15m-spread.txt"), re.M):
        by_file.setdefault(f, []).append([float(x) for x in (op, tp, od, td)])
    for f, rounds in by_file.items():
        med = [statistics.median(r[k] for r in rounds) for k in range(4)]
        yield row("15M", f, 1, 64, med[0], med[1], med[2], med[3], None, None)


def cases_1b(mul):
    for c in json.loads(read("2026-12-06-bench-1b-spread.json"))["cases"]:
        ours, theirs = c["ours"], c["theirs"]
        op = statistics.median(r["prefill_tok_s"] for r in ours)
        od = statistics.median(r["decode_tok_s"] for r in ours)
        tp = statistics.median(r["prefill_tok_s"] for r in theirs)
        td = statistics.median(r["decode_tok_s"] for r in theirs)
        read_share = statistics.median(r["decode_tok_s"] * r["decode_read_seconds"] for r in ours)
        macs = ours[0]["prefill_macs"] / ours[0]["prefill_tokens"]
        mul_share = None if ours[0]["int8"] else op * macs / (c["threads"] * mul * 1e9)
        yield c, (op, tp, od, td, read_share, mul_share)


def row_8b(mul):
    warm = read("2026-12-06-8b-check.txt").split("# then, warm", 1)[1]
    ours = [json.loads(j) for j in re.findall(r"^(\{\"model\".*\})$", warm, re.M)]
    theirs = [json.loads(j) for j in re.findall(r"^(\{\"llama_cpp\".*\})$", warm, re.M)]
    threads = ours[0]["threads"]
    op = statistics.median(r["prefill_tok_s"] for r in ours)
    od = statistics.median(r["decode_tok_s"] for r in ours)
    read_share = statistics.median(r["decode_tok_s"] * r["decode_read_seconds"] for r in ours)
    macs = ours[0]["prefill_macs"] / ours[0]["prefill_tokens"]
    return row("8B", "F16", threads, ours[0]["prefill_tokens"], op,
               statistics.median(r["prefill_tok_s"] for r in theirs), od,
               statistics.median(r["decode_tok_s"] for r in theirs), read_share, op * macs / (threads * mul * 1e9))


def main():
    mul = ports_mul()
    print("| model | file | threads | prompt | prefill tok/s, stepwise | llama.cpp | ratio "
          "| decode tok/s, stepwise | llama.cpp | ratio | decode / read ceiling | prefill / multiply ceiling |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for line in rows_15m():
        print(line)
    cases = list(cases_1b(mul))
    for c, v in cases:
        if c["prompt"] == 512:
            print(row("1B", c["file"], c["threads"], c["prompt"], *v))
    print(row_8b(mul))

    def span(values):
        return "%.2f to %.2f" % (min(values), max(values))
    half = [v for c, v in cases if c["file"] != "Q8_0"]
    q8 = [v for c, v in cases if c["file"] == "Q8_0"]
    print("1B, all %d rows: prefill ratio %s, decode ratio %s; half decodes / read ceiling %s, Q8_0 %s; "
          "half prefills / multiply ceiling %s; one core's multiplies %.1f G/s"
          % (len(cases), span([v[0] / v[1] for _, v in cases]), span([v[2] / v[3] for _, v in cases]),
             span([v[4] for v in half]), span([v[4] for v in q8]), span([v[5] for v in half]), mul))


if __name__ == "__main__":
    main()
