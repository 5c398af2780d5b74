#!/bin/bash
# One round on the 15M shape, one thread, GGUF F16 file: the build before the half-block change
# (/tmp/prev, aaad3ea) and after it, with the matrices as stored (float16, widened in registers)
# and widened at load; llama.cpp (node-llama-cpp) on the same file.
M=/work/shared/models; P="$(cat /work/main/data/text/prompt-100.txt)"
run() { # label, binary, model, extra options
  $2 generate --model $3 --tokenizer $M/tokenizer.bin --prompt "$P" --steps 129 --threads 1 ${@:4} 2>&1 >/dev/null \
    | grep -o 'prefill [0-9]* tokens, [0-9.]* tokens/s | decode [0-9]* tokens, [0-9.]* tokens/s' | sed "s|^|$1: |"
}
run "f16 stored before" /tmp/prev/build/stepwise /tmp/peer/m15-f16.gguf
run "f16 stored after" /work/main/build/stepwise /tmp/peer/m15-f16.gguf
run "f16 as f32" /work/main/build/stepwise /tmp/peer/m15-f16.gguf --weights f32
cd /tmp/peer && node llama_time.mjs /tmp/peer/m15-f16.gguf 128 2>/dev/null | sed 's|^|llama.cpp f16: |'
