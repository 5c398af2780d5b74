/* file_util.c: see file_util.h. */
#include "file_util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

bool file_read_text(const char *path, const char *what, char **out, StepError *err) {
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (f == NULL) return step_fail(err, "%s %s: cannot open: %s", what, path, strerror(errno));
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        fclose(f);
        return step_fail(err, "%s %s: not a regular file", what, path);
    }
    if (st.st_size == 0 || st.st_size > FILE_TEXT_MAX_BYTES) {
        fclose(f);
        return step_fail(err, "%s %s: size %lld is outside (0, %ld] bytes", what, path,
                         (long long)st.st_size, FILE_TEXT_MAX_BYTES);
    }
    char *text = malloc((size_t)st.st_size + 1);
    size_t got = text ? fread(text, 1, (size_t)st.st_size, f) : 0;
    fclose(f);
    if (text == NULL || got != (size_t)st.st_size) {
        free(text);
        return step_fail(err, "%s %s: read error", what, path);
    }
    text[got] = '\0';
    *out = text;
    return true;
}
