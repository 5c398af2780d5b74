/* chat.c: see chat.h. */
#include "chat.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "chat_render.h"
#include "tokenizer_json.h"

static const char *const TEMPLATE_NAMES[] = {"default", "llama2", "chatml", "llama3"};

bool chat_template_parse(const char *name, ChatTemplate *t, StepError *err) {
    for (int k = 0; k < 4; k++) {
        if (strcmp(name, TEMPLATE_NAMES[k]) == 0) {
            *t = (ChatTemplate)k;
            return true;
        }
    }
    return step_fail(err, "unknown --chat-template '%s' (default, llama2, chatml, llama3)", name);
}

const char *chat_template_name(ChatTemplate t) {
    return TEMPLATE_NAMES[t];
}

bool chat_template_recognise(const char *jinja, ChatTemplate *t, StepError *err) {
    if (jinja == NULL)
        return step_fail(err, "the tokenizer has no chat template: give --chat-template "
                              "(llama2, llama3, chatml)");
    if (strstr(jinja, "<|start_header_id|>") != NULL) {
        if (strstr(jinja, "Cutting Knowledge Date") != NULL)
            return step_fail(err, "the chat template is Llama 3.1's (a dated system preamble and "
                                  "tools), which stepwise does not render: give --chat-template "
                                  "llama3 for the plain Llama 3 form");
        *t = CHAT_LLAMA3;
        return true;
    }
    if (strstr(jinja, "<|im_start|>") != NULL) {
        *t = CHAT_CHATML;
        return true;
    }
    if (strstr(jinja, "[INST]") != NULL && strstr(jinja, "<<SYS>>") != NULL) {
        *t = CHAT_LLAMA2;
        return true;
    }
    return step_fail(err, "the tokenizer's chat template is not one stepwise knows (llama2, "
                          "llama3, chatml): give --chat-template NAME");
}

/* The sequence being built. */
typedef struct {
    const Tokenizer *tok;
    ChatPrompt *p;
    int cap_tokens, cap_segments;
    StepError *err;
} Builder;

static bool push_segment(Builder *b, const char *source, int turn, int start) {
    ChatPrompt *p = b->p;
    if (p->n_segments == b->cap_segments) {
        int cap = b->cap_segments ? 2 * b->cap_segments : 16;
        ChatSegment *s = realloc(p->segments, (size_t)cap * sizeof *s);
        if (s == NULL) return step_fail(b->err, "chat: out of memory");
        p->segments = s, b->cap_segments = cap;
    }
    p->segments[p->n_segments++] =
        (ChatSegment){.source = source, .turn = turn, .start = start, .end = p->n};
    return true;
}

static bool push_tokens(Builder *b, const int *ids, int n) {
    ChatPrompt *p = b->p;
    if (p->n + n > b->cap_tokens) {
        int cap = b->cap_tokens ? b->cap_tokens : 64;
        while (cap < p->n + n) cap *= 2;
        int *t = realloc(p->tokens, (size_t)cap * sizeof *t);
        if (t == NULL) return step_fail(b->err, "chat: out of memory");
        p->tokens = t, b->cap_tokens = cap;
    }
    memcpy(p->tokens + p->n, ids, (size_t)n * sizeof(int));
    p->n += n;
    return true;
}

static bool add_special(Builder *b, int id, const char *source, int turn) {
    int start = b->p->n;
    return push_tokens(b, &id, 1) && push_segment(b, source, turn, start);
}

/* Encode text on its own (no BOS) and append it as one segment. */
static bool add_text(Builder *b, const char *text, const char *source, int turn) {
    int *ids, n, start = b->p->n;
    if (!tokenizer_encode(b->tok, text, false, &ids, &n, b->err)) return false;
    bool ok = push_tokens(b, ids, n) && push_segment(b, source, turn, start);
    free(ids);
    return ok;
}

static bool check_conversation(const ChatMessage *m, int n, StepError *err) {
    if (n == 0) return step_fail(err, "chat: no messages");
    for (int i = 0; i < n; i++) {
        if (m[i].role == NULL) return step_fail(err, "message %d has no role", i);
        bool user = strcmp(m[i].role, "user") == 0, assistant = strcmp(m[i].role, "assistant") == 0;
        if (!user && !assistant)
            return step_fail(err, "message %d has an unknown role '%s' (user, assistant)", i,
                             m[i].role);
        if (m[i].content == NULL) return step_fail(err, "message %d has no content", i);
        if (user != (i % 2 == 0))
            return step_fail(err, "message %d: messages alternate user, assistant, user, ...", i);
    }
    if (strcmp(m[n - 1].role, "user") != 0)
        return step_fail(err, "the last message must be the user's");
    return true;
}

static bool assemble_llama2(Builder *b, const char *system, const ChatMessage *m, int n) {
    bool ok = true;
    for (int i = 0; ok && i < n; i += 2) {
        ok = add_special(b, TOKEN_BOS, "bos", i) && add_text(b, "[INST]", "marker", i);
        if (ok && i == 0 && system != NULL)
            ok = add_text(b, "<<SYS>>", "marker", -1) && add_text(b, system, "system", -1) &&
                 add_text(b, "<</SYS>>", "marker", -1);
        ok = ok && add_text(b, m[i].content, "user", i) && add_text(b, "[/INST]", "marker", i);
        if (ok && i + 1 < n)
            ok = add_text(b, m[i + 1].content, "assistant", i + 1) &&
                 add_special(b, TOKEN_EOS, "eos", i + 1);
    }
    return ok;
}

static bool assemble_chatml(Builder *b, const char *system, const ChatMessage *m, int n) {
    bool ok = add_special(b, TOKEN_BOS, "bos", -1);
    if (ok && system != NULL)
        ok = add_text(b, "<|im_start|>", "marker", -1) && add_text(b, "system", "marker", -1) &&
             add_text(b, system, "system", -1) && add_text(b, "<|im_end|>", "marker", -1);
    for (int i = 0; ok && i < n; i++) {
        /* segment sources are static strings: the messages may not outlive us */
        const char *role = strcmp(m[i].role, "user") == 0 ? "user" : "assistant";
        ok = add_text(b, "<|im_start|>", "marker", i) && add_text(b, role, "marker", i) &&
             add_text(b, m[i].content, role, i) && add_text(b, "<|im_end|>", "marker", i);
    }
    return ok && add_text(b, "<|im_start|>", "marker", n) && add_text(b, "assistant", "marker", n);
}

bool chat_assemble(const Tokenizer *tok, ChatTemplate t, const char *system,
                   const ChatMessage *messages, int n_messages, ChatPrompt *out, StepError *err) {
    memset(out, 0, sizeof *out);
    if (!check_conversation(messages, n_messages, err)) return false;
    if (t == CHAT_DEFAULT && tok->hf != NULL &&
        !chat_template_recognise(tok->hf->chat_template, &t, err))
        return false;
    if (t == CHAT_DEFAULT) t = CHAT_LLAMA2;
    out->template_used = t;
    if (tok->hf != NULL)
        return chat_render_and_encode(tok, t, system, messages, n_messages, out, err);
    if (t == CHAT_LLAMA3)
        return step_fail(err,
                         "chat: llama3 needs its special tokens: a tokenizer.json's vocabulary");
    Builder b = {.tok = tok, .p = out, .err = err};
    bool ok = t == CHAT_LLAMA2 ? assemble_llama2(&b, system, messages, n_messages)
                               : assemble_chatml(&b, system, messages, n_messages);
    if (!ok) chat_prompt_free(out);
    return ok;
}

void chat_prompt_free(ChatPrompt *p) {
    free(p->tokens);
    free(p->segments);
    free(p->text);
    memset(p, 0, sizeof *p);
}

bool chat_conversation_from_json(const cJSON *o, const char **system, ChatMessage **messages,
                                 int *n, StepError *err) {
    const cJSON *sys = cJSON_GetObjectItemCaseSensitive(o, "system");
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(o, "messages");
    if (sys != NULL && !cJSON_IsString(sys)) return step_fail(err, "system must be a string");
    if (!cJSON_IsArray(list)) return step_fail(err, "messages must be an array");
    *system = sys != NULL ? sys->valuestring : NULL;
    *n = cJSON_GetArraySize(list);
    *messages = calloc((size_t)(*n > 0 ? *n : 1), sizeof **messages);
    if (*messages == NULL) return step_fail(err, "out of memory");
    int i = 0;
    const cJSON *msg;
    cJSON_ArrayForEach(msg, list) {
        const cJSON *role = cJSON_GetObjectItemCaseSensitive(msg, "role");
        const cJSON *content = cJSON_GetObjectItemCaseSensitive(msg, "content");
        (*messages)[i].role = cJSON_IsString(role) ? role->valuestring : NULL;
        (*messages)[i].content = cJSON_IsString(content) ? content->valuestring : NULL;
        i++;
    }
    return true;
}
