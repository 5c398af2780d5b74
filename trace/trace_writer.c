/* trace_writer.c: see trace_writer.h. */

#include "trace/trace_writer.h"

#include "ref/util/file_util.h"
#include "trace/float_format.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct TraceWriter {
    AtomicFile out;
    int failed_errno; /* why the first write failed, or 0 */
    bool failed;      /* a write failed */
};

TraceWriter *trace_writer_open(const char *path, StepError *err) {
    TraceWriter *tw = calloc(1, sizeof *tw);
    if (tw == NULL) {
        step_fail(err, "trace %s: out of memory", path);
        return NULL;
    }
    if (!atomic_file_open(&tw->out, path, err)) {
        free(tw);
        return NULL;
    }
    return tw;
}

void trace_writer_write(TraceWriter *tw, const cJSON *event) {
    if (tw->failed) return; /* the trace is lost already: say why once, at the commit */
    char *line = cJSON_PrintUnformatted(event);
    errno = 0;
    if (line == NULL || fputs(line, tw->out.file) < 0 || fputc('\n', tw->out.file) < 0) {
        tw->failed = true;
        tw->failed_errno = line == NULL ? ENOMEM : errno;
    }
    cJSON_free(line);
}

bool trace_writer_commit(TraceWriter *tw, StepError *err) {
    bool ok;
    if (tw->failed) {
        ok = step_fail(err, "trace %s: write failed: %s", tw->out.path,
                       tw->failed_errno ? strerror(tw->failed_errno) : "unknown error");
        atomic_file_discard(&tw->out);
    } else {
        ok = atomic_file_commit(&tw->out, err);
    }
    free(tw);
    return ok;
}

void trace_writer_discard(TraceWriter *tw) {
    if (tw == NULL) return;
    atomic_file_discard(&tw->out);
    free(tw);
}

/* Append "[v0,v1,...]" to buf at *len; buf has room (17 bytes a float + 2). */
static void append_floats(char *buf, size_t cap, size_t *len, const float *v, int n) {
    buf[(*len)++] = '[';
    for (int i = 0; i < n; i++) {
        if (i > 0) buf[(*len)++] = ',';
        if (isfinite(v[i]))
            *len += (size_t)format_float9(v[i], buf + *len);
        else
            *len += (size_t)snprintf(buf + *len, cap - *len, "null");
    }
    buf[(*len)++] = ']';
}

cJSON *trace_float_matrix(const float *v, int rows, int cols) {
    /* "-1.23456789e-38," is at most 16 characters: %.9g of a float needs 9
     * digits, a sign, a point, and e-XX; plus brackets and commas. */
    size_t cap = (size_t)rows * ((size_t)cols * 17 + 3) + 3, len = 0;
    char *buf = malloc(cap);
    if (buf == NULL) return NULL;
    buf[len++] = '[';
    for (int r = 0; r < rows; r++) {
        if (r > 0) buf[len++] = ',';
        append_floats(buf, cap, &len, v + (size_t)r * cols, cols);
    }
    buf[len++] = ']';
    buf[len] = '\0';
    cJSON *raw = cJSON_CreateRaw(buf);
    free(buf);
    return raw;
}

cJSON *trace_float_array(const float *v, int n) {
    size_t cap = (size_t)n * 17 + 3, len = 0;
    char *buf = malloc(cap);
    if (buf == NULL) return NULL;
    append_floats(buf, cap, &len, v, n);
    buf[len] = '\0';
    cJSON *raw = cJSON_CreateRaw(buf);
    free(buf);
    return raw;
}

cJSON *trace_float(float v) {
    char buf[32];
    if (isfinite(v))
        format_float9(v, buf);
    else
        snprintf(buf, sizeof buf, "null");
    return cJSON_CreateRaw(buf);
}

cJSON *trace_int_array(const int *v, int n) {
    return cJSON_CreateIntArray(v, n);
}
