P="$(cat /work/main/data/text/prompt-100.txt)"
for b in "8a17ae4:/tmp/ci-run/build/stepwise" "mended:/work/main/build/stepwise"; do for f in m15 g15; do
  ${b#*:} generate --model /tmp/peer/$f.gguf --prompt "$P" --steps 129 --threads 1 2>&1 >/dev/null | grep -o 'prefill [0-9]* tokens, [0-9.]* tokens/s | decode [0-9]* tokens, [0-9.]* tokens/s' | sed "s|^|$f ${b%%:*}: |"
done; done
