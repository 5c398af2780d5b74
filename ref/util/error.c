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
        /* one line, whatever a file's name or value brings into it: a
         * control character (a newline, a carriage return, an escape) as '?' */
        for (char *p = err->message; *p != '\0'; p++)
            if ((unsigned char)*p < 0x20 || *p == 0x7f) *p = '?';
    }
    return false;
}
