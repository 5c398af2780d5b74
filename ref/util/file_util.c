/* file_util.c: see file_util.h. */
/* realpath() is X/Open, beyond the POSIX level the Makefile asks for. */
#define _XOPEN_SOURCE 700
#include "ref/util/file_util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *kind_of(mode_t mode) {
    return S_ISDIR(mode)    ? "a directory"
           : S_ISFIFO(mode) ? "a FIFO"
           : S_ISCHR(mode)  ? "a character device"
           : S_ISBLK(mode)  ? "a block device"
           : S_ISSOCK(mode) ? "a socket"
                            : "something else";
}

FILE *file_open_input(const char *path, const char *what, StepError *err) {
    /* O_NONBLOCK: opening a FIFO for reading would otherwise wait for a
     * writer before fstat could say what it is. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        step_fail(err, "%s %s: cannot open: %s", what, path, strerror(errno));
        return NULL;
    }
    struct stat st;
    bool known = fstat(fd, &st) == 0;
    if (!known || !S_ISREG(st.st_mode)) {
        step_fail(err, "%s %s: is %s, not a regular file", what, path,
                  known ? kind_of(st.st_mode) : "unreadable");
        close(fd);
        return NULL;
    }
    int flags = fcntl(fd, F_GETFL);
    FILE *f = flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0 ? NULL : fdopen(fd, "rb");
    if (f == NULL) {
        step_fail(err, "%s %s: cannot open: %s", what, path, strerror(errno));
        close(fd);
    }
    return f;
}

FILE *file_open_stream(const char *path, const char *what, StepError *err) {
    return strcmp(path, "-") == 0 ? stdin : file_open_input(path, what, err);
}

void file_close_input(FILE *f) {
    if (f != NULL && f != stdin) fclose(f);
}

bool file_read_bytes(const char *path, const char *what, char **out, size_t *len, StepError *err) {
    *out = NULL;
    FILE *f = file_open_stream(path, what, err);
    if (f == NULL) return false;
    /* Read in growing chunks: standard input has no size to ask for. */
    size_t cap = 0, n = 0;
    char *text = NULL;
    bool ok = true;
    for (;;) {
        if (n + 1 >= cap) {
            size_t grown = cap ? cap * 2 : 4096;
            char *p = grown <= (size_t)FILE_TEXT_MAX_BYTES + 1 ? realloc(text, grown + 1) : NULL;
            if (p == NULL) {
                ok =
                    step_fail(err, "%s %s: larger than %ld bytes", what, path, FILE_TEXT_MAX_BYTES);
                break;
            }
            text = p, cap = grown;
        }
        size_t got = fread(text + n, 1, cap - n, f);
        n += got;
        if (got == 0) break;
    }
    if (ok && ferror(f)) ok = step_fail(err, "%s %s: read error: %s", what, path, strerror(errno));
    if (ok && n > (size_t)FILE_TEXT_MAX_BYTES)
        ok = step_fail(err, "%s %s: larger than %ld bytes", what, path, FILE_TEXT_MAX_BYTES);
    if (ok && n == 0) ok = step_fail(err, "%s %s: is empty", what, path);
    file_close_input(f);
    if (!ok) {
        free(text);
        return false;
    }
    text[n] = '\0';
    *out = text;
    if (len != NULL) *len = n;
    return true;
}

bool file_read_text(const char *path, const char *what, char **out, StepError *err) {
    size_t len;
    if (!file_read_bytes(path, what, out, &len, err)) return false;
    size_t text_len = strlen(*out);
    if (text_len != len) {
        free(*out), *out = NULL;
        return step_fail(err, "%s %s: has a NUL byte at offset %zu (not text)", what, path,
                         text_len);
    }
    return true;
}

bool file_map_input(const char *path, const char *what, const char *format, size_t min_bytes,
                    void **map, size_t *bytes, StepError *err) {
    FILE *file = file_open_input(path, what, err);
    if (file == NULL) return false;
    struct stat st;
    if (fstat(fileno(file), &st) != 0 || (size_t)st.st_size < min_bytes) {
        fclose(file);
        return step_fail(err, "%s: too short for a %s header", path, format);
    }
    *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fileno(file), 0);
    fclose(file);
    if (*map == MAP_FAILED) return step_fail(err, "%s: cannot map: %s", path, strerror(errno));
    *bytes = (size_t)st.st_size;
    return true;
}

bool file_check_output(const char *path, const char *what, StepError *err) {
    if (path[0] == '\0') return step_fail(err, "%s: an empty file name", what);
    if (strcmp(path, "-") == 0) return true;
    struct stat st;
    if (stat(path, &st) == 0) {
        if (S_ISDIR(st.st_mode)) return step_fail(err, "%s %s: is a directory", what, path);
        return true; /* a file is replaced; anything else is written directly */
    }
    if (lstat(path, &st) == 0) /* the name exists but stat failed: a dangling link */
        return step_fail(err, "%s %s: is a symbolic link to nothing", what, path);
    if (errno != ENOENT) return step_fail(err, "%s %s: %s", what, path, strerror(errno));
    /* A new file: its folder must exist. */
    const char *slash = strrchr(path, '/');
    if (slash == NULL) return true;
    size_t n = slash == path ? 1 : (size_t)(slash - path);
    char dir[PATH_MAX];
    if (n >= sizeof dir) return step_fail(err, "%s %s: name too long", what, path);
    memcpy(dir, path, n);
    dir[n] = '\0';
    if (stat(dir, &st) != 0)
        return step_fail(err, "%s %s: cannot create: folder %s: %s", what, path, dir,
                         strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return step_fail(err, "%s %s: cannot create: %s is not a folder", what, path, dir);
    return true;
}

/* The folder path lies in (stat()'s identity of it): its name's folder,
 * or after realpath the folder of the file it names. False when there is
 * none to stat. */
static bool folder_of(const char *path, bool resolve, struct stat *dir) {
    char *real = resolve ? realpath(path, NULL) : NULL;
    const char *p = resolve ? real : path;
    if (p == NULL) return false;
    const char *slash = strrchr(p, '/');
    char name[PATH_MAX];
    size_t n = slash == NULL ? 1 : slash == p ? 1 : (size_t)(slash - p);
    bool ok = n < sizeof name;
    if (ok) {
        memcpy(name, slash == NULL ? "." : p, n);
        name[n] = '\0';
        ok = stat(name, dir) == 0;
    }
    free(real);
    return ok;
}

static bool same_file(const struct stat *a, const struct stat *b) {
    return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

/* Whether a name in folder `in` is the file *o, a link there followed: a
 * Hugging Face cache's snapshot folder holds links to its blobs, so the
 * weights a folder's reader reads may lie anywhere. One level, as the
 * folder readers read one level. */
static bool folder_names(const char *in, const struct stat *o) {
    DIR *d = opendir(in);
    if (d == NULL) return false;
    bool found = false;
    char name[PATH_MAX];
    struct stat st;
    for (struct dirent *e = readdir(d); e != NULL && !found; e = readdir(d)) {
        int n = snprintf(name, sizeof name, "%s/%s", in, e->d_name);
        found = n > 0 && (size_t)n < sizeof name && stat(name, &st) == 0 && S_ISREG(st.st_mode) &&
                same_file(&st, o);
    }
    closedir(d);
    return found;
}

FileAlias file_alias(const char *out, bool out_folder, const char *in) {
    struct stat o, i, dir;
    if (strcmp(out, "-") == 0 || strcmp(in, "-") == 0) return FILE_ALIAS_NONE;
    if (stat(out, &o) != 0 || stat(in, &i) != 0) return FILE_ALIAS_NONE;
    if (same_file(&o, &i)) return FILE_ALIAS_SAME;
    /* An output file is renamed into place where realpath says it is. */
    if (S_ISDIR(i.st_mode) && S_ISREG(o.st_mode) &&
        ((folder_of(out, true, &dir) && same_file(&dir, &i)) || folder_names(in, &o)))
        return FILE_ALIAS_INSIDE;
    /* A folder written into replaces the name in it (and a link there is
     * followed), or is replaced whole with every name in it. */
    if (out_folder && S_ISDIR(o.st_mode) &&
        ((folder_of(in, false, &dir) && same_file(&dir, &o)) ||
         (folder_of(in, true, &dir) && same_file(&dir, &o))))
        return FILE_ALIAS_HOLDS;
    return FILE_ALIAS_NONE;
}

/* The temporary files open now, so that a signal that ends the process can
 * remove them. A signal handler can only reach static storage: this list and
 * cli/signals.c's flag are stepwise's only global mutable state. A slot's
 * path is written before it is marked used, and marked unused before the
 * path is changed, so the handler never reads a half-written name. */
#define TEMP_SLOTS 64
static char temp_paths[TEMP_SLOTS][PATH_MAX];
static volatile sig_atomic_t temp_used[TEMP_SLOTS];

static int temp_register(const char *path) {
    if (strlen(path) >= PATH_MAX) return -1;
    for (int i = 0; i < TEMP_SLOTS; i++) {
        if (temp_used[i]) continue;
        strcpy(temp_paths[i], path);
        temp_used[i] = 1;
        return i;
    }
    return -1; /* no slot: removed on every ordinary exit all the same */
}

static void temp_unregister(int slot) {
    if (slot >= 0) temp_used[slot] = 0;
}

void atomic_file_remove_all_temps(void) {
    for (int i = 0; i < TEMP_SLOTS; i++) {
        if (temp_used[i]) unlink(temp_paths[i]);
    }
}

/* Open an existing non-regular target to write into it directly. */
static bool open_direct(AtomicFile *f, const char *path, StepError *err) {
    int fd = strcmp(path, "-") == 0 ? dup(STDOUT_FILENO) : open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0 || (f->file = fdopen(fd, "w")) == NULL) {
        step_fail(err, "%s: cannot open for writing: %s", path, strerror(errno));
        if (fd >= 0) close(fd);
        atomic_file_discard(f);
        return false;
    }
    return true;
}

bool atomic_file_open(AtomicFile *f, const char *path, StepError *err) {
    *f = (AtomicFile){.tmp_slot = -1};
    if (!file_check_output(path, "output", err)) return false;
    f->path = strdup(path);
    if (f->path == NULL) return step_fail(err, "%s: out of memory", path);
    struct stat st, lst;
    bool exists = stat(path, &st) == 0;
    if (strcmp(path, "-") == 0 || (exists && !S_ISREG(st.st_mode)))
        return open_direct(f, path, err);
    /* A symlink to a regular file: replace the file it names, keep the link. */
    bool is_link = lstat(path, &lst) == 0 && S_ISLNK(lst.st_mode);
    f->final_path = is_link ? realpath(path, NULL) : strdup(path);
    size_t n = f->final_path ? strlen(f->final_path) : 0;
    f->tmp_path = f->final_path ? malloc(n + 8) : NULL;
    if (f->tmp_path == NULL) {
        atomic_file_discard(f);
        return step_fail(err, "%s: out of memory", path);
    }
    snprintf(f->tmp_path, n + 8, "%s.XXXXXX", f->final_path);
    int fd = mkstemp(f->tmp_path);
    if (fd < 0) {
        step_fail(err, "%s: cannot create: %s", path, strerror(errno));
        free(f->tmp_path), f->tmp_path = NULL;
        atomic_file_discard(f);
        return false;
    }
    f->tmp_slot = temp_register(f->tmp_path);
    fchmod(fd, exists ? (st.st_mode & 07777) : 0644); /* mkstemp makes 0600 */
    if ((f->file = fdopen(fd, "w")) == NULL) {
        step_fail(err, "%s: cannot create: %s", path, strerror(errno));
        close(fd);
        atomic_file_discard(f);
        return false;
    }
    return true;
}

bool atomic_file_commit(AtomicFile *f, StepError *err) {
    errno = 0;
    bool ok = fflush(f->file) == 0 && !ferror(f->file);
    int saved = errno;
    if (fclose(f->file) != 0 && ok) ok = false, saved = errno;
    f->file = NULL;
    if (ok && f->tmp_path != NULL) {
        if (rename(f->tmp_path, f->final_path) != 0) {
            ok = false, saved = errno;
        } else {
            temp_unregister(f->tmp_slot), f->tmp_slot = -1;
            free(f->tmp_path), f->tmp_path = NULL; /* nothing left to remove */
        }
    }
    if (!ok)
        step_fail(err, "%s: write failed: %s", f->path,
                  saved ? strerror(saved) : "an earlier write failed");
    atomic_file_discard(f);
    return ok;
}

void atomic_file_discard(AtomicFile *f) {
    if (f->file != NULL) fclose(f->file);
    if (f->tmp_path != NULL) {
        unlink(f->tmp_path);
        temp_unregister(f->tmp_slot);
    }
    free(f->tmp_path);
    free(f->final_path);
    free(f->path);
    *f = (AtomicFile){.tmp_slot = -1};
}

bool file_name_is_plain(const char *s, size_t max_len) {
    size_t n = strlen(s);
    if (n == 0 || n > max_len || s[0] == '.') return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '.' || c == '_' || c == '-';
        if (!ok) return false;
    }
    return true;
}

void folder_remove_made(const char *dir) {
    DIR *d = opendir(dir);
    struct dirent *entry;
    char path[PATH_MAX];
    while (d != NULL && (entry = readdir(d)) != NULL) {
        if (strcmp(entry->d_name, ".") == 0 || strcmp(entry->d_name, "..") == 0) continue;
        if (snprintf(path, sizeof path, "%s/%s", dir, entry->d_name) < (int)sizeof path)
            unlink(path);
    }
    if (d != NULL) closedir(d);
    rmdir(dir);
}
