/* error.h: how stepwise reports a failure.
 *
 * Library functions never print and never exit. They fill a StepError with one
 * line naming the problem and return false; the CLI prints that line and exits
 * with status 2. */
#ifndef STEPWISE_ERROR_H
#define STEPWISE_ERROR_H

#include <stdbool.h>

typedef struct {
    char message[512]; /* one line, no trailing newline: no control character (step_fail) */
} StepError;

/* Format the message into err (if not NULL) and return false, so a caller can
 * write `return step_fail(err, "...", ...);`. */
bool step_fail(StepError *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
