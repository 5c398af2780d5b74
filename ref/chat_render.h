/* chat_render.h: a chat template rendered to one string and encoded once,
 * as Hugging Face's apply_chat_template and a tokenizer.json do it; each
 * token credited to the rendered part its first non-blank byte lies in. The strings
 * are spelled out in chat.h. */
#ifndef STEPWISE_CHAT_RENDER_H
#define STEPWISE_CHAT_RENDER_H

#include "chat.h"

/* The messages are checked (chat_assemble did); t is never CHAT_DEFAULT.
 * out->template_used is set by the caller. */
bool chat_render_and_encode(const Tokenizer *tok, ChatTemplate t, const char *system,
                            const ChatMessage *messages, int n_messages, ChatPrompt *out,
                            StepError *err);

#endif
