/* gguf.h: reading a GGUF file (llama.cpp's format), v2 and v3: the header,
 * the typed key-value metadata, the tensor infos (dimensions fastest
 * first: ne[0] is the row length) and the data section, aligned to
 * general.alignment (default 32). Every count, length and offset is checked
 * against the bytes that remain, in overflow-safe arithmetic, before
 * anything is allocated or read; the file is mapped, not read. */
#ifndef STEPWISE_GGUF_H
#define STEPWISE_GGUF_H

#include <stddef.h>
#include <stdint.h>

#include "ref/util/error.h"
#include "ref/kernels/gguf_dequant.h"
#include "ref/util/name_index.h"

/* Metadata value types (the GGUF spec's numbering). */
enum {
    GGUF_U8,
    GGUF_I8,
    GGUF_U16,
    GGUF_I16,
    GGUF_U32,
    GGUF_I32,
    GGUF_F32,
    GGUF_BOOL,
    GGUF_STRING,
    GGUF_ARRAY,
    GGUF_U64,
    GGUF_I64,
    GGUF_F64,
};

typedef struct {
    char *key;
    uint32_t type;
    const unsigned char *value; /* into the file: the value's bytes (an array: after its header) */
    uint32_t array_type;        /* for arrays */
    uint64_t array_n;
} GgufKv;

typedef struct {
    char *name;
    int n_dims;
    uint64_t ne[4];
    uint32_t type;
    uint64_t numel;
    const unsigned char *data; /* into the file */
    uint64_t bytes;
    int used;
} GgufTensor;

typedef struct {
    char *path;
    void *map;
    size_t map_bytes;
    uint32_t version;
    GgufKv *kv;
    uint64_t n_kv;
    GgufTensor *tensors;
    uint64_t n_tensors;
    NameIndex by_name; /* tensors by name */
} GgufFile;

/* Map and check the file at path. */
bool gguf_open(GgufFile *f, const char *path, StepError *err);
/* The same on bytes in memory (they must outlive f), for the fuzz target. */
bool gguf_parse(GgufFile *f, const unsigned char *bytes, size_t n, const char *name,
                StepError *err);
void gguf_close(GgufFile *f);

const GgufKv *gguf_find_kv(const GgufFile *f, const char *key);
GgufTensor *gguf_find_tensor(const GgufFile *f, const char *name);

/* A whole-number value of any integer type (or a bool) within [0, max]. */
bool gguf_get_uint(const GgufFile *f, const char *key, uint64_t max, uint64_t *out);
/* A float32 (or float64) value. */
bool gguf_get_float(const GgufFile *f, const char *key, double *out);
/* A string value, copied into a malloc'd NUL-terminated string (NULL when
 * absent, not a string, or holding a NUL). */
char *gguf_get_string(const GgufFile *f, const char *key);
/* Every string of an array of strings, each copied as above, in a malloc'd
 * array of *n (caller frees each and the array); NULL on any mismatch. */
char **gguf_string_array(const GgufFile *f, const char *key, uint64_t *n);

/* How many of f's tensors no reader marked used, the first one's name into
 * first [first_size] ("" when none). */
int gguf_unused_tensors(const GgufFile *f, char *first, size_t first_size);

/* The float32 elements of an array of float32 (a view into the file, which
 * may be unaligned: read with memcpy), or NULL; *n their number. */
const unsigned char *gguf_f32_array(const GgufFile *f, const char *key, uint64_t *n);

/* t's values as float32 into dst [numel]: exact for F32, F16, BF16; the
 * quantized types dequantized as ggml's reference code does (gguf_dequant.h). */
void gguf_to_f32(const GgufTensor *t, float *dst);

#endif
