/* fuzz_file.h: the fuzz targets' one helper. The loaders read files by
 * name (they check sizes with fstat and map weights with mmap), so each
 * input is written to a file in a per-process folder, on tmpfs when there
 * is one, and read back through the real code path. */
#ifndef STEPWISE_FUZZ_FILE_H
#define STEPWISE_FUZZ_FILE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The path of `name` in the folder, with data[0..n) written to it. */
static inline const char *fuzz_file(const char *name, const uint8_t *data, size_t n) {
    static char dir[256], path[512];
    if (dir[0] == '\0') {
        const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
        snprintf(dir, sizeof dir, "%s/stepwise-fuzz-XXXXXX", base);
        if (mkdtemp(dir) == NULL) abort();
    }
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (f == NULL || (n > 0 && fwrite(data, 1, n, f) != n) || fclose(f) != 0) abort();
    return path;
}

/* Split data at a 2-byte little-endian length: the first part, then the
 * rest. */
static inline void fuzz_split(const uint8_t *data, size_t n, const uint8_t **a, size_t *na,
                              const uint8_t **b, size_t *nb) {
    size_t len = n >= 2 ? (size_t)(data[0] | data[1] << 8) : 0;
    data += n >= 2 ? 2 : n, n -= n >= 2 ? 2 : n;
    if (len > n) len = n;
    *a = data, *na = len, *b = data + len, *nb = n - len;
}

#endif
