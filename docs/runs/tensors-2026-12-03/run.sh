#!/bin/bash
# score --tensors against the JSON form, one run each, nothing else running:
# 64 positions on the 1B BF16 folder (make-model --preset llama-3.2-1b --dtype bf16, vocabulary
# 128,256) on 2 threads; and 256 positions on the 15M shape (build/m15.bin, vocabulary 32,000)
# on 1 and 2 threads, where the JSON form's writing set the pace. --no-hash: the run header's SHA-256 of
# the model file is left out (on the 15M shape it costs as much as the pass).
B=/work/main/build/stepwise; M=/work/shared/models
ids() { python3 -c "print(','.join(str(1 + 1999 * i % $1) for i in range($2)))"; }
one() { # label, then score's arguments
  label=$1; shift
  /usr/bin/time -f "  wall %e s, peak %M KiB" $B score "$@" --top-n 0 --quiet --no-hash 2>&1 | sed "s|^|$label|"
}
cd /tmp
F=/work/main/build/bench/llama-3.2-1b-bf16
for form in json tensors; do
  extra=(); [ $form = tensors ] && extra=(--tensors /tmp/r1b.safetensors)
  one "1B, 64 positions, 2 threads, $form:" --model $F --tokens $(ids 128000 64) --threads 2 --out /tmp/r1b-$form.jsonl "${extra[@]}"
  echo "  JSON Lines file $(stat -c %s /tmp/r1b-$form.jsonl) bytes; measured in the run: $(grep -o '"total_seconds":[0-9.]*' /tmp/r1b-$form.jsonl | cut -d: -f2) s"
done
echo "  tensors file $(stat -c %s /tmp/r1b.safetensors) bytes; 4 x 64 x 128256 = $((4 * 64 * 128256))"
echo "  diff of the two forms: $($B diff /tmp/r1b-json.jsonl /tmp/r1b-tensors.jsonl | grep -E 'max \|dlogit\|' | sed 's/  */ /g')"
for threads in 1 2; do
  for form in json tensors; do
    extra=(); [ $form = tensors ] && extra=(--tensors /tmp/r15.safetensors)
    one "15M, 256 positions, $threads thread(s), $form:" --model /work/main/build/m15.bin --tokens $(ids 32000 256) --threads $threads --out /tmp/r15-$form.jsonl "${extra[@]}"
    echo "  JSON Lines file $(stat -c %s /tmp/r15-$form.jsonl) bytes; measured in the run: $(grep -o '"total_seconds":[0-9.]*' /tmp/r15-$form.jsonl | cut -d: -f2) s"
  done
done
