#!/usr/bin/env bash
# Two builds, the same traces: every family's folder (made by OLD's
# make-model) and the llama2.c and GGUF stories260K, generated with the
# fast and the plain kernels, in float32, in int8 and with 16-bit caches
# (f16 with llama.cpp's rounding and ggml's GELU table; bf16), at trace level full
# with the KV rows, and at level tokens (where the fast attention runs);
# each trace's bytes past the run header (its first line) compared by
# SHA-256. A refactor that must not move a number (issue 47's steps 1-5)
# records its run in docs/runs/. Not part of `make test`: it needs the
# older build.
#
#   bash tests/trace_identity.sh OLD/stepwise NEW/stepwise   (exit 1 on a difference)
set -euo pipefail
old=$(realpath "$1") new=$(realpath "$2")
models=$(realpath "${STEPWISE_MODELS:-../shared/models}")
tok="$models/tok512.bin"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
shape=(--format hf --dim 64 --hidden 96 --layers 3 --heads 4 --kv-heads 2 --vocab 512 --seq-len 64)
"$old" make-model "${shape[@]}" --arch gemma2 --sliding-window 5 --out gemma2 2>/dev/null
"$old" make-model "${shape[@]}" --arch gemma3 --sliding-window 6 --out gemma3 2>/dev/null
"$old" make-model "${shape[@]}" --arch qwen3moe --experts 4 --moe-step 2 --out qwen3moe 2>/dev/null
"$old" make-model "${shape[@]}" --arch mixtral --experts 4 --out mixtral 2>/dev/null
"$old" make-model "${shape[@]}" --arch phi3 --sliding-window 8 --out phi3 2>/dev/null
"$old" make-model "${shape[@]}" --arch qwen2 --out qwen2 2>/dev/null
"$old" make-model "${shape[@]}" --arch qwen3 --out qwen3 2>/dev/null
"$old" make-model "${shape[@]}" --arch mistral --sliding-window 6 --rope-theta 5000 --out mistral 2>/dev/null
"$old" make-model --format hf --dim 64 --hidden 96 --layers 2 --heads 4 --vocab 512 --seq-len 64 \
    --arch gpt2 --out gpt2 2>/dev/null
"$old" make-model "${shape[@]}" --kv-heads 4 --arch deepseek2 --head-dim 24 --kv-lora-rank 16 \
    --qk-rope-dim 8 --q-lora-rank 24 --v-head-dim 16 --experts 4 --shared-experts 1 \
    --expert-hidden 32 --out deepseek2 2>/dev/null
"$old" make-model --dim 64 --hidden 96 --layers 2 --heads 4 --kv-heads 1 --vocab 512 --seq-len 64 \
    --out mqa.bin 2>/dev/null
prompt="Once upon a time, there was a little girl named Lily who loved to play"
runs=0 differ=0
printf '%-16s %-8s %-11s %-18s %-18s %s\n' model kernels run "old (sha256, 16)" "new (sha256, 16)" verdict
for m in gemma2 gemma3 qwen3moe mixtral phi3 qwen2 qwen3 mistral gpt2 deepseek2 mqa.bin \
    "$models/stories260K.bin" "$models/stories260K.gguf"; do
    for kernels in fast plain; do
        for quant in f32 int8 f16 bf16; do
            q=()
            [ "$quant" = int8 ] && q=(--quant-weights int8 --quant-activations int8 --quant-kv int8)
            # the run's rounding choices: a 16-bit cache (with llama.cpp's rounding points) and
            # GELU through ggml's table
            [ "$quant" = f16 ] && q=(--kv-dtype f16 --kv-rounding llama.cpp)
            [ "$quant" = f16 ] && case "$m" in gpt2 | gemma2 | gemma3) q+=(--gelu ggml) ;; esac
            [ "$quant" = bf16 ] && q=(--kv-dtype bf16)
            # MLA's cache of latents is float32 only (a run's choice refused with MLA)
            [ "$m" = deepseek2 ] && case "$quant" in f16 | bf16) continue ;; esac
            # MLA's cache of latents stays float32 (run_state.h)
            [ "$quant" = int8 ] && [ "$m" = deepseek2 ] && q=(--quant-weights int8 --quant-activations int8)
            for level in full tokens; do
                extra=()
                [ "$level" = full ] && extra=(--trace-kv)
                for side in old new; do
                    rm -f "$side.jsonl"
                    "${!side}" generate --model "$m" --tokenizer "$tok" --prompt "$prompt" --steps 12 \
                        --temperature 0.8 --seed 5 --kernels "$kernels" --threads 2 "${q[@]}" \
                        --trace-level "$level" "${extra[@]}" --reproducible \
                        --trace "$side.jsonl" >/dev/null 2>"$side.err" ||
                        { echo "trace_identity: $side failed on $m: $(cat "$side.err")"; exit 2; }
                    [ "$(wc -l < "$side.jsonl")" -gt 3 ] ||
                        { echo "trace_identity: $side wrote no trace for $m"; exit 2; }
                    tail -n +2 "$side.jsonl" | sha256sum | cut -c1-16 > "$side.sum"
                done
                runs=$((runs + 1))
                verdict=same
                cmp -s old.sum new.sum || { verdict=DIFFER; differ=$((differ + 1)); }
                printf '%-16s %-8s %-11s %-18s %-18s %s\n' "$(basename "$m")" "$kernels" \
                    "$quant/$level" "$(cat old.sum)" "$(cat new.sum)" "$verdict"
            done
        done
    done
done
echo "trace identity: $runs runs, $differ differ"
[ "$differ" -eq 0 ]
