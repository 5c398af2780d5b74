/* main.c: `stepwise SUBCOMMAND [options]`. */
#include <stdio.h>
#include <string.h>

#include "ref/cli/commands.h"
#include "ref/cli/common.h"
#include "ref/cli/signals.h"

static const char USAGE[] =
    "usage: stepwise <command> [options]\n"
    "\n"
    "stepwise: LLM inference in plain C, one traceable step at a time.\n"
    "\n"
    "commands:\n"
    "  generate   run a prompt and generate text, optionally writing a JSON Lines trace\n"
    "  batch      serve many requests with one model, decoding them together\n"
    "  score      teacher-forced logits, log-probabilities and perplexity of a sequence\n"
    "  diff       compare another engine's logits with the reference's\n"
    "  golden     write a golden set of reference outputs for a model\n"
    "  tokenize   encode text into token ids and pieces\n"
    "  sample     apply the sampler to a logit vector (the classroom table)\n"
    "  trace      show one step of a trace, or validate a trace\n"
    "  view       a trace as one HTML page: tokens, sliders, cuts, attention, KV cache\n"
    "  inspect    a model's weights and KV-cache bytes, with the formula\n"
    "  make-model write a random-weight checkpoint of any shape (MHA, GQA, MQA)\n"
    "  quantize   write a model's weights in int8 (a .q8 file)\n"
    "  convert    write a model as GGUF (f32, f16, q8_0) for llama.cpp and other engines\n"
    "  compare-quant  what int8 weights, activations and KV cache cost in accuracy\n"
    "\n"
    "  stepwise <command> --help   options of one command\n"
    "  stepwise --version          print the version\n";

int main(int argc, char **argv) {
    cli_signals_install();
    if (argc < 2) {
        fputs(USAGE, stderr);
        return EXIT_BAD_INPUT;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0) {
        fputs(USAGE, stdout);
        return 0;
    }
    if (strcmp(cmd, "--version") == 0) {
        printf("stepwise %s\n", STEPWISE_VERSION);
        return 0;
    }
    if (strcmp(cmd, "generate") == 0) return cli_generate(argc - 1, argv + 1);
    if (strcmp(cmd, "batch") == 0) return cli_batch(argc - 1, argv + 1);
    if (strcmp(cmd, "tokenize") == 0) return cli_tokenize(argc - 1, argv + 1);
    if (strcmp(cmd, "score") == 0) return cli_score(argc - 1, argv + 1);
    if (strcmp(cmd, "diff") == 0) return cli_diff(argc - 1, argv + 1);
    if (strcmp(cmd, "golden") == 0) return cli_golden(argc - 1, argv + 1);
    if (strcmp(cmd, "sample") == 0) return cli_sample(argc - 1, argv + 1);
    if (strcmp(cmd, "view") == 0) return cli_view(argc - 1, argv + 1);
    if (strcmp(cmd, "trace") == 0) return cli_trace(argc - 1, argv + 1);
    if (strcmp(cmd, "inspect") == 0) return cli_inspect(argc - 1, argv + 1);
    if (strcmp(cmd, "make-model") == 0) return cli_make_model(argc - 1, argv + 1);
    if (strcmp(cmd, "convert") == 0) return cli_convert(argc - 1, argv + 1);
    if (strcmp(cmd, "quantize") == 0) return cli_quantize(argc - 1, argv + 1);
    if (strcmp(cmd, "compare-quant") == 0) return cli_compare_quant(argc - 1, argv + 1);
    fprintf(stderr, "stepwise: error: unknown command '%s' (see stepwise --help)\n", cmd);
    return EXIT_BAD_INPUT;
}
