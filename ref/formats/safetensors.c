/* safetensors.c: see safetensors.h. */

/* madvise(MADV_DONTNEED), as in model.c: _DEFAULT_SOURCE declares it. */
#define _DEFAULT_SOURCE
#include "ref/formats/safetensors.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ref/util/file_util.h"
#include "ref/util/float16.h"
#include "ref/util/json_util.h"

/* A header past 100 MiB is not a real model's (a large one is a few MiB). */
#define HEADER_MAX_BYTES ((uint64_t)100 << 20)

const char *safetensors_dtype_name(SafetensorsDtype d) {
    return d == ST_F32 ? "F32" : d == ST_F16 ? "F16" : "BF16";
}

static int dtype_bytes(SafetensorsDtype d) {
    return d == ST_F32 ? 4 : 2;
}

static bool parse_dtype(const char *s, SafetensorsDtype *d) {
    if (strcmp(s, "F32") == 0)
        *d = ST_F32;
    else if (strcmp(s, "F16") == 0)
        *d = ST_F16;
    else if (strcmp(s, "BF16") == 0)
        *d = ST_BF16;
    else
        return false;
    return true;
}

/* One header entry into t; data is the data section of `size` bytes. */
static bool read_entry(SafetensorsTensor *t, const cJSON *e, const unsigned char *data,
                       uint64_t size, const char *path, StepError *err) {
    const char *name = t->name;
    const char *dtype = json_string_field(e, "dtype");
    if (dtype == NULL || !parse_dtype(dtype, &t->dtype))
        return step_fail(err, "%s: tensor %.200s has dtype %s (F32, F16 or BF16 expected)", path,
                         name, dtype ? dtype : "(none)");
    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(e, "shape");
    const cJSON *offsets = cJSON_GetObjectItemCaseSensitive(e, "data_offsets");
    int ndim = cJSON_GetArraySize(shape);
    if (!cJSON_IsArray(shape) || ndim > SAFETENSORS_MAX_DIMS)
        return step_fail(err, "%s: tensor %.200s needs a shape of at most %d dimensions", path,
                         name, SAFETENSORS_MAX_DIMS);
    t->ndim = ndim;
    t->numel = 1;
    const cJSON *d = shape->child;
    for (int i = 0; i < ndim; i++, d = d->next) {
        long long v;
        if (!json_whole_number(d, 0, (double)((int64_t)1 << 40), &v) ||
            (v > 0 && t->numel > ((uint64_t)1 << 42) / (uint64_t)v))
            return step_fail(err, "%s: tensor %.200s has a bad or too large shape", path, name);
        t->shape[i] = v;
        t->numel *= (uint64_t)v;
    }
    long long begin, end;
    if (!cJSON_IsArray(offsets) || cJSON_GetArraySize(offsets) != 2 ||
        !json_whole_number(offsets->child, 0, (double)size, &begin) ||
        !json_whole_number(offsets->child->next, 0, (double)size, &end) || end < begin)
        return step_fail(err, "%s: tensor %.200s has data_offsets outside the %llu data bytes",
                         path, name, (unsigned long long)size);
    t->bytes = (uint64_t)(end - begin);
    if (t->bytes != t->numel * (uint64_t)dtype_bytes(t->dtype))
        return step_fail(err, "%s: tensor %.200s holds %llu bytes, its shape and dtype need %llu",
                         path, name, (unsigned long long)t->bytes,
                         (unsigned long long)(t->numel * (uint64_t)dtype_bytes(t->dtype)));
    t->data = data + begin;
    return true;
}

static int by_start(const void *a, const void *b) {
    const SafetensorsTensor *x = a, *y = b;
    return (x->data > y->data) - (x->data < y->data);
}

/* No two tensors share a byte (sorted by where they start). An empty
 * tensor holds no byte, so it overlaps nothing, wherever it is: the
 * safetensors library places one at [k, k] where k may be another's start. */
static bool check_overlaps(SafetensorsFile *f, StepError *err) {
    qsort(f->tensors, (size_t)f->n, sizeof *f->tensors, by_start);
    const SafetensorsTensor *last = NULL; /* the non-empty tensor before tensors[i] */
    for (int i = 0; i < f->n; i++) {
        const SafetensorsTensor *t = &f->tensors[i];
        if (t->bytes == 0) continue;
        if (last != NULL && last->data + last->bytes > t->data)
            return step_fail(err, "%s: tensors %.150s and %.150s overlap", f->path, last->name,
                             t->name);
        last = t;
    }
    return true;
}

/* The tensors indexed by name once (name_index.h), so that a lookup is a
 * binary search (a linear one for each of a model's tensors was quadratic),
 * and a name the header gives twice is refused. */
static bool index_names(SafetensorsFile *f, StepError *err) {
    if (!name_index_alloc(&f->by_name, (size_t)f->n))
        return step_fail(err, "%s: out of memory", f->path);
    for (int i = 0; i < f->n; i++)
        f->by_name.items[i] = (NamedItem){f->tensors[i].name, &f->tensors[i]};
    const char *twice = name_index_sort(&f->by_name);
    return twice == NULL || step_fail(err, "%s: tensor %.200s appears twice", f->path, twice);
}

/* A name with a control character in it: "logits\u0000x" would otherwise
 * be read as "logits" (cJSON's strings end at a NUL). */
static bool has_control(const char *s) {
    for (; *s != '\0'; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f) return true;
    return false;
}

/* An escaped NUL anywhere in the header text (\u0000, any case): the one
 * character a parsed string cannot show, since it ends there. */
static bool escapes_nul(const char *text, size_t len) {
    for (size_t i = 0; i + 6 <= len; i++)
        if (text[i] == '\\' && text[i + 1] == 'u' && memcmp(text + i + 2, "0000", 4) == 0)
            return true;
    return false;
}

/* __metadata__, when present: an object of strings (the format's rule). */
static bool metadata_ok(const cJSON *meta, const char *name, StepError *err) {
    if (!cJSON_IsObject(meta))
        return step_fail(err, "%s: __metadata__ must be an object of strings", name);
    for (const cJSON *m = meta->child; m != NULL; m = m->next)
        if (!cJSON_IsString(m) || has_control(m->string))
            return step_fail(err,
                             "%s: __metadata__ \"%.60s\" must be a string under a plain key, "
                             "as the format says",
                             name, m->string);
    return true;
}

bool safetensors_parse(SafetensorsFile *f, const unsigned char *bytes, size_t n, const char *name,
                       StepError *err) {
    memset(f, 0, sizeof *f);
    f->path = strdup(name);
    if (f->path == NULL) return step_fail(err, "%s: out of memory", name);
    uint64_t len = 0;
    for (int i = 7; n >= 8 && i >= 0; i--) len = len << 8 | bytes[i];
    if (n < 8 || len < 2 || len > HEADER_MAX_BYTES || len > n - 8) {
        step_fail(err, "%s: header length %llu does not fit the file's %zu bytes", name,
                  (unsigned long long)len, n);
        safetensors_close(f);
        return false;
    }
    cJSON *header = json_parse_whole_n((const char *)bytes + 8, (size_t)len);
    bool ok = cJSON_IsObject(header);
    if (!ok) step_fail(err, "%s: the header is not a JSON object", name);
    if (ok && escapes_nul((const char *)bytes + 8, (size_t)len))
        ok = step_fail(err, "%s: the header holds an escaped NUL (\\u0000)", name);
    int count = ok ? cJSON_GetArraySize(header) : 0;
    f->tensors = calloc((size_t)(count > 0 ? count : 1), sizeof *f->tensors);
    if (ok && f->tensors == NULL) ok = step_fail(err, "%s: out of memory", name);
    const unsigned char *data = bytes + 8 + len;
    uint64_t data_bytes = n - 8 - len;
    for (const cJSON *e = ok ? header->child : NULL; ok && e != NULL; e = e->next) {
        if (strcmp(e->string, "__metadata__") == 0) {
            ok = metadata_ok(e, name, err);
            continue;
        }
        if (has_control(e->string) || e->string[0] == '\0') {
            ok = step_fail(err, "%s: a tensor name is empty or holds a control character", name);
            break;
        }
        SafetensorsTensor *t = &f->tensors[f->n++];
        t->name = strdup(e->string);
        ok = t->name != NULL ? read_entry(t, e, data, data_bytes, name, err)
                             : step_fail(err, "%s: out of memory", name);
    }
    cJSON_Delete(header);
    if (ok) ok = check_overlaps(f, err) && index_names(f, err);
    if (!ok) safetensors_close(f);
    return ok;
}

bool safetensors_open(SafetensorsFile *f, const char *path, StepError *err) {
    return safetensors_open_as(f, path, "weights", err);
}

bool safetensors_open_as(SafetensorsFile *f, const char *path, const char *what, StepError *err) {
    memset(f, 0, sizeof *f);
    void *map;
    size_t bytes;
    if (!file_map_input(path, what, "safetensors", 8, &map, &bytes, err)) return false;
    if (!safetensors_parse(f, map, bytes, path, err)) {
        munmap(map, bytes);
        return false;
    }
    f->map = map, f->map_bytes = bytes;
    return true;
}

SafetensorsTensor *safetensors_find(const SafetensorsFile *f, const char *name) {
    return name_index_find(&f->by_name, name);
}

void safetensors_convert(SafetensorsDtype dtype, const unsigned char *data, uint64_t n,
                         float *dst) {
    const unsigned char *p = data;
    for (uint64_t i = 0; i < n; i++) {
        uint32_t bits;
        if (dtype == ST_F32) {
            bits = (uint32_t)p[4 * i] | (uint32_t)p[4 * i + 1] << 8 | (uint32_t)p[4 * i + 2] << 16 |
                   (uint32_t)p[4 * i + 3] << 24;
            memcpy(&dst[i], &bits, sizeof bits);
            continue;
        }
        uint16_t h = (uint16_t)(p[2 * i] | p[2 * i + 1] << 8);
        if (dtype == ST_F16) {
            dst[i] = half_to_float(h);
        } else { /* bfloat16: the top half of a float32 */
            bits = (uint32_t)h << 16;
            memcpy(&dst[i], &bits, sizeof bits);
        }
    }
}

void safetensors_to_f32(const SafetensorsTensor *t, float *dst) {
    safetensors_convert(t->dtype, t->data, t->numel, dst);
}

void safetensors_release(const SafetensorsFile *f, const SafetensorsTensor *t) {
    if (f->map == NULL || t->bytes == 0) return;
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t lo = ((uintptr_t)t->data + page - 1) / page * page; /* whole pages inside */
    uintptr_t hi = ((uintptr_t)t->data + t->bytes) / page * page;
    if (hi > lo) madvise((void *)lo, hi - lo, MADV_DONTNEED);
}

void safetensors_close(SafetensorsFile *f) {
    for (int i = 0; f->tensors != NULL && i < f->n; i++) free(f->tensors[i].name);
    free(f->tensors);
    name_index_free(&f->by_name);
    if (f->map != NULL) munmap(f->map, f->map_bytes);
    free(f->path);
    memset(f, 0, sizeof *f);
}
