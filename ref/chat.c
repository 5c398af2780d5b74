/* chat.c: see chat.h. */
#include "chat.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "hf_tokenizer.h"
#include "text_buffer.h"

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

/* ---- a tokenizer.json's: rendered to one string, encoded once ---- */

/* One rendered part: text[start, end), where it came from. */
typedef struct {
    size_t start, end;
    const char *source; /* static: "bos", "eos", "marker", "system", "user", "assistant" */
    int turn;
} Span;

/* The string being rendered and its parts. */
typedef struct {
    TextBuffer text;
    Span *spans;
    int n_spans, cap_spans;
} Render;

static void emit(Render *r, const char *text, size_t len, const char *source, int turn) {
    if (!r->text.ok || len == 0) return;
    if (r->n_spans == r->cap_spans) {
        int cap = r->cap_spans ? 2 * r->cap_spans : 16;
        Span *grown = realloc(r->spans, (size_t)cap * sizeof *grown);
        if (grown == NULL) {
            r->text.ok = false;
            return;
        }
        r->spans = grown, r->cap_spans = cap;
    }
    r->spans[r->n_spans++] = (Span){r->text.n, r->text.n + len, source, turn};
    text_buffer_add(&r->text, text, len);
}

static void emit_str(Render *r, const char *text, const char *source, int turn) {
    emit(r, text, strlen(text), source, turn);
}

static bool is_blank(char c) {
    return c == ' ' || (c >= '\t' && c <= '\r');
}

/* text with ASCII whitespace stripped from the left and/or right end, as
 * Jinja's trim and Python's strip() do for these texts. */
static void emit_stripped(Render *r, const char *text, bool left, bool right, const char *source,
                          int turn) {
    size_t a = 0, b = strlen(text);
    while (left && a < b && is_blank(text[a])) a++;
    while (right && b > a && is_blank(text[b - 1])) b--;
    emit(r, text + a, b - a, source, turn);
}

/* A special token's text (BOS, EOS) for the template, "" when it has none. */
static const char *special_text(const Tokenizer *tok, int id) {
    return id >= 0 && id < tok->hf->n_ids ? tok->hf->bytes[id] : "";
}

static void render_llama2(Render *r, const Tokenizer *tok, const char *system, const ChatMessage *m,
                          int n) {
    for (int i = 0; i < n; i += 2) {
        emit_str(r, special_text(tok, tok->bos_id), "bos", i);
        emit_str(r, "[INST] ", "marker", i);
        bool sys = i == 0 && system != NULL;
        if (sys) { /* the template strips system + user as one string */
            emit_str(r, "<<SYS>>\n", "marker", -1);
            emit_str(r, system, "system", -1);
            emit_str(r, "\n<</SYS>>\n\n", "marker", -1);
        }
        emit_stripped(r, m[i].content, !sys, true, "user", i);
        emit_str(r, " [/INST]", "marker", i);
        if (i + 1 < n) {
            emit_str(r, " ", "marker", i + 1);
            emit_stripped(r, m[i + 1].content, true, true, "assistant", i + 1);
            emit_str(r, " ", "marker", i + 1);
            emit_str(r, special_text(tok, tok->eos_id), "eos", i + 1);
        }
    }
}

static void llama3_header(Render *r, const char *role, int turn) {
    emit_str(r, "<|start_header_id|>", "marker", turn);
    emit_str(r, role, "marker", turn);
    emit_str(r, "<|end_header_id|>\n\n", "marker", turn);
}

static void render_llama3(Render *r, const Tokenizer *tok, const char *system, const ChatMessage *m,
                          int n) {
    emit_str(r, special_text(tok, tok->bos_id), "bos", -1);
    if (system != NULL) {
        llama3_header(r, "system", -1);
        emit_stripped(r, system, true, true, "system", -1);
        emit_str(r, "<|eot_id|>", "marker", -1);
    }
    for (int i = 0; i < n; i++) {
        const char *role = strcmp(m[i].role, "user") == 0 ? "user" : "assistant";
        llama3_header(r, role, i);
        emit_stripped(r, m[i].content, true, true, role, i);
        emit_str(r, "<|eot_id|>", "marker", i);
    }
    llama3_header(r, "assistant", n);
}

/* Qwen2.5's template puts this system prompt in when none is given. */
static const char QWEN_DEFAULT_SYSTEM[] =
    "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.";

static void render_chatml(Render *r, const Tokenizer *tok, const char *system, const ChatMessage *m,
                          int n) {
    const char *jinja = tok->hf->chat_template;
    if (system == NULL && jinja != NULL && strstr(jinja, QWEN_DEFAULT_SYSTEM) != NULL)
        system = QWEN_DEFAULT_SYSTEM;
    if (system != NULL) {
        emit_str(r, "<|im_start|>system\n", "marker", -1);
        emit_str(r, system, "system", -1);
        emit_str(r, "<|im_end|>\n", "marker", -1);
    }
    for (int i = 0; i < n; i++) {
        const char *role = strcmp(m[i].role, "user") == 0 ? "user" : "assistant";
        emit_str(r, "<|im_start|>", "marker", i);
        emit_str(r, role, "marker", i);
        emit_str(r, "\n", "marker", i);
        emit_str(r, m[i].content, role, i);
        emit_str(r, "<|im_end|>\n", "marker", i);
    }
    emit_str(r, "<|im_start|>assistant\n", "marker", n);
}

/* Credit each token to the part holding its first byte that is not blank
 * (its first byte, if all are). A token's offset is
 * the sum of the bytes of the tokens before it; a leading space that the
 * text does not have there is a dummy prefix ("▁") and covers nothing. */
static bool credit_tokens(const Tokenizer *tok, const Render *r, ChatPrompt *p, StepError *err) {
    p->segments = malloc(((size_t)p->n + 1) * sizeof *p->segments);
    if (p->segments == NULL) return step_fail(err, "chat: out of memory");
    size_t off = 0;
    int span = 0;
    for (int k = 0; k < p->n; k++) {
        char buf[8];
        int len;
        const char *bytes = tokenizer_decode(tok, -1, p->tokens[k], buf, &len);
        const char *text = r->text.s;
        size_t n = r->text.n;
        bool here = off + (size_t)len <= n && memcmp(text + off, bytes, (size_t)len) == 0;
        if (!here && len > 0 && bytes[0] == ' ' && off < n && text[off] != ' ') len--;
        /* a token that starts with blanks belongs where its first letter is */
        size_t lead = 0;
        while (lead + 1 < (size_t)len && is_blank(bytes[lead])) lead++;
        size_t at = off + lead < n ? off + lead : (n > 0 ? n - 1 : 0);
        while (span + 1 < r->n_spans && r->spans[span].end <= at) span++;
        const Span *s = &r->spans[span];
        ChatSegment *last = p->n_segments > 0 ? &p->segments[p->n_segments - 1] : NULL;
        if (last != NULL && last->source == s->source && last->turn == s->turn)
            last->end = k + 1;
        else
            p->segments[p->n_segments++] =
                (ChatSegment){.source = s->source, .turn = s->turn, .start = k, .end = k + 1};
        off += (size_t)len;
    }
    return true;
}

static bool chat_render_and_encode(const Tokenizer *tok, ChatTemplate t, const char *system,
                                   const ChatMessage *messages, int n_messages, ChatPrompt *out,
                                   StepError *err) {
    Render r = {.text = TEXT_BUFFER_INIT};
    if (t == CHAT_LLAMA2)
        render_llama2(&r, tok, system, messages, n_messages);
    else if (t == CHAT_LLAMA3)
        render_llama3(&r, tok, system, messages, n_messages);
    else
        render_chatml(&r, tok, system, messages, n_messages);
    bool ok = r.text.ok && r.n_spans > 0 ? true : step_fail(err, "chat: out of memory");
    if (ok) ok = tokenizer_encode(tok, r.text.s, false, &out->tokens, &out->n, err);
    if (ok) ok = credit_tokens(tok, &r, out, err);
    free(r.spans);
    if (!ok) {
        free(r.text.s);
        free(out->tokens), free(out->segments);
        out->tokens = NULL, out->segments = NULL;
        return false;
    }
    out->text = r.text.s;
    return true;
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
