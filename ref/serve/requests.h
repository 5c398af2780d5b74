/* requests.h: reading a batch's requests, one JSON object per line
 * (docs/batching.md lists the fields). */
#ifndef STEPWISE_REQUESTS_H
#define STEPWISE_REQUESTS_H

#include "ref/serve/batch.h"

/* The most max_tokens may ask (1 << 30, as generate's --steps); a batch
 * stops at a full context, and allocates for no more than that. */
#define REQUEST_MAX_TOKENS (1 << 30)

/* The latest arrival a request may ask for: an hour after the start. */
#define REQUEST_MAX_ARRIVAL_MS 3600000

/* Read path into *out (n requests, caller frees each with batch_request_free
 * and the array with free). Only an unreadable file fails; a line that
 * cannot be a request (malformed JSON, an unknown role, a missing content,
 * max_tokens outside [1, 2^30], an arrival_ms beyond an hour, a
 * duplicate id, a prompt longer than the context, ...)
 * becomes a request whose `error` says why. Chats are assembled with tmpl;
 * every request starts from `defaults` (sampler, quantization). */
bool requests_load(const char *path, const Model *m, const Tokenizer *tok, ChatTemplate tmpl,
                   const GenerateOptions *defaults, BatchRequest **out, int *n, StepError *err);

#endif
