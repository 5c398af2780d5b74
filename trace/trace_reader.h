/* trace_reader.h: reading a JSON Lines trace one event at a time. Lines may
 * be long (a kv_snapshot can be megabytes), so they are read whole. */
#ifndef STEPWISE_TRACE_READER_H
#define STEPWISE_TRACE_READER_H

#include <cjson/cJSON.h>
#include <stdio.h>

#include "ref/util/error.h"

typedef struct {
    FILE *file;
    char *line;
    size_t cap;
    long line_no; /* of the line last read, from 1 */
} TraceReader;

bool trace_reader_open(TraceReader *r, const char *path, StepError *err);

/* The next line, parsed (caller deletes), or NULL at the end. A line that is
 * not JSON gives NULL with *not_json set (and the reader can go on). */
cJSON *trace_reader_next(TraceReader *r, bool *not_json);

void trace_reader_close(TraceReader *r);

/* The "event" string of a parsed line, or NULL. */
const char *trace_event_name(const cJSON *event);

#endif
