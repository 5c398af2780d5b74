/* diff_input.c: see diff_input.h. */
#include "trace/diff_input.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ref/util/file_util.h"
#include "ref/formats/safetensors.h"
#include "ref/hooks.h"
#include "ref/util/json_util.h"
#include "trace/diff_tensors.h"
#include "trace/trace_reader.h"

/* Copy a JSON array of numbers (null: NaN) into dst[0..n); false if the
 * length differs. */
static bool read_floats(const cJSON *arr, float *dst, int n) {
    if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) != n) return false;
    int i = 0;
    const cJSON *v;
    cJSON_ArrayForEach(v, arr) dst[i++] = cJSON_IsNumber(v) ? json_float(v->valuedouble) : NAN;
    return true;
}

/* Grow *p (of elem bytes each) to hold `need` elements, doubling. */
static bool grow(void **p, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return true;
    size_t c = *cap ? *cap : 64;
    while (c < need) c *= 2;
    if (c > SIZE_MAX / elem) return false;
    void *q = realloc(*p, c * elem);
    if (q == NULL) return false;
    *p = q, *cap = c;
    return true;
}

/* Row capacities of a run being read. */
typedef struct {
    size_t pos, logits, inputs, kv, k, acts, pieces, routes;
} Caps;

/* Note that the run's input at pos is token (the first statement wins). */
static bool add_input(DiffRun *r, Caps *cap, int pos, int token) {
    void *p = r->input_pos, *t = r->input_token;
    size_t cap_pos = cap->inputs, need = (size_t)r->n_inputs + 1;
    bool ok = grow(&p, &cap_pos, need, sizeof(int));
    r->input_pos = p;
    ok = ok && grow(&t, &cap->inputs, need, sizeof(int));
    r->input_token = t;
    if (!ok) return false;
    r->input_pos[r->n_inputs] = pos, r->input_token[r->n_inputs] = token;
    r->n_inputs++;
    return true;
}

/* The optional whole "token" of an event, into *token (-1 when absent). */
static bool event_token(const cJSON *e, int *token) {
    *token = -1;
    return cJSON_GetObjectItemCaseSensitive(e, "token") == NULL ||
           json_int_field(e, "token", 0, DIFF_MAX_VOCAB - 1, token);
}

static bool read_logits_event(DiffRun *r, const cJSON *e, Caps *cap, long line, const char *path,
                              StepError *err) {
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(e, "logits");
    bool logprobs = arr == NULL;
    if (logprobs) arr = cJSON_GetObjectItemCaseSensitive(e, "logprobs");
    int pos, token;
    if (!cJSON_IsArray(arr) || !json_int_field(e, "pos", 0, DIFF_MAX_POS, &pos) ||
        !event_token(e, &token))
        return step_fail(err,
                         "%s:%ld: a logits event needs a whole \"pos\" >= 0, \"logits\" (or "
                         "\"logprobs\") and, if any, a whole \"token\" >= 0",
                         path, line);
    if (r->n > 0 && logprobs != r->logprobs)
        return step_fail(err, "%s:%ld: logits and logprobs rows in one file", path, line);
    r->logprobs = logprobs;
    if (r->vocab_size == 0) r->vocab_size = cJSON_GetArraySize(arr);
    if (r->vocab_size < 1 || r->vocab_size > DIFF_MAX_VOCAB)
        return step_fail(err, "%s:%ld: logits has %d values (1 to %d expected)", path, line,
                         r->vocab_size, DIFF_MAX_VOCAB);
    void *p = r->pos, *l = r->logits;
    size_t need = (size_t)r->n + 1;
    bool grown = grow(&p, &cap->pos, need, sizeof(int));
    r->pos = p;
    grown = grown && grow(&l, &cap->logits, need, (size_t)r->vocab_size * sizeof(float));
    r->logits = l;
    if (!grown) return step_fail(err, "%s: out of memory", path);
    if (r->n > 0 && pos <= r->pos[r->n - 1])
        return step_fail(err,
                         "%s:%ld: logits at pos %d after pos %d (positions must increase: a row "
                         "is given once)",
                         path, line, pos, r->pos[r->n - 1]);
    r->pos[r->n] = pos;
    if (!read_floats(arr, r->logits + (size_t)r->n * r->vocab_size, r->vocab_size))
        return step_fail(err, "%s:%ld: logits has %d values, the first had %d", path, line,
                         cJSON_GetArraySize(arr), r->vocab_size);
    r->n++;
    if (token >= 0 && !add_input(r, cap, pos, token))
        return step_fail(err, "%s: out of memory", path);
    return true;
}

static bool read_kv_event(DiffRun *r, const cJSON *e, Caps *cap, long line, const char *path,
                          StepError *err) {
    const cJSON *k = cJSON_GetObjectItemCaseSensitive(e, "k");
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(e, "v");
    int layer, pos;
    if (!cJSON_IsArray(k) || !cJSON_IsArray(v) ||
        !json_int_field(e, "layer", 0, DIFF_MAX_LAYER, &layer) ||
        !json_int_field(e, "pos", 0, DIFF_MAX_POS, &pos))
        return step_fail(err,
                         "%s:%ld: a kv event needs whole \"layer\" and \"pos\" >= 0, "
                         "\"k\" and \"v\"",
                         path, line);
    if (r->kv_dim == 0) r->kv_dim = cJSON_GetArraySize(k);
    if (r->kv_dim < 1 || r->kv_dim > DIFF_MAX_VOCAB)
        return step_fail(err, "%s:%ld: a kv row has %d values (1 to %d expected)", path, line,
                         r->kv_dim, DIFF_MAX_VOCAB);
    void *pl = r->kv_layer, *pp = r->kv_pos, *pk = r->k, *pv = r->v;
    size_t row = (size_t)r->kv_dim * sizeof(float), need = (size_t)r->n_kv + 1, kv_cap = cap->kv;
    bool grown = grow(&pl, &cap->kv, need, sizeof(int));
    r->kv_layer = pl;
    grown = grown && grow(&pp, &kv_cap, need, sizeof(int));
    r->kv_pos = pp;
    kv_cap = cap->k;
    grown = grown && grow(&pk, &cap->k, need, row);
    r->k = pk;
    grown = grown && grow(&pv, &kv_cap, need, row);
    r->v = pv;
    if (!grown) return step_fail(err, "%s: out of memory", path);
    r->kv_layer[r->n_kv] = layer;
    r->kv_pos[r->n_kv] = pos;
    if (!read_floats(k, r->k + (size_t)r->n_kv * r->kv_dim, r->kv_dim) ||
        !read_floats(v, r->v + (size_t)r->n_kv * r->kv_dim, r->kv_dim))
        return step_fail(err, "%s:%ld: kv rows have another length than the first (%d)", path, line,
                         r->kv_dim);
    r->n_kv++;
    return true;
}

/* An activation event: "hook" (stepwise's name), "pos", optional "head"
 * and "token", and "data" (its values, row-major). */
static bool read_activation_event(DiffRun *r, const cJSON *e, const HookNames *names, Caps *cap,
                                  long line, const char *path, StepError *err) {
    const char *hook = json_string_field(e, "hook");
    const cJSON *data = cJSON_GetObjectItemCaseSensitive(e, "data");
    HookPoint point;
    int layer, pos, head = -1, token;
    char ours[64];
    bool halves = false;
    if (hook != NULL && names != NULL && hook_names_map(names, hook, ours, sizeof ours, &halves))
        hook = ours;
    if (hook != NULL && strcmp(hook, "logits") == 0) { /* another engine's classifier output */
        cJSON *row = cJSON_Duplicate(e, true);
        if (row == NULL) return step_fail(err, "%s: out of memory", path);
        cJSON_DeleteItemFromObjectCaseSensitive(row, "logits");
        cJSON *values = cJSON_DetachItemFromObjectCaseSensitive(row, "data");
        if (values != NULL) cJSON_AddItemToObject(row, "logits", values);
        bool ok = read_logits_event(r, row, cap, line, path, err);
        cJSON_Delete(row);
        return ok;
    }
    if (hook == NULL)
        return step_fail(err, "%s:%ld: an activation event needs a \"hook\" (docs/trace-format.md)",
                         path, line);
    if (!hook_parse(hook, &point, &layer) || point == HOOK_LOGITS || point >= HOOK_KV_ROW) {
        /* another engine's name, most likely: say which maps know it */
        char fitting[160];
        hook_names_fitting(hook, NULL, fitting, sizeof fitting);
        return step_fail(err,
                         "%s:%ld: hook \"%.64s\" names none of stepwise's hooks "
                         "(docs/trace-format.md)%s%s%s; %s%s",
                         path, line, hook, names != NULL ? ", nor one that --names " : "",
                         names != NULL ? names->engine : "", names != NULL ? " maps" : "",
                         fitting[0] != '\0' ? "the name maps that name it: --names "
                                            : "no name map in data/hook-names.json names it",
                         fitting);
    }
    int n = cJSON_GetArraySize(data);
    if (!cJSON_IsArray(data) || n < 1 || n > DIFF_MAX_VOCAB ||
        !json_int_field(e, "pos", 0, DIFF_MAX_POS, &pos) || !event_token(e, &token) ||
        (cJSON_GetObjectItemCaseSensitive(e, "head") != NULL &&
         !json_int_field(e, "head", 0, DIFF_MAX_LAYER, &head)))
        return step_fail(err,
                         "%s:%ld: activation %.64s needs a whole \"pos\" >= 0, \"data\" of 1 to "
                         "%d values, and whole \"head\" and \"token\" if any",
                         path, line, hook, DIFF_MAX_VOCAB);
    void *p = r->acts;
    if (!grow(&p, &cap->acts, (size_t)r->n_acts + 1, sizeof(DiffActivation)))
        return step_fail(err, "%s: out of memory", path);
    r->acts = p;
    DiffActivation *a = &r->acts[r->n_acts];
    *a = (DiffActivation){
        .point = point, .layer = layer, .pos = pos, .head = head, .n = n, .halves = halves};
    a->data = malloc((size_t)n * sizeof(float));
    if (a->data == NULL) return step_fail(err, "%s: out of memory", path);
    r->n_acts++;
    read_floats(data, a->data, n);
    if (token >= 0 && !add_input(r, cap, pos, token))
        return step_fail(err, "%s: out of memory", path);
    return true;
}

/* Remember the piece of id (for messages); the first naming wins. */
static bool add_piece(DiffRun *r, Caps *cap, int id, const char *piece) {
    if (id < 0 || piece == NULL || diff_run_piece(r, id) != NULL) return true;
    void *ids = r->piece_ids, *texts = r->pieces;
    size_t c = cap->pieces;
    if (!grow(&ids, &c, (size_t)r->n_pieces + 1, sizeof(int))) return false;
    r->piece_ids = ids;
    if (!grow(&texts, &cap->pieces, (size_t)r->n_pieces + 1, sizeof(char *))) return false;
    r->pieces = texts;
    size_t len = strnlen(piece, 64);
    char *copy = malloc(len + 1);
    if (copy == NULL) return false;
    memcpy(copy, piece, len), copy[len] = '\0';
    r->piece_ids[r->n_pieces] = id, r->pieces[r->n_pieces] = copy;
    r->n_pieces++;
    return true;
}

/* Pieces from a tokenize event (ids, pieces) or a token event (token, piece). */
static bool read_pieces(DiffRun *r, const cJSON *e, const char *name, Caps *cap) {
    if (strcmp(name, "token") == 0) {
        int id;
        const char *piece = json_string_field(e, "piece");
        return !json_int_field(e, "token", 0, DIFF_MAX_VOCAB - 1, &id) ||
               add_piece(r, cap, id, piece);
    }
    const cJSON *ids = cJSON_GetObjectItemCaseSensitive(e, "ids");
    const cJSON *pieces = cJSON_GetObjectItemCaseSensitive(e, "pieces");
    if (!cJSON_IsArray(ids) || !cJSON_IsArray(pieces)) return true;
    const cJSON *i = ids->child, *p = pieces->child;
    for (; i != NULL && p != NULL; i = i->next, p = p->next) {
        double v = cJSON_IsNumber(i) ? i->valuedouble : -1;
        if (v >= 0 && v < DIFF_MAX_VOCAB && v == floor(v) && cJSON_IsString(p) &&
            !add_piece(r, cap, (int)v, p->valuestring))
            return false;
    }
    return true;
}

/* A routing event (an MoE layer's choice for one token): its layer,
 * position and experts, as many as the first routing event had. */
static bool read_routing_event(DiffRun *r, const cJSON *e, Caps *cap, long line, const char *path,
                               StepError *err) {
    const cJSON *experts = cJSON_GetObjectItemCaseSensitive(e, "experts"), *v;
    int layer, pos, k = cJSON_GetArraySize(experts);
    if (!cJSON_IsArray(experts) || !json_int_field(e, "layer", 0, DIFF_MAX_LAYER, &layer) ||
        !json_int_field(e, "pos", 0, DIFF_MAX_POS, &pos) || k < 1 || k > 4096 ||
        (r->route_k > 0 && k != r->route_k))
        return step_fail(err,
                         "%s:%ld: a routing event needs whole \"layer\" and \"pos\" >= 0 and "
                         "\"experts\", as many as the first routing event's",
                         path, line);
    r->route_k = k;
    void *pl = r->route_layer, *pp = r->route_pos, *pe = r->route_experts;
    size_t need = (size_t)r->n_routes + 1, c1 = cap->routes, c2 = cap->routes;
    bool grown = grow(&pl, &cap->routes, need, sizeof(int));
    r->route_layer = pl;
    grown = grown && grow(&pp, &c1, need, sizeof(int));
    r->route_pos = pp;
    grown = grown && grow(&pe, &c2, need, (size_t)k * sizeof(int));
    r->route_experts = pe;
    if (!grown) return step_fail(err, "%s: out of memory", path);
    int *dst = r->route_experts + (size_t)r->n_routes * k, i = 0;
    cJSON_ArrayForEach(v, experts) {
        if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > 4096 ||
            v->valuedouble != floor(v->valuedouble))
            return step_fail(err, "%s:%ld: a routing event's experts are whole numbers >= 0", path,
                             line);
        dst[i++] = (int)v->valuedouble;
    }
    r->route_layer[r->n_routes] = layer;
    r->route_pos[r->n_routes++] = pos;
    return true;
}

static bool read_jsonl(DiffRun *r, const char *path, const HookNames *names, StepError *err) {
    TraceReader tr;
    if (!trace_reader_open(&tr, path, err)) return false;
    Caps cap = {0};
    bool ok = true, not_json;
    cJSON *e, *tensors = NULL; /* a "tensors" event, read once the rest is */
    while (ok && ((e = trace_reader_next(&tr, &not_json)) != NULL || not_json)) {
        if (not_json) {
            ok =
                step_fail(err, "%s:%ld: not valid JSON (malformed or truncated)", path, tr.line_no);
            break;
        }
        const char *name = trace_event_name(e);
        if (name == NULL) {
        } else if (strcmp(name, "logits") == 0) {
            ok = read_logits_event(r, e, &cap, tr.line_no, path, err);
        } else if (strcmp(name, "kv") == 0) {
            ok = read_kv_event(r, e, &cap, tr.line_no, path, err);
        } else if (strcmp(name, "tensors") == 0) {
            ok = tensors == NULL ||
                 step_fail(err, "%s:%ld: a second tensors event", path, tr.line_no);
            if (ok) tensors = e, e = NULL;
        } else if (strcmp(name, "activation") == 0) {
            ok = read_activation_event(r, e, names, &cap, tr.line_no, path, err);
        } else if (strcmp(name, "routing") == 0) {
            ok = read_routing_event(r, e, &cap, tr.line_no, path, err);
        } else if (strcmp(name, "tokenize") == 0 || strcmp(name, "token") == 0) {
            ok = read_pieces(r, e, name, &cap) || step_fail(err, "%s: out of memory", path);
        } else if (strcmp(name, "run") == 0) {
            const char *mode = json_string_field(e, "mode");
            r->scored = mode != NULL && strcmp(mode, "score") == 0;
            int hd;
            if (json_int_field(cJSON_GetObjectItemCaseSensitive(e, "model"), "head_dim", 2,
                               DIFF_MAX_VOCAB, &hd))
                r->head_dim = hd;
        }
        cJSON_Delete(e);
    }
    trace_reader_close(&tr);
    if (ok && tensors != NULL) ok = diff_tensors_add(r, tensors, path, err);
    cJSON_Delete(tensors);
    if (ok && r->n == 0 && r->n_acts == 0)
        ok = step_fail(err, "%s: no logits or activation events", path);
    r->inputs_stated = r->n_inputs > 0;
    return ok;
}

/* ---- raw float32 and numpy ---- */

/* The sidecar of a raw or numpy file: its format name, and for .f32 the
 * vocabulary and positions; first_pos, token_ids and values ("logits" or
 * "logprobs") optional. A missing sidecar of a .npy file is no error. */
static bool read_sidecar(DiffRun *r, const char *sidecar, bool npy, int *first_pos,
                         StepError *err) {
    *first_pos = 0;
    struct stat st;
    if (npy && stat(sidecar, &st) != 0) return true;
    char *text;
    if (!file_read_text(sidecar, "sidecar", &text, err)) return false;
    cJSON *meta = json_parse_whole(text);
    free(text);
    const char *fmt = json_string_field(meta, "format"),
               *values = json_string_field(meta, "values");
    const cJSON *ids = cJSON_GetObjectItemCaseSensitive(meta, "token_ids");
    bool ok =
        cJSON_IsObject(meta) &&
        (npy || (fmt != NULL && strcmp(fmt, "stepwise-logits-f32") == 0 &&
                 json_int_field(meta, "vocab_size", 1, DIFF_MAX_VOCAB, &r->vocab_size) &&
                 json_int_field(meta, "positions", 1, DIFF_MAX_POS, &r->n))) &&
        (cJSON_GetObjectItemCaseSensitive(meta, "first_pos") == NULL ||
         json_int_field(meta, "first_pos", 0, DIFF_MAX_POS, first_pos)) &&
        (cJSON_GetObjectItemCaseSensitive(meta, "values") == NULL ||
         (values != NULL && (strcmp(values, "logits") == 0 || strcmp(values, "logprobs") == 0))) &&
        (ids == NULL || cJSON_IsArray(ids));
    if (ok && values != NULL) r->logprobs = strcmp(values, "logprobs") == 0;
    int n_ids = ok && ids != NULL ? cJSON_GetArraySize(ids) : 0;
    if (ok && ids != NULL) {
        r->input_pos = malloc(((size_t)n_ids + 1) * sizeof(int));
        r->input_token = malloc(((size_t)n_ids + 1) * sizeof(int));
        ok = r->input_pos != NULL && r->input_token != NULL;
        int i = 0;
        const cJSON *v;
        cJSON_ArrayForEach(v, ids) {
            double x = cJSON_IsNumber(v) ? v->valuedouble : -1;
            ok = ok && x >= 0 && x < DIFF_MAX_VOCAB && x == floor(x);
            if (ok) r->input_pos[i] = i, r->input_token[i] = (int)x, i++;
        }
        r->n_inputs = ok ? n_ids : 0;
        r->inputs_stated = ok;
    }
    cJSON_Delete(meta);
    if (!ok)
        return step_fail(
            err,
            "%s: needs {\"format\": \"stepwise-logits-f32\", \"vocab_size\" (1 to %d), "
            "\"positions\" (1 to %d)} (.f32 only), and if any a whole first_pos >= 0, "
            "token_ids (whole numbers >= 0) and values \"logits\" or \"logprobs\"",
            sidecar, DIFF_MAX_VOCAB, DIFF_MAX_POS);
    return true;
}

/* numpy's .npy header: "\x93NUMPY", version, a length, and a Python dict
 * literal such as {'descr': '<f4', 'fortran_order': False, 'shape': (3, 512), }.
 * Only a C-order 2-D little-endian float32 array is taken. */
typedef struct {
    const char *p, *end;
} Cursor;

static void skip_space(Cursor *c) {
    while (c->p < c->end && isspace((unsigned char)*c->p)) c->p++;
}

static bool take_char(Cursor *c, char ch) {
    skip_space(c);
    if (c->p >= c->end || *c->p != ch) return false;
    c->p++;
    return true;
}

/* A quoted string ('...' or "...") into buf. */
static bool take_quoted(Cursor *c, char *buf, size_t cap) {
    skip_space(c);
    if (c->p >= c->end || (*c->p != '\'' && *c->p != '"')) return false;
    char q = *c->p++;
    size_t n = 0;
    while (c->p < c->end && *c->p != q) {
        if (n + 1 >= cap) return false;
        buf[n++] = *c->p++;
    }
    buf[n] = '\0';
    return c->p++ < c->end;
}

static bool take_word(Cursor *c, const char *word) {
    skip_space(c);
    size_t n = strlen(word);
    if ((size_t)(c->end - c->p) < n || strncmp(c->p, word, n) != 0) return false;
    c->p += n;
    return true;
}

/* A tuple of 1 or 2 whole numbers into shape[0..*dims). */
static bool take_shape(Cursor *c, long long shape[2], int *dims) {
    if (!take_char(c, '(')) return false;
    *dims = 0;
    for (;;) {
        skip_space(c);
        if (c->p < c->end && *c->p == ')') break;
        if (*dims == 2 || c->p >= c->end || !isdigit((unsigned char)*c->p)) return false;
        long long v = 0;
        while (c->p < c->end && isdigit((unsigned char)*c->p)) {
            v = v * 10 + (*c->p++ - '0');
            if (v > DIFF_MAX_POS) return false;
        }
        shape[(*dims)++] = v;
        skip_space(c);
        if (c->p < c->end && *c->p == ',') c->p++;
    }
    c->p++;
    return *dims >= 1;
}

static bool parse_npy_header(const char *h, size_t n, long long shape[2], int *dims) {
    Cursor c = {h, h + n};
    bool descr = false, order = false, shaped = false;
    if (!take_char(&c, '{')) return false;
    for (;;) {
        char key[32], value[16];
        skip_space(&c);
        if (c.p < c.end && *c.p == '}') return descr && order && shaped;
        if (!take_quoted(&c, key, sizeof key) || !take_char(&c, ':')) return false;
        if (strcmp(key, "descr") == 0) {
            if (!take_quoted(&c, value, sizeof value) || strcmp(value, "<f4") != 0) return false;
            descr = true;
        } else if (strcmp(key, "fortran_order") == 0) {
            if (!take_word(&c, "False")) return false;
            order = true;
        } else if (strcmp(key, "shape") == 0) {
            if (!take_shape(&c, shape, dims)) return false;
            shaped = true;
        } else {
            return false;
        }
        skip_space(&c);
        if (c.p < c.end && *c.p == ',') c.p++;
    }
}

/* Open path, check it holds exactly `want` bytes from `offset`, and keep
 * it open as r's logits (read a row at a time as they are compared). */
static bool keep_logits(DiffRun *r, const char *path, long offset, uint64_t want,
                        const char *promiser, StepError *err) {
    FILE *f = file_open_input(path, "logits", err);
    if (f == NULL) return false;
    struct stat st;
    bool fits = fstat(fileno(f), &st) == 0 && st.st_size >= offset &&
                (uint64_t)(st.st_size - offset) == want;
    if (!fits) {
        fclose(f);
        return step_fail(err, "%s: %lld bytes of data, the %s promises %llu", path,
                         (long long)st.st_size - offset, promiser, (unsigned long long)want);
    }
    int file;
    if (!diff_run_keep_file(r, f, &file)) return step_fail(err, "%s: out of memory", path);
    r->logits_stored = (DiffStored){.offset = (uint64_t)offset, .file = file, .dtype = ST_F32};
    return true;
}

/* The header of a .npy file: its data offset and [positions, vocab]. */
static bool read_npy_header(DiffRun *r, const char *path, long *offset, StepError *err) {
    FILE *f = file_open_input(path, "logits", err);
    if (f == NULL) return false;
    unsigned char pre[12];
    size_t got = fread(pre, 1, sizeof pre, f);
    bool v1 = got >= 10 && pre[6] == 1, v23 = got >= 12 && (pre[6] == 2 || pre[6] == 3);
    size_t len =
        v1    ? (size_t)(pre[8] | pre[9] << 8)
        : v23 ? (size_t)pre[8] | (size_t)pre[9] << 8 | (size_t)pre[10] << 16 | (size_t)pre[11] << 24
              : 0;
    char *h = NULL;
    bool ok = got >= 10 && memcmp(pre, "\x93NUMPY", 6) == 0 && (v1 || v23) && len > 0 &&
              len <= 65536 && (h = malloc(len)) != NULL && fseek(f, v1 ? 10 : 12, SEEK_SET) == 0 &&
              fread(h, 1, len, f) == len;
    fclose(f);
    long long shape[2] = {0, 0};
    int dims = 0;
    ok = ok && parse_npy_header(h, len, shape, &dims) && dims == 2 && shape[0] >= 1 &&
         shape[1] >= 1 && shape[1] <= DIFF_MAX_VOCAB;
    free(h);
    if (!ok)
        return step_fail(err,
                         "%s: not a .npy file of a 2-D C-order '<f4' array [positions, vocab] "
                         "(numpy.save of float32)",
                         path);
    r->n = (int)shape[0], r->vocab_size = (int)shape[1];
    *offset = (long)(v1 ? 10 : 12) + (long)len;
    return true;
}

/* Raw float32 [positions, vocab_size] (.f32, described by its sidecar) or
 * a .npy array of that shape. */
static bool read_array(DiffRun *r, const char *path, bool npy, StepError *err) {
    char sidecar[4096];
    if (snprintf(sidecar, sizeof sidecar, "%s.json", path) >= (int)sizeof sidecar)
        return step_fail(err, "%s: name too long", path);
    long offset = 0;
    int first_pos;
    if (npy && !read_npy_header(r, path, &offset, err)) return false;
    int n = r->n, vocab = r->vocab_size;
    if (!read_sidecar(r, sidecar, npy, &first_pos, err)) return false;
    if (npy) r->n = n, r->vocab_size = vocab; /* the array's own shape wins */
    if (r->inputs_stated && r->n_inputs != r->n)
        return step_fail(err, "%s: token_ids has %d ids for %d positions", sidecar, r->n_inputs,
                         r->n);
    if ((int64_t)first_pos + r->n - 1 > INT32_MAX)
        return step_fail(err, "%s: first_pos %d + positions %d is beyond %d", sidecar, first_pos,
                         r->n, INT32_MAX);
    for (int i = 0; i < r->n_inputs; i++) r->input_pos[i] += first_pos;
    uint64_t want = (uint64_t)r->n * (uint64_t)r->vocab_size * sizeof(float);
    if (!keep_logits(r, path, offset, want, npy ? "header" : "sidecar", err)) return false;
    r->pos = malloc((size_t)r->n * sizeof(int));
    if (r->pos == NULL) return step_fail(err, "%s: out of memory", path);
    for (int i = 0; i < r->n; i++) r->pos[i] = first_pos + i;
    return true;
}

/* Inputs by position, the first statement of each kept (a stable sort). */
typedef struct {
    int pos, token, order;
} Input;

static int compare_inputs(const void *a, const void *b) {
    const Input *x = a, *y = b;
    if (x->pos != y->pos) return (x->pos > y->pos) - (x->pos < y->pos);
    return (x->order > y->order) - (x->order < y->order);
}

static bool sort_inputs(DiffRun *r) {
    if (r->n_inputs < 2) return true;
    Input *in = malloc((size_t)r->n_inputs * sizeof *in);
    if (in == NULL) return false;
    for (int i = 0; i < r->n_inputs; i++) in[i] = (Input){r->input_pos[i], r->input_token[i], i};
    qsort(in, (size_t)r->n_inputs, sizeof *in, compare_inputs);
    int k = 0;
    for (int i = 0; i < r->n_inputs; i++) {
        if (k > 0 && r->input_pos[k - 1] == in[i].pos) continue;
        r->input_pos[k] = in[i].pos, r->input_token[k] = in[i].token, k++;
    }
    r->n_inputs = k;
    free(in);
    return true;
}

static bool ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n > m && strcmp(s + n - m, suffix) == 0;
}

bool diff_run_unhalve(DiffRun *r, int head_dim, StepError *err) {
    for (int i = 0; i < r->n_acts; i++) {
        const DiffActivation *a = &r->acts[i];
        if (a->halves && (head_dim < 2 || head_dim % 2 != 0 || a->n % head_dim != 0))
            return step_fail(err,
                             "activation at pos %d has %d values, not whole heads of the "
                             "reference's head_dim %d (a stepwise trace states it)",
                             a->pos, a->n, head_dim);
    }
    r->unhalve_head_dim = head_dim; /* diff_run_activation puts them back */
    return true;
}

bool diff_run_read(DiffRun *r, const char *path, const HookNames *names, StepError *err) {
    memset(r, 0, sizeof *r);
    bool npy = ends_with(path, ".npy"), raw = ends_with(path, ".f32");
    bool ok = ends_with(path, ".safetensors") ? diff_tensors_read_file(r, path, names, err)
              : raw || npy                    ? read_array(r, path, npy, err)
                                              : read_jsonl(r, path, names, err);
    if (ok && !sort_inputs(r)) ok = step_fail(err, "%s: out of memory", path);
    if (!ok) diff_run_free(r);
    return ok;
}
