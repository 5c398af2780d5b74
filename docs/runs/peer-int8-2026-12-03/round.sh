#!/bin/bash
# One round on the 15M shape, one thread, a 100-token prompt then 128 greedy tokens: stepwise's
# int8 weights (--quant-weights int8) before this session's int8 change (/tmp/prev, aaad3ea) and
# after it, and llama.cpp (node-llama-cpp) on the same model as GGUF Q8_0 (stepwise convert).
M=/work/shared/models; P="$(cat /work/main/data/text/prompt-100.txt)"
run() { # label, binary
  $2 generate --model /work/main/build/m15.bin --tokenizer $M/tokenizer.bin --prompt "$P" --steps 129 \
    --threads 1 --quant-weights int8 2>&1 >/dev/null \
    | grep -o 'prefill [0-9]* tokens, [0-9.]* tokens/s | decode [0-9]* tokens, [0-9.]* tokens/s' | sed "s|^|$1: |"
}
run "int8 before" /tmp/prev/build/stepwise
run "int8 after" /work/main/build/stepwise
node /work/main/tests/llama_cpp_engine.mjs /work/main/build/npm-llama-cpp time /tmp/peer/m15-q8.gguf 32000 100 128 \
  | sed 's|^|llama.cpp q8_0: |'
