/* cli/tokenize.c: `stepwise tokenize`, the byte-pair encoder on its own:
 * text in, token ids and their pieces out. */
#include <cjson/cJSON.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "commands.h"
#include "common.h"

static const char TOKENIZE_USAGE[] =
    "usage: stepwise tokenize --text TEXT [options]\n"
    "\n"
    "Encode TEXT the way generate encodes a prompt and print the ids and pieces.\n"
    "\n"
    "  --text TEXT        the text to encode (required)\n"
    "  --tokenizer FILE   llama2.c tokenizer.bin (default: the tokenizer of --model)\n"
    "  --model FILE       a stepwise JSON model whose tokenizer to use\n"
    "                     (default: the built-in tiny model)\n"
    "  --no-bos           do not put BOS first\n"
    "  --json             print {\"text\", \"ids\", \"pieces\"} as one JSON object\n"
    "  -h, --help         show this help\n";

enum { OPT_TEXT = 256, OPT_TOKENIZER, OPT_MODEL, OPT_NO_BOS, OPT_JSON };

typedef struct {
    const char *text, *tokenizer, *model;
    bool bos, json;
} TokenizeArgs;

static int parse_tokenize_args(int argc, char **argv, TokenizeArgs *a, StepError *err) {
    static const struct option options[] = {{"text", required_argument, NULL, OPT_TEXT},
                                            {"tokenizer", required_argument, NULL, OPT_TOKENIZER},
                                            {"model", required_argument, NULL, OPT_MODEL},
                                            {"no-bos", no_argument, NULL, OPT_NO_BOS},
                                            {"json", no_argument, NULL, OPT_JSON},
                                            {"help", no_argument, NULL, 'h'},
                                            {NULL, 0, NULL, 0}};
    *a = (TokenizeArgs){.bos = true};
    opterr = 0;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, ":h", options, NULL)) != -1) {
        switch (c) {
            case OPT_TEXT:
                a->text = optarg;
                break;
            case OPT_TOKENIZER:
                a->tokenizer = optarg;
                break;
            case OPT_MODEL:
                a->model = optarg;
                break;
            case OPT_NO_BOS:
                a->bos = false;
                break;
            case OPT_JSON:
                a->json = true;
                break;
            case 'h':
                fputs(TOKENIZE_USAGE, stdout);
                return 0;
            default:
                cli_option_error("tokenize", c, optopt, argv, optind, err);
                return -1;
        }
    }
    if (optind < argc) {
        step_fail(err, "tokenize: unexpected argument '%s' (see --help)", argv[optind]);
        return -1;
    }
    if (a->text == NULL) {
        step_fail(err, "tokenize: --text is required (see --help)");
        return -1;
    }
    return 1;
}

static void print_tokens(const TokenizeArgs *a, const Tokenizer *tok, const int *ids, int n) {
    if (a->json) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "text", a->text);
        cJSON_AddItemToObject(o, "ids", cJSON_CreateIntArray(ids, n));
        cJSON *pieces = cJSON_AddArrayToObject(o, "pieces");
        for (int i = 0; i < n; i++)
            cJSON_AddItemToArray(pieces, cJSON_CreateString(tok->pieces[ids[i]]));
        char *s = cJSON_PrintUnformatted(o);
        puts(s);
        cJSON_free(s);
        cJSON_Delete(o);
        return;
    }
    printf("%d tokens\n", n);
    for (int i = 0; i < n; i++) printf("%6d  '%s'\n", ids[i], tok->pieces[ids[i]]);
}

int cli_tokenize(int argc, char **argv) {
    TokenizeArgs a;
    StepError err;
    int parsed = parse_tokenize_args(argc, argv, &a, &err);
    if (parsed <= 0) {
        if (parsed < 0) cli_print_error(&err);
        return parsed < 0 ? EXIT_BAD_INPUT : 0;
    }
    Tokenizer tok;
    Model m = {0};
    bool ok = a.tokenizer != NULL && a.model == NULL
                  ? tokenizer_load_bin(&tok, a.tokenizer, 0, &err)
                  : cli_load_model(a.model, a.tokenizer, &m, &tok, &err);
    int *ids = NULL, n = 0;
    if (ok) ok = tokenizer_encode(&tok, a.text, a.bos, &ids, &n, &err);
    if (ok)
        print_tokens(&a, &tok, ids, n);
    else
        cli_print_error(&err);
    free(ids);
    model_free(&m);
    tokenizer_free(&tok);
    return ok ? 0 : EXIT_BAD_INPUT;
}
