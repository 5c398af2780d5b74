/* trace_reader.c: see trace_reader.h. */
#include "trace/trace_reader.h"

#include "ref/util/file_util.h"
#include "ref/util/json_util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

bool trace_reader_open(TraceReader *r, const char *path, StepError *err) {
    *r = (TraceReader){0};
    r->file = file_open_stream(path, "trace", err);
    return r->file != NULL;
}

cJSON *trace_reader_next(TraceReader *r, bool *not_json) {
    *not_json = false;
    ssize_t n = getline(&r->line, &r->cap, r->file);
    if (n < 0) return NULL;
    r->line_no++;
    cJSON *event = json_parse_whole_n(r->line, (size_t)n);
    *not_json = event == NULL;
    return event;
}

void trace_reader_close(TraceReader *r) {
    file_close_input(r->file);
    free(r->line);
    *r = (TraceReader){0};
}

const char *trace_event_name(const cJSON *event) {
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(event, "event");
    return cJSON_IsString(e) ? e->valuestring : NULL;
}
