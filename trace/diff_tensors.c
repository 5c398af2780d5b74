/* diff_tensors.c: see diff_tensors.h. */
#include "trace/diff_tensors.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ref/util/file_util.h"
#include "ref/hooks.h"
#include "ref/util/json_util.h"
#include "ref/formats/safetensors.h"
#include "trace/trace_writer.h"

/* What says which ids the tensors' rows ran on. */
typedef struct {
    int first_pos;
    int *ids; /* [n_ids] (owned), or NULL */
    int n_ids;
    bool logprobs;
} RowsOrigin;

/* Grow *p to exactly n elements of elem bytes. */
static bool resize(void **p, size_t n, size_t elem) {
    void *q = realloc(*p, n > 0 ? n * elem : 1);
    if (q == NULL) return false;
    *p = q;
    return true;
}

/* A JSON list of whole ids in [0, DIFF_MAX_VOCAB) into a malloc'd array. */
static bool parse_ids(const cJSON *list, int **ids, int *n) {
    *ids = NULL, *n = 0;
    if (!cJSON_IsArray(list)) return false;
    int count = cJSON_GetArraySize(list);
    *ids = malloc((size_t)(count > 0 ? count : 1) * sizeof(int));
    if (*ids == NULL) return false;
    const cJSON *v;
    cJSON_ArrayForEach(v, list) {
        double d = cJSON_IsNumber(v) ? v->valuedouble : -1;
        if (!(d >= 0 && d < DIFF_MAX_VOCAB && d == (double)(int)d)) {
            free(*ids), *ids = NULL;
            return false;
        }
        (*ids)[(*n)++] = (int)d;
    }
    return true;
}

static bool two_dims(const SafetensorsTensor *t, int max_width, int *rows, int *width) {
    if (t->ndim != 2 || t->shape[0] < 1 || t->shape[0] > DIFF_MAX_POS || t->shape[1] < 1 ||
        t->shape[1] > max_width)
        return false;
    *rows = (int)t->shape[0], *width = (int)t->shape[1];
    return true;
}

/* Where row `row` of t [rows, width] is in f's file, kept as r's file. */
static DiffStored stored_of(const SafetensorsFile *f, const SafetensorsTensor *t, int row,
                            int width, int file) {
    size_t elem = t->dtype == ST_F32 ? 4 : 2;
    uint64_t start = (uint64_t)(t->data - (const unsigned char *)f->map);
    return (DiffStored){.offset = start + (uint64_t)row * (uint64_t)width * elem,
                        .file = file,
                        .dtype = (int)t->dtype};
}

/* The rows stay in the file (diff_run.h): r keeps it open, as `file`. */
static bool take_logits(DiffRun *r, const SafetensorsFile *f, const SafetensorsTensor *t,
                        const RowsOrigin *o, int file, const char *path, StepError *err) {
    int rows, vocab;
    if (!two_dims(t, DIFF_MAX_VOCAB, &rows, &vocab) || rows > DIFF_MAX_POS - o->first_pos)
        return step_fail(err, "%s: tensor logits must be [positions, vocab_size]", path);
    if (r->n > 0) return step_fail(err, "%s: logits both as events and as a tensor", path);
    void *pos = NULL;
    if (!resize(&pos, (size_t)rows, sizeof(int))) return step_fail(err, "%s: out of memory", path);
    r->pos = pos, r->n = rows, r->vocab_size = vocab;
    r->logits_stored = stored_of(f, t, 0, vocab, file);
    r->logprobs = o->logprobs;
    for (int i = 0; i < rows; i++) r->pos[i] = o->first_pos + i;
    return true;
}

static bool take_kv(DiffRun *r, const SafetensorsFile *f, const SafetensorsTensor *k, int layer,
                    const RowsOrigin *o, int file, const char *path, StepError *err) {
    char name[64];
    snprintf(name, sizeof name, "kv.%d.v", layer);
    const SafetensorsTensor *v = safetensors_find(f, name);
    int rows, dim, vrows, vdim;
    if (v == NULL || !two_dims(k, DIFF_MAX_VOCAB, &rows, &dim) ||
        !two_dims(v, DIFF_MAX_VOCAB, &vrows, &vdim) || vrows != rows || vdim != dim ||
        (r->kv_dim != 0 && r->kv_dim != dim) || rows > DIFF_MAX_POS - o->first_pos)
        return step_fail(err, "%s: kv.%d.k and kv.%d.v must be [positions, kv_dim] alike", path,
                         layer, layer);
    if (r->k != NULL) return step_fail(err, "%s: KV rows both as events and as tensors", path);
    size_t n = (size_t)r->n_kv + (size_t)rows;
    void *pl = r->kv_layer, *pp = r->kv_pos, *pk = r->k_stored, *pv = r->v_stored;
    bool ok = resize(&pl, n, sizeof(int)) && (r->kv_layer = pl, resize(&pp, n, sizeof(int))) &&
              (r->kv_pos = pp, resize(&pk, n, sizeof(DiffStored))) &&
              (r->k_stored = pk, resize(&pv, n, sizeof(DiffStored)));
    if (!ok) return step_fail(err, "%s: out of memory", path);
    r->v_stored = pv, r->kv_dim = dim;
    for (int i = 0; i < rows; i++) {
        int at = r->n_kv + i;
        r->kv_layer[at] = layer, r->kv_pos[at] = o->first_pos + i;
        r->k_stored[at] = stored_of(f, k, i, dim, file);
        r->v_stored[at] = stored_of(f, v, i, dim, file);
    }
    r->n_kv += rows;
    return true;
}

static bool take_activation(DiffRun *r, const SafetensorsFile *f, const SafetensorsTensor *t,
                            HookPoint point, int layer, bool halves, const RowsOrigin *o, int file,
                            const char *path, StepError *err) {
    int rows, width;
    if (!two_dims(t, DIFF_MAX_VOCAB, &rows, &width) || rows > DIFF_MAX_POS - o->first_pos)
        return step_fail(err, "%s: tensor %.64s must be [positions, values]", path, t->name);
    void *p = r->acts;
    if (!resize(&p, (size_t)r->n_acts + (size_t)rows, sizeof(DiffActivation)))
        return step_fail(err, "%s: out of memory", path);
    r->acts = p;
    for (int i = 0; i < rows; i++)
        r->acts[r->n_acts++] = (DiffActivation){.point = point,
                                                .layer = layer,
                                                .pos = o->first_pos + i,
                                                .head = -1,
                                                .n = width,
                                                .halves = halves,
                                                .stored = stored_of(f, t, i, width, file)};
    return true;
}

/* A per-head attention hook [positions, heads, keys] (attn.scores or
 * attn.pattern, as `score --tensors` writes them): one activation per
 * position and head, of the pos + 1 values a query at pos attends to. */
static bool take_heads(DiffRun *r, const SafetensorsFile *f, const SafetensorsTensor *t,
                       HookPoint point, int layer, const RowsOrigin *o, int file, const char *path,
                       StepError *err) {
    bool fits = t->ndim == 3 && t->shape[0] >= 1 && t->shape[0] <= DIFF_MAX_POS - o->first_pos &&
                t->shape[1] >= 1 && t->shape[1] <= DIFF_MAX_LAYER && t->shape[2] >= 1 &&
                t->shape[2] <= DIFF_MAX_POS && t->shape[2] >= o->first_pos + t->shape[0];
    if (!fits)
        return step_fail(err,
                         "%s: tensor %.64s must be [positions, heads, keys], keys past the last "
                         "position",
                         path, t->name);
    int rows = (int)t->shape[0], heads = (int)t->shape[1], keys = (int)t->shape[2];
    size_t n = (size_t)r->n_acts + (size_t)rows * (size_t)heads;
    void *p = r->acts;
    if (n > (size_t)INT_MAX || !resize(&p, n, sizeof(DiffActivation)))
        return step_fail(err, "%s: out of memory", path);
    r->acts = p;
    for (int i = 0; i < rows; i++)
        for (int h = 0; h < heads; h++)
            r->acts[r->n_acts++] =
                (DiffActivation){.point = point,
                                 .layer = layer,
                                 .pos = o->first_pos + i,
                                 .head = h,
                                 .n = o->first_pos + i + 1,
                                 .stored = stored_of(f, t, i * heads + h, keys, file)};
    return true;
}

/* Every tensor of f into r, and the ids as the inputs of their positions. */
static bool take_all(DiffRun *r, const SafetensorsFile *f, const HookNames *names,
                     const RowsOrigin *o, int file, const char *path, StepError *err) {
    for (int i = 0; i < f->n; i++) {
        const SafetensorsTensor *t = &f->tensors[i];
        char ours[64];
        bool halves = false;
        const char *name = t->name;
        if (names != NULL && hook_names_map(names, name, ours, sizeof ours, &halves)) name = ours;
        HookPoint point;
        int layer, used = 0;
        char which = 0;
        bool ok;
        if (strcmp(name, "logits") == 0)
            ok = take_logits(r, f, t, o, file, path, err);
        else if (sscanf(name, "kv.%d.%c%n", &layer, &which, &used) == 2 && name[used] == '\0' &&
                 layer >= 0 && layer < DIFF_MAX_LAYER && (which == 'k' || which == 'v'))
            ok = which == 'v' || take_kv(r, f, t, layer, o, file, path, err);
        else if (hook_parse(name, &point, &layer) &&
                 (point == HOOK_ATTN_SCORES || point == HOOK_ATTN_PATTERN))
            ok = take_heads(r, f, t, point, layer, o, file, path, err);
        else if (hook_parse(name, &point, &layer) && point != HOOK_LOGITS && point < HOOK_KV_ROW)
            ok = take_activation(r, f, t, point, layer, halves, o, file, path, err);
        else
            ok = step_fail(err, "%s: tensor %.64s names no hook (docs/trace-format.md)", path,
                           t->name);
        if (!ok) return false;
    }
    if (o->ids == NULL) return true;
    size_t n = (size_t)r->n_inputs + (size_t)o->n_ids;
    void *pp = r->input_pos, *pt = r->input_token;
    bool ok = resize(&pp, n, sizeof(int)) && (r->input_pos = pp, resize(&pt, n, sizeof(int)));
    if (!ok) return step_fail(err, "%s: out of memory", path);
    r->input_token = pt;
    for (int i = 0; i < o->n_ids && i < DIFF_MAX_POS - o->first_pos; i++)
        r->input_pos[r->n_inputs] = o->first_pos + i, r->input_token[r->n_inputs++] = o->ids[i];
    return true;
}

/* The file's __metadata__ (from its header, which safetensors_open has
 * checked), or NULL. */
static cJSON *file_metadata(const SafetensorsFile *f) {
    const unsigned char *b = f->map;
    uint64_t len = 0;
    for (int i = 7; i >= 0; i--) len = len << 8 | b[i];
    cJSON *h = json_parse_whole_n((const char *)b + 8, (size_t)len);
    cJSON *meta = cJSON_DetachItemFromObjectCaseSensitive(h, "__metadata__");
    cJSON_Delete(h);
    return meta;
}

/* The origin the metadata gives: first_pos, token_ids, values. */
static bool metadata_origin(const cJSON *meta, RowsOrigin *o, const char *path, StepError *err) {
    const char *first = json_string_field(meta, "first_pos"),
               *ids = json_string_field(meta, "token_ids"),
               *values = json_string_field(meta, "values");
    char *end = NULL;
    long fp = first != NULL ? strtol(first, &end, 10) : 0;
    if (first != NULL && (end == first || *end != '\0' || fp < 0 || fp >= DIFF_MAX_POS))
        return step_fail(err, "%s: __metadata__ first_pos must be a whole number >= 0", path);
    if (values != NULL && strcmp(values, "logits") != 0 && strcmp(values, "logprobs") != 0)
        return step_fail(err, "%s: __metadata__ values must be logits or logprobs", path);
    o->first_pos = (int)fp;
    o->logprobs = values != NULL && strcmp(values, "logprobs") == 0;
    if (ids == NULL) return true;
    cJSON *list = json_parse_whole(ids);
    bool ok = parse_ids(list, &o->ids, &o->n_ids);
    cJSON_Delete(list);
    return ok || step_fail(err, "%s: __metadata__ token_ids must be a JSON list of ids", path);
}

/* f's file, opened again and kept in r for its rows to be read from (as
 * *file): the file checked, as long as its size is the same. */
static bool keep_file(DiffRun *r, const SafetensorsFile *f, int *file, StepError *err) {
    FILE *in = file_open_input(f->path, "tensors", err);
    if (in == NULL) return false;
    struct stat st;
    if (fstat(fileno(in), &st) != 0 || (uint64_t)st.st_size != (uint64_t)f->map_bytes) {
        fclose(in);
        return step_fail(err, "%s changed while it was read", f->path);
    }
    return diff_run_keep_file(r, in, file) || step_fail(err, "%s: out of memory", f->path);
}

bool diff_tensors_read_file(DiffRun *r, const char *path, const HookNames *names, StepError *err) {
    SafetensorsFile f;
    if (!safetensors_open_as(&f, path, "tensors", err)) return false;
    cJSON *meta = file_metadata(&f);
    RowsOrigin o = {0};
    int file;
    bool ok = metadata_origin(meta, &o, path, err) && keep_file(r, &f, &file, err) &&
              take_all(r, &f, names, &o, file, path, err);
    if (ok && r->n == 0 && r->n_acts == 0)
        ok = step_fail(err, "%s: no logits or hook tensors", path);
    r->inputs_stated = r->n_inputs > 0;
    free(o.ids), cJSON_Delete(meta);
    safetensors_close(&f);
    return ok;
}

/* The tensors the event lists ("tensors": [{"name", "shape"}, ...]) are
 * the file's, each of the shape listed, none more; and logits have a row a
 * stated id. A file of another shape (logits [vocab, positions] for
 * [positions, vocab]) is refused here, by every reader alike. */
static bool check_listed(const cJSON *event, const SafetensorsFile *f, const RowsOrigin *o,
                         const char *path, StepError *err) {
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(event, "tensors"), *t;
    if (!cJSON_IsArray(list) || cJSON_GetArraySize(list) != f->n)
        return step_fail(err, "%s holds %d tensors, its tensors event lists %d", path, f->n,
                         cJSON_IsArray(list) ? cJSON_GetArraySize(list) : 0);
    cJSON_ArrayForEach(t, list) {
        const char *name = json_string_field(t, "name");
        const cJSON *shape = cJSON_GetObjectItemCaseSensitive(t, "shape");
        const SafetensorsTensor *x = name != NULL ? safetensors_find(f, name) : NULL;
        bool same = x != NULL && cJSON_IsArray(shape) && cJSON_GetArraySize(shape) == x->ndim;
        for (int d = 0; same && d < x->ndim; d++) {
            const cJSON *v = cJSON_GetArrayItem(shape, d);
            same = cJSON_IsNumber(v) && v->valuedouble == (double)x->shape[d];
        }
        if (!same)
            return step_fail(err,
                             "%s: tensor %.64s is not the one its tensors event lists "
                             "(name and shape)",
                             path, name != NULL ? name : "(no name)");
        if (strcmp(name, "logits") == 0 && o->n_ids > 0 && x->ndim == 2 &&
            x->shape[0] != (int64_t)o->n_ids)
            return step_fail(err, "%s: logits has %lld rows for %d token ids: [positions, vocab]",
                             path, (long long)x->shape[0], o->n_ids);
    }
    return true;
}

/* The safetensors file a "tensors" event of the JSON Lines file at
 * jsonl_path names (resolved from that file's folder), opened and checked
 * to be that one (the same ids), with the rows' origin. */
static bool open_named(const cJSON *event, const char *jsonl_path, SafetensorsFile *f,
                       RowsOrigin *o, StepError *err) {
    const char *file = json_string_field(event, "file");
    *o = (RowsOrigin){0};
    if (file == NULL || strlen(file) > PATH_MAX / 2 ||
        !json_int_field(event, "first_pos", 0, DIFF_MAX_POS - 1, &o->first_pos) ||
        !parse_ids(cJSON_GetObjectItemCaseSensitive(event, "token_ids"), &o->ids, &o->n_ids))
        return step_fail(err,
                         "%s: a tensors event needs \"file\", a whole \"first_pos\" >= 0 and "
                         "\"token_ids\"",
                         jsonl_path);
    char path[PATH_MAX + 1];
    const char *slash = strrchr(jsonl_path, '/');
    int folder = slash != NULL && file[0] != '/' ? (int)(slash - jsonl_path) + 1 : 0;
    snprintf(path, sizeof path, "%.*s%s", folder, jsonl_path, file);
    if (!safetensors_open_as(f, path, "tensors", err)) {
        free(o->ids), o->ids = NULL;
        return false;
    }
    cJSON *meta = file_metadata(f);
    RowsOrigin theirs = {0};
    bool ok =
        metadata_origin(meta, &theirs, path, err) &&
        ((theirs.n_ids == o->n_ids && theirs.first_pos == o->first_pos &&
          (o->n_ids == 0 || memcmp(theirs.ids, o->ids, (size_t)o->n_ids * sizeof(int)) == 0)) ||
         step_fail(err, "%s is not the tensors file %s names (its ids differ)", path,
                   jsonl_path)) &&
        check_listed(event, f, o, path, err);
    o->logprobs = theirs.logprobs;
    free(theirs.ids), cJSON_Delete(meta);
    if (!ok) safetensors_close(f), free(o->ids), o->ids = NULL;
    return ok;
}

bool diff_tensors_add(DiffRun *r, const cJSON *event, const char *jsonl_path, StepError *err) {
    SafetensorsFile f;
    RowsOrigin o;
    if (!open_named(event, jsonl_path, &f, &o, err)) return false;
    int file;
    bool ok = keep_file(r, &f, &file, err) && take_all(r, &f, NULL, &o, file, f.path, err);
    safetensors_close(&f);
    free(o.ids);
    return ok;
}

/* A row's values as an event's array: numbers, or the trace's own text. */
static cJSON *values_json(const float *x, int n, bool as_text) {
    if (as_text) return trace_float_array(x, n);
    cJSON *values = cJSON_CreateArray();
    for (int j = 0; j < n; j++) cJSON_AddItemToArray(values, cJSON_CreateNumber(x[j]));
    return values;
}

/* Where tensors_events is: the file's origin, the run holding its file, a
 * row's room, and whom to hand each event. */
typedef struct {
    const SafetensorsFile *f;
    const RowsOrigin *o;
    DiffRun held;
    int file;
    bool as_text;
    bool (*each)(void *ctx, cJSON *event);
    void *ctx;
} EventWalk;

/* Hand one event on, unless its row came short. */
static bool hand_on(EventWalk *w, cJSON *e, StepError *err) {
    if (diff_run_read_short(&w->held)) {
        cJSON_Delete(e);
        return step_fail(err, "%s shrank while read", w->f->path);
    }
    return w->each(w->ctx, e);
}

static bool logits_events(EventWalk *w, const SafetensorsTensor *t, StepError *err) {
    int rows, vocab;
    if (!two_dims(t, DIFF_MAX_VOCAB, &rows, &vocab))
        return step_fail(err, "%s: tensor logits must be [positions, vocab_size]", w->f->path);
    float *room = malloc(2 * (size_t)vocab * sizeof(float));
    bool ok = room != NULL || step_fail(err, "%s: out of memory", w->f->path);
    for (int i = 0; ok && i < rows; i++) {
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "event", "logits");
        cJSON_AddNumberToObject(e, "pos", w->o->first_pos + i);
        if (i < w->o->n_ids) cJSON_AddNumberToObject(e, "token", w->o->ids[i]);
        const float *x = diff_run_stored_row(&w->held, stored_of(w->f, t, i, vocab, w->file),
                                             (size_t)vocab, room);
        cJSON_AddItemToObject(e, w->o->logprobs ? "logprobs" : "logits",
                              values_json(x, vocab, w->as_text));
        ok = hand_on(w, e, err);
    }
    free(room);
    return ok;
}

/* Each position's and head's row of attn.pattern [positions, heads, keys]
 * as the activation event the trace writes without --tensors. */
static bool pattern_events(EventWalk *w, const SafetensorsTensor *t, int layer, StepError *err) {
    const RowsOrigin *o = w->o;
    if (t->ndim != 3 || t->shape[0] < 1 || t->shape[0] > DIFF_MAX_POS - o->first_pos ||
        t->shape[1] < 1 || t->shape[1] > DIFF_MAX_LAYER ||
        t->shape[2] < o->first_pos + t->shape[0] || t->shape[2] > DIFF_MAX_POS)
        return step_fail(err, "%s: tensor %.64s must be [positions, heads, keys]", w->f->path,
                         t->name);
    int rows = (int)t->shape[0], heads = (int)t->shape[1], keys = (int)t->shape[2];
    float *room = malloc(2 * (size_t)keys * sizeof(float));
    bool ok = room != NULL || step_fail(err, "%s: out of memory", w->f->path);
    for (int i = 0; ok && i < rows; i++) {
        for (int h = 0; ok && h < heads; h++) {
            int pos = o->first_pos + i, n = pos + 1;
            cJSON *e = cJSON_CreateObject();
            cJSON_AddStringToObject(e, "event", "activation");
            cJSON_AddStringToObject(e, "hook", t->name);
            cJSON_AddNumberToObject(e, "layer", layer);
            cJSON_AddNumberToObject(e, "pos", pos);
            cJSON_AddNumberToObject(e, "head", h);
            if (i < o->n_ids) cJSON_AddNumberToObject(e, "token", o->ids[i]);
            cJSON_AddItemToObject(e, "shape", cJSON_CreateIntArray(&n, 1));
            const float *x = diff_run_stored_row(
                &w->held, stored_of(w->f, t, i * heads + h, keys, w->file), (size_t)n, room);
            cJSON_AddItemToObject(e, "data", values_json(x, n, w->as_text));
            ok = hand_on(w, e, err);
        }
    }
    free(room);
    return ok;
}

/* Each position's row of kv.L.k and kv.L.v [positions, kv_dim] as the kv
 * event the trace writes without --tensors ({"event", "layer", "pos", "k",
 * "v"}). */
static bool kv_events(EventWalk *w, const SafetensorsTensor *k, int layer, StepError *err) {
    char name[64];
    snprintf(name, sizeof name, "kv.%d.v", layer);
    const SafetensorsTensor *v = safetensors_find(w->f, name);
    int rows, dim, vrows, vdim;
    if (v == NULL || !two_dims(k, DIFF_MAX_VOCAB, &rows, &dim) ||
        !two_dims(v, DIFF_MAX_VOCAB, &vrows, &vdim) || vrows != rows || vdim != dim ||
        rows > DIFF_MAX_POS - w->o->first_pos)
        return step_fail(err, "%s: kv.%d.k and kv.%d.v must be [positions, kv_dim] alike",
                         w->f->path, layer, layer);
    float *room = malloc(2 * (size_t)dim * sizeof(float));
    bool ok = room != NULL || step_fail(err, "%s: out of memory", w->f->path);
    for (int i = 0; ok && i < rows; i++) {
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "event", "kv");
        cJSON_AddNumberToObject(e, "layer", layer);
        cJSON_AddNumberToObject(e, "pos", w->o->first_pos + i);
        const SafetensorsTensor *kv[2] = {k, v};
        const char *keys[2] = {"k", "v"};
        for (int j = 0; j < 2; j++) { /* each row read, then copied into the event */
            const float *x = diff_run_stored_row(&w->held, stored_of(w->f, kv[j], i, dim, w->file),
                                                 (size_t)dim, room);
            cJSON_AddItemToObject(e, keys[j], values_json(x, dim, w->as_text));
        }
        ok = hand_on(w, e, err);
    }
    free(room);
    return ok;
}

bool tensors_events(const cJSON *event, const char *jsonl_path, bool as_text, bool patterns,
                    bool (*each)(void *ctx, cJSON *event), void *ctx, StepError *err) {
    SafetensorsFile f;
    RowsOrigin o;
    if (!open_named(event, jsonl_path, &f, &o, err)) return false;
    EventWalk w = {.f = &f, .o = &o, .as_text = as_text, .each = each, .ctx = ctx};
    bool ok = keep_file(&w.held, &f, &w.file, err);
    for (int k = 0; ok && k < f.n; k++) { /* in the file's order: the run's */
        const SafetensorsTensor *t = &f.tensors[k];
        HookPoint point;
        int layer, used = 0;
        if (strcmp(t->name, "logits") == 0)
            ok = logits_events(&w, t, err);
        else if (patterns && hook_parse(t->name, &point, &layer) && point == HOOK_ATTN_PATTERN)
            ok = pattern_events(&w, t, layer, err);
        else if (patterns && sscanf(t->name, "kv.%d.k%n", &layer, &used) == 1 &&
                 t->name[used] == '\0' && layer >= 0 && layer < DIFF_MAX_LAYER)
            ok = kv_events(&w, t, layer, err);
    }
    diff_run_free(&w.held);
    safetensors_close(&f);
    free(o.ids);
    return ok;
}
