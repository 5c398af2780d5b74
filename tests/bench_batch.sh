#!/usr/bin/env bash
# make bench-batch: throughput against latency on the 15M-parameter shape.
# 16 requests of 64 new tokens each, all arriving at once, served with
# --max-batch 1, 2, 4, 8 and 16 on one core. Prints a table and writes it as
# JSON to build/bench/batch.json. A benchmark, not a test: nothing is asserted.
set -euo pipefail
bin=build/stepwise
models=${STEPWISE_MODELS:-../shared/models}
m15=build/m15.bin
mkdir -p build/bench
[ -f "$m15" ] || "$bin" make-model --dim 288 --hidden 768 --layers 6 --heads 6 --vocab 32000 \
    --seq-len 256 --seed 42 --out "$m15" 2>/dev/null
requests=build/bench/batch-requests.jsonl
prompts=("Once upon a time" "One day, a little girl" "The cat sat on the mat" "Tom and his dog"
         "Lily saw a big red ball" "The sun was hot" "In a small town" "Ben had a toy car")
: > "$requests"
for i in $(seq 0 15); do
    printf '{"id":"r%02d","prompt":"%s","max_tokens":64}\n' "$i" "${prompts[$((i % 8))]}" >> "$requests"
done
echo "| max batch | aggregate tokens/s | per-request tokens/s | mean TTFT (ms) | mean ITL (ms) | seconds |"
echo "|---|---|---|---|---|---|"
rows=()
for b in 1 2 4 8 16; do
    "$bin" batch --model "$m15" --tokenizer "$models/tokenizer.bin" --requests "$requests" \
        --max-batch "$b" --quiet --metrics-json "build/bench/batch-$b.json" > /dev/null
    row=$(/usr/bin/python3 - "build/bench/batch-$b.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
per = [r["tokens_per_second"] for r in m["per_request"]]
print("| %d | %.1f | %.1f | %.1f | %.2f | %.2f |" % (m["max_batch"], m["throughput_tokens_per_second"],
      sum(per) / len(per), m["mean_ttft_ms"], m["mean_itl_ms"], m["seconds"]))
PY
)
    echo "$row"
    rows+=("build/bench/batch-$b.json")
done
/usr/bin/python3 - "${rows[@]}" > build/bench/batch.json <<'PY'
import json, sys
print(json.dumps([json.load(open(p)) for p in sys.argv[1:]], indent=1))
PY
