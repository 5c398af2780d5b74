/* chat.h: a conversation (system prompt, history, user message) assembled
 * into one token sequence by a chat template, remembering which tokens came
 * from where. docs/batching.md spells out the templates; docs/hf-models.md
 * how a tokenizer.json's own template is recognised. */
#ifndef STEPWISE_CHAT_H
#define STEPWISE_CHAT_H

#include "error.h"
#include "tokenizer.h"

/* CHAT_DEFAULT: the tokenizer's own (a tokenizer_config.json's template,
 * recognised), or llama2 for a llama2.c vocabulary. */
typedef enum { CHAT_DEFAULT, CHAT_LLAMA2, CHAT_CHATML, CHAT_LLAMA3 } ChatTemplate;

/* "default", "llama2", "chatml" or "llama3". */
bool chat_template_parse(const char *name, ChatTemplate *t, StepError *err);
const char *chat_template_name(ChatTemplate t);

typedef struct {
    const char *role; /* "user" or "assistant" */
    const char *content;
} ChatMessage;

/* Where a run of tokens came from. */
typedef struct {
    const char *source; /* "bos", "eos", "marker", "system", "user", "assistant" (static) */
    int turn;           /* which message (0-based; -1 for the system prompt and BOS/EOS of none) */
    int start, end;     /* tokens [start, end) */
} ChatSegment;

typedef struct {
    int *tokens;
    int n;
    ChatSegment *segments;
    int n_segments;
    ChatTemplate template_used; /* never CHAT_DEFAULT */
    char *text;                 /* the rendered string (a tokenizer.json's), else NULL */
} ChatPrompt;

/* The template a tokenizer_config.json's Jinja text is, recognised by its
 * content: Llama 2 ([INST] and <<SYS>>), Llama 3 (<|start_header_id|>, not
 * the 3.1 form with its date preamble) or ChatML (<|im_start|>). False (err
 * says what to do) for any other, or none. */
bool chat_template_recognise(const char *jinja, ChatTemplate *t, StepError *err);

/* Assemble system (may be NULL) and messages (alternating user, assistant,
 * ..., ending with user) with the template.
 *
 * With a tokenizer.json, as Hugging Face's apply_chat_template then encode:
 * the conversation is rendered to one string (ChatPrompt.text) and encoded
 * once, special tokens matched; each token is credited to the rendered part
 * its first non-blank byte lies in. The strings (content stripped where the template
 * strips it):
 * llama2: per user turn: BOS "[INST] " [first, with a system prompt:
 *   "<<SYS>>\n" system "\n<</SYS>>\n\n"] user " [/INST]" [" " answer " " EOS]
 * llama3: BOS [header("system") system "<|eot_id|>"], per message
 *   header(role) content "<|eot_id|>", then header("assistant"), where
 *   header(r) = "<|start_header_id|>" r "<|end_header_id|>\n\n"
 * chatml: ["<|im_start|>system\n" system "<|im_end|>\n"], per message
 *   "<|im_start|>" role "\n" content "<|im_end|>\n", then "<|im_start|>assistant\n"
 *
 * With a llama2.c vocabulary, which has no special tokens to match, each
 * part is encoded on its own (with the tokenizer's dummy prefix), so that
 * every token has one origin:
 *
 * llama2, per user turn k (and its answer, if any):
 *   BOS "[INST]" [k = 0 and a system prompt: "<<SYS>>" system "<</SYS>>"] user "[/INST]"
 *   [answer EOS]
 * chatml:
 *   BOS ["<|im_start|>" "system" system "<|im_end|>"]
 *   per message: "<|im_start|>" role content "<|im_end|>", then "<|im_start|>" "assistant"
 *
 * Fails on an unknown role, a missing content, or a conversation that does
 * not alternate and end with the user. */
bool chat_assemble(const Tokenizer *tok, ChatTemplate t, const char *system,
                   const ChatMessage *messages, int n_messages, ChatPrompt *out, StepError *err);

void chat_prompt_free(ChatPrompt *p);

/* The conversation of a JSON object {"system": S (optional), "messages":
 * [{"role", "content"}, ...]}: *messages is malloc'd (caller frees), the
 * strings point into o. Roles and order are checked by chat_assemble. */
struct cJSON;
bool chat_conversation_from_json(const struct cJSON *o, const char **system, ChatMessage **messages,
                                 int *n, StepError *err);

#endif
