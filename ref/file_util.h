/* file_util.h: reading a whole small text file, with clear errors. */
#ifndef STEPWISE_FILE_UTIL_H
#define STEPWISE_FILE_UTIL_H

#include <stdio.h>

#include "error.h"

/* Largest text file we read whole (JSON models, request lists). */
#define FILE_TEXT_MAX_BYTES ((long)256 << 20)

/* Read path into a malloc'd NUL-terminated string (*out, caller frees).
 * `what` names the file's role in errors ("model", "requests"). */
bool file_read_text(const char *path, const char *what, char **out, StepError *err);

/* A file written under a temporary name beside its target (TARGET.XXXXXX)
 * and renamed into place only by atomic_file_commit: a crash or an error
 * never leaves a half-written file where a good one was expected. */
typedef struct {
    FILE *file; /* write here */
    char *path;
    char *tmp_path;
} AtomicFile;

bool atomic_file_open(AtomicFile *f, const char *path, StepError *err);
/* Flush, close and rename into place; false (err set, temporary removed)
 * if any write failed. */
bool atomic_file_commit(AtomicFile *f, StepError *err);
/* Close and remove the temporary file. Safe on a zeroed AtomicFile. */
void atomic_file_discard(AtomicFile *f);

#endif
