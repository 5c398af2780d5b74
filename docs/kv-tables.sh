#!/usr/bin/env bash
# Print the tables of docs/kv-cache.md: weights against KV-cache bytes for
# stories260K and the 15M shape at 256, 1k and 4k tokens with 1, 4 and 16
# requests; MHA/GQA/MQA variants; and a measured run of each. Run by
# `make kv-tables` (needs build/stepwise, the models, and build/m15.bin).
set -euo pipefail
bin=build/stepwise
models=${STEPWISE_MODELS:-../shared/models}
m15=build/m15.bin
[ -f "$m15" ] || "$bin" make-model --dim 288 --hidden 768 --layers 6 --heads 6 --vocab 32000 \
    --seq-len 256 --seed 42 --out "$m15" 2>/dev/null

# the traces go to a folder of their own (not build/tmp, which a fresh build lacks)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

mib() { /usr/bin/python3 -c "print('%.2f' % ($1 / 1048576))"; }

for model in "$models/stories260K.bin" "$m15"; do
    echo "### $(basename "$model")"
    echo
    echo "| tokens per request | requests | KV cache | weights | cache / weights |"
    echo "|---|---|---|---|---|"
    for ctx in 256 1024 4096; do
        for req in 1 4 16; do
            "$bin" inspect --model "$model" --context "$ctx" --requests "$req" --json |
                /usr/bin/python3 -c '
import json, sys
d = json.load(sys.stdin); t = d["this_model"]
print("| %d | %d | %.2f MiB | %.2f MiB | %.2f |" % (d["context"], d["requests"],
      t["kv_bytes_total"] / 2**20, t["weight_bytes"] / 2**20, t["kv_bytes_total"] / t["weight_bytes"]))'
        done
    done
    echo
    echo "Variants at 1024 tokens, 1 request:"
    echo
    echo "| KV heads | kind | KV bytes per token | KV at 1024 tokens | weights | outgrows the weights at |"
    echo "|---|---|---|---|---|---|"
    "$bin" inspect --model "$model" --context 1024 --json | /usr/bin/python3 -c '
import json, sys
d = json.load(sys.stdin)
for v in d["variants"]:
    print("| %d | %s | %d | %.2f MiB | %.2f MiB | %d tokens |" % (v["n_kv_heads"], v["attention"],
          v["kv_bytes_per_token"], v["kv_bytes_at_context"] / 2**20, v["weight_bytes"] / 2**20,
          v["outgrows_weights_at"]))'
    echo
done

echo "### Measured: one greedy run of 256 tokens from BOS"
echo
echo "| model | weights | KV cache allocated | peak resident memory |"
echo "|---|---|---|---|"
for model in "$models/stories260K.bin" "$m15"; do
    tok="$models/tok512.bin"
    [ "$model" = "$m15" ] && tok="$models/tokenizer.bin"
    "$bin" generate --model "$model" --tokenizer "$tok" --steps 256 --trace "$tmp/kv.jsonl" \
        --trace-level summary >/dev/null 2>&1 || true
    /usr/bin/python3 - "$model" "$tmp/kv.jsonl" <<'PY'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[2])]
run, done = lines[0], lines[-1]
print("| %s | %.2f MiB | %.2f MiB | %.2f MiB |" % (sys.argv[1].split("/")[-1],
      run["model"]["weight_bytes"] / 2**20, done["kv_cache"]["allocated_bytes"] / 2**20,
      done["measured"]["peak_rss_bytes"] / 2**20))
PY
done

echo
echo "### Work per step, with and without the cache (stories260K, greedy from BOS)"
echo
m=(--model "$models/stories260K.bin" --tokenizer "$models/tok512.bin" --steps 300 --trace-level tokens)
"$bin" generate "${m[@]}" --trace "$tmp/cached.jsonl" >/dev/null 2>&1
"$bin" generate "${m[@]}" --no-kv-cache --trace "$tmp/recompute.jsonl" >/dev/null 2>&1
/usr/bin/python3 - "$tmp/cached.jsonl" "$tmp/recompute.jsonl" <<'PY'
import json, sys
def work(path):
    return [json.loads(l) for l in open(path) if '"event":"work"' in l]
cached, recompute = work(sys.argv[1]), work(sys.argv[2])
print("| step | position | multiply-adds, cached | multiply-adds, no cache | KV bytes read, cached | weight bytes, cached |")
print("|---|---|---|---|---|---|")
for step in (1, 10, 100, 200, 299):
    c, r = cached[step], recompute[step]
    print("| %d | %d | %d | %d | %d | %d |" % (step, c["pos"], c["macs"], r["macs"], c["kv_bytes_read"], c["weight_bytes"]))
dc = [json.loads(l) for l in open(sys.argv[1])][-1]["work"]
dr = [json.loads(l) for l in open(sys.argv[2])][-1]["work"]
print()
print("Over the whole run: %.3g multiply-adds with the cache, %.3g without (%.0fx)." % (dc["macs"], dr["macs"], dr["macs"] / dc["macs"]))
PY
