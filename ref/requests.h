/* requests.h: reading a batch's requests, one JSON object per line
 * (docs/batching.md lists the fields). */
#ifndef STEPWISE_REQUESTS_H
#define STEPWISE_REQUESTS_H

#include "batch.h"

/* Read path into *out (n requests, caller frees each with batch_request_free
 * and the array with free). Only an unreadable file fails; a line that
 * cannot be a request (malformed JSON, an unknown role, a missing content,
 * max_tokens < 1, a duplicate id, a prompt longer than the context, ...)
 * becomes a request whose `error` says why. Chats are assembled with tmpl;
 * every request starts from `defaults` (sampler, quantization). */
bool requests_load(const char *path, const Model *m, const Tokenizer *tok, ChatTemplate tmpl,
                   const GenerateOptions *defaults, BatchRequest **out, int *n, StepError *err);

#endif
