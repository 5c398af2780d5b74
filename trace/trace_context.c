/* trace_context.c: the context event (trace_events.h), apart from the
 * other events because summarize's nested run and retrieve's ranking make
 * it the largest. */
#include <stdio.h>
#include <stdlib.h>

#include "trace/trace_events.h"
#include "trace/trace_writer.h"

/* Token ids and, with a tokenizer, their text. */
static void add_tokens_and_text(cJSON *o, const char *ids_name, const char *text_name,
                                const int *tokens, int n, const Tokenizer *tok) {
    cJSON_AddItemToObject(o, ids_name, trace_int_array(tokens, n));
    if (tok == NULL) return;
    char *text = tokenizer_decode_tokens(tok, tokens, n, -1);
    cJSON_AddStringToObject(o, text_name, text != NULL ? text : "");
    free(text);
}

/* The parts put in, as a chat event's segments: {"source": "summary" or
 * "document:chunk-<id>", "start", "end"} (positions in the new window). */
static cJSON *inserted_parts(const ContextShift *shift) {
    cJSON *parts = cJSON_CreateArray();
    int at = shift->inserted_at;
    char source[48];
    int n = shift->summary != NULL ? 1 : shift->retrieval->n_returned;
    for (int i = 0; i < n; i++) {
        int len = shift->n_inserted;
        snprintf(source, sizeof source, "summary");
        if (shift->summary == NULL) {
            const ScoredChunk *c = &shift->retrieval->chunks[shift->retrieval->returned[i]];
            len = c->n_tokens;
            snprintf(source, sizeof source, "document:chunk-%d", c->id);
        }
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "source", source);
        cJSON_AddNumberToObject(o, "start", at);
        cJSON_AddNumberToObject(o, "end", at + len);
        cJSON_AddItemToArray(parts, o);
        at += len;
    }
    return parts;
}

/* summarize: the nested run, {"prompt_tokens", "tokens", "text",
 * "stop_reason", "macs"}. */
static cJSON *summary_object(const SummaryRun *s, const Tokenizer *tok) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToObject(o, "prompt_tokens", trace_int_array(s->prompt, s->n_prompt));
    add_tokens_and_text(o, "tokens", "text", s->tokens, s->n_tokens, tok);
    cJSON_AddStringToObject(o, "stop_reason", s->stop_reason);
    cJSON_AddNumberToObject(o, "macs", (double)s->work.macs);
    return o;
}

/* retrieve: {"query", "k1", "b", "chunks": [{"id", "tokens", "text",
 * "score", "returned"}]}. */
static cJSON *retrieval_object(const Retrieval *r, const Tokenizer *tok) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToObject(o, "query", trace_int_array(r->query, r->n_query));
    cJSON_AddNumberToObject(o, "k1", r->k1);
    cJSON_AddNumberToObject(o, "b", r->b);
    cJSON *chunks = cJSON_AddArrayToObject(o, "chunks");
    for (int i = 0; i < r->n_chunks; i++) {
        const ScoredChunk *c = &r->chunks[i];
        cJSON *chunk = cJSON_CreateObject();
        cJSON_AddNumberToObject(chunk, "id", c->id);
        add_tokens_and_text(chunk, "tokens", "text", c->tokens, c->n_tokens, tok);
        cJSON_AddNumberToObject(chunk, "score", c->score);
        cJSON_AddBoolToObject(chunk, "returned", c->returned);
        cJSON_AddItemToArray(chunks, chunk);
    }
    return o;
}

cJSON *trace_event_context(const ContextShift *shift, uint64_t bytes_per_token,
                           const Tokenizer *tok) {
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "event", "context");
    cJSON_AddStringToObject(e, "policy", shift->policy);
    cJSON_AddNumberToObject(e, "window", shift->window);
    cJSON_AddNumberToObject(e, "first_dropped", shift->first_dropped);
    cJSON_AddItemToObject(e, "dropped", trace_int_array(shift->dropped, shift->n_dropped));
    cJSON_AddNumberToObject(e, "kept", shift->kept);
    if (shift->summary != NULL || shift->retrieval != NULL) {
        cJSON_AddNumberToObject(e, "inserted_at", shift->inserted_at);
        add_tokens_and_text(e, "inserted", "inserted_text", shift->inserted, shift->n_inserted,
                            tok);
        cJSON_AddItemToObject(e, "inserted_parts", inserted_parts(shift));
    }
    if (shift->retrieval != NULL)
        cJSON_AddNumberToObject(e, "removed_retrieved", shift->removed_retrieved);
    if (shift->summary != NULL)
        cJSON_AddItemToObject(e, "summary", summary_object(shift->summary, tok));
    if (shift->retrieval != NULL)
        cJSON_AddItemToObject(e, "retrieval", retrieval_object(shift->retrieval, tok));
    cJSON_AddNumberToObject(e, "positions_before", shift->positions_before);
    cJSON_AddNumberToObject(e, "positions_after", shift->positions_after);
    cJSON_AddNumberToObject(e, "cache_bytes_before",
                            (double)(bytes_per_token * (uint64_t)shift->positions_before));
    cJSON_AddNumberToObject(e, "cache_bytes_after",
                            (double)(bytes_per_token * (uint64_t)shift->positions_after));
    cJSON_AddStringToObject(e, "why_rebuild",
                            "each cached K row carries the RoPE rotation of the position it was "
                            "computed at; the kept tokens move to new positions, so their K (and "
                            "V) are computed again by prefilling them");
    return e;
}
