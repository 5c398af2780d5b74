/* file_util.c: see file_util.h. */
#include "file_util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

bool atomic_file_open(AtomicFile *f, const char *path, StepError *err) {
    *f = (AtomicFile){0};
    size_t n = strlen(path);
    f->path = strdup(path);
    f->tmp_path = malloc(n + 8);
    if (f->path == NULL || f->tmp_path == NULL) {
        atomic_file_discard(f);
        return step_fail(err, "%s: out of memory", path);
    }
    snprintf(f->tmp_path, n + 8, "%s.XXXXXX", path);
    int fd = mkstemp(f->tmp_path);
    if (fd >= 0) fchmod(fd, 0644); /* mkstemp makes 0600; outputs are for reading */
    if (fd < 0 || (f->file = fdopen(fd, "w")) == NULL) {
        step_fail(err, "%s: cannot create: %s", path, strerror(errno));
        if (fd >= 0) close(fd), unlink(f->tmp_path);
        free(f->tmp_path), f->tmp_path = NULL;
        atomic_file_discard(f);
        return false;
    }
    return true;
}

bool atomic_file_commit(AtomicFile *f, StepError *err) {
    bool ok = fflush(f->file) == 0 && !ferror(f->file);
    ok = fclose(f->file) == 0 && ok;
    f->file = NULL;
    if (ok && rename(f->tmp_path, f->path) != 0) ok = false;
    if (ok) free(f->tmp_path), f->tmp_path = NULL; /* nothing left to remove */
    if (!ok) step_fail(err, "%s: write failed: %s", f->path, strerror(errno));
    atomic_file_discard(f);
    return ok;
}

void atomic_file_discard(AtomicFile *f) {
    if (f->file != NULL) fclose(f->file);
    if (f->tmp_path != NULL) unlink(f->tmp_path);
    free(f->tmp_path);
    free(f->path);
    *f = (AtomicFile){0};
}
