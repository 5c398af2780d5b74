/* file_util.h: opening what the user names, safely.
 *
 * Inputs: only regular files are read (plus "-" for standard input where a
 * reader streams), and a FIFO or device is refused without ever blocking on
 * it. Outputs: a regular file is written under a temporary name and renamed
 * into place; anything else that already exists (a device such as /dev/null,
 * a FIFO, /dev/stdout) is written directly and never replaced; a directory is
 * refused before any work starts (file_check_output). */
#ifndef STEPWISE_FILE_UTIL_H
#define STEPWISE_FILE_UTIL_H

#include <stdio.h>

#include "ref/util/error.h"

/* Largest text file we read whole (JSON models, request lists). */
#define FILE_TEXT_MAX_BYTES ((long)256 << 20)

/* Open path for reading if it is a regular file; `what` names its role in
 * errors ("model", "tokenizer"). Opens with O_NONBLOCK first, so that a FIFO
 * is refused at once instead of waiting for a writer. NULL on failure. */
FILE *file_open_input(const char *path, const char *what, StepError *err);

/* Like file_open_input, but "-" means standard input (not closed by
 * file_close_input). For readers that stream: traces, request lists. */
FILE *file_open_stream(const char *path, const char *what, StepError *err);
void file_close_input(FILE *f);

/* Read path ("-": standard input) into a malloc'd NUL-terminated string
 * (*out, caller frees) of *len bytes (len may be NULL). Refuses an empty file
 * and one over FILE_TEXT_MAX_BYTES. */
bool file_read_text(const char *path, const char *what, char **out, StepError *err);
bool file_read_bytes(const char *path, const char *what, char **out, size_t *len, StepError *err);

/* Map a regular file read-only and private (file_open_input's checks first):
 * *map and *bytes on success, for munmap. A file shorter than min_bytes is
 * refused as "too short for a <format> header". */
bool file_map_input(const char *path, const char *what, const char *format, size_t min_bytes,
                    void **map, size_t *bytes, StepError *err);

/* Whether path can be written as an output, checked before a run starts:
 * refuses a directory, a missing parent folder and a dangling symlink. */
bool file_check_output(const char *path, const char *what, StepError *err);

/* Remove a folder this command made, and the files in it (not folders
 * within: the folders made hold files only). */
void folder_remove_made(const char *dir);

/* How an output would write over an input, both as the user named them
 * (file_alias). An output that does not exist yet cannot: nothing is there
 * to replace. Identity is the device and inode stat() gives (it follows
 * symlinks, and hard links share the inode), never the spelling of the
 * path. */
typedef enum {
    FILE_ALIAS_NONE,   /* out writes nothing that in is */
    FILE_ALIAS_SAME,   /* out and in are one file (or one folder) */
    FILE_ALIAS_INSIDE, /* out is an existing file directly in the folder in,
                          or one a name there links to: a folder's reader
                          (a Hugging Face model) reads the files in it */
    FILE_ALIAS_HOLDS,  /* out is an output folder (out_folder), and in lies
                          directly in it, by its name or the file it names */
} FileAlias;

/* Whether output `out` (a folder written into or replaced when out_folder)
 * would replace input `in`. "-" (standard input or output) aliases
 * nothing; neither does a path stat() cannot reach. */
FileAlias file_alias(const char *out, bool out_folder, const char *in);

/* Whether s is a plain file name of 1 to max_len characters: letters,
 * digits, '.', '_' and '-', not starting with '.', so that it names a file
 * inside a folder (no '/', no "..", nothing hidden). For names that come
 * from elsewhere: request ids, a golden manifest's files. */
bool file_name_is_plain(const char *s, size_t max_len);

/* An output file. A regular target (or a new one) is written under a
 * temporary name beside it (TARGET.XXXXXX; beside the link's target for a
 * symlink) and renamed into place only by atomic_file_commit: a crash or an
 * error never leaves a half-written file where a good one was expected. Any
 * other existing target ("-", /dev/stdout, /dev/null, a FIFO) is written
 * directly, so it stays what it was. */
typedef struct {
    FILE *file;       /* write here */
    char *path;       /* as the user named it, for messages */
    char *final_path; /* where the rename goes (the symlink's target) */
    char *tmp_path;   /* NULL for a direct write */
    int tmp_slot;     /* index in the signal-time removal list, or -1 */
} AtomicFile;

bool atomic_file_open(AtomicFile *f, const char *path, StepError *err);
/* Flush, close and rename into place; false (err set with the reason,
 * temporary removed) if any write failed. */
bool atomic_file_commit(AtomicFile *f, StepError *err);
/* Close and remove the temporary file. Safe on a zeroed AtomicFile. */
void atomic_file_discard(AtomicFile *f);

/* Remove every temporary file still open. Async-signal-safe: for the signal
 * handler that ends the process (cli/signals.c), and nothing else. */
void atomic_file_remove_all_temps(void);

#endif
