#!/bin/bash
# run.sh BIN OUTDIR: a set of runs whose outputs must not change
# Inputs as on the machine it ran on: ../shared/models (STEPWISE_MODELS), build/m15.bin (make bench's
# 15M shape) and /tmp/mxv (make-model --format hf --arch mixtral --experts 4 --dtype bf16 --dim 32
# --hidden 32 --layers 2 --heads 4 --kv-heads 2 --vocab 64 --seq-len 32).
B=$1; O=$2; M=/work/shared/models; mkdir -p $O
T=$M/tok512.bin
$B generate --model $M/stories260K.bin --tokenizer $T --prompt "Once upon a time" --steps 40 --trace $O/g-f32.jsonl --trace-level layers --reproducible --quiet > $O/g-f32.txt
$B generate --model $M/stories260K.bin --tokenizer $T --prompt "Once upon a time" --steps 40 --trace $O/g-q8.jsonl --trace-level layers --reproducible --quiet --quant-weights int8 --quant-activations int8 --quant-kv int8 > $O/g-q8.txt
$B generate --model $M/stories260K.bin --tokenizer $T --prompt "Once upon a time" --steps 40 --trace $O/g-q8p.jsonl --reproducible --quiet --quant-weights int8 --quant-activations int8 --kernels plain > $O/g-q8p.txt
$B generate --model $M/stories260K.bin --tokenizer $T --prompt "Once upon a time" --steps 40 --trace $O/g-w8.jsonl --reproducible --quiet --quant-weights int8 --threads 2 > $O/g-w8.txt
$B score --model /work/main/build/m15.bin --tokens 1,400,500,600,700,800,900,1000,1100,1200,1300 --top-n 0 --out $O/s15-q8.jsonl --reproducible --quant-weights int8 --quant-activations int8
$B score --model /work/main/build/m15.bin --tokens 1,400,500,600,700,800,900,1000,1100,1200,1300 --top-n 0 --out $O/s15.jsonl --reproducible
$B score --model $M/stories260K.gguf --tokens 1,400,300,200,100 --top-n 0 --out $O/sgguf.jsonl --reproducible --hooks default
$B score --model /tmp/mxv --tokens 1,2,3,4,5,6,7 --top-n 0 --out $O/smoe.jsonl --reproducible --hooks 'blocks.*.moe.*'
$B golden --model $M/stories260K.bin --tokenizer $T --out $O/golden >/dev/null 2>&1 || echo "golden rc=$?"
