#!/bin/bash
# One round: the session's first build, this build, and llama.cpp, on the same 15M weights (GGUF F32), one thread.
M=/work/shared/models; P="$(cat /work/main/data/text/prompt-100.txt)"
for b in /tmp/base/build/stepwise /work/main/build/stepwise; do
  $b generate --model /tmp/peer/m15.gguf --tokenizer $M/tokenizer.bin --prompt "$P" --steps 129 --threads 1 2>&1 >/dev/null \
    | grep -o 'prefill [0-9]* tokens, [0-9.]* tokens/s | decode [0-9]* tokens, [0-9.]* tokens/s' | sed "s|^|$b: |"
done
cd /tmp/peer && node llama_time.mjs /tmp/peer/m15.gguf 128 2>/dev/null | sed 's|^|llama.cpp: |'
