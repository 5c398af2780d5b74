/* sha256.h: SHA-256 (FIPS 180-4), to name the exact model file a golden set
 * was made from. */
#ifndef STEPWISE_SHA256_H
#define STEPWISE_SHA256_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ref/util/error.h"

typedef struct {
    uint32_t h[8];
    uint8_t block[64];
    size_t used;    /* bytes in block */
    uint64_t total; /* bytes hashed */
    bool hardware;  /* compress on the SHA extensions (sha256_x86.c); same bits */
} Sha256;

/* hardware is set when the processor has the extensions; a caller may
 * clear it to take the portable rounds. */
void sha256_init(Sha256 *s);
void sha256_update(Sha256 *s, const void *data, size_t n);
/* The digest as 64 lower-case hex digits and a NUL. */
void sha256_hex(Sha256 *s, char out[65]);

/* FIPS 180-4's K: the 64 rounds' constants (sha256.c), for both kinds of
 * rounds. */
extern const uint32_t sha256_round_constants[64];

/* Whether this processor has the SHA extensions, and blocks 64-byte
 * blocks of data compressed into h on them (sha256_x86.c; only when
 * available). */
bool sha256_hardware_available(void);
void sha256_blocks_hardware(uint32_t h[8], const uint8_t *data, size_t blocks);

/* The SHA-256 of a whole file, as hex. */
bool sha256_file(const char *path, char out[65], StepError *err);

#endif
