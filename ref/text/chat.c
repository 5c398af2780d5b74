/* chat.c: see chat.h. */
#include "ref/text/chat.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ref/util/file_util.h"
#include "ref/text/hf_tokenizer.h"
#include "ref/util/text_buffer.h"

static const char *const TEMPLATE_NAMES[] = {"default", "llama2", "chatml", "llama3", "none"};

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

/* Whether the system turn has anything in it. */
static bool has_system_turn(const ChatInput *in) {
    return in->system != NULL || in->n_memory > 0 || in->n_documents > 0;
}

/* The system turn's parts with a llama2.c vocabulary: the system prompt,
 * then "Memory:" and each note, then "Document <id>:" and each document. */
static bool add_system_parts(Builder *b, const ChatInput *in) {
    bool ok = in->system == NULL || add_text(b, in->system, "system", -1);
    for (int k = 0; ok && k < in->n_memory; k++)
        ok = add_text(b, "Memory:", "marker", k) && add_text(b, in->memory[k], "memory", k);
    for (int k = 0; ok && k < in->n_documents; k++) {
        char label[96];
        snprintf(label, sizeof label, "Document %s:", in->documents[k].id);
        ok = add_text(b, label, "marker", k) &&
             add_text(b, in->documents[k].text, b->p->labels[k], k);
    }
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

static bool assemble_llama2(Builder *b, const ChatInput *in) {
    const ChatMessage *m = in->messages;
    int n = in->n_messages;
    bool ok = true;
    for (int i = 0; ok && i < n; i += 2) {
        ok = add_special(b, TOKEN_BOS, "bos", i) && add_text(b, "[INST]", "marker", i);
        if (ok && i == 0 && has_system_turn(in))
            ok = add_text(b, "<<SYS>>", "marker", -1) && add_system_parts(b, in) &&
                 add_text(b, "<</SYS>>", "marker", -1);
        ok = ok && add_text(b, m[i].content, "user", i) && add_text(b, "[/INST]", "marker", i);
        if (ok && i + 1 < n)
            ok = add_text(b, m[i + 1].content, "assistant", i + 1) &&
                 add_special(b, TOKEN_EOS, "eos", i + 1);
    }
    return ok;
}

static bool assemble_chatml(Builder *b, const ChatInput *in) {
    const ChatMessage *m = in->messages;
    int n = in->n_messages;
    bool ok = add_special(b, TOKEN_BOS, "bos", -1);
    if (ok && has_system_turn(in))
        ok = add_text(b, "<|im_start|>", "marker", -1) && add_text(b, "system", "marker", -1) &&
             add_system_parts(b, in) && add_text(b, "<|im_end|>", "marker", -1);
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
    const char *source; /* a ChatSegment's source */
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

/* Cut the rendered text from byte `from` on down to [from + a, b): the
 * spans are moved with it, and those left empty dropped. */
static void keep_only(Render *r, size_t from, int first_span, size_t a, size_t b) {
    if (!r->text.ok) return;
    memmove(r->text.s + from, r->text.s + a, b - a);
    r->text.n = from + (b - a);
    r->text.s[r->text.n] = '\0';
    int n = first_span;
    for (int i = first_span; i < r->n_spans; i++) {
        Span sp = r->spans[i];
        size_t start = sp.start < a ? a : sp.start, end = sp.end > b ? b : sp.end;
        if (start >= end) continue;
        sp.start = from + (start - a), sp.end = from + (end - a);
        r->spans[n++] = sp;
    }
    r->n_spans = n;
}

/* The system turn's text: the system prompt, "Memory: " note, ...,
 * "Document <id>: " text, ..., joined by blank lines. strip: trim the
 * whole text's two ends, as templates that trim the content do (after the
 * joining, as Jinja's trim of one string would). */
static void render_system_parts(Render *r, const ChatInput *in, const ChatPrompt *p, bool strip) {
    size_t from = r->text.n;
    int first_span = r->n_spans, k = 0;
    if (in->system != NULL) {
        k++;
        emit_str(r, in->system, "system", -1);
    }
    for (int i = 0; i < in->n_memory; i++) {
        if (k++ > 0) emit_str(r, "\n\n", "marker", i);
        emit_str(r, "Memory: ", "marker", i);
        emit_str(r, in->memory[i], "memory", i);
    }
    for (int i = 0; i < in->n_documents; i++) {
        if (k++ > 0) emit_str(r, "\n\n", "marker", i);
        emit_str(r, "Document ", "marker", i);
        emit_str(r, in->documents[i].id, "marker", i);
        emit_str(r, ": ", "marker", i);
        emit_str(r, in->documents[i].text, p->labels[i], i);
    }
    if (!strip || !r->text.ok) return;
    size_t a = from, b = r->text.n;
    while (a < b && is_blank(r->text.s[a])) a++;
    while (b > a && is_blank(r->text.s[b - 1])) b--;
    keep_only(r, from, first_span, a, b);
}

/* A special token's text (BOS, EOS) for the template, "" when it has none. */
static const char *special_text(const Tokenizer *tok, int id) {
    return id >= 0 && id < tok->hf->n_ids ? tok->hf->bytes[id] : "";
}

static void render_llama2(Render *r, const Tokenizer *tok, const ChatInput *in,
                          const ChatPrompt *p) {
    const ChatMessage *m = in->messages;
    int n = in->n_messages;
    for (int i = 0; i < n; i += 2) {
        emit_str(r, special_text(tok, tok->bos_id), "bos", i);
        emit_str(r, "[INST] ", "marker", i);
        bool sys = i == 0 && has_system_turn(in);
        if (sys) { /* the template strips system + user as one string */
            emit_str(r, "<<SYS>>\n", "marker", -1);
            render_system_parts(r, in, p, false);
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

static void render_llama3(Render *r, const Tokenizer *tok, const ChatInput *in,
                          const ChatPrompt *p) {
    const ChatMessage *m = in->messages;
    int n = in->n_messages;
    emit_str(r, special_text(tok, tok->bos_id), "bos", -1);
    if (has_system_turn(in)) {
        llama3_header(r, "system", -1);
        render_system_parts(r, in, p, true);
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

/* Without a system turn, Qwen's template inserts its default system prompt;
 * memory notes or documents make a system turn of their own, as a system
 * message would. */
static void render_chatml(Render *r, const Tokenizer *tok, const ChatInput *in,
                          const ChatPrompt *p) {
    const ChatMessage *m = in->messages;
    int n = in->n_messages;
    const char *jinja = tok->hf->chat_template;
    ChatInput with_default = *in;
    if (!has_system_turn(in) && jinja != NULL && strstr(jinja, QWEN_DEFAULT_SYSTEM) != NULL)
        with_default.system = QWEN_DEFAULT_SYSTEM;
    if (has_system_turn(&with_default)) {
        emit_str(r, "<|im_start|>system\n", "marker", -1);
        render_system_parts(r, &with_default, p, false);
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

/* No template: BOS when the tokenizer adds one, the system turn's parts,
 * a blank line, the prompt. */
static void render_plain(Render *r, const Tokenizer *tok, const ChatInput *in, const ChatPrompt *p,
                         const char *prompt) {
    if (tok->add_bos) emit_str(r, special_text(tok, tok->bos_id), "bos", -1);
    render_system_parts(r, in, p, false);
    if (has_system_turn(in)) emit_str(r, "\n\n", "marker", 0);
    emit_str(r, prompt, "user", 0);
}

static bool chat_render_and_encode(const Tokenizer *tok, ChatTemplate t, const ChatInput *in,
                                   const char *prompt, ChatPrompt *out, StepError *err) {
    Render r = {.text = TEXT_BUFFER_INIT};
    if (t == CHAT_LLAMA2)
        render_llama2(&r, tok, in, out);
    else if (t == CHAT_LLAMA3)
        render_llama3(&r, tok, in, out);
    else if (t == CHAT_CHATML)
        render_chatml(&r, tok, in, out);
    else
        render_plain(&r, tok, in, out, prompt);
    bool ok = !r.text.ok       ? step_fail(err, "chat: out of memory")
              : r.n_spans == 0 ? step_fail(err, "chat: nothing to encode")
                               : true;
    if (ok) ok = tokenizer_encode(tok, r.text.s, false, &out->tokens, &out->n, err);
    if (ok) ok = credit_tokens(tok, &r, out, err);
    free(r.spans);
    out->text = r.text.s;
    return ok;
}

/* The documents' sources, "document:<id>", owned by the prompt (ids checked). */
static bool make_labels(const ChatInput *in, ChatPrompt *out, StepError *err) {
    if (in->n_documents == 0) return true;
    out->labels = calloc((size_t)in->n_documents, sizeof *out->labels);
    if (out->labels == NULL) return step_fail(err, "chat: out of memory");
    out->n_labels = in->n_documents;
    for (int k = 0; k < in->n_documents; k++) {
        const char *id = in->documents[k].id;
        if (id == NULL || !file_name_is_plain(id, 64))
            return step_fail(err,
                             "document %d: its id may only use letters, digits, '.', '_' and '-' "
                             "(64 at most)",
                             k);
        if (in->documents[k].text == NULL) return step_fail(err, "document %s has no text", id);
        size_t size = strlen("document:") + strlen(id) + 1;
        if ((out->labels[k] = malloc(size)) == NULL) return step_fail(err, "chat: out of memory");
        snprintf(out->labels[k], size, "document:%s", id);
    }
    return true;
}

/* Both entry points: the checks, then render and encode (a tokenizer.json),
 * or build part by part (a llama2.c vocabulary). */
static bool assemble(const Tokenizer *tok, ChatTemplate t, const ChatInput *in, const char *prompt,
                     ChatPrompt *out, StepError *err) {
    memset(out, 0, sizeof *out);
    out->template_used = t;
    for (int k = 0; k < in->n_memory; k++)
        if (in->memory[k] == NULL) return step_fail(err, "memory note %d is not text", k);
    bool ok = make_labels(in, out, err);
    if (ok && tok->hf != NULL) {
        ok = chat_render_and_encode(tok, t, in, prompt, out, err);
    } else if (ok && t == CHAT_LLAMA3) {
        ok = step_fail(err, "chat: llama3 needs its special tokens: a tokenizer.json's vocabulary");
    } else if (ok) {
        Builder b = {.tok = tok, .p = out, .err = err};
        if (t == CHAT_LLAMA2)
            ok = assemble_llama2(&b, in);
        else if (t == CHAT_CHATML)
            ok = assemble_chatml(&b, in);
        else
            ok = (!tok->add_bos || tok->bos_id < 0 || add_special(&b, tok->bos_id, "bos", -1)) &&
                 add_system_parts(&b, in) && add_text(&b, prompt, "user", 0);
    }
    if (!ok) chat_prompt_free(out);
    return ok;
}

bool chat_assemble(const Tokenizer *tok, ChatTemplate t, const ChatInput *in, ChatPrompt *out,
                   StepError *err) {
    memset(out, 0, sizeof *out);
    if (!check_conversation(in->messages, in->n_messages, err)) return false;
    if (t == CHAT_NONE) return step_fail(err, "chat: a conversation needs a template");
    if (t == CHAT_DEFAULT && tok->hf != NULL &&
        !chat_template_recognise(tok->hf->chat_template, &t, err))
        return false;
    if (t == CHAT_DEFAULT) t = CHAT_LLAMA2;
    return assemble(tok, t, in, NULL, out, err);
}

bool chat_assemble_plain(const Tokenizer *tok, const ChatInput *in, const char *prompt,
                         ChatPrompt *out, StepError *err) {
    memset(out, 0, sizeof *out);
    if (in->system != NULL || in->n_messages > 0)
        return step_fail(err, "a plain prompt has no system prompt or messages");
    return assemble(tok, CHAT_NONE, in, prompt, out, err);
}

bool chat_parts_fit(const ChatPrompt *p, int window, StepError *err) {
    for (int s = 0; s < p->n_segments;) {
        const ChatSegment *first = &p->segments[s];
        bool memory = strcmp(first->source, "memory") == 0;
        bool part = memory || strncmp(first->source, "document:", 9) == 0;
        int n = 0;
        for (; s < p->n_segments && p->segments[s].source == first->source &&
               p->segments[s].turn == first->turn;
             s++)
            n += p->segments[s].end - p->segments[s].start;
        if (part && n > window) {
            if (memory)
                return step_fail(err, "memory note %d alone has %d tokens but the context holds %d",
                                 first->turn, n, window);
            return step_fail(err, "%s alone has %d tokens but the context holds %d", first->source,
                             n, window);
        }
    }
    return true;
}

void chat_prompt_free(ChatPrompt *p) {
    free(p->tokens);
    free(p->segments);
    free(p->text);
    for (int k = 0; k < p->n_labels; k++) free(p->labels[k]);
    free(p->labels);
    memset(p, 0, sizeof *p);
}
