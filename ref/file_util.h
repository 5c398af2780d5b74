/* file_util.h: reading a whole small text file, with clear errors. */
#ifndef STEPWISE_FILE_UTIL_H
#define STEPWISE_FILE_UTIL_H

#include "error.h"

/* Largest text file we read whole (JSON models, request lists). */
#define FILE_TEXT_MAX_BYTES ((long)256 << 20)

/* Read path into a malloc'd NUL-terminated string (*out, caller frees).
 * `what` names the file's role in errors ("model", "requests"). */
bool file_read_text(const char *path, const char *what, char **out, StepError *err);

#endif
