/* api_status.c: the library's status (api_status.h). */
#include "ref/api/api_status.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* err, filled from a StepError or a message: the status handed back. */
sw_status api_fail(sw_error *err, sw_status code, const char *fmt, ...) {
    if (err != NULL) {
        err->code = code;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
    }
    return code;
}

sw_status api_fail_step(sw_error *err, const StepError *e) {
    return api_fail(err, strstr(e->message, "out of memory") ? SW_ERR_MEMORY : SW_ERR_INPUT, "%s",
                    e->message);
}

sw_status api_ok(sw_error *err) {
    if (err != NULL) err->code = SW_OK, err->message[0] = '\0';
    return SW_OK;
}
