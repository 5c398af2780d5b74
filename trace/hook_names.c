/* hook_names.c: see hook_names.h. */
#include "trace/hook_names.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const char stepwise_hook_names_json[]; /* data/hook-names.json, built in */

void hook_names_free(HookNames *h) {
    for (int i = 0; i < h->n; i++) free(h->rules[i].theirs), free(h->rules[i].ours);
    free(h->rules);
    h->rules = NULL, h->n = 0;
}

/* Whether the string list `list` holds s. */
static bool listed(const cJSON *list, const char *s) {
    const cJSON *v;
    cJSON_ArrayForEach(v,
                       list) if (cJSON_IsString(v) && strcmp(v->valuestring, s) == 0) return true;
    return false;
}

/* "hf, hf-gpt2, hf-gemma, llama.cpp or llama.cpp-2025-02": the engines of the map, into buf. */
static void engine_list(const cJSON *engines, char *buf, size_t size) {
    int n = cJSON_GetArraySize(engines), i = 0;
    size_t at = 0;
    buf[0] = '\0';
    const cJSON *e;
    cJSON_ArrayForEach(e, engines) {
        const char *sep = i == 0 ? "" : i == n - 1 ? " or " : ", ";
        int w = snprintf(buf + at, size - at, "%s%s", sep, e->string);
        at += w > 0 && (size_t)w < size - at ? (size_t)w : 0;
        i++;
    }
}

bool hook_names_load(HookNames *h, const char *engine, bool rope_halves, StepError *err) {
    *h = (HookNames){0};
    cJSON *doc = cJSON_Parse(stepwise_hook_names_json);
    const cJSON *engines = cJSON_GetObjectItemCaseSensitive(doc, "engines");
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(engines, engine);
    const cJSON *names = cJSON_GetObjectItemCaseSensitive(e, "names");
    if (!cJSON_IsObject(names) || strlen(engine) >= sizeof h->engine) {
        char known[160];
        engine_list(engines, known, sizeof known);
        cJSON_Delete(doc);
        return step_fail(err, "--names must be %s, not '%.40s'", known, engine);
    }
    snprintf(h->engine, sizeof h->engine, "%s", engine);
    const cJSON *halves = cJSON_GetObjectItemCaseSensitive(e, "halves");
    const cJSON *asked = cJSON_GetObjectItemCaseSensitive(e, "halves_if_asked");
    h->rules = calloc((size_t)cJSON_GetArraySize(names) + 1, sizeof *h->rules);
    bool ok = h->rules != NULL;
    const cJSON *v;
    cJSON_ArrayForEach(v, names) {
        if (!ok || !cJSON_IsString(v)) continue;
        HookNameRule *r = &h->rules[h->n++];
        r->ours = strdup(v->string), r->theirs = strdup(v->valuestring);
        r->halves = listed(halves, v->string) || (rope_halves && listed(asked, v->string));
        ok = r->ours != NULL && r->theirs != NULL;
    }
    cJSON_Delete(doc);
    if (!ok) {
        hook_names_free(h);
        return step_fail(err, "--names: out of memory");
    }
    return true;
}

/* Whether name matches pattern (one {L}, or none), the layer into *layer. */
static bool match(const char *pattern, const char *name, long *layer) {
    const char *at = strstr(pattern, "{L}");
    *layer = -1;
    if (at == NULL) return strcmp(pattern, name) == 0;
    size_t pre = (size_t)(at - pattern);
    if (strncmp(name, pattern, pre) != 0) return false;
    const char *d = name + pre;
    char *end;
    if (*d < '0' || *d > '9') return false;
    long l = strtol(d, &end, 10);
    if (l > 1 << 20 || end - d > 7) return false;
    *layer = l;
    return strcmp(end, at + 3) == 0;
}

/* pattern with {L} replaced by layer into buf. */
static void substitute(const char *pattern, long layer, char *buf, size_t size) {
    const char *at = strstr(pattern, "{L}");
    if (at == NULL)
        snprintf(buf, size, "%s", pattern);
    else
        snprintf(buf, size, "%.*s%ld%s", (int)(at - pattern), pattern, layer, at + 3);
}

/* The rule whose `from` side matches name, its other side (with the
 * layer) into buf: their names to ours, or (reverse) ours to theirs. */
static const HookNameRule *translate(const HookNames *h, const char *name, bool reverse, char *buf,
                                     size_t size) {
    for (int i = 0; i < h->n; i++) {
        const HookNameRule *r = &h->rules[i];
        long layer;
        if (!match(reverse ? r->ours : r->theirs, name, &layer)) continue;
        substitute(reverse ? r->theirs : r->ours, layer, buf, size);
        return r;
    }
    return NULL;
}

bool hook_names_map(const HookNames *h, const char *theirs, char *buf, size_t size, bool *halves) {
    const HookNameRule *r = translate(h, theirs, false, buf, size);
    if (r != NULL) *halves = r->halves;
    return r != NULL;
}

bool hook_names_theirs(const HookNames *h, const char *ours, char *buf, size_t size) {
    return translate(h, ours, true, buf, size) != NULL;
}

void hook_names_fitting(const char *theirs, const char *ours, char *buf, size_t size) {
    cJSON *doc = cJSON_Parse(stepwise_hook_names_json);
    const cJSON *e;
    size_t at = 0;
    buf[0] = '\0';
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(doc, "engines")) {
        HookNames h;
        StepError ignored; /* an engine the file names loads, or is skipped */
        char mapped[96];
        bool halves;
        if (!hook_names_load(&h, e->string, false, &ignored)) continue;
        if (hook_names_map(&h, theirs, mapped, sizeof mapped, &halves) &&
            (ours == NULL || strcmp(mapped, ours) == 0)) {
            int w = snprintf(buf + at, size - at, "%s%s", at > 0 ? ", " : "", e->string);
            at += w > 0 && (size_t)w < size - at ? (size_t)w : 0;
        }
        hook_names_free(&h);
    }
    cJSON_Delete(doc);
}
