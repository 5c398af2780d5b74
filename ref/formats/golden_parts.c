/* golden_parts.c: see golden_parts.h. */
#include "ref/formats/golden_parts.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ref/util/file_util.h"
#include "ref/util/json_util.h"

#define MAX_PARTS 10000
#define MAX_FILES 1000000

static bool is_sha256(const char *s) {
    if (s == NULL || strlen(s) != 64) return false;
    for (int i = 0; i < 64; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return false;
    return true;
}

/* Part k's manifest: read, parsed, its shard numbers checked (a whole set,
 * with no "shard", is part 1 of 1). */
static bool read_part(GoldenParts *mg, int k, int *index, int *count, int *total, StepError *err) {
    const char *part = mg->parts[k];
    char path[PATH_MAX + 32], *text = NULL;
    if (snprintf(path, sizeof path, "%s/manifest.json", part) >= (int)sizeof path)
        return step_fail(err, "golden merge: %s: path too long", part);
    if (!file_read_text(path, "golden merge", &text, err)) return false;
    cJSON *m = mg->manifests[k] = json_parse_whole(text);
    free(text);
    if (!cJSON_IsObject(m)) return step_fail(err, "golden merge: %s is not JSON", path);
    const char *format = json_string_field(m, "format");
    int version;
    if (format == NULL || strcmp(format, "stepwise-golden") != 0 ||
        !json_int_field(m, "version", 1, 1, &version))
        return step_fail(
            err, "golden merge: %s is not a stepwise golden set's manifest (version 1)", path);
    const cJSON *files = cJSON_GetObjectItemCaseSensitive(m, "files");
    if (!cJSON_IsArray(files)) return step_fail(err, "golden merge: %s has no files list", path);
    const cJSON *shard = cJSON_GetObjectItemCaseSensitive(m, "shard");
    if (shard == NULL) { /* a whole set */
        *index = *count = 1;
        *total = cJSON_GetArraySize(files);
        return *total >= 1 || step_fail(err, "golden merge: %s lists no files", path);
    }
    if (!json_int_field(shard, "count", 1, MAX_PARTS, count) ||
        !json_int_field(shard, "index", 1, *count, index) ||
        !json_int_field(shard, "files_in_set", 1, MAX_FILES, total))
        return step_fail(err,
                         "golden merge: %s: shard needs count in [1, %d], index in [1, count] "
                         "and files_in_set in [1, %d]",
                         path, MAX_PARTS, MAX_FILES);
    return true;
}

/* The first top-level field (other than files and shard) where two
 * manifests differ, or NULL when they agree. */
static const char *first_difference(const cJSON *a, const cJSON *b) {
    const cJSON *both[2] = {a, b};
    for (int side = 0; side < 2; side++) {
        for (const cJSON *f = both[side]->child; f != NULL; f = f->next) {
            if (strcmp(f->string, "files") == 0 || strcmp(f->string, "shard") == 0) continue;
            const cJSON *g = cJSON_GetObjectItemCaseSensitive(both[1 - side], f->string);
            if (g == NULL || !cJSON_Compare(f, g, true)) return f->string;
        }
    }
    return NULL;
}

/* Part k read and held against part 0: the same count of parts and files,
 * the number of parts given, its own number not seen before, the same
 * fields. *count and *total are part 0's. */
static bool check_part(GoldenParts *mg, int k, const char **seen, int *count, int *total,
                       StepError *err) {
    int index, c, t;
    if (!read_part(mg, k, &index, &c, &t, err)) return false;
    if (k == 0) *count = c, *total = t;
    if (c != *count || t != *total)
        return step_fail(err, "golden merge: %s is a part of %d (of %d files), %s of %d (of %d)",
                         mg->parts[k], c, t, mg->parts[0], *count, *total);
    if (c != mg->n_parts)
        return step_fail(err, "golden merge: the set has %d parts, %d given", c, mg->n_parts);
    if (seen[index - 1] != NULL)
        return step_fail(err, "golden merge: part %d of %d given twice: %s and %s", index, c,
                         seen[index - 1], mg->parts[k]);
    seen[index - 1] = mg->parts[k];
    const char *field = first_difference(mg->manifests[0], mg->manifests[k]);
    if (field != NULL)
        return step_fail(err,
                         "golden merge: %s and %s are not parts of one set: their \"%s\" differ",
                         mg->parts[0], mg->parts[k], field);
    return true;
}

/* A file as an entry names it: a plain name, a SHA-256 and, if given, a
 * size. */
static bool file_fields(const cJSON *entry, const char **file, const char **sha, long long *bytes) {
    *file = json_string_field(entry, "file"), *sha = json_string_field(entry, "sha256");
    *bytes = -1;
    const cJSON *size = cJSON_GetObjectItemCaseSensitive(entry, "bytes");
    return *file != NULL && file_name_is_plain(*file, 200) && strcmp(*file, "manifest.json") != 0 &&
           is_sha256(*sha) &&
           (size == NULL || json_whole_number(size, 0, 9007199254740992.0, bytes));
}

/* Every part's file entries into mg->files by number, each number once. */
static bool list_files(GoldenParts *mg, StepError *err) {
    int total = mg->n_files;
    for (int k = 0; k < mg->n_parts; k++) {
        const cJSON *entry;
        cJSON_ArrayForEach(entry, cJSON_GetObjectItemCaseSensitive(mg->manifests[k], "files")) {
            int i;
            GoldenSetFile f = {.entry = entry, .part = mg->parts[k], .tensors_bytes = -1};
            const cJSON *tensors = cJSON_GetObjectItemCaseSensitive(entry, "tensors");
            if (!json_int_field(entry, "index", 0, total - 1, &i) ||
                !file_fields(entry, &f.file, &f.sha256, &f.bytes))
                return step_fail(err,
                                 "golden merge: %s: a file entry needs an index in [0, %d), a "
                                 "plain file name (not manifest.json), a sha256 and (if given) "
                                 "bytes >= 0",
                                 mg->parts[k], total);
            if (tensors != NULL &&
                !file_fields(tensors, &f.tensors_file, &f.tensors_sha256, &f.tensors_bytes))
                return step_fail(err,
                                 "golden merge: %s: file %d's tensors need a plain file name "
                                 "(not manifest.json), a sha256 and (if given) bytes >= 0",
                                 mg->parts[k], i);
            if (mg->files[i].file != NULL)
                return step_fail(err, "golden merge: file %d (%s) is in %s and in %s", i, f.file,
                                 mg->files[i].part, mg->parts[k]);
            mg->files[i] = f;
        }
    }
    return true;
}

static int compare_names(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Every number has a file, and no two files share a name (sorted, so that
 * a million entries take a moment, not a day). */
static bool check_complete(const GoldenParts *mg, StepError *err) {
    for (int i = 0; i < mg->n_files; i++)
        if (mg->files[i].file == NULL)
            return step_fail(err, "golden merge: file %d of %d is in no part", i, mg->n_files);
    const char **names = malloc(2 * (size_t)mg->n_files * sizeof *names);
    if (names == NULL) return step_fail(err, "golden merge: out of memory");
    int n = 0;
    for (int i = 0; i < mg->n_files; i++) {
        names[n++] = mg->files[i].file;
        if (mg->files[i].tensors_file != NULL) names[n++] = mg->files[i].tensors_file;
    }
    qsort(names, (size_t)n, sizeof *names, compare_names);
    const char *twice = NULL;
    for (int i = 1; twice == NULL && i < n; i++)
        if (strcmp(names[i - 1], names[i]) == 0) twice = names[i];
    bool ok = twice == NULL || step_fail(err, "golden merge: two files are named %s", twice);
    free(names);
    return ok;
}

/* A tensors event longer than this is refused (a real one lists the run's
 * ids and its tensors: far less); longer lines (logits rows) are skipped. */
#define TENSORS_LINE_MAX ((size_t)16 << 20)

static bool scan_line_end(GoldenTensorsScan *s, StepError *err) {
    static const char head[] = "{\"event\":\"tensors\"";
    bool is_head = s->len >= sizeof head - 1 && memcmp(s->line, head, sizeof head - 1) == 0;
    if (s->overflow) {
        s->overflow = false, s->len = 0;
        return !is_head || step_fail(err, "golden merge: %s: a tensors event over %zu MiB", s->path,
                                     TENSORS_LINE_MAX >> 20);
    }
    if (s->len == 0) return true;
    s->line[s->len] = '\0';
    s->len = 0;
    if (strstr(s->line, "\"tensors\"") == NULL) return true;
    cJSON *e = cJSON_Parse(s->line);
    const char *event = json_string_field(e, "event");
    bool ok = true;
    if (event != NULL && strcmp(event, "tensors") == 0) {
        const char *file = json_string_field(e, "file");
        ok = (file != NULL && s->named[0] == '\0' && file[0] != '\0' &&
              strlen(file) < sizeof s->named) ||
             step_fail(err,
                       "golden merge: %s: a tensors event needs one \"file\", and a file names "
                       "one tensors file",
                       s->path);
        if (ok) snprintf(s->named, sizeof s->named, "%s", file);
    }
    cJSON_Delete(e);
    return ok;
}

void golden_tensors_scan_init(GoldenTensorsScan *s, const char *path) {
    *s = (GoldenTensorsScan){.path = path};
}

bool golden_tensors_scan_feed(GoldenTensorsScan *s, const char *bytes, size_t n, StepError *err) {
    for (size_t i = 0; i < n; i++) {
        if (bytes[i] == '\n') {
            if (!scan_line_end(s, err)) return false;
            continue;
        }
        if (s->overflow) continue;
        if (s->len + 1 >= s->cap) { /* room for the byte and the line's NUL */
            size_t cap = s->cap ? s->cap * 2 : 4096;
            if (cap > TENSORS_LINE_MAX + 1) {
                s->overflow = true; /* its first bytes stay, to tell a tensors event */
                continue;
            }
            char *line = realloc(s->line, cap);
            if (line == NULL) return step_fail(err, "golden merge: out of memory");
            s->line = line, s->cap = cap;
        }
        s->line[s->len++] = bytes[i];
    }
    return true;
}

bool golden_tensors_scan_finish(GoldenTensorsScan *s, const char *listed, StepError *err) {
    if ((s->len > 0 || s->overflow) && !scan_line_end(s, err)) return false;
    if (listed == NULL) listed = "";
    if (strcmp(s->named, listed) == 0) return true;
    return step_fail(err,
                     "golden merge: %s names the tensors file \"%s\" but its part's manifest "
                     "lists %s%s%s: the manifest and the files disagree",
                     s->path, s->named, listed[0] ? "\"" : "none", listed, listed[0] ? "\"" : "");
}

void golden_tensors_scan_free(GoldenTensorsScan *s) {
    free(s->line);
    s->line = NULL, s->cap = s->len = 0;
}

bool golden_parts_check(GoldenParts *mg, const char **parts, int n_parts, StepError *err) {
    *mg = (GoldenParts){.n_parts = n_parts, .parts = parts};
    if (n_parts < 1 || n_parts > MAX_PARTS)
        return step_fail(err, "golden merge: %d parts given, 1 to %d taken", n_parts, MAX_PARTS);
    mg->manifests = calloc((size_t)n_parts, sizeof *mg->manifests);
    const char **seen = calloc((size_t)n_parts, sizeof *seen);
    bool ok =
        (mg->manifests != NULL && seen != NULL) || step_fail(err, "golden merge: out of memory");
    int count = 0, total = 0;
    for (int k = 0; ok && k < n_parts; k++) ok = check_part(mg, k, seen, &count, &total, err);
    free(seen);
    if (!ok) return false;
    mg->n_files = total;
    mg->files = calloc((size_t)total, sizeof *mg->files);
    if (mg->files == NULL) return step_fail(err, "golden merge: out of memory");
    return list_files(mg, err) && check_complete(mg, err);
}

void golden_parts_free(GoldenParts *mg) {
    for (int k = 0; mg->manifests != NULL && k < mg->n_parts; k++) cJSON_Delete(mg->manifests[k]);
    free(mg->manifests);
    free(mg->files);
    memset(mg, 0, sizeof *mg);
}
