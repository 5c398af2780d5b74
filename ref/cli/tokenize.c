/* cli/tokenize.c: `stepwise tokenize`, the byte-pair encoder on its own:
 * text in, token ids and their pieces out. */
#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ref/cli/commands.h"
#include "ref/cli/common.h"
#include "ref/cli/options.h"
#include "ref/formats/model_open.h"
#include "ref/text/chat.h"
#include "ref/util/file_util.h"
#include "ref/formats/gguf_model.h"
#include "ref/util/json_util.h"

/* The help's usage lines and what the command does. */
static const char TOKENIZE_USAGE[] =
    "usage: stepwise tokenize (--text TEXT | --texts FILE | --chat FILE) [options]\n"
    "\n"
    "Encode TEXT the way generate encodes a prompt and print the ids and pieces.\n";

typedef struct {
    const char *text, *texts, *chat, *tokenizer, *model;
    ChatTemplate chat_template;
    bool no_bos, json;
} TokenizeArgs;

static const CliOption TOKENIZE_OPTIONS[] = {
    {"text", "TEXT", OPTION_TEXT, offsetof(TokenizeArgs, text),
     .help = "the text to encode (this or --texts is required)"},
    {"texts", "FILE", OPTION_TEXT, offsetof(TokenizeArgs, texts), .path = PATH_IN,
     .help = "encode each line of FILE, a JSON string (JSON Lines; - is\n"
             "standard input), and print one JSON object a line"},
    {"chat", "FILE", OPTION_TEXT, offsetof(TokenizeArgs, chat), .path = PATH_IN,
     .help = "a conversation, {\"system\": S, \"memory\": [note, ...],\n"
             "\"documents\": [{\"id\", \"text\"}, ...], \"messages\": [{\"role\",\n"
             "\"content\"}, ...]}: assemble it with the chat template and\n"
             "print {\"template\", \"text\", \"ids\", \"pieces\", \"segments\"}"},
    {"chat-template", "T", OPTION_CUSTOM, offsetof(TokenizeArgs, chat_template),
     .parse = cli_option_chat_template,
     .help = "llama2, chatml or llama3 (default: the tokenizer's own)"},
    {"tokenizer", "FILE", OPTION_TEXT, offsetof(TokenizeArgs, tokenizer), .path = PATH_IN,
     .help = "llama2.c tokenizer.bin, a Hugging Face tokenizer.json (or the\n"
             "directory holding it), or a GGUF file's embedded tokenizer;\n"
             "default: the tokenizer of --model"},
    {"model", "PATH", OPTION_TEXT, offsetof(TokenizeArgs, model), .path = PATH_IN,
     .help = "a model whose tokenizer to use: a stepwise JSON model, a\n"
             "Hugging Face directory or a GGUF file, a vocabulary-only one\n"
             "(llama.cpp's ggml-vocab-*.gguf) too (default: the built-in\n"
             "tiny model)"},
    {"no-bos", NULL, OPTION_FLAG, offsetof(TokenizeArgs, no_bos),
     .help = "do not put BOS first (a tokenizer.json's BOS is put first only\n"
             "when its tokenizer_config.json or post-processor adds one)"},
    {"json", NULL, OPTION_FLAG, offsetof(TokenizeArgs, json),
     .help = "print {\"text\", \"ids\", \"pieces\"} as one JSON object"},
    CLI_OPTIONS_END};

static const CliCommandOptions TOKENIZE_COMMAND = {
    .command = "tokenize", .options = TOKENIZE_OPTIONS, .usage = TOKENIZE_USAGE};

static int parse_tokenize_args(int argc, char **argv, TokenizeArgs *a, StepError *err) {
    *a = (TokenizeArgs){0};
    int parsed = cli_options_parse(&TOKENIZE_COMMAND, argc, argv, a, NULL, err);
    if (parsed <= 0) return parsed;
    if ((a->text != NULL) + (a->texts != NULL) + (a->chat != NULL) != 1) {
        step_fail(err, "tokenize: give one of --text, --texts and --chat (see --help)");
        return -1;
    }
    return 1;
}

static void print_tokens(const TokenizeArgs *a, const char *text, const Tokenizer *tok,
                         const int *ids, int n) {
    if (a->json || a->texts != NULL) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "text", text);
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

/* --texts: every line a JSON string, encoded and printed as one JSON line.
 * The whole file is checked before anything is printed. */
static bool encode_lines(const TokenizeArgs *a, const Tokenizer *tok, StepError *err) {
    char *all;
    if (!file_read_text(a->texts, "--texts", &all, err)) return false;
    cJSON **texts = NULL;
    int n = 0, cap = 0;
    bool ok = true;
    char *save = NULL;
    for (char *line = strtok_r(all, "\n", &save); ok && line != NULL;
         line = strtok_r(NULL, "\n", &save)) {
        cJSON *v = json_parse_whole(line);
        if (!cJSON_IsString(v)) {
            cJSON_Delete(v);
            ok = step_fail(err, "--texts %s: line %d is not a JSON string", a->texts, n + 1);
            break;
        }
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            cJSON **grown = realloc(texts, (size_t)cap * sizeof *grown);
            if (grown == NULL) {
                cJSON_Delete(v);
                ok = step_fail(err, "--texts: out of memory");
                break;
            }
            texts = grown;
        }
        texts[n++] = v;
    }
    for (int i = 0; ok && i < n; i++) {
        int *ids, n_ids;
        ok = tokenizer_encode(tok, texts[i]->valuestring, !a->no_bos, &ids, &n_ids, err);
        if (ok) print_tokens(a, texts[i]->valuestring, tok, ids, n_ids);
        if (ok) free(ids);
    }
    for (int i = 0; i < n; i++) cJSON_Delete(texts[i]);
    free(texts);
    free(all);
    return ok;
}

/* --chat: the conversation assembled, and where each token came from. */
static bool encode_chat(const TokenizeArgs *a, const Tokenizer *tok, StepError *err) {
    char *text;
    if (!file_read_text(a->chat, "--chat", &text, err)) return false;
    cJSON *o = json_parse_whole(text);
    free(text);
    ChatInput in = {0};
    ChatPrompt p;
    StepError why;
    bool ok = cJSON_IsObject(o) || step_fail(err, "--chat %s: not a JSON object", a->chat);
    ok = ok && (chat_input_from_json(o, true, &in, &why) ||
                step_fail(err, "--chat %s: %s", a->chat, why.message));
    ok = ok && (chat_assemble(tok, a->chat_template, &in, &p, &why) ||
                step_fail(err, "--chat %s: %s", a->chat, why.message));
    chat_input_free(&in);
    cJSON_Delete(o);
    if (!ok) return false;
    cJSON *out = cJSON_CreateObject();
    cJSON_AddStringToObject(out, "template", chat_template_name(p.template_used));
    cJSON_AddItemToObject(out, "text",
                          p.text != NULL ? cJSON_CreateString(p.text) : cJSON_CreateNull());
    cJSON_AddItemToObject(out, "ids", cJSON_CreateIntArray(p.tokens, p.n));
    cJSON *pieces = cJSON_AddArrayToObject(out, "pieces");
    for (int i = 0; i < p.n; i++)
        cJSON_AddItemToArray(pieces, cJSON_CreateString(tok->pieces[p.tokens[i]]));
    cJSON *segs = cJSON_AddArrayToObject(out, "segments");
    for (int i = 0; i < p.n_segments; i++) {
        cJSON *seg = cJSON_CreateObject();
        cJSON_AddStringToObject(seg, "source", p.segments[i].source);
        cJSON_AddNumberToObject(seg, "turn", p.segments[i].turn);
        cJSON_AddNumberToObject(seg, "start", p.segments[i].start);
        cJSON_AddNumberToObject(seg, "end", p.segments[i].end);
        cJSON_AddItemToArray(segs, seg);
    }
    char *s = cJSON_PrintUnformatted(out);
    puts(s);
    cJSON_free(s);
    cJSON_Delete(out);
    chat_prompt_free(&p);
    return true;
}

int cli_tokenize(int argc, char **argv) {
    TokenizeArgs a;
    StepError err;
    int parsed = parse_tokenize_args(argc, argv, &a, &err);
    if (parsed <= 0) {
        if (parsed < 0) cli_print_error(&err);
        return parsed < 0 ? EXIT_BAD_INPUT : 0;
    }
    Tokenizer tok = {0}; /* freed below even when the model never loaded */
    Model m = {0};
    /* a GGUF file's tokenizer needs none of its weights (a vocabulary-only
     * file has none) */
    const char *tok_only = a.tokenizer != NULL && a.model == NULL ? a.tokenizer
                           : a.tokenizer == NULL && a.model != NULL && gguf_is_model_path(a.model)
                               ? a.model
                               : NULL;
    bool ok = tok_only != NULL ? tokenizer_open(tok_only, 0, &tok, &err)
                               : cli_load_model(a.model, a.tokenizer, &m, &tok, NULL, &err);
    int *ids = NULL, n = 0;
    if (ok && a.texts != NULL) {
        ok = encode_lines(&a, &tok, &err);
    } else if (ok && a.chat != NULL) {
        ok = encode_chat(&a, &tok, &err);
    } else if (ok) {
        ok = tokenizer_encode(&tok, a.text, !a.no_bos, &ids, &n, &err);
        if (ok) print_tokens(&a, a.text, &tok, ids, n);
    }
    if (!ok) cli_print_error(&err);
    free(ids);
    model_free(&m);
    tokenizer_free(&tok);
    return ok ? 0 : EXIT_BAD_INPUT;
}
