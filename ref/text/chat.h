/* chat.h: a conversation (system prompt, history, user message) assembled
 * into one token sequence by a chat template, remembering which tokens came
 * from where. docs/batching.md spells out the templates; docs/hf-models.md
 * how a tokenizer.json's own template is recognised. */
#ifndef STEPWISE_CHAT_H
#define STEPWISE_CHAT_H

#include "ref/util/error.h"
#include "ref/text/tokenizer.h"

/* CHAT_DEFAULT: the tokenizer's own (a tokenizer_config.json's template,
 * recognised), or llama2 for a llama2.c vocabulary. CHAT_NONE: no template,
 * for a plain prompt with memory notes or documents (chat_assemble_plain);
 * not a name --chat-template takes. */
typedef enum { CHAT_DEFAULT, CHAT_LLAMA2, CHAT_CHATML, CHAT_LLAMA3, CHAT_NONE } ChatTemplate;

/* "default", "llama2", "chatml" or "llama3" ("none" is not parsed). */
bool chat_template_parse(const char *name, ChatTemplate *t, StepError *err);
const char *chat_template_name(ChatTemplate t);

typedef struct {
    const char *role; /* "user" or "assistant" */
    const char *content;
} ChatMessage;

/* A retrieved document: an id (letters, digits, '.', '_', '-'; 64 at most)
 * and its text. */
typedef struct {
    const char *id;
    const char *text;
} ChatDocument;

/* Everything a prompt is assembled from. Memory notes are saved text (what
 * a chat product's "memory" is); documents are text retrieved for this
 * turn. Neither changes the weights: they are tokens in the prompt. */
typedef struct {
    const char *system;        /* may be NULL */
    const char *const *memory; /* [n_memory] notes */
    int n_memory;
    const ChatDocument *documents; /* [n_documents] */
    int n_documents;
    const ChatMessage *messages; /* [n_messages] user, assistant, ..., user */
    int n_messages;
} ChatInput;

/* Where a run of tokens came from. */
typedef struct {
    /* "bos", "eos", "marker", "system", "user", "assistant", "memory"
     * (static), or "document:<id>" (owned by the ChatPrompt) */
    const char *source;
    int turn;       /* which message, note or document (0-based; -1 for the system
                       prompt and BOS/EOS of none) */
    int start, end; /* tokens [start, end) */
} ChatSegment;

typedef struct {
    int *tokens;
    int n;
    ChatSegment *segments;
    int n_segments;
    ChatTemplate template_used; /* never CHAT_DEFAULT */
    char *text;                 /* the rendered string (a tokenizer.json's), else NULL */
    char **labels;              /* [n_labels] the "document:<id>" sources */
    int n_labels;
} ChatPrompt;

/* The template a tokenizer_config.json's Jinja text is, recognised by its
 * content: Llama 2 ([INST] and <<SYS>>), Llama 3 (<|start_header_id|>, not
 * the 3.1 form with its date preamble) or ChatML (<|im_start|>). False (err
 * says what to do) for any other, or none. */
bool chat_template_recognise(const char *jinja, ChatTemplate *t, StepError *err);

/* Assemble in->system, memory, documents and messages (alternating user,
 * assistant, ..., ending with user) with the template.
 *
 * Memory notes and documents go where products put them: in the system
 * turn, after the system prompt and before the history (docs/context-window.md,
 * "Memory notes and documents"). With a tokenizer.json the system turn's
 * text is the parts joined by a blank line ("\n\n"): system, then
 * "Memory: " note for each note, then "Document " id ": " text for each
 * document; a system turn is opened for them when there is no system
 * prompt. With a llama2.c vocabulary the labels "Memory:" and
 * "Document <id>:" are marker parts of their own.
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
bool chat_assemble(const Tokenizer *tok, ChatTemplate t, const ChatInput *in, ChatPrompt *out,
                   StepError *err);

/* A plain prompt (no chat template) with in's memory notes and documents
 * before it: BOS (when the tokenizer adds one), "Memory:" note ...,
 * "Document <id>:" text ..., then the prompt (source "user", turn 0), each
 * part encoded on its own. in->system and messages must be empty. */
bool chat_assemble_plain(const Tokenizer *tok, const ChatInput *in, const char *prompt,
                         ChatPrompt *out, StepError *err);

/* Fails when one memory note or document alone takes more than `window`
 * tokens (it could never be in the window with anything else). */
bool chat_parts_fit(const ChatPrompt *p, int window, StepError *err);

void chat_prompt_free(ChatPrompt *p);

/* The parts of a JSON object {"system": S (optional), "memory": [text, ...]
 * (optional), "documents": [{"id", "text"}, ...] (optional), "messages":
 * [{"role", "content"}, ...]} (required when need_messages). The arrays are
 * malloc'd (chat_input_free), the strings point into o. Roles and order
 * are checked by chat_assemble. */
struct cJSON;
bool chat_input_from_json(const struct cJSON *o, bool need_messages, ChatInput *in, StepError *err);
void chat_input_free(ChatInput *in);

#endif
