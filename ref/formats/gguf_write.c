/* gguf_write.c: see gguf_write.h. */
#include "ref/formats/gguf_write.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ref/util/file_util.h"
#include "ref/util/float16.h"
#include "ref/formats/gguf.h"

#define GGUF_ALIGNMENT 32

static void put_bytes(TextBuffer *b, const void *p, size_t n) {
    text_buffer_add(b, (const char *)p, n);
}

/* v as n little-endian bytes. */
static void put_le(TextBuffer *b, uint64_t v, int n) {
    unsigned char x[8];
    for (int i = 0; i < n; i++) x[i] = (unsigned char)(v >> (8 * i));
    put_bytes(b, x, (size_t)n);
}

static void put_string(TextBuffer *b, const char *s) {
    size_t n = strlen(s);
    put_le(b, n, 8);
    put_bytes(b, s, n);
}

static uint32_t f32_bits(float f) {
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    return bits;
}

/* A key and its value type: the start of every pair. */
static void put_key(GgufMetadata *m, const char *key, uint32_t type) {
    put_string(&m->bytes, key);
    put_le(&m->bytes, type, 4);
    m->count++;
}

void gguf_meta_string(GgufMetadata *m, const char *key, const char *value) {
    put_key(m, key, GGUF_STRING);
    put_string(&m->bytes, value);
}

void gguf_meta_u32(GgufMetadata *m, const char *key, uint32_t value) {
    put_key(m, key, GGUF_U32);
    put_le(&m->bytes, value, 4);
}

void gguf_meta_f32(GgufMetadata *m, const char *key, float value) {
    put_key(m, key, GGUF_F32);
    put_le(&m->bytes, f32_bits(value), 4);
}

void gguf_meta_bool(GgufMetadata *m, const char *key, bool value) {
    put_key(m, key, GGUF_BOOL);
    put_le(&m->bytes, value ? 1 : 0, 1);
}

/* An array's header: the element type and the count. */
static void put_array(GgufMetadata *m, const char *key, uint32_t type, uint64_t n) {
    put_key(m, key, GGUF_ARRAY);
    put_le(&m->bytes, type, 4);
    put_le(&m->bytes, n, 8);
}

void gguf_meta_strings(GgufMetadata *m, const char *key, const char *const *values, uint64_t n) {
    put_array(m, key, GGUF_STRING, n);
    for (uint64_t i = 0; i < n; i++) put_string(&m->bytes, values[i]);
}

void gguf_meta_f32s(GgufMetadata *m, const char *key, const float *values, uint64_t n) {
    put_array(m, key, GGUF_F32, n);
    for (uint64_t i = 0; i < n; i++) put_le(&m->bytes, f32_bits(values[i]), 4);
}

void gguf_meta_i32s(GgufMetadata *m, const char *key, const int32_t *values, uint64_t n) {
    put_array(m, key, GGUF_I32, n);
    for (uint64_t i = 0; i < n; i++) put_le(&m->bytes, (uint32_t)values[i], 4);
}

void gguf_meta_free(GgufMetadata *m) {
    free(m->bytes.s);
    *m = GGUF_METADATA_INIT;
}

void gguf_quantize_q8_0(const float *x, unsigned char block[34]) {
    float amax = 0.0f;
    for (int j = 0; j < 32; j++) amax = fmaxf(amax, fabsf(x[j]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    uint16_t h = float_to_half(d);
    block[0] = (unsigned char)(h & 0xFF), block[1] = (unsigned char)(h >> 8);
    for (int j = 0; j < 32; j++) block[2 + j] = (unsigned char)(int8_t)roundf(x[j] * id);
}

/* Bytes of one stored row of t, and of its whole data. */
static uint64_t row_bytes(const GgufOutTensor *t) {
    if (t->type == GGML_Q8_0) return t->cols / 32 * 34;
    return t->cols * (t->type == GGML_F16 || t->type == GGML_BF16 ? 2 : 4);
}

/* Rows of t's data: a vector's one, a plane's rows in every plane. */
static uint64_t all_rows(const GgufOutTensor *t) {
    return t->rows == 0 ? 1 : t->rows * (t->planes > 1 ? t->planes : 1);
}

static uint64_t data_bytes(const GgufOutTensor *t) {
    return all_rows(t) * row_bytes(t);
}

static uint64_t aligned(uint64_t n) {
    return (n + GGUF_ALIGNMENT - 1) / GGUF_ALIGNMENT * GGUF_ALIGNMENT;
}

/* One row of values (cols of them) into out in t's type. */
static void encode_row(const GgufOutTensor *t, const float *row, uint64_t cols,
                       unsigned char *out) {
    if (t->type == GGML_Q8_0) {
        for (uint64_t b = 0; b < cols / 32; b++) gguf_quantize_q8_0(row + 32 * b, out + 34 * b);
        return;
    }
    for (uint64_t c = 0; c < cols; c++) {
        uint32_t bits = t->type == GGML_F16    ? float_to_half(row[c])
                        : t->type == GGML_BF16 ? float_to_bf16(row[c])
                                               : f32_bits(row[c]);
        int n = t->type == GGML_F16 || t->type == GGML_BF16 ? 2 : 4;
        for (int i = 0; i < n; i++)
            out[(size_t)c * (size_t)n + (size_t)i] = (unsigned char)(bits >> (8 * i));
    }
}

/* t's data: row by row, each row from where its order says. A vector's
 * values are rows of one, so its order applies to them. */
static bool write_data(FILE *f, const GgufOutTensor *t, unsigned char *row_buf, float *gather) {
    if (t->rows == 0) {
        for (uint64_t i = 0; i < t->cols; i++)
            gather[i] = t->values[rope_source_row(i, t->head_dim, t->order)];
        encode_row(t, gather, t->cols, row_buf);
        return fwrite(row_buf, 1, row_bytes(t), f) == row_bytes(t);
    }
    for (uint64_t r = 0; r < all_rows(t); r++) {
        size_t from = rope_source_row(r, t->head_dim, t->order);
        if (t->source != NULL) matrix_row(t->source, (int)from, gather); /* widened as read */
        const float *src = t->source != NULL ? gather : t->values + from * t->cols;
        encode_row(t, src, t->cols, row_buf);
        if (fwrite(row_buf, 1, row_bytes(t), f) != row_bytes(t)) return false;
    }
    return true;
}

static bool write_zeros(FILE *f, uint64_t n) {
    static const unsigned char zeros[GGUF_ALIGNMENT];
    return n == 0 || fwrite(zeros, 1, n, f) == n;
}

bool gguf_write_file(const char *path, const GgufMetadata *meta, const GgufOutTensor *t, int n,
                     const ProgressSink *progress, StepError *err) {
    TextBuffer head = TEXT_BUFFER_INIT;
    put_bytes(&head, "GGUF", 4);
    put_le(&head, 3, 4);
    put_le(&head, (uint64_t)n, 8);
    put_le(&head, meta->count, 8);
    put_bytes(&head, meta->bytes.s, meta->bytes.n);
    uint64_t offset = 0, widest = 1;
    for (int i = 0; i < n; i++) {
        bool vector = t[i].rows == 0;
        put_string(&head, t[i].name);
        bool cube = !vector && t[i].planes > 1;
        put_le(&head, vector ? 1 : cube ? 3 : 2, 4);
        put_le(&head, t[i].cols, 8); /* ne[0]: the row length */
        if (!vector) put_le(&head, t[i].rows, 8);
        if (cube) put_le(&head, t[i].planes, 8);
        put_le(&head, t[i].type, 4);
        put_le(&head, offset, 8);
        offset = aligned(offset + data_bytes(&t[i]));
        if (t[i].cols > widest) widest = t[i].cols;
    }
    bool ok = head.ok && meta->bytes.ok;
    unsigned char *row_buf = ok ? malloc(widest * 4) : NULL;
    float *gather = ok ? malloc(widest * sizeof *gather) : NULL;
    if (row_buf == NULL || gather == NULL) ok = step_fail(err, "%s: out of memory", path);
    AtomicFile out = {0};
    ok = ok && atomic_file_open(&out, path, err);
    if (ok) {
        bool wrote = fwrite(head.s, 1, head.n, out.file) == head.n &&
                     write_zeros(out.file, aligned(head.n) - head.n);
        for (int i = 0; wrote && i < n; i++) {
            wrote = write_data(out.file, &t[i], row_buf, gather) &&
                    write_zeros(out.file, aligned(data_bytes(&t[i])) - data_bytes(&t[i]));
            if (t[i].source != NULL && t[i].owner != NULL) /* read once: its pages go back */
                model_release_bytes(t[i].owner, t[i].source->data, matrix_bytes(t[i].source));
            progress_report(progress, "writing the tensors", (uint64_t)i + 1, (uint64_t)n);
        }
        if (!wrote) {
            atomic_file_discard(&out);
            ok = step_fail(err, "%s: write failed: %s", path, strerror(errno));
        } else {
            ok = atomic_file_commit(&out, err);
        }
    }
    free(head.s), free(row_buf), free(gather);
    return ok;
}
