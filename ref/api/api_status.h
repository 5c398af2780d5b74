/* api_status.h: how the library's calls hand back a status (sw_error,
 * stepwise.h), shared by the files of ref/api/. Internal: not exported. */
#ifndef STEPWISE_API_STATUS_H
#define STEPWISE_API_STATUS_H

#include "ref/api/stepwise.h"
#include "ref/util/error.h"

/* err (when not NULL) filled with code and the message: code handed back. */
sw_status api_fail(sw_error *err, sw_status code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* err from the engine's StepError: SW_ERR_MEMORY when it ran out of memory,
 * SW_ERR_INPUT otherwise. */
sw_status api_fail_step(sw_error *err, const StepError *e);
/* err cleared: SW_OK. */
sw_status api_ok(sw_error *err);

#endif
