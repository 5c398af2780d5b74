/* error.c: see error.h. */
#include "ref/util/error.h"

#include <stdarg.h>
#include <stdio.h>

bool step_fail(StepError *err, const char *fmt, ...) {
    if (err != NULL) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
    }
    return false;
}
