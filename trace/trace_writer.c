/* trace_writer.c: see trace_writer.h. */

#include "trace_writer.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct TraceWriter {
    FILE *file;
    char *path;     /* where the trace belongs */
    char *tmp_path; /* where it is written until commit */
    bool failed;    /* a write failed */
};

TraceWriter *trace_writer_open(const char *path, StepError *err) {
    TraceWriter *tw = calloc(1, sizeof *tw);
    size_t n = strlen(path);
    if (tw == NULL || (tw->path = strdup(path)) == NULL || (tw->tmp_path = malloc(n + 8)) == NULL) {
        trace_writer_discard(tw);
        step_fail(err, "trace %s: out of memory", path);
        return NULL;
    }
    snprintf(tw->tmp_path, n + 8, "%s.XXXXXX", path);
    int fd = mkstemp(tw->tmp_path);
    if (fd >= 0) fchmod(fd, 0644); /* mkstemp makes 0600; a trace is for reading */
    if (fd < 0 || (tw->file = fdopen(fd, "w")) == NULL) {
        step_fail(err, "trace %s: cannot create: %s", path, strerror(errno));
        if (fd >= 0) close(fd), unlink(tw->tmp_path);
        free(tw->tmp_path), free(tw->path), free(tw);
        return NULL;
    }
    return tw;
}

void trace_writer_write(TraceWriter *tw, const cJSON *event) {
    char *line = cJSON_PrintUnformatted(event);
    if (line == NULL || fputs(line, tw->file) < 0 || fputc('\n', tw->file) < 0) tw->failed = true;
    cJSON_free(line);
}

bool trace_writer_commit(TraceWriter *tw, StepError *err) {
    bool ok = !tw->failed && fflush(tw->file) == 0 && !ferror(tw->file);
    ok = fclose(tw->file) == 0 && ok;
    tw->file = NULL;
    if (ok && rename(tw->tmp_path, tw->path) != 0) ok = false;
    if (ok) free(tw->tmp_path), tw->tmp_path = NULL; /* nothing left to remove */
    if (!ok) step_fail(err, "trace %s: write failed: %s", tw->path, strerror(errno));
    trace_writer_discard(tw);
    return ok;
}

void trace_writer_discard(TraceWriter *tw) {
    if (tw == NULL) return;
    if (tw->file != NULL) fclose(tw->file);
    if (tw->tmp_path != NULL) unlink(tw->tmp_path);
    free(tw->tmp_path);
    free(tw->path);
    free(tw);
}

/* Append "[v0,v1,...]" to buf at *len; buf has room (17 bytes a float + 2). */
static void append_floats(char *buf, size_t cap, size_t *len, const float *v, int n) {
    buf[(*len)++] = '[';
    for (int i = 0; i < n; i++) {
        if (i > 0) buf[(*len)++] = ',';
        if (isfinite(v[i]))
            *len += (size_t)snprintf(buf + *len, cap - *len, "%.9g", (double)v[i]);
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
        snprintf(buf, sizeof buf, "%.9g", (double)v);
    else
        snprintf(buf, sizeof buf, "null");
    return cJSON_CreateRaw(buf);
}

cJSON *trace_int_array(const int *v, int n) {
    return cJSON_CreateIntArray(v, n);
}
