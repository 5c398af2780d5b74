/* chat_render.c: see chat_render.h. */
#include "chat_render.h"

#include <stdlib.h>
#include <string.h>

#include "tokenizer_json.h"

/* One rendered part: text[start, end), where it came from. */
typedef struct {
    size_t start, end;
    const char *source; /* static: "bos", "eos", "marker", "system", "user", "assistant" */
    int turn;
} Span;

/* The string being rendered and its parts; ok turns false for good when
 * memory runs out. */
typedef struct {
    char *s;
    size_t n, cap;
    Span *spans;
    int n_spans, cap_spans;
    bool ok;
} Render;

static void emit(Render *r, const char *text, size_t len, const char *source, int turn) {
    if (!r->ok || len == 0) return;
    if (r->n + len + 1 > r->cap) {
        size_t cap = r->cap ? r->cap : 256;
        while (r->n + len + 1 > cap) cap *= 2;
        char *grown = realloc(r->s, cap);
        if (grown == NULL) {
            r->ok = false;
            return;
        }
        r->s = grown, r->cap = cap;
    }
    if (r->n_spans == r->cap_spans) {
        int cap = r->cap_spans ? 2 * r->cap_spans : 16;
        Span *grown = realloc(r->spans, (size_t)cap * sizeof *grown);
        if (grown == NULL) {
            r->ok = false;
            return;
        }
        r->spans = grown, r->cap_spans = cap;
    }
    r->spans[r->n_spans++] = (Span){r->n, r->n + len, source, turn};
    memcpy(r->s + r->n, text, len);
    r->n += len;
    r->s[r->n] = '\0';
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
        bool here = off + (size_t)len <= r->n && memcmp(r->s + off, bytes, (size_t)len) == 0;
        if (!here && len > 0 && bytes[0] == ' ' && off < r->n && r->s[off] != ' ') len--;
        /* a token that starts with blanks belongs where its first letter is */
        size_t lead = 0;
        while (lead + 1 < (size_t)len && is_blank(bytes[lead])) lead++;
        size_t at = off + lead < r->n ? off + lead : (r->n > 0 ? r->n - 1 : 0);
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

bool chat_render_and_encode(const Tokenizer *tok, ChatTemplate t, const char *system,
                            const ChatMessage *messages, int n_messages, ChatPrompt *out,
                            StepError *err) {
    Render r = {.ok = true};
    if (t == CHAT_LLAMA2)
        render_llama2(&r, tok, system, messages, n_messages);
    else if (t == CHAT_LLAMA3)
        render_llama3(&r, tok, system, messages, n_messages);
    else
        render_chatml(&r, tok, system, messages, n_messages);
    bool ok = r.ok && r.n_spans > 0 ? true : step_fail(err, "chat: out of memory");
    if (ok) ok = tokenizer_encode(tok, r.s, false, &out->tokens, &out->n, err);
    if (ok) ok = credit_tokens(tok, &r, out, err);
    free(r.spans);
    if (!ok) {
        free(r.s);
        free(out->tokens), free(out->segments);
        out->tokens = NULL, out->segments = NULL;
        return false;
    }
    out->text = r.s;
    return true;
}
