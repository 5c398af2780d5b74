/* main.c: `stepwise SUBCOMMAND [options]`. */
#include <stdio.h>
#include <string.h>

#include "ref/cli/commands.h"
#include "ref/cli/common.h"
#include "ref/cli/signals.h"

/* The one table of commands: the dispatcher and the help both read it. */
static const struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} COMMANDS[] = {
    {"generate", cli_generate,
     "run a prompt and generate text, optionally writing a JSON Lines trace"},
    {"batch", cli_batch, "serve many requests with one model, decoding them together"},
    {"serve-sim", cli_serve_sim, "serving under load in simulated time: arrivals, KV blocks, p95s"},
    {"score", cli_score, "teacher-forced logits, log-probabilities and perplexity of a sequence"},
    {"diff", cli_diff, "compare another engine's logits with the reference's"},
    {"golden", cli_golden, "write a golden set of reference outputs for a model"},
    {"tokenize", cli_tokenize, "encode text into token ids and pieces"},
    {"sample", cli_sample, "apply the sampler to a logit vector (the classroom table)"},
    {"trace", cli_trace, "show one step of a trace, or validate a trace"},
    {"view", cli_view, "a trace as one HTML page: tokens, sliders, cuts, attention, KV cache"},
    {"inspect", cli_inspect, "a model's weights and KV-cache bytes, with the formula"},
    {"make-model", cli_make_model, "write a random-weight checkpoint of any shape (MHA, GQA, MQA)"},
    {"quantize", cli_quantize, "write a model's weights in int8 (a .q8 file)"},
    {"convert", cli_convert,
     "write a model as GGUF (f32, f16, q8_0) for llama.cpp and other engines"},
    {"compare-quant", cli_compare_quant,
     "what int8 weights, activations and KV cache cost in accuracy"},
};
#define N_COMMANDS ((int)(sizeof COMMANDS / sizeof COMMANDS[0]))

static void print_usage(FILE *to) {
    fputs("usage: stepwise <command> [options]\n"
          "\n"
          "stepwise: LLM inference in plain C, one traceable step at a time.\n"
          "\n"
          "commands:\n",
          to);
    for (int i = 0; i < N_COMMANDS; i++) {
        int width = (int)strlen(COMMANDS[i].name) < 10 ? 10 : (int)strlen(COMMANDS[i].name);
        fprintf(to, "  %-*s %s\n", width, COMMANDS[i].name, COMMANDS[i].summary);
    }
    fputs("\n"
          "  stepwise <command> --help   options of one command\n"
          "  stepwise --version          print the version\n",
          to);
}

int main(int argc, char **argv) {
    cli_signals_install();
    if (argc < 2) {
        print_usage(stderr);
        return EXIT_BAD_INPUT;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0) {
        print_usage(stdout);
        return 0;
    }
    if (strcmp(cmd, "--version") == 0) {
        printf("stepwise %s\n", STEPWISE_VERSION);
        return 0;
    }
    for (int i = 0; i < N_COMMANDS; i++)
        if (strcmp(cmd, COMMANDS[i].name) == 0) return COMMANDS[i].run(argc - 1, argv + 1);
    fprintf(stderr, "stepwise: error: unknown command '%s' (see stepwise --help)\n", cmd);
    return EXIT_BAD_INPUT;
}
