/* safetensors.h: reading a .safetensors file, the weights format of Hugging
 * Face model directories.
 *
 * The file is an 8-byte little-endian header length N, N bytes of JSON
 * ({"name": {"dtype", "shape", "data_offsets": [begin, end]}, ...,
 * "__metadata__": {...}}), then the data, which the offsets index from its
 * start. The whole header is checked before any tensor is read: its length
 * against the file, every dtype, shape and offset pair, each tensor's bytes
 * against its shape, and that no two tensors overlap. The file is mapped,
 * not read; tensors are converted to float32 exactly (F16 and BF16 are
 * subsets of float32) into the caller's storage. */
#ifndef STEPWISE_SAFETENSORS_H
#define STEPWISE_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "ref/util/error.h"
#include "ref/util/name_index.h"

typedef enum { ST_F32, ST_F16, ST_BF16 } SafetensorsDtype;

#define SAFETENSORS_MAX_DIMS 4

typedef struct {
    char *name; /* owned */
    SafetensorsDtype dtype;
    int ndim;
    int64_t shape[SAFETENSORS_MAX_DIMS];
    uint64_t numel;
    const unsigned char *data; /* into the mapping */
    uint64_t bytes;
    int used; /* set by the caller when it takes the tensor */
} SafetensorsTensor;

typedef struct {
    char *path; /* owned, for messages */
    void *map;
    size_t map_bytes;
    SafetensorsTensor *tensors; /* [n], by where they start */
    NameIndex by_name;          /* tensors by name */
    int n;
} SafetensorsFile;

/* Map and check the file at path. */
bool safetensors_open(SafetensorsFile *f, const char *path, StepError *err);

/* The same, the file named in messages as `what` ("weights", "tensors"). */
bool safetensors_open_as(SafetensorsFile *f, const char *path, const char *what, StepError *err);

/* The same from a file's bytes in memory (not copied: they must outlive
 * f), for the fuzz target; name is for messages. */
bool safetensors_parse(SafetensorsFile *f, const unsigned char *bytes, size_t n, const char *name,
                       StepError *err);

/* The tensor called name, or NULL. */
SafetensorsTensor *safetensors_find(const SafetensorsFile *f, const char *name);

/* "F32", "F16", "BF16". */
const char *safetensors_dtype_name(SafetensorsDtype d);

/* n values stored as dtype (little-endian) at data, as float32 into dst
 * (exact: F16 and BF16 are subsets of float32). GGUF's F32, F16 and BF16
 * are the same encodings. */
void safetensors_convert(SafetensorsDtype dtype, const unsigned char *data, uint64_t n, float *dst);

/* t's values as float32 into dst [numel] (exact for every supported dtype). */
void safetensors_to_f32(const SafetensorsTensor *t, float *dst);

/* Tell the kernel the tensor's pages may go (they are read again from the
 * file if touched): the mapping then costs no memory once converted. */
void safetensors_release(const SafetensorsFile *f, const SafetensorsTensor *t);

void safetensors_close(SafetensorsFile *f);

#endif
