/* gguf.c: see gguf.h. */
#include "ref/formats/gguf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "ref/util/file_util.h"
#include "ref/formats/safetensors.h"

/* Far beyond any real file, and small enough that no product overflows. */
#define GGUF_MAX_COUNT  ((uint64_t)1 << 24)
#define GGUF_MAX_STRING ((uint64_t)1 << 24)

/* Reading the file front to back, never past its end. */
typedef struct {
    const unsigned char *p, *end;
} Cursor;

static bool take_bytes(Cursor *c, uint64_t n, const unsigned char **out) {
    if (n > (uint64_t)(c->end - c->p)) return false;
    *out = c->p;
    c->p += n;
    return true;
}

static bool read_u32(Cursor *c, uint32_t *v) {
    const unsigned char *b;
    if (!take_bytes(c, 4, &b)) return false;
    *v = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
    return true;
}

static bool read_u64(Cursor *c, uint64_t *v) {
    uint32_t lo, hi;
    if (!read_u32(c, &lo) || !read_u32(c, &hi)) return false;
    *v = (uint64_t)hi << 32 | lo;
    return true;
}

/* A string: u64 length, then its bytes (not NUL-terminated in the file). */
static bool read_string(Cursor *c, const unsigned char **s, uint64_t *len) {
    return read_u64(c, len) && *len <= GGUF_MAX_STRING && take_bytes(c, *len, s);
}

static char *copy_string(const unsigned char *s, uint64_t len) {
    if (memchr(s, '\0', (size_t)len) != NULL) return NULL;
    char *out = malloc((size_t)len + 1);
    if (out != NULL) memcpy(out, s, (size_t)len), out[len] = '\0';
    return out;
}

/* Bytes of one scalar of this type, or 0 for a string, array or unknown. */
static uint64_t scalar_bytes(uint32_t type) {
    switch (type) {
        case GGUF_U8:
        case GGUF_I8:
        case GGUF_BOOL:
            return 1;
        case GGUF_U16:
        case GGUF_I16:
            return 2;
        case GGUF_U32:
        case GGUF_I32:
        case GGUF_F32:
            return 4;
        case GGUF_U64:
        case GGUF_I64:
        case GGUF_F64:
            return 8;
        default:
            return 0;
    }
}

/* Skip one value of `type` (arrays of scalars or strings; no nesting). */
static bool skip_value(Cursor *c, uint32_t type, GgufKv *kv) {
    const unsigned char *b;
    uint64_t n;
    if (type == GGUF_STRING) return read_string(c, &b, &n);
    if (type != GGUF_ARRAY) return scalar_bytes(type) > 0 && take_bytes(c, scalar_bytes(type), &b);
    uint32_t item;
    if (!read_u32(c, &item) || !read_u64(c, &n) || n > GGUF_MAX_COUNT) return false;
    kv->array_type = item, kv->array_n = n, kv->value = c->p;
    if (item == GGUF_STRING) {
        uint64_t len;
        for (uint64_t i = 0; i < n; i++)
            if (!read_string(c, &b, &len)) return false;
        return true;
    }
    return scalar_bytes(item) > 0 && take_bytes(c, n * scalar_bytes(item), &b);
}

static bool read_kvs(GgufFile *f, Cursor *c, StepError *err) {
    for (uint64_t i = 0; i < f->n_kv; i++) {
        GgufKv *kv = &f->kv[i];
        const unsigned char *key;
        uint64_t len;
        if (!read_string(c, &key, &len) || (kv->key = copy_string(key, len)) == NULL ||
            !read_u32(c, &kv->type))
            return step_fail(err, "%s: metadata entry %llu is malformed or truncated", f->path,
                             (unsigned long long)i);
        kv->value = c->p;
        if (!skip_value(c, kv->type, kv))
            return step_fail(err, "%s: metadata %.100s (type %u) runs past the end or is malformed",
                             f->path, kv->key, kv->type);
    }
    return true;
}

static bool read_tensor_infos(GgufFile *f, Cursor *c, StepError *err) {
    for (uint64_t i = 0; i < f->n_tensors; i++) {
        GgufTensor *t = &f->tensors[i];
        const unsigned char *name;
        uint64_t len, offset;
        uint32_t n_dims;
        if (!read_string(c, &name, &len) || (t->name = copy_string(name, len)) == NULL ||
            !read_u32(c, &n_dims) || n_dims < 1 || n_dims > 4)
            return step_fail(err, "%s: tensor info %llu is malformed (or has more than 4 dims)",
                             f->path, (unsigned long long)i);
        t->n_dims = (int)n_dims;
        t->numel = 1;
        for (uint32_t d = 0; d < n_dims; d++) {
            if (!read_u64(c, &t->ne[d]) || t->ne[d] > ((uint64_t)1 << 40) ||
                (t->ne[d] > 0 && t->numel > ((uint64_t)1 << 42) / t->ne[d]))
                return step_fail(err, "%s: tensor %.100s has a bad or too large shape", f->path,
                                 t->name);
            t->numel *= t->ne[d];
        }
        if (!read_u32(c, &t->type) || !read_u64(c, &offset))
            return step_fail(err, "%s: tensor %.100s info is truncated", f->path, t->name);
        t->data = (const unsigned char *)(uintptr_t)offset; /* resolved once the data starts */
        uint64_t per_block, size = gguf_block_bytes(t->type, &per_block);
        if (size > 0 && t->ne[0] % per_block != 0)
            return step_fail(err,
                             "%s: tensor %.100s of type %u has rows of %llu values, not whole "
                             "blocks of %llu",
                             f->path, t->name, t->type, (unsigned long long)t->ne[0],
                             (unsigned long long)per_block);
        t->bytes = t->numel / per_block * size;
    }
    return true;
}

static int by_offset(const void *a, const void *b) {
    const GgufTensor *x = *(GgufTensor *const *)a, *y = *(GgufTensor *const *)b;
    return (x->data > y->data) - (x->data < y->data);
}

/* Place every tensor in the data section: aligned, in bounds, no overlap,
 * no duplicate names, a type stepwise reads. */
static bool place_tensors(GgufFile *f, const unsigned char *data, uint64_t size, uint64_t align,
                          StepError *err) {
    GgufTensor **order = malloc((size_t)(f->n_tensors ? f->n_tensors : 1) * sizeof *order);
    if (order == NULL) return step_fail(err, "%s: out of memory", f->path);
    bool ok = true;
    for (uint64_t i = 0; ok && i < f->n_tensors; i++) {
        GgufTensor *t = &f->tensors[i];
        uint64_t offset = (uint64_t)(uintptr_t)t->data;
        uint64_t per_block;
        if (gguf_block_bytes(t->type, &per_block) == 0)
            ok = step_fail(err,
                           "%s: tensor %.100s has type %u, which stepwise does not read "
                           "(F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q4_K, Q5_K, Q6_K)",
                           f->path, t->name, t->type);
        else if (offset % align != 0 || offset > size || t->bytes > size - offset)
            ok =
                step_fail(err, "%s: tensor %.100s lies outside the data or unaligned (offset %llu)",
                          f->path, t->name, (unsigned long long)offset);
        t->data = data + (ok ? offset : 0);
        order[i] = t;
    }
    if (ok) qsort(order, (size_t)f->n_tensors, sizeof *order, by_offset);
    /* An empty tensor holds no byte, so it overlaps nothing, wherever it is. */
    const GgufTensor *last = NULL; /* the non-empty tensor before order[i] */
    for (uint64_t i = 0; ok && i < f->n_tensors; i++) {
        if (order[i]->bytes == 0) continue;
        if (last != NULL && last->data + last->bytes > order[i]->data)
            ok = step_fail(err, "%s: tensors %.100s and %.100s overlap", f->path, last->name,
                           order[i]->name);
        last = order[i];
    }
    free(order);
    return ok;
}

/* The tensors indexed by name once (name_index.h): a duplicate is found
 * here, and a lookup is a binary search. */
static bool index_names(GgufFile *f, StepError *err) {
    if (!name_index_alloc(&f->by_name, (size_t)f->n_tensors))
        return step_fail(err, "%s: out of memory", f->path);
    for (uint64_t i = 0; i < f->n_tensors; i++)
        f->by_name.items[i] = (NamedItem){f->tensors[i].name, &f->tensors[i]};
    const char *twice = name_index_sort(&f->by_name);
    return twice == NULL || step_fail(err, "%s: tensor %.100s appears twice", f->path, twice);
}

/* Each key once: llama.cpp refuses a file that gives a key twice, and
 * stepwise's first-found lookup would otherwise run on whichever copy came
 * first (a refused expert_gating_func slipped past behind an accepted one). */
static bool keys_once(GgufFile *f, StepError *err) {
    NameIndex keys = {0};
    if (!name_index_alloc(&keys, (size_t)f->n_kv))
        return step_fail(err, "%s: out of memory", f->path);
    for (uint64_t i = 0; i < f->n_kv; i++) keys.items[i] = (NamedItem){f->kv[i].key, &f->kv[i]};
    const char *twice = name_index_sort(&keys);
    bool ok = twice == NULL || step_fail(err, "%s: key %.100s appears twice", f->path, twice);
    name_index_free(&keys);
    return ok;
}

bool gguf_parse(GgufFile *f, const unsigned char *bytes, size_t n, const char *name,
                StepError *err) {
    memset(f, 0, sizeof *f);
    f->path = strdup(name);
    Cursor c = {bytes, bytes + n};
    const unsigned char *magic;
    bool ok = f->path != NULL || step_fail(err, "%s: out of memory", name);
    ok = ok && ((take_bytes(&c, 4, &magic) && memcmp(magic, "GGUF", 4) == 0) ||
                step_fail(err, "%s: not a GGUF file (no GGUF magic)", name));
    ok = ok && ((read_u32(&c, &f->version) && (f->version == 2 || f->version == 3)) ||
                step_fail(err, "%s: GGUF version %u is not supported (2, 3)", name, f->version));
    ok = ok && ((read_u64(&c, &f->n_tensors) && read_u64(&c, &f->n_kv) &&
                 f->n_tensors <= GGUF_MAX_COUNT && f->n_kv <= GGUF_MAX_COUNT &&
                 f->n_tensors + f->n_kv <= (uint64_t)(c.end - c.p) / 8) ||
                step_fail(err, "%s: the header's counts do not fit the file", name));
    if (ok) {
        f->kv = calloc((size_t)(f->n_kv ? f->n_kv : 1), sizeof *f->kv);
        f->tensors = calloc((size_t)(f->n_tensors ? f->n_tensors : 1), sizeof *f->tensors);
        ok = (f->kv != NULL && f->tensors != NULL) || step_fail(err, "%s: out of memory", name);
    }
    ok = ok && read_kvs(f, &c, err) && keys_once(f, err) && read_tensor_infos(f, &c, err);
    uint64_t align = 32;
    if (ok && gguf_find_kv(f, "general.alignment") != NULL &&
        (!gguf_get_uint(f, "general.alignment", 1 << 20, &align) || align == 0 ||
         (align & (align - 1)) != 0))
        ok = step_fail(err, "%s: general.alignment must be a power of two", name);
    if (ok) {
        uint64_t at = (uint64_t)(c.p - bytes), start = (at + align - 1) / align * align;
        /* a vocabulary-only file (llama.cpp's ggml-vocab-*.gguf) has no
         * tensors, and may end before the data section would start */
        if (start > n && f->n_tensors == 0) start = n;
        ok = start <= n || step_fail(err, "%s: no data section", name);
        if (ok) ok = place_tensors(f, bytes + start, n - start, align, err);
    }
    if (ok) ok = index_names(f, err);
    if (!ok) gguf_close(f);
    return ok;
}

bool gguf_open(GgufFile *f, const char *path, StepError *err) {
    memset(f, 0, sizeof *f);
    void *map;
    size_t bytes;
    if (!file_map_input(path, "model", "GGUF", 24, &map, &bytes, err)) return false;
    if (!gguf_parse(f, map, bytes, path, err)) {
        munmap(map, bytes);
        return false;
    }
    f->map = map, f->map_bytes = bytes;
    return true;
}

void gguf_close(GgufFile *f) {
    for (uint64_t i = 0; f->kv != NULL && i < f->n_kv; i++) free(f->kv[i].key);
    for (uint64_t i = 0; f->tensors != NULL && i < f->n_tensors; i++) free(f->tensors[i].name);
    free(f->kv), free(f->tensors), free(f->path);
    name_index_free(&f->by_name);
    if (f->map != NULL) munmap(f->map, f->map_bytes);
    memset(f, 0, sizeof *f);
}

const GgufKv *gguf_find_kv(const GgufFile *f, const char *key) {
    for (uint64_t i = 0; i < f->n_kv; i++) {
        if (f->kv[i].key != NULL && strcmp(f->kv[i].key, key) == 0) return &f->kv[i];
    }
    return NULL;
}

GgufTensor *gguf_find_tensor(const GgufFile *f, const char *name) {
    return name_index_find(&f->by_name, name);
}

static uint64_t le(const unsigned char *b, int n) {
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--) v = v << 8 | b[i];
    return v;
}

int gguf_unused_tensors(const GgufFile *f, char *first, size_t first_size) {
    int unused = 0;
    if (first_size > 0) first[0] = '\0';
    for (uint64_t i = 0; i < f->n_tensors; i++)
        if (!f->tensors[i].used && unused++ == 0 && first_size > 0)
            snprintf(first, first_size, "%s", f->tensors[i].name);
    return unused;
}

bool gguf_get_uint(const GgufFile *f, const char *key, uint64_t max, uint64_t *out) {
    const GgufKv *kv = gguf_find_kv(f, key);
    if (kv == NULL) return false;
    int64_t v;
    switch (kv->type) {
        case GGUF_U8:
        case GGUF_BOOL:
            v = (int64_t)le(kv->value, 1);
            break;
        case GGUF_I8:
            v = (int8_t)le(kv->value, 1);
            break;
        case GGUF_U16:
            v = (int64_t)le(kv->value, 2);
            break;
        case GGUF_I16:
            v = (int16_t)le(kv->value, 2);
            break;
        case GGUF_U32:
            v = (int64_t)le(kv->value, 4);
            break;
        case GGUF_I32:
            v = (int32_t)le(kv->value, 4);
            break;
        case GGUF_U64: {
            uint64_t u = le(kv->value, 8);
            if (u > max) return false;
            *out = u;
            return true;
        }
        case GGUF_I64:
            v = (int64_t)le(kv->value, 8);
            break;
        default:
            return false;
    }
    if (v < 0 || (uint64_t)v > max) return false;
    *out = (uint64_t)v;
    return true;
}

bool gguf_get_float(const GgufFile *f, const char *key, double *out) {
    const GgufKv *kv = gguf_find_kv(f, key);
    if (kv == NULL) return false;
    if (kv->type == GGUF_F32) {
        uint32_t bits = (uint32_t)le(kv->value, 4);
        float v;
        memcpy(&v, &bits, sizeof v);
        *out = v;
        return true;
    }
    if (kv->type == GGUF_F64) {
        uint64_t bits = le(kv->value, 8);
        memcpy(out, &bits, sizeof *out);
        return true;
    }
    return false;
}

char *gguf_get_string(const GgufFile *f, const char *key) {
    const GgufKv *kv = gguf_find_kv(f, key);
    if (kv == NULL || kv->type != GGUF_STRING) return NULL;
    uint64_t len = le(kv->value, 8);
    return copy_string(kv->value + 8, len); /* bounds were checked when parsed */
}

char **gguf_string_array(const GgufFile *f, const char *key, uint64_t *n) {
    const GgufKv *kv = gguf_find_kv(f, key);
    if (kv == NULL || kv->type != GGUF_ARRAY || kv->array_type != GGUF_STRING) return NULL;
    char **out = calloc((size_t)(kv->array_n ? kv->array_n : 1), sizeof *out);
    const unsigned char *p = kv->value;
    for (uint64_t i = 0; out != NULL && i < kv->array_n; i++) {
        uint64_t len = le(p, 8);
        if ((out[i] = copy_string(p + 8, len)) == NULL) {
            for (uint64_t j = 0; j < i; j++) free(out[j]);
            free(out);
            return NULL;
        }
        p += 8 + len;
    }
    *n = kv->array_n;
    return out;
}

const unsigned char *gguf_f32_array(const GgufFile *f, const char *key, uint64_t *n) {
    const GgufKv *kv = gguf_find_kv(f, key);
    if (kv == NULL || kv->type != GGUF_ARRAY || kv->array_type != GGUF_F32) return NULL;
    *n = kv->array_n;
    return kv->value;
}

void gguf_to_f32(const GgufTensor *t, float *dst) {
    uint64_t per_block, size = gguf_block_bytes(t->type, &per_block);
    if (per_block > 1) {
        for (uint64_t k = 0; k < t->numel / per_block; k++)
            gguf_dequantize_block(t->type, t->data + k * size, dst + k * per_block);
        return;
    }
    SafetensorsDtype d = t->type == GGML_F32 ? ST_F32 : t->type == GGML_F16 ? ST_F16 : ST_BF16;
    safetensors_convert(d, t->data, t->numel, dst);
}
