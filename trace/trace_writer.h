/* trace_writer.h: a JSON Lines file that is either complete or absent.
 *
 * Lines go to a temporary file beside the target (TARGET.XXXXXX); only
 * trace_writer_commit renames it into place, so a crash or an error never
 * leaves a half-written trace where a good one was expected. */
#ifndef STEPWISE_TRACE_WRITER_H
#define STEPWISE_TRACE_WRITER_H

#include <cjson/cJSON.h>
#include <stdbool.h>

#include "ref/util/error.h"

typedef struct TraceWriter TraceWriter;

/* Create the temporary file for `path`. Returns NULL (with err) on failure. */
TraceWriter *trace_writer_open(const char *path, StepError *err);

/* Append one event as one line. The writer does not take `event`. */
void trace_writer_write(TraceWriter *tw, const cJSON *event);

/* Flush, close and rename into place; frees tw. False (with err) if any write
 * failed, in which case the temporary file is removed. */
bool trace_writer_commit(TraceWriter *tw, StepError *err);

/* Close and remove the temporary file; frees tw. NULL is allowed. */
void trace_writer_discard(TraceWriter *tw);

/* A JSON array of n floats, each printed with %.9g: exactly the digits that
 * read back as the same float32. Non-finite values become null (JSON has no
 * infinity). The returned item is owned by the caller (or the parent it is
 * added to). */
cJSON *trace_float_array(const float *v, int n);

/* A JSON array of `rows` arrays of `cols` floats (v is [rows, cols]). */
cJSON *trace_float_matrix(const float *v, int rows, int cols);

/* One float as a JSON number, printed with %.9g (null if not finite). */
cJSON *trace_float(float v);

/* A JSON array of n ints. */
cJSON *trace_int_array(const int *v, int n);

#endif
