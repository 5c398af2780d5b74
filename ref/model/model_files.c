/* model_files.c: the weight files a model reads from: their identity (to
 * tell whether one changed under a run) and, on request, their pages copied
 * into the process's own memory (so that nothing reads them afterwards). */

/* mremap (Linux) replaces a mapping in one step; _GNU_SOURCE declares it. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ref/model/model.h"

static int64_t mtime_ns(const struct stat *st) {
    return (int64_t)st->st_mtim.tv_sec * 1000000000 + (int64_t)st->st_mtim.tv_nsec;
}

bool model_add_file(Model *m, void *addr, size_t bytes, const char *path) {
    if (m->n_files == MODEL_MAX_FILES) return false;
    MappedFile *f = &m->files[m->n_files++];
    *f = (MappedFile){.addr = addr, .bytes = bytes, .fd = open(path, O_RDONLY | O_CLOEXEC)};
    struct stat st;
    if (f->fd >= 0 && fstat(f->fd, &st) == 0)
        f->size = (int64_t)st.st_size, f->mtime_ns = mtime_ns(&st);
    return true;
}

bool model_files_unchanged(const Model *m, StepError *err) {
    for (int i = 0; i < m->n_files; i++) {
        const MappedFile *f = &m->files[i];
        struct stat st;
        if (f->copied || f->fd < 0 || fstat(f->fd, &st) != 0) continue;
        if ((int64_t)st.st_size != f->size || mtime_ns(&st) != f->mtime_ns)
            return step_fail(err,
                             "a model file was written while the run read it (%lld bytes when "
                             "loaded, %lld now): its results may mix old and new weights",
                             (long long)f->size, (long long)st.st_size);
    }
    return true;
}

/* The mapping [addr, addr + bytes) of the file fd (from offset 0) replaced
 * by anonymous memory holding the same bytes, read with pread: a file that
 * shrank is a short read and an error here, never a SIGBUS later. mremap
 * moves the filled pages over the old mapping in one step, so the views
 * into it stay valid and the peak is one extra copy of this file only. */
static bool copy_mapping(void *addr, size_t bytes, int fd, StepError *err) {
    if (bytes == 0) return true;
    if (fd < 0) return step_fail(err, "copy the weights: a weight file could not be reopened");
    void *fresh = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (fresh == MAP_FAILED) return step_fail(err, "copy the weights: out of memory");
    for (size_t done = 0; done < bytes;) {
        ssize_t got = pread(fd, (char *)fresh + done, bytes - done, (off_t)done);
        if (got <= 0) {
            int why = errno;
            munmap(fresh, bytes);
            return step_fail(err,
                             "copy the weights: a weight file %s after it was opened (%zu of "
                             "%zu bytes read)",
                             got == 0 ? "shrank" : strerror(why), done, bytes);
        }
        done += (size_t)got;
    }
    if (mremap(fresh, bytes, bytes, MREMAP_MAYMOVE | MREMAP_FIXED, addr) == MAP_FAILED) {
        munmap(fresh, bytes);
        return step_fail(err, "copy the weights: %s", strerror(errno));
    }
    return true;
}

bool model_copy_files(Model *m, StepError *err) {
    if (!model_files_unchanged(m, err)) return false;
    for (int i = 0; i < m->n_files; i++) {
        MappedFile *f = &m->files[i];
        if (f->copied) continue;
        /* a checkpoint records its identity only (addr NULL): its mapping is m->mapping */
        bool checkpoint = f->addr == NULL && m->mapping_is_file;
        bool ok = checkpoint ? copy_mapping(m->mapping, m->mapping_bytes, f->fd, err)
                             : copy_mapping(f->addr, f->bytes, f->fd, err);
        if (!ok) return false;
        if (checkpoint) m->mapping_is_file = false; /* released pages would now come back 0 */
        f->copied = true;
    }
    return true;
}
