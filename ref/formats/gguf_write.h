/* gguf_write.h: writing a GGUF v3 file (the format gguf.h reads): typed
 * metadata built in memory, then the tensor infos and the data, each
 * tensor aligned to 32 bytes (general.alignment's default), streamed row
 * by row into a temporary file that is renamed into place only when whole.
 * Everything is written little-endian, byte by byte. */
#ifndef STEPWISE_GGUF_WRITE_H
#define STEPWISE_GGUF_WRITE_H

#include <stdbool.h>
#include <stdint.h>

#include "ref/config.h"
#include "ref/kernels/matrix.h"
#include "ref/model/model.h"
#include "ref/util/error.h"
#include "ref/util/progress.h"
#include "ref/util/text_buffer.h"

/* The metadata key-value pairs, encoded as they go into the file. */
typedef struct {
    TextBuffer bytes; /* the encoded pairs, back to back */
    uint64_t count;
} GgufMetadata;

#define GGUF_METADATA_INIT ((GgufMetadata){.bytes = TEXT_BUFFER_INIT})

void gguf_meta_string(GgufMetadata *m, const char *key, const char *value);
void gguf_meta_u32(GgufMetadata *m, const char *key, uint32_t value);
void gguf_meta_f32(GgufMetadata *m, const char *key, float value);
void gguf_meta_bool(GgufMetadata *m, const char *key, bool value);
void gguf_meta_strings(GgufMetadata *m, const char *key, const char *const *values, uint64_t n);
void gguf_meta_f32s(GgufMetadata *m, const char *key, const float *values, uint64_t n);
void gguf_meta_i32s(GgufMetadata *m, const char *key, const int32_t *values, uint64_t n);
void gguf_meta_free(GgufMetadata *m);

/* One tensor to write: float32 values, [rows, cols] row-major (rows 0: a
 * vector of cols, whose values are reordered as rows of one), stored as
 * type (GGML_F32, GGML_F16 or GGML_Q8_0; Q8_0 needs cols divisible by 32). */
typedef struct {
    char name[64];
    const float *values; /* or NULL: the rows of source, widened one at a time as written */
    const Matrix *source;
    const Model *owner; /* source's model: its file pages are given back once written
                           (model_release_bytes), so that they do not pile up (may be NULL) */
    uint64_t rows, cols;
    uint64_t planes; /* > 1: a 3-D tensor, planes x rows x cols (ne[2] = planes), its values
                        planes · rows rows in a row (a mixture's experts); 0 or 1: 2-D */
    uint32_t type;
    RowOrder order;
    int head_dim; /* for order */
} GgufOutTensor;

/* Write the file at path (atomic_file_open's rules): header, meta, the
 * infos of t[0..n) and their data, telling progress (may be NULL) how many
 * tensors are written. */
bool gguf_write_file(const char *path, const GgufMetadata *meta, const GgufOutTensor *t, int n,
                     const ProgressSink *progress, StepError *err);

/* One Q8_0 block (34 bytes: F16 d, then 32 int8 q) of x[0..32), as ggml's
 * quantize_row_q8_0_ref makes it: d = max|x| / 127, q = roundf(x · (1/d))
 * with the reciprocal of the float32 d (not of d rounded to F16), and
 * q = 0 when the block is all zeros. */
void gguf_quantize_q8_0(const float *x, unsigned char block[34]);

#endif
