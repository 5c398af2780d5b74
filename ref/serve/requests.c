/* requests.c: see requests.h. */
#include "ref/serve/requests.h"

#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ref/util/file_util.h"
#include "ref/util/float_class.h"
#include "ref/util/json_util.h"

static const char *const FIELDS[] = {
    "id",          "prompt", "system", "memory", "documents", "messages",      "max_tokens",
    "temperature", "top_k",  "top_p",  "min_p",  "seed",      "sampler_order", "arrival_ms"};

/* Set r->error (formatted) and return false. */
static bool reject(BatchRequest *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool reject(BatchRequest *r, const char *fmt, ...) {
    StepError e;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e.message, sizeof e.message, fmt, ap);
    va_end(ap);
    free(r->error);
    r->error = strdup(e.message);
    return false;
}

static bool read_id(BatchRequest *r, const cJSON *o, int line) {
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(o, "id");
    char buf[64];
    long long whole;
    if (cJSON_IsString(id)) {
        r->id = strdup(id->valuestring);
    } else if (json_whole_number(id, -1e15, 1e15, &whole)) {
        snprintf(buf, sizeof buf, "%lld", whole);
        r->id = strdup(buf);
    } else {
        snprintf(buf, sizeof buf, "line-%d", line);
        r->id = strdup(buf);
        return reject(r, "line %d: needs an \"id\" (a string or a whole number)", line);
    }
    if (!file_name_is_plain(r->id, 64))
        return reject(r, "id '%s' may only use letters, digits, '.', '_' and '-' (64 at most)",
                      r->id);
    return true;
}

/* The sampler fields, over the defaults. */
static bool read_sampler(BatchRequest *r, const cJSON *o) {
    SamplerParams *p = &r->opt.sampler;
    const cJSON *v;
    const char *why; /* a value that changes class as a float32 (float_class.h) */
    if ((v = cJSON_GetObjectItemCaseSensitive(o, "temperature")) != NULL) {
        if (!cJSON_IsNumber(v)) return reject(r, "temperature must be a number");
        if ((why = float_narrow(v->valuedouble, &p->temperature)) != NULL)
            return reject(r, "temperature %g %s", v->valuedouble, why);
    }
    if ((v = cJSON_GetObjectItemCaseSensitive(o, "top_k")) != NULL) {
        long long k;
        if (!json_whole_number(v, 0, 2147483647.0, &k))
            return reject(r, "top_k must be a whole number >= 0");
        p->top_k = (int)k;
    }
    if ((v = cJSON_GetObjectItemCaseSensitive(o, "top_p")) != NULL) {
        if (!cJSON_IsNumber(v)) return reject(r, "top_p must be a number");
        if ((why = float_narrow(v->valuedouble, &p->top_p)) != NULL)
            return reject(r, "top_p %g %s", v->valuedouble, why);
    }
    if ((v = cJSON_GetObjectItemCaseSensitive(o, "min_p")) != NULL) {
        if (!cJSON_IsNumber(v)) return reject(r, "min_p must be a number");
        if ((why = float_narrow(v->valuedouble, &p->min_p)) != NULL)
            return reject(r, "min_p %g %s", v->valuedouble, why);
    }
    if ((v = cJSON_GetObjectItemCaseSensitive(o, "seed")) != NULL) {
        long long seed;
        if (!json_whole_number(v, 1, 2147483647.0, &seed))
            return reject(r, "seed must be a whole number in [1, 2147483647]");
        p->seed = (uint64_t)seed;
    }
    StepError e;
    if ((v = cJSON_GetObjectItemCaseSensitive(o, "sampler_order")) != NULL &&
        (!cJSON_IsString(v) || !sampler_order_parse(p, v->valuestring, &e)))
        return reject(r, "%s", cJSON_IsString(v) ? e.message : "sampler_order must be a string");
    if (!sampler_params_validate(p, &e)) return reject(r, "%s", e.message);
    return true;
}

/* A conversation (prompt NULL), or a plain prompt with memory notes or
 * documents, assembled into r->chat and r->prompt. */
static bool read_chat(BatchRequest *r, const cJSON *o, const char *prompt, const Model *model,
                      const Tokenizer *tok, ChatTemplate tmpl) {
    ChatInput in;
    StepError e;
    if (!chat_input_from_json(o, prompt == NULL, &in, &e)) return reject(r, "%s", e.message);
    bool ok = prompt == NULL ? chat_assemble(tok, tmpl, &in, &r->chat, &e)
                             : chat_assemble_plain(tok, &in, prompt, &r->chat, &e);
    chat_input_free(&in);
    if (ok) ok = chat_parts_fit(&r->chat, generate_window(&r->opt, &model->config), &e);
    if (!ok) return reject(r, "%s", e.message);
    r->prompt = malloc((size_t)r->chat.n * sizeof(int));
    if (r->prompt == NULL) return reject(r, "out of memory");
    memcpy(r->prompt, r->chat.tokens, (size_t)r->chat.n * sizeof(int));
    r->n_prompt = r->chat.n;
    return true;
}

/* One line into r; false (r->error set) when it cannot be a request. */
static bool read_request(BatchRequest *r, const char *line, int number, const Model *model,
                         const Tokenizer *tok, ChatTemplate tmpl) {
    cJSON *o = json_parse_whole(line);
    if (!cJSON_IsObject(o)) {
        char buf[64];
        snprintf(buf, sizeof buf, "line-%d", number);
        r->id = strdup(buf);
        bool parsed = o != NULL;
        cJSON_Delete(o);
        return reject(r, "line %d: %s", number, parsed ? "not a JSON object" : "not valid JSON");
    }
    bool ok = read_id(r, o, number);
    const cJSON *field;
    cJSON_ArrayForEach(field, o) {
        bool known = false;
        for (size_t i = 0; i < sizeof FIELDS / sizeof FIELDS[0]; i++)
            known |= strcmp(field->string, FIELDS[i]) == 0;
        if (ok && !known) ok = reject(r, "unknown field \"%s\"", field->string);
    }
    const cJSON *prompt = cJSON_GetObjectItemCaseSensitive(o, "prompt");
    const cJSON *messages = cJSON_GetObjectItemCaseSensitive(o, "messages");
    const cJSON *max_tokens = cJSON_GetObjectItemCaseSensitive(o, "max_tokens");
    const cJSON *arrival = cJSON_GetObjectItemCaseSensitive(o, "arrival_ms");
    if (ok && (prompt == NULL) == (messages == NULL))
        ok = reject(r, "give either \"prompt\" or \"messages\"");
    long long steps;
    if (ok && max_tokens != NULL) {
        if (!json_whole_number(max_tokens, -1e15, 1e15, &steps))
            ok = reject(r, "max_tokens must be a whole number");
        else if (steps < 1)
            ok = reject(r, "max_tokens must be at least 1, got %lld", steps);
        else if (steps > REQUEST_MAX_TOKENS)
            ok = reject(r, "max_tokens %lld is more than %d", steps, REQUEST_MAX_TOKENS);
        else
            r->opt.steps = (int)steps;
    }
    if (ok && arrival != NULL) {
        if (!cJSON_IsNumber(arrival) || !(arrival->valuedouble >= 0) ||
            arrival->valuedouble > REQUEST_MAX_ARRIVAL_MS)
            ok = reject(r, "arrival_ms must be a number in [0, %d] (an hour)",
                        REQUEST_MAX_ARRIVAL_MS);
        else
            r->arrival_ms = arrival->valuedouble;
    }
    if (ok) ok = read_sampler(r, o);
    if (ok && prompt != NULL) {
        StepError e;
        if (!cJSON_IsString(prompt))
            ok = reject(r, "prompt must be a string");
        else if (!tokenizer_may_fit(tok, prompt->valuestring, model->config.seq_len))
            ok = reject(r,
                        "the prompt's %zu bytes need more than %d tokens (none covers more than "
                        "%d bytes) but the context holds %d",
                        strlen(prompt->valuestring), model->config.seq_len, tok->max_piece_bytes,
                        model->config.seq_len);
        else if ((r->prompt_text = strdup(prompt->valuestring)) == NULL)
            ok = reject(r, "out of memory");
        else if (cJSON_GetObjectItemCaseSensitive(o, "system") != NULL)
            ok = reject(r, "\"system\" goes with \"messages\"; a plain prompt takes \"memory\" "
                           "and \"documents\"");
        else if (cJSON_HasObjectItem(o, "memory") || cJSON_HasObjectItem(o, "documents"))
            ok = read_chat(r, o, r->prompt_text, model, tok, tmpl);
        else if (!tokenizer_encode(tok, prompt->valuestring, true, &r->prompt, &r->n_prompt, &e))
            ok = reject(r, "%s", e.message);
    } else if (ok) {
        ok = read_chat(r, o, NULL, model, tok, tmpl);
    }
    if (ok && r->n_prompt == 0) ok = reject(r, "the prompt is empty and the tokenizer adds no BOS");
    if (ok && r->n_prompt > model->config.seq_len)
        ok = reject(r, "the assembled prompt has %d tokens but the context holds %d", r->n_prompt,
                    model->config.seq_len);
    cJSON_Delete(o);
    return ok;
}

typedef struct {
    const char *id;
    int index;
} IdAt;

static int by_id_then_index(const void *a, const void *b) {
    const IdAt *x = a, *y = b;
    int order = strcmp(x->id, y->id);
    return order != 0 ? order : (x->index > y->index) - (x->index < y->index);
}

/* Every request whose id an earlier one has is refused. Sorted by id once
 * (comparing each id with every earlier one was quadratic in the file's
 * lines). False when out of memory. */
static bool reject_duplicate_ids(BatchRequest *reqs, int count, const int *lines) {
    IdAt *ids = malloc((size_t)(count > 0 ? count : 1) * sizeof *ids);
    if (ids == NULL) return false;
    int n = 0;
    for (int i = 0; i < count; i++)
        if (reqs[i].id != NULL) ids[n++] = (IdAt){reqs[i].id, i};
    qsort(ids, (size_t)n, sizeof *ids, by_id_then_index);
    for (int k = 1; k < n; k++) {
        BatchRequest *r = &reqs[ids[k].index];
        if (strcmp(ids[k - 1].id, ids[k].id) == 0 && r->error == NULL)
            reject(r, "duplicate id '%s' (line %d)", r->id, lines[ids[k].index]);
    }
    free(ids);
    return true;
}

bool requests_load(const char *path, const Model *m, const Tokenizer *tok, ChatTemplate tmpl,
                   const GenerateOptions *defaults, BatchRequest **out, int *n, StepError *err) {
    char *text;
    if (!file_read_text(path, "requests", &text, err)) return false;
    int cap = 16, count = 0, number = 0, lines_cap = 0;
    int *lines = NULL; /* [count] the line each request came from */
    BatchRequest *reqs = calloc((size_t)cap, sizeof *reqs);
    bool ok = reqs != NULL;
    for (char *line = text, *end; ok && line != NULL && *line; line = end) {
        end = strchr(line, '\n');
        if (end != NULL) *end++ = '\0';
        number++;
        if (line[strspn(line, " \t\r")] == '\0') continue; /* blank */
        if (count == cap) {
            BatchRequest *grown = realloc(reqs, (size_t)(cap *= 2) * sizeof *reqs);
            if (grown == NULL) {
                ok = false;
                break;
            }
            reqs = grown;
        }
        BatchRequest *r = &reqs[count++];
        memset(r, 0, sizeof *r);
        r->opt = *defaults;
        int *grown_lines = count > lines_cap ? realloc(lines, (size_t)cap * sizeof *lines) : lines;
        if (grown_lines == NULL) {
            ok = false;
            break;
        }
        if (count > lines_cap) lines = grown_lines, lines_cap = cap;
        lines[count - 1] = number;
        read_request(r, line, number, m, tok, tmpl);
    }
    free(text);
    if (ok) ok = reject_duplicate_ids(reqs, count, lines);
    free(lines);
    if (!ok) {
        for (int i = 0; i < count; i++) batch_request_free(&reqs[i]);
        free(reqs);
        return step_fail(err, "requests %s: out of memory", path);
    }
    *out = reqs, *n = count;
    return true;
}
