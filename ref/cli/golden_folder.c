/* cli/golden_folder.c: see golden_folder.h. */
#include "ref/cli/golden_folder.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ref/cli/folder_whole.h"
#include "ref/util/file_util.h"
#include "ref/util/json_util.h"

/* Whether the manifest at path is a stepwise golden set's (format and
 * version), and whether it lists name among its files. */
static cJSON *read_golden_manifest(const char *path) {
    char *text = NULL;
    StepError ignored;
    if (!file_read_text(path, "manifest", &text, &ignored)) return NULL;
    cJSON *m = json_parse_whole(text);
    free(text);
    const char *format = json_string_field(m, "format");
    int version;
    if (format == NULL || strcmp(format, "stepwise-golden") != 0 ||
        !json_int_field(m, "version", 1, 1, &version) ||
        !cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(m, "files"))) {
        cJSON_Delete(m);
        return NULL;
    }
    return m;
}

static bool manifest_lists(const cJSON *manifest, const char *name) {
    const cJSON *entry;
    cJSON_ArrayForEach(entry, cJSON_GetObjectItemCaseSensitive(manifest, "files")) {
        const char *file = json_string_field(entry, "file");
        const char *tensors =
            json_string_field(cJSON_GetObjectItemCaseSensitive(entry, "tensors"), "file");
        if ((file != NULL && strcmp(file, name) == 0) ||
            (tensors != NULL && strcmp(tensors, name) == 0))
            return true;
    }
    return false;
}

/* Whether an existing DIR may be replaced: an empty folder, or a golden set
 * (a manifest.json of format stepwise-golden, version 1) that holds nothing
 * but its manifest and regular files the manifest lists. Anything else is
 * the user's, and kept untouched: a web app's folder with a manifest.json
 * of its own is not a golden set. */
static bool replaceable(const char *dir, StepError *err) {
    struct stat st;
    if (lstat(dir, &st) != 0) return true; /* nothing there */
    if (S_ISLNK(st.st_mode))
        return step_fail(err, "golden: --out %s is a symbolic link; not replacing it", dir);
    if (!S_ISDIR(st.st_mode)) return step_fail(err, "golden: --out %s is not a folder", dir);
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/manifest.json", dir);
    cJSON *manifest = NULL;
    if (lstat(path, &st) == 0 && (manifest = read_golden_manifest(path)) == NULL)
        return step_fail(err,
                         "golden: --out %s holds a manifest.json that is not a stepwise golden "
                         "set's (format stepwise-golden, version 1); not replacing it",
                         dir);
    DIR *d = opendir(dir);
    if (d == NULL) {
        cJSON_Delete(manifest);
        return step_fail(err, "golden: --out %s: cannot read the folder: %s", dir, strerror(errno));
    }
    struct dirent *entry;
    bool ok = true;
    while (ok && (entry = readdir(d)) != NULL) {
        const char *name = entry->d_name;
        if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0) continue;
        bool is_file = snprintf(path, sizeof path, "%s/%s", dir, name) < (int)sizeof path &&
                       lstat(path, &st) == 0 && S_ISREG(st.st_mode);
        if (manifest == NULL)
            ok = step_fail(err,
                           "golden: --out %s is a folder that is not empty and holds no "
                           "golden set (no manifest.json); not replacing it",
                           dir);
        else if (!is_file ||
                 (strcmp(name, "manifest.json") != 0 && !manifest_lists(manifest, name)))
            ok = step_fail(err,
                           "golden: --out %s holds %.100s, which is not a file of its golden "
                           "set; not replacing it",
                           dir, name);
    }
    closedir(d);
    cJSON_Delete(manifest);
    return ok;
}

bool golden_folder_replace(const char *dir, GoldenFill fill, void *ctx, StepError *err) {
    return replaceable(dir, err) && cli_folder_write_whole("golden", dir, fill, ctx, err);
}

bool golden_manifest_write(const cJSON *manifest, const char *dir, StepError *err) {
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/manifest.json", dir);
    AtomicFile out;
    if (!atomic_file_open(&out, path, err)) return false;
    char *text = cJSON_Print(manifest);
    fputs(text, out.file);
    fputc('\n', out.file);
    cJSON_free(text);
    return atomic_file_commit(&out, err);
}
