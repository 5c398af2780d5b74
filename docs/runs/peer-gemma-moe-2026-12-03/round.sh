#!/bin/bash
# One round, one thread, a 100-token prompt then 128 greedy tokens: the
# 15M Llama shape as GGUF F32 (/tmp/peer/m15.gguf) with the build before
# this session's block changes (/tmp/prev87: 87af8b2) and after them
# (/work/main); a Gemma 3 of the same width and depth (dim 288, 6 layers,
# 6 heads, hidden 768, 32,000 ids, window 64, make-model --arch gemma3:
# /tmp/peer/ge3.gguf) and a Mixtral of it (8 experts 768 wide, 2 a token:
# /tmp/peer/mx15.gguf) after them; llama.cpp (node-llama-cpp 3.22.1, CPU,
# 1 thread, F32 cache, no flash attention: /tmp/peer/llama_time.mjs) on
# each file in the same round.
P="$(cat /work/main/data/text/prompt-100.txt)"
run() { # label, binary, model
  $2 generate --model $3 --prompt "$P" --steps 129 --threads 1 2>&1 >/dev/null \
    | grep -o 'prefill [0-9]* tokens, [0-9.]* tokens/s | decode [0-9]* tokens, [0-9.]* tokens/s' | sed "s|^|$1: |"
}
run "llama before" /tmp/prev87/build/stepwise /tmp/peer/m15.gguf
run "llama after" /work/main/build/stepwise /tmp/peer/m15.gguf
cd /tmp/peer && node llama_time.mjs /tmp/peer/m15.gguf 128 2>/dev/null | sed 's|^|llama.cpp llama: |'
run "gemma3 after" /work/main/build/stepwise /tmp/peer/ge3.gguf
cd /tmp/peer && node llama_time.mjs /tmp/peer/ge3.gguf 128 2>/dev/null | sed 's|^|llama.cpp gemma3: |'
run "mixtral after" /work/main/build/stepwise /tmp/peer/mx15.gguf
cd /tmp/peer && node llama_time.mjs /tmp/peer/mx15.gguf 128 2>/dev/null | sed 's|^|llama.cpp mixtral: |'
