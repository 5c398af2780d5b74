/* chat_input.c: a conversation's parts read from JSON (chat.h). Apart from
 * chat.c, which assembles them, so that the assembly knows no JSON. */
#include <cjson/cJSON.h>
#include <stdlib.h>

#include "ref/text/chat.h"

/* o's array `name` in *list, and room for its items (`size` bytes each,
 * zeroed) in *items; both NULL when it is absent and not needed. */
static bool array_field(const cJSON *o, const char *name, bool need, const char *shape, size_t size,
                        const cJSON **list, void **items, StepError *err) {
    *list = cJSON_GetObjectItemCaseSensitive(o, name);
    *items = NULL;
    if (*list == NULL && !need) return true;
    if (!cJSON_IsArray(*list)) return step_fail(err, "%s must be %s", name, shape);
    int n = cJSON_GetArraySize(*list);
    *items = calloc((size_t)(n > 0 ? n : 1), size);
    return *items != NULL || step_fail(err, "out of memory");
}

/* in->memory from o's "memory": an array of strings. */
static bool read_memory(const cJSON *o, ChatInput *in, StepError *err) {
    const cJSON *list, *note;
    void *room;
    if (!array_field(o, "memory", false, "an array of strings", sizeof(char *), &list, &room, err))
        return false;
    const char **notes = room;
    in->memory = notes;
    cJSON_ArrayForEach(note, list) {
        if (!cJSON_IsString(note))
            return step_fail(err, "memory note %d must be a string", in->n_memory);
        notes[in->n_memory++] = note->valuestring;
    }
    return true;
}

/* in->documents from o's "documents": an array of {"id", "text"}. */
static bool read_documents(const cJSON *o, ChatInput *in, StepError *err) {
    const cJSON *list, *doc;
    void *room;
    if (!array_field(o, "documents", false, "an array of {\"id\", \"text\"}", sizeof(ChatDocument),
                     &list, &room, err))
        return false;
    ChatDocument *docs = room;
    in->documents = docs;
    cJSON_ArrayForEach(doc, list) {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(doc, "id");
        const cJSON *text = cJSON_GetObjectItemCaseSensitive(doc, "text");
        if (!cJSON_IsString(id) || !cJSON_IsString(text))
            return step_fail(err, "document %d needs a string \"id\" and a string \"text\"",
                             in->n_documents);
        docs[in->n_documents++] = (ChatDocument){.id = id->valuestring, .text = text->valuestring};
    }
    return true;
}

/* in->messages from o's "messages"; role and content NULL where absent. */
static bool read_messages(const cJSON *o, bool need, ChatInput *in, StepError *err) {
    const cJSON *list, *msg;
    void *room;
    if (!array_field(o, "messages", need, "an array", sizeof(ChatMessage), &list, &room, err))
        return false;
    ChatMessage *m = room;
    in->messages = m;
    cJSON_ArrayForEach(msg, list) {
        const cJSON *role = cJSON_GetObjectItemCaseSensitive(msg, "role");
        const cJSON *content = cJSON_GetObjectItemCaseSensitive(msg, "content");
        m[in->n_messages].role = cJSON_IsString(role) ? role->valuestring : NULL;
        m[in->n_messages++].content = cJSON_IsString(content) ? content->valuestring : NULL;
    }
    return true;
}

bool chat_input_from_json(const cJSON *o, bool need_messages, ChatInput *in, StepError *err) {
    *in = (ChatInput){0};
    const cJSON *sys = cJSON_GetObjectItemCaseSensitive(o, "system");
    if (sys != NULL && !cJSON_IsString(sys)) return step_fail(err, "system must be a string");
    in->system = sys != NULL ? sys->valuestring : NULL;
    bool ok = read_memory(o, in, err) && read_documents(o, in, err) &&
              read_messages(o, need_messages, in, err);
    if (!ok) chat_input_free(in);
    return ok;
}

void chat_input_free(ChatInput *in) {
    free((void *)in->memory);
    free((void *)in->documents);
    free((void *)in->messages);
    *in = (ChatInput){0};
}
