#!/bin/bash
# One round, one thread, a 100-token prompt then 128 greedy tokens: the
# 15M Llama shape as GGUF F32 (/tmp/peer/m15.gguf) with the build before
# this session's block changes (/tmp/prevbuild: ec83fcf, whose forward.c and
# layers.c are b482741's) and after them (8a17ae4); a GPT-2 of the same
# width and depth (dim 288, 6 layers, 6 heads, hidden 1152, 50,257 ids;
# make-model --arch gpt2, convert with ../shared/vocab's GPT-2 vocabulary:
# /tmp/peer/g15.gguf) after them; llama.cpp (node-llama-cpp 3.22.1, CPU,
# 1 thread, F32 cache, no flash attention: /tmp/peer/llama_time.mjs) on both
# files in the same round.
M=/work/shared/models; P="$(cat /work/main/data/text/prompt-100.txt)"
run() { # label, binary, model
  $2 generate --model $3 --prompt "$P" --steps 129 --threads 1 2>&1 >/dev/null \
    | grep -o 'prefill [0-9]* tokens, [0-9.]* tokens/s | decode [0-9]* tokens, [0-9.]* tokens/s' | sed "s|^|$1: |"
}
run "llama before" /tmp/prevbuild/build/stepwise /tmp/peer/m15.gguf
run "llama after" /work/main/build/stepwise /tmp/peer/m15.gguf
cd /tmp/peer && node llama_time.mjs /tmp/peer/m15.gguf 128 2>/dev/null | sed 's|^|llama.cpp llama: |'
run "gpt2 after" /work/main/build/stepwise /tmp/peer/g15.gguf
cd /tmp/peer && node llama_time.mjs /tmp/peer/g15.gguf 128 2>/dev/null | sed 's|^|llama.cpp gpt2: |'
