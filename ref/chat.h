/* chat.h: a conversation (system prompt, history, user message) assembled
 * into one token sequence by a chat template, remembering which tokens came
 * from where. docs/batching.md spells out both templates. */
#ifndef STEPWISE_CHAT_H
#define STEPWISE_CHAT_H

#include "error.h"
#include "tokenizer.h"

typedef enum { CHAT_LLAMA2, CHAT_CHATML } ChatTemplate;

/* "llama2" or "chatml". */
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
} ChatPrompt;

/* Assemble system (may be NULL) and messages (alternating user, assistant,
 * ..., ending with user) with the template. Each part is encoded on its own
 * (with the tokenizer's dummy prefix), so that every token has one origin:
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

#endif
