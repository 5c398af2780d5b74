/* tensor_file.c: see tensor_file.h. */
#include "trace/tensor_file.h"

#include <stdlib.h>
#include <string.h>

#include "ref/util/file_util.h"

bool tensor_file_open(TensorFile *tf, StepError *err) {
    *tf = (TensorFile){0};
    tf->data = tmpfile();
    if (tf->data == NULL) return step_fail(err, "--tensors: cannot make a temporary file");
    return true;
}

void tensor_file_free(TensorFile *tf) {
    if (tf->data != NULL) fclose(tf->data);
    for (int i = 0; i < tf->n; i++) free(tf->tensors[i].runs), free(tf->tensors[i].stage);
    free(tf->tensors);
    *tf = (TensorFile){0};
}

static void note_problem(TensorFile *tf, const char *what, const char *name, int pos) {
    if (tf->problem[0] == '\0')
        snprintf(tf->problem, sizeof tf->problem, "--tensors: %s (%.64s at pos %d)", what, name,
                 pos);
}

static TensorEntry *find_or_add(TensorFile *tf, const char *name, TensorKind kind, int layer,
                                int pos, int width) {
    for (int i = 0; i < tf->n; i++)
        if (strcmp(tf->tensors[i].name, name) == 0) return &tf->tensors[i];
    if (tf->n == tf->cap) {
        int cap = tf->cap > 0 ? 2 * tf->cap : 64;
        TensorEntry *grown = realloc(tf->tensors, (size_t)cap * sizeof *grown);
        if (grown == NULL) return NULL;
        tf->tensors = grown, tf->cap = cap;
    }
    TensorEntry *t = &tf->tensors[tf->n++];
    *t = (TensorEntry){.kind = kind, .layer = layer, .width = width, .first_pos = pos};
    snprintf(t->name, sizeof t->name, "%s", name);
    return t;
}

/* Append one row of width values to t. */
static void append_row(TensorFile *tf, TensorEntry *t, const char *name, int pos, const float *x,
                       int width);

void tensor_file_row(TensorFile *tf, const char *name, TensorKind kind, int layer, int pos,
                     const float *x, int width) {
    if (tf->problem[0] != '\0') return;
    TensorEntry *t = find_or_add(tf, name, kind, layer, pos, width);
    if (t == NULL) {
        note_problem(tf, "out of memory", name, pos);
        return;
    }
    append_row(tf, t, name, pos, x, width);
}

void tensor_file_head_row(TensorFile *tf, const char *name, int layer, int pos, int head, int heads,
                          int keys, const float *x, int n, float pad) {
    if (tf->problem[0] != '\0') return;
    if (heads < 1 || keys < 1 || head < 0 || head >= heads || n < 1 || n > keys ||
        (uint64_t)heads * (uint64_t)keys > (1u << 30)) {
        note_problem(tf, "a head's row outside [heads, keys]", name, pos);
        return;
    }
    TensorEntry *t = find_or_add(tf, name, TENSOR_HEADS, layer, pos, heads * keys);
    if (t != NULL && t->stage == NULL) {
        t->heads = heads, t->stage_pos = pos;
        t->stage = malloc((size_t)heads * (size_t)keys * sizeof(float));
    }
    if (t == NULL || t->stage == NULL) {
        note_problem(tf, "out of memory", name, pos);
        return;
    }
    if (t->heads != heads || t->width != heads * keys || pos != t->stage_pos || head != t->staged) {
        note_problem(tf, "heads out of order or of two shapes", name, pos);
        return;
    }
    float *slot = t->stage + (size_t)head * (size_t)keys;
    memcpy(slot, x, (size_t)n * sizeof(float));
    for (int i = n; i < keys; i++) slot[i] = pad;
    if (++t->staged < heads) return;
    append_row(tf, t, name, pos, t->stage, t->width);
    t->staged = 0, t->stage_pos = pos + 1;
}

static void append_row(TensorFile *tf, TensorEntry *t, const char *name, int pos, const float *x,
                       int width) {
    if (width != t->width) {
        note_problem(tf, "rows of two widths", name, pos);
        return;
    }
    if (pos != t->first_pos + t->rows) {
        note_problem(tf, "rows not at consecutive positions (a position filter?)", name, pos);
        return;
    }
    TensorRun *last = t->n_runs > 0 ? &t->runs[t->n_runs - 1] : NULL;
    uint64_t row_bytes = (uint64_t)width * sizeof(float);
    if (last == NULL || last->offset + (uint64_t)last->rows * row_bytes != tf->data_bytes) {
        if (t->n_runs == t->cap_runs) {
            int cap = t->cap_runs > 0 ? 2 * t->cap_runs : 4;
            TensorRun *grown = realloc(t->runs, (size_t)cap * sizeof *grown);
            if (grown == NULL) {
                note_problem(tf, "out of memory", name, pos);
                return;
            }
            t->runs = grown, t->cap_runs = cap;
        }
        t->runs[t->n_runs++] = (TensorRun){.offset = tf->data_bytes, .rows = 0};
        last = &t->runs[t->n_runs - 1];
    }
    if (fwrite(x, sizeof(float), (size_t)width, tf->data) != (size_t)width) {
        note_problem(tf, "cannot write the temporary file", name, pos);
        return;
    }
    last->rows++, t->rows++;
    tf->data_bytes += row_bytes;
}

/* "shape": [rows, width], or [rows, heads, width / heads]. */
static void add_shape(cJSON *o, const TensorEntry *t) {
    cJSON *shape = cJSON_AddArrayToObject(o, "shape");
    cJSON_AddItemToArray(shape, cJSON_CreateNumber(t->rows));
    if (t->heads > 0) cJSON_AddItemToArray(shape, cJSON_CreateNumber(t->heads));
    cJSON_AddItemToArray(shape, cJSON_CreateNumber(t->heads > 0 ? t->width / t->heads : t->width));
}

/* The header: each tensor's entry, its data where the one before ends, and
 * the metadata; padded with spaces to a multiple of 8 bytes, so that the
 * data after the 8-byte length and the header starts 8-byte aligned. */
static char *header_text(const TensorFile *tf, const cJSON *metadata, uint64_t *len) {
    cJSON *h = cJSON_CreateObject();
    if (metadata != NULL) cJSON_AddItemToObject(h, "__metadata__", cJSON_Duplicate(metadata, true));
    uint64_t at = 0;
    for (int i = 0; i < tf->n; i++) {
        const TensorEntry *t = &tf->tensors[i];
        uint64_t bytes = (uint64_t)t->rows * (uint64_t)t->width * sizeof(float);
        cJSON *e = cJSON_AddObjectToObject(h, t->name);
        cJSON_AddStringToObject(e, "dtype", "F32");
        add_shape(e, t);
        cJSON *offsets = cJSON_AddArrayToObject(e, "data_offsets");
        cJSON_AddItemToArray(offsets, cJSON_CreateNumber((double)at));
        cJSON_AddItemToArray(offsets, cJSON_CreateNumber((double)(at + bytes)));
        at += bytes;
    }
    char *text = cJSON_PrintUnformatted(h);
    cJSON_Delete(h);
    if (text == NULL) return NULL;
    size_t n = strlen(text), padded = (n + 7) / 8 * 8;
    char *out = malloc(padded + 1);
    if (out != NULL) {
        memcpy(out, text, n);
        memset(out + n, ' ', padded - n);
        out[padded] = '\0';
        *len = padded;
    }
    cJSON_free(text);
    return out;
}

/* Copy bytes of the temporary file from offset into out. */
static bool copy_bytes(FILE *from, uint64_t offset, uint64_t bytes, FILE *out) {
    char buf[1 << 16];
    if (fseeko(from, (off_t)offset, SEEK_SET) != 0) return false;
    while (bytes > 0) {
        size_t want = bytes < sizeof buf ? (size_t)bytes : sizeof buf;
        if (fread(buf, 1, want, from) != want || fwrite(buf, 1, want, out) != want) return false;
        bytes -= want;
    }
    return true;
}

bool tensor_file_commit(TensorFile *tf, const char *path, const cJSON *metadata, StepError *err) {
    for (int i = 0; tf->problem[0] == '\0' && i < tf->n; i++)
        if (tf->tensors[i].staged > 0)
            note_problem(tf, "a position with some heads missing", tf->tensors[i].name,
                         tf->tensors[i].stage_pos);
    if (tf->problem[0] != '\0') return step_fail(err, "%s", tf->problem);
    uint64_t len = 0;
    char *header = header_text(tf, metadata, &len);
    if (header == NULL) return step_fail(err, "--tensors: out of memory");
    AtomicFile out;
    if (!atomic_file_open(&out, path, err)) {
        free(header);
        return false;
    }
    unsigned char le[8];
    for (int i = 0; i < 8; i++) le[i] = (unsigned char)(len >> (8 * i));
    bool ok = fflush(tf->data) == 0 && fwrite(le, 1, 8, out.file) == 8 &&
              fwrite(header, 1, (size_t)len, out.file) == (size_t)len;
    free(header);
    for (int i = 0; ok && i < tf->n; i++) {
        const TensorEntry *t = &tf->tensors[i];
        uint64_t row_bytes = (uint64_t)t->width * sizeof(float);
        for (int j = 0; ok && j < t->n_runs; j++)
            ok = copy_bytes(tf->data, t->runs[j].offset, (uint64_t)t->runs[j].rows * row_bytes,
                            out.file);
    }
    if (!ok) {
        atomic_file_discard(&out);
        return step_fail(err, "%s: write failed", path);
    }
    return atomic_file_commit(&out, err);
}

static const char *kind_name(TensorKind k) {
    static const char *const names[] = {[TENSOR_LOGITS] = "logits",
                                        [TENSOR_ACTIVATION] = "activation",
                                        [TENSOR_KV_K] = "kv_k",
                                        [TENSOR_KV_V] = "kv_v",
                                        [TENSOR_HEADS] = "heads"};
    return names[k];
}

cJSON *tensor_file_event(const TensorFile *tf, const char *file) {
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "event", "tensors");
    cJSON_AddStringToObject(e, "file", file);
    cJSON *list = cJSON_AddArrayToObject(e, "tensors");
    for (int i = 0; i < tf->n; i++) {
        const TensorEntry *t = &tf->tensors[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", t->name);
        cJSON_AddStringToObject(o, "kind", kind_name(t->kind));
        if (t->layer >= 0) cJSON_AddNumberToObject(o, "layer", t->layer);
        cJSON_AddNumberToObject(o, "first_pos", t->first_pos);
        add_shape(o, t);
        cJSON_AddItemToArray(list, o);
    }
    return e;
}
