#!/usr/bin/env bash
# Make real traces at every level, with every option, from a bad-input run
# and from an interrupted run; validate them all with python3-jsonschema and
# with `stepwise trace validate`. Run from the project root by `make test`.
set -euo pipefail
bin=${STEPWISE_BIN:-build/stepwise}
out=build/tmp/traces
models=${STEPWISE_MODELS:-../shared/models}
rm -rf "$out" && mkdir -p "$out"

run() { # NAME ARGS... : a trace that must succeed
    local name=$1; shift
    "$bin" generate "$@" --trace "$out/$name.jsonl" >/dev/null 2>"$out/$name.err" ||
        { echo "check_traces: run $name failed: $(cat "$out/$name.err")"; exit 1; }
}

for level in summary tokens logits sampling layers full; do
    run "tiny-$level" --prompt cat --trace-level "$level"
done
run tiny-options --prompt "cat sat" --trace-kv=full --trace-bpe --all-logits \
    --temperature 1 --top-k 3 --top-p 0.9 --min-p 0.05 --trace-temperatures 0.5,1,2
run tiny-filters --trace-level full --trace-layers 0 --trace-positions 1-2 \
    --trace-hooks 'blocks.*.attn.pattern,final_norm'
if [ -f "$models/stories260K.bin" ]; then
    m=(--model "$models/stories260K.bin" --tokenizer "$models/tok512.bin")
    for level in summary sampling layers full; do
        run "stories-$level" "${m[@]}" --prompt "Once upon a time" --steps 12 --trace-level "$level"
    done
    run stories-sampled "${m[@]}" --steps 40 --temperature 1 --top-p 0.9 --seed 133742 --trace-kv
    long_prompt=$(printf 'Once upon a time, there was a little girl named Lily. %.0s' $(seq 1 33))
    run stories-context-full "${m[@]}" --prompt "$long_prompt" --steps 50 --trace-level tokens
    grep -q '"stop_reason":"context_full"' "$out/stories-context-full.jsonl" ||
        { echo "the long-prompt run did not stop on context_full"; exit 1; }
    run stories-vllm "${m[@]}" --steps 20 --temperature 0.7 --top-k 40 --min-p 0.05 \
        --sampler-order vllm --trace-temperatures 1
    "$bin" score "${m[@]}" --text "Once upon a time, there was a little girl" --top-n 3 \
        --trace-kv --out "$out/stories-score.jsonl" 2>/dev/null
    "$bin" score "${m[@]}" --tokens 1,403,407 --reproducible --out "$out/stories-score-ids.jsonl" \
        2>/dev/null
    run stories-int8 "${m[@]}" --steps 8 --quant-weights int8 --quant-activations int8 \
        --quant-kv int8 --trace-level layers
    run stories-int8-kv "${m[@]}" --steps 8 --quant-kv int8 --trace-level full --trace-layers 2
    run stories-no-cache "${m[@]}" --steps 12 --no-kv-cache --trace-level layers
    run stories-drop-oldest "${m[@]}" --steps 40 --context 16 --context-policy drop-oldest \
        --trace-level full --trace-layers 1
    run stories-keep-prefix "${m[@]}" --steps 40 --context 16 --context-policy keep-prefix --keep 3 \
        --context-drop 5 --temperature 1 --top-p 0.9
    "$bin" make-model --dim 32 --hidden 48 --layers 2 --heads 4 --kv-heads 2 --vocab 512 \
        --seq-len 64 --untied --out "$out/gqa.bin" 2>/dev/null
    run gqa-full --model "$out/gqa.bin" --tokenizer "$models/tok512.bin" --steps 10 --trace-level full
    # every family's run header (its arch fields, config_table.h) against both validators
    shape=(--format hf --dim 16 --hidden 32 --layers 3 --heads 4 --vocab 512 --seq-len 32)
    for family in "gemma2 --sliding-window 4 --query-scale 8" "gemma3 --sliding-window 4" \
        "qwen3moe --experts 4 --moe-step 2" "mixtral --experts 4" "phi3 --sliding-window 8" \
        "gpt2" "qwen2" "mistral --sliding-window 6 --rope-theta 5000" "qwen3"; do
        set -- $family
        "$bin" make-model "${shape[@]}" --arch "$@" --out "$out/$1" 2>/dev/null
        run "family-$1" --model "$out/$1" --tokenizer "$models/tok512.bin" --steps 4 \
            --trace-level layers
    done
    cat > "$out/requests.txt" <<'JSON'
{"id": "story", "prompt": "Once upon a time", "max_tokens": 16}
{"id": "chat", "system": "You tell short stories.", "messages": [{"role": "user", "content": "A cat?"}, {"role": "assistant", "content": "A cat sat."}, {"role": "user", "content": "And then?"}], "max_tokens": 12, "temperature": 1, "top_p": 0.9, "seed": 3}
{"id": "bad", "prompt": "x", "max_tokens": 0}
JSON
    for tmpl in llama2 chatml; do
        "$bin" batch "${m[@]}" --requests "$out/requests.txt" --chat-template "$tmpl" \
            --trace "$out/batch-$tmpl" --trace-level layers --quiet >/dev/null 2>&1 || true
        for f in "$out/batch-$tmpl"/*.jsonl; do mv "$f" "$out/batch-$tmpl-$(basename "$f")"; done
    done
    # interrupted: Ctrl-C while a slow (full-level) run is going
    "$bin" generate "${m[@]}" --steps 500 --trace-level full --trace "$out/stories-interrupted.jsonl" \
        >/dev/null 2>&1 &
    pid=$!
    sleep 0.3
    kill -INT "$pid"
    status=0
    wait "$pid" || status=$?
    [ "$status" -eq 130 ] || { echo "interrupted run exited $status, expected 130"; exit 1; }
    tail -n 1 "$out/stories-interrupted.jsonl" | grep -q '"kind":"interrupted"' ||
        { echo "interrupted trace does not end with an interrupted error"; exit 1; }
fi
# bad input that reaches the trace: a prompt longer than the context
if "$bin" generate --prompt "cat sat cat sat cat sat cat sat cat" \
    --trace "$out/tiny-bad-input.jsonl" >/dev/null 2>&1; then
    echo "the too-long prompt was accepted"; exit 1
fi

/usr/bin/python3 tests/validate_traces.py "$out"/*.jsonl
failed=0
for f in "$out"/*.jsonl; do
    "$bin" trace validate "$f" >/dev/null || { "$bin" trace validate "$f"; failed=$((failed + 1)); }
done
echo "trace validate: $(ls "$out"/*.jsonl | wc -l) traces, $failed failed"
[ "$failed" -eq 0 ]
