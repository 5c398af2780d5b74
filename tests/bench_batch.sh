#!/usr/bin/env bash
# make bench-batch: throughput against latency. Requests all arriving at
# once, served with --max-batch 1, 2, 4, 8 and 16 on one core, each setting
# run 5 times and each column reported as its median (this machine's timings
# wander by a third from run to run). Two models: the 15M-parameter shape
# (16 requests of 64 new tokens) and stories260K (64 requests of 128, for
# runs long enough to time). Also prints one core's read bandwidth
# (tests/bench/bandwidth.c), and 32 requests sharing a system prompt with and
# without --prefix-cache. Tables to stdout, the runs as JSON in
# build/bench/batch.json. A benchmark, not a test: nothing is asserted.
set -euo pipefail
bin=build/stepwise
models=${STEPWISE_MODELS:-../shared/models}
m15=build/m15.bin
mkdir -p build/bench
make --no-print-directory build/bench/bandwidth
build/bench/bandwidth
[ -f "$m15" ] || "$bin" make-model --dim 288 --hidden 768 --layers 6 --heads 6 --vocab 32000 \
    --seq-len 256 --seed 42 --out "$m15" 2>/dev/null
prompts=("Once upon a time" "One day, a little girl" "The cat sat on the mat" "Tom and his dog"
         "Lily saw a big red ball" "The sun was hot" "In a small town" "Ben had a toy car")
requests() { # N TOKENS FILE
    : > "$3"
    for i in $(seq 0 $(($1 - 1))); do
        printf '{"id":"r%02d","prompt":"%s","max_tokens":%d}\n' "$i" "${prompts[$((i % 8))]}" "$2" >> "$3"
    done
}
runs=()
table() { # NAME MODEL TOKENIZER REQUESTS
    echo
    echo "$1: $(wc -l < "$4") requests, medians of 5 runs"
    echo "| max batch | aggregate tokens/s | per-request tokens/s (queue included) | mean TTFT (ms) | mean ITL (ms) | seconds |"
    echo "|---|---|---|---|---|---|"
    for b in 1 2 4 8 16; do
        files=()
        for r in 1 2 3 4 5; do
            f="build/bench/batch-$1-$b-$r.json"
            "$bin" batch --model "$2" --tokenizer "$3" --requests "$4" --max-batch "$b" --threads 1 --quiet \
                --metrics-json "$f" > /dev/null
            files+=("$f") runs+=("$f")
        done
        /usr/bin/python3 - "${files[@]}" <<'PY'
import json, statistics, sys
ms = [json.load(open(p)) for p in sys.argv[1:]]
med = lambda f: statistics.median(f(m) for m in ms)
per = lambda m: sum(r["tokens_per_second"] for r in m["per_request"]) / len(m["per_request"])
print("| %d | %.0f | %.1f | %.1f | %.2f | %.2f |" % (ms[0]["max_batch"],
      med(lambda m: m["throughput_tokens_per_second"]), med(per), med(lambda m: m["mean_ttft_ms"]),
      med(lambda m: m["mean_itl_ms"]), med(lambda m: m["seconds"])))
PY
    done
}
requests 16 64 build/bench/batch-requests.jsonl
table 15M "$m15" "$models/tokenizer.bin" build/bench/batch-requests.jsonl
requests 64 128 build/bench/batch-requests-stories.jsonl
table stories260K "$models/stories260K.bin" "$models/tok512.bin" build/bench/batch-requests-stories.jsonl
# A shared prefix: 32 requests whose prompts begin with the same ~200-token
# system prompt (tok512), served with and without --prefix-cache on stories260K.
/usr/bin/python3 tests/prefix_requests.py > build/bench/prefix-requests.jsonl
echo
echo "stories260K, 32 requests sharing a system prompt, max batch 8, medians of 5 runs"
echo "| prefix cache | positions reused | prefill multiply-adds saved | mean TTFT (ms) | aggregate tokens/s | seconds |"
echo "|---|---|---|---|---|---|"
for mode in off on; do
    files=()
    for r in 1 2 3 4 5; do
        f="build/bench/prefix-$mode-$r.json"
        extra=(); [ "$mode" = on ] && extra=(--prefix-cache)
        "$bin" batch --model "$models/stories260K.bin" --tokenizer "$models/tok512.bin" \
            --requests build/bench/prefix-requests.jsonl --max-batch 8 --threads 1 --quiet \
            "${extra[@]}" --metrics-json "$f" > /dev/null
        files+=("$f") runs+=("$f")
    done
    /usr/bin/python3 - "$mode" "${files[@]}" <<'PY'
import json, statistics, sys
ms = [json.load(open(p)) for p in sys.argv[2:]]
med = lambda f: statistics.median(f(m) for m in ms)
print("| %s | %d | %.3g | %.2f | %.0f | %.3f |" % (sys.argv[1], ms[0]["prefix_tokens_reused"],
      ms[0]["prefill_macs_saved"], med(lambda m: m["mean_ttft_ms"]),
      med(lambda m: m["throughput_tokens_per_second"]), med(lambda m: m["seconds"])))
PY
done
/usr/bin/python3 - "${runs[@]}" > build/bench/batch.json <<'PY'
import json, sys
print(json.dumps([dict(json.load(open(p)), file=p) for p in sys.argv[1:]], indent=1))
PY
