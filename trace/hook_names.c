/* hook_names.c: see hook_names.h. */
#include "hook_names.h"

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

bool hook_names_load(HookNames *h, const char *engine, bool rope_halves, StepError *err) {
    *h = (HookNames){0};
    cJSON *doc = cJSON_Parse(stepwise_hook_names_json);
    const cJSON *e =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(doc, "engines"), engine);
    const cJSON *names = cJSON_GetObjectItemCaseSensitive(e, "names");
    if (!cJSON_IsObject(names)) {
        cJSON_Delete(doc);
        return step_fail(err, "--names must be hf or llama.cpp, not '%.40s'", engine);
    }
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

bool hook_names_map(const HookNames *h, const char *theirs, char *buf, size_t size, bool *halves) {
    for (int i = 0; i < h->n; i++) {
        long layer;
        if (!match(h->rules[i].theirs, theirs, &layer)) continue;
        const char *at = strstr(h->rules[i].ours, "{L}");
        if (at == NULL)
            snprintf(buf, size, "%s", h->rules[i].ours);
        else
            snprintf(buf, size, "%.*s%ld%s", (int)(at - h->rules[i].ours), h->rules[i].ours, layer,
                     at + 3);
        *halves = h->rules[i].halves;
        return true;
    }
    return false;
}
