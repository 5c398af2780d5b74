#!/usr/bin/env bash
# The same run gives the same trace bytes whatever compiler and optimisation
# built stepwise: gcc and clang, -O0 and -O2. Builds the other three
# configurations beside build/ (gcc -O2), runs each on the same inputs and
# compares every trace line after the run header (which records the compiler
# and flags, and is the one line allowed to differ). Run by `make test`.
set -euo pipefail
models=${STEPWISE_MODELS:-../shared/models}
out=build/tmp/determinism
rm -rf "$out" && mkdir -p "$out"

configs=("gcc -O2:build")
for cc in gcc clang; do
    for opt in -O0 -O2; do
        [ "$cc $opt" = "gcc -O2" ] && continue
        if ! command -v "$cc" >/dev/null; then
            echo "determinism: $cc not installed, $cc $opt skipped"
            continue
        fi
        dir=build/det-$cc$opt
        make --no-print-directory BUILD="$dir" CC="$cc" CFLAGS="$opt" "$dir/stepwise" >/dev/null
        configs+=("$cc $opt:$dir")
    done
done

# NAME ARGS...: the same generate run with every build; each trace after its
# first line must be byte-identical to the gcc -O2 one.
same() {
    local name=$1; shift
    local ref=""
    for config in "${configs[@]}"; do
        local label=${config%%:*} dir=${config#*:} trace
        trace="$out/$name-${label// /}.jsonl"
        "$dir/stepwise" generate "$@" --reproducible --trace "$trace" >/dev/null 2>&1 ||
            { echo "determinism: $name with $label failed"; exit 1; }
        if [ -z "$ref" ]; then
            ref=$trace
        elif ! cmp -s <(tail -n +2 "$ref") <(tail -n +2 "$trace"); then
            echo "determinism: $name differs between gcc -O2 and $label"; exit 1
        fi
    done
    echo "determinism: $name identical with ${#configs[@]} builds"
}

same tiny-full --prompt "cat sat" --trace-level full --trace-kv=full --temperature 1
if [ -f "$models/stories260K.bin" ]; then
    m=(--model "$models/stories260K.bin" --tokenizer "$models/tok512.bin")
    same stories-sampled "${m[@]}" --prompt "Once upon a time" --steps 30 --temperature 0.9 \
        --top-p 0.9 --trace-level layers
    same stories-int8 "${m[@]}" --prompt "Once upon a time" --steps 30 --quant-weights int8 \
        --quant-activations int8 --quant-kv int8 --trace-level logits
    # the summarize policy's nested runs and the retrieve policy's BM25 scores
    same stories-summarize "${m[@]}" --prompt "Once upon a time" --steps 100 --context 64 \
        --context-drop 40 --keep 1 --context-policy summarize --summary-tokens 16 --trace-level logits
    same stories-retrieve "${m[@]}" --prompt "Once upon a time, Lily had a red ball" --steps 120 \
        --context 64 --context-drop 40 --keep 1 --context-policy retrieve --temperature 0.8 \
        --trace-level logits
else
    echo "determinism: stories260K runs skipped: no stories260K in $models"
fi
