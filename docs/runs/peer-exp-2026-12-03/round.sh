#!/bin/bash
# One round, one thread, a 100-token prompt then 128 greedy tokens, on the
# 15M shape written by `stepwise convert` as GGUF F32 and Q8_0
# (build/bench/m15.gguf, build/bench/m15-q8_0.gguf): stepwise before the
# fast path's exponentials (/tmp/before: 5fec213, softmax and SwiGLU through
# expf one value at a time) and after them (/tmp/after-stepwise: exp_many,
# the library's bits many at once), the Q8_0 file with
# --quant-activations int8; llama.cpp (node-llama-cpp, CPU, 1 thread,
# tests/llama_cpp_engine.mjs time, its default F16 cache) on each file in
# the same round.
cd /work/main
P="$(cat data/text/prompt-100.txt)"
run() { # label, binary, model, extra
  $2 generate --model $3 --prompt "$P" --steps 129 --threads 1 $4 2>&1 >/dev/null \
    | grep -o 'prefill [0-9]* tokens, [0-9.]* tokens/s | decode [0-9]* tokens, [0-9.]* tokens/s' | sed "s|^|$1: |"
}
peer() { # label, model
  node tests/llama_cpp_engine.mjs build/npm-llama-cpp time $2 32000 100 128 defaults 2>/dev/null | sed "s|^|$1: |"
}
run "f32 before" /tmp/before/build/stepwise build/bench/m15.gguf
run "f32 after" /tmp/after-stepwise build/bench/m15.gguf
peer "llama.cpp f32" build/bench/m15.gguf
run "q8 before" /tmp/before/build/stepwise build/bench/m15-q8_0.gguf "--quant-activations int8"
run "q8 after" /tmp/after-stepwise build/bench/m15-q8_0.gguf "--quant-activations int8"
peer "llama.cpp q8" build/bench/m15-q8_0.gguf
