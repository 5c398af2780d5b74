#!/usr/bin/env bash
# The thread pool under ThreadSanitizer (in `make sanitize`): stepwise built
# with clang -fsanitize=thread runs a generate (float32, and int8 weights,
# activations and KV cache), a batch on more threads than cores and a score
# with activations; then one model of the C library shared by 2 and 4
# threads, 100 rounds on the built-in model and on stories260K.gguf
# (tests/lib/api_threads.c); any report of a data race fails the check. TSan
# understands the pool's C11 atomics (helgrind does not, and reports false
# races on them).
#   bash tests/tsan_check.sh build/tsan/stepwise build/tsan/api_threads
set -euo pipefail
bin=${1:?usage: tsan_check.sh TSAN_STEPWISE TSAN_API_THREADS}
api_threads=${2:?usage: tsan_check.sh TSAN_STEPWISE TSAN_API_THREADS}
models=${STEPWISE_MODELS:-../shared/models}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export TSAN_OPTIONS="halt_on_error=1 exitcode=66"
if [ ! -f "$models/stories260K.bin" ]; then
    echo "tsan: no stories260K in $models, skipped"
    exit 0
fi
m=(--model "$models/stories260K.bin" --tokenizer "$models/tok512.bin")
prompt=$(cat data/text/prompt-100.txt)
run() { # NAME ARGS...
    local name=$1; shift
    if ! "$bin" "$@" > /dev/null 2> "$tmp/err"; then
        echo "tsan: $name failed:"; head -40 "$tmp/err"; exit 1
    fi
    echo "ok    tsan: $name"
}
run "generate, 3 threads" generate "${m[@]}" --prompt "$prompt" --steps 30 --threads 3 \
    --trace "$tmp/t.jsonl" --trace-level layers
run "generate, int8 everything, 2 threads" generate "${m[@]}" --prompt "$prompt" --steps 30 \
    --threads 2 --quant-weights int8 --quant-activations int8 --quant-kv int8
printf '{"id":"a","prompt":"Once","max_tokens":20}\n{"id":"b","prompt":"The cat","max_tokens":30}\n' \
    > "$tmp/requests.jsonl"
run "batch, 7 threads" batch "${m[@]}" --requests "$tmp/requests.jsonl" --threads 7 --quiet
run "score with activations, 3 threads" score "${m[@]}" --text "$prompt" --hooks default \
    --threads 3 --quiet --out "$tmp/s.jsonl"
# the library: one model, many threads, every call's bits those of one
# thread (about 30 s for stories260K on two cores)
for model in "" "$models/stories260K.gguf"; do
    if ! timeout 600 "$api_threads" 100 $model > "$tmp/out" 2> "$tmp/err"; then
        echo "tsan: one model shared by threads failed:"; head -40 "$tmp/err"; exit 1
    fi
    echo "ok    tsan: $(sed 's/^ok *//' "$tmp/out")"
done
echo "tsan: PASS"
