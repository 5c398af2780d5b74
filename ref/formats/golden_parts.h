/* golden_parts.h: whether folders are the parts of one golden set
 * (`stepwise golden --shard K/N`), read from their manifests: what `golden
 * merge` checks before it writes anything (docs/oracle.md). */
#ifndef STEPWISE_GOLDEN_PARTS_H
#define STEPWISE_GOLDEN_PARTS_H

#include <cjson/cJSON.h>

#include "ref/util/error.h"

/* One file of the set, as its part's manifest lists it. */
typedef struct {
    const cJSON *entry; /* in its part's manifest */
    const char *part;   /* the part's folder */
    const char *file;   /* a plain name inside it */
    const char *sha256; /* 64 lower-case hex digits */
    long long bytes;    /* its size as the manifest gives it, or -1 (an older part) */
    /* its tensors file (`golden --tensors`), or all NULL and -1 */
    const char *tensors_file, *tensors_sha256;
    long long tensors_bytes;
} GoldenSetFile;

typedef struct {
    int n_parts;
    const char **parts;   /* [n_parts] folders (the caller's) */
    cJSON **manifests;    /* [n_parts], owned */
    int n_files;          /* in the set */
    GoldenSetFile *files; /* [n_files], by number in the set, owned */
} GoldenParts;

/* Read each part's manifest.json and check that they are all N parts of one
 * set: each a stepwise golden manifest with its shard numbers (a whole set,
 * with none, is part 1 of 1); the same count and size everywhere; each part
 * once; the same fields (model, tokenizer, build, options) in every one;
 * every file of the set listed once, under a plain name, with a SHA-256
 * (a score file's tensors file too, under its entry's "tensors"); no name
 * twice, none manifest.json.
 * The files' bytes are not read (merge hashes and scans them as it copies,
 * GoldenTensorsScan). Free g with golden_parts_free, whatever the result. */
bool golden_parts_check(GoldenParts *g, const char **parts, int n_parts, StepError *err);
void golden_parts_free(GoldenParts *g);

/* Which tensors file a JSON Lines file of the set names (its "tensors"
 * event's "file"), learnt from its bytes as merge copies them: a part whose
 * manifest lost (or gained) a "tensors" entry would otherwise make a set
 * whose score file names a file that is not in it. Lines are kept whole up
 * to 16 MiB to be parsed when they mention "tensors"; longer ones (logits
 * rows) are skipped, and refused if they begin as a tensors event. Feed
 * the bytes in any chunks; finish compares with the entry's tensors file
 * (NULL: none); free whatever the results. */
typedef struct {
    const char *path; /* for messages (the caller's) */
    char *line;       /* [cap]: the line so far, owned */
    size_t len, cap;
    bool overflow;   /* the line outgrew 16 MiB */
    char named[256]; /* the tensors event's file, or "" */
} GoldenTensorsScan;

void golden_tensors_scan_init(GoldenTensorsScan *s, const char *path);
bool golden_tensors_scan_feed(GoldenTensorsScan *s, const char *bytes, size_t n, StepError *err);
bool golden_tensors_scan_finish(GoldenTensorsScan *s, const char *listed, StepError *err);
void golden_tensors_scan_free(GoldenTensorsScan *s);

#endif
