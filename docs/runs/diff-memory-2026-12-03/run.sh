#!/bin/bash
# Peak memory of `stepwise diff` as the compared files grow, before this
# change (BEFORE: a build of b482741, which read every row into memory) and
# after it (AFTER: rows stay in the file, read with pread one at a time):
# random logits of 32,000 ids at 64, 256 and 1,024 positions, written by
# numpy as safetensors, .npy and .f32 (the candidate is the reference plus
# 1e-6), and a real score run of the 15M model (build/m15.bin) with
# --tensors at 64 and 256 positions, diffed against itself (its JSON Lines
# file and its tensors), and trace show of that run's last position.
# Peaks by GNU time (%M, KiB); nothing else running.
BEFORE=/tmp/prevbuild/build/stepwise; AFTER=/work/main/build/stepwise
T=/tmp/diff-memory; rm -rf $T; mkdir -p $T; cd $T
/usr/bin/python3 - <<'PY'
import json, struct, numpy as np
rng = np.random.default_rng(0)
for P in (64, 256, 1024):
    x = rng.standard_normal((P, 32000)).astype(np.float32)
    for side, rows in (("ref", x), ("cand", x + np.float32(1e-6))):
        h = {"logits": {"dtype": "F32", "shape": [P, 32000], "data_offsets": [0, rows.nbytes]}}
        t = json.dumps(h).encode(); t += b" " * (-len(t) % 8)
        open(f"{side}{P}.safetensors", "wb").write(struct.pack("<Q", len(t)) + t + rows.tobytes())
        np.save(f"{side}{P}.npy", rows)
        rows.tofile(f"{side}{P}.f32")
        json.dump({"format": "stepwise-logits-f32", "vocab_size": 32000, "positions": P},
                  open(f"{side}{P}.f32.json", "w"))
PY
peak() { /usr/bin/time -f %M "$@" 2>&1 >/dev/null | tail -n 1; }
for P in 64 256 1024; do
  for form in safetensors npy f32; do
    echo "random $form, $P positions: before $(peak $BEFORE diff ref$P.$form cand$P.$form) KiB, after $(peak $AFTER diff ref$P.$form cand$P.$form) KiB, files $(stat -c %s ref$P.$form) bytes each"
  done
done
ids() { python3 -c "print(','.join(str(1 + 1999 * i % $1) for i in range($2)))"; }
for P in 64 256; do
  $AFTER score --model /work/main/build/m15.bin --tokens $(ids 32000 $P) --top-n 0 --quiet --no-hash \
    --hooks default --out s$P.jsonl --tensors s$P.safetensors
  echo "15M score with --tensors, $P positions: diff before $(peak $BEFORE diff s$P.jsonl s$P.jsonl) KiB, after $(peak $AFTER diff s$P.jsonl s$P.jsonl) KiB; trace show before $(peak $BEFORE trace show s$P.jsonl --pos $((P - 1))) KiB, after $(peak $AFTER trace show s$P.jsonl --pos $((P - 1))) KiB; tensors file $(stat -c %s s$P.safetensors) bytes"
done
for P in 1024; do
  cmp <($BEFORE diff ref$P.safetensors cand$P.safetensors) <($AFTER diff ref$P.safetensors cand$P.safetensors) && echo "the reports of the two builds on $P positions are the same bytes"
done
