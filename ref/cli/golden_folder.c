/* cli/golden_folder.c: see golden_folder.h. */
#include "golden_folder.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "signals.h"
#include "../file_util.h"

/* Remove a folder this command made, and the files in it. */
static void remove_folder(const char *dir) {
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

/* Whether an existing DIR may be replaced: an empty folder, or a golden set
 * (it has a manifest.json). Anything else is the user's, and kept. */
static bool replaceable(const char *dir, StepError *err) {
    struct stat st;
    if (stat(dir, &st) != 0) return true; /* nothing there */
    if (!S_ISDIR(st.st_mode)) return step_fail(err, "golden: --out %s is not a folder", dir);
    char manifest[PATH_MAX];
    snprintf(manifest, sizeof manifest, "%s/manifest.json", dir);
    if (access(manifest, F_OK) == 0) return true;
    DIR *d = opendir(dir);
    struct dirent *entry;
    int others = 0;
    while (d != NULL && (entry = readdir(d)) != NULL)
        others += strcmp(entry->d_name, ".") != 0 && strcmp(entry->d_name, "..") != 0;
    if (d != NULL) closedir(d);
    if (d == NULL || others > 0)
        return step_fail(err,
                         "golden: --out %s is a folder that is not empty and holds no "
                         "golden set (no manifest.json); not replacing it",
                         dir);
    return true;
}

bool golden_folder_replace(const char *dir, GoldenFill fill, void *ctx, StepError *err) {
    char tmp[PATH_MAX], old[PATH_MAX];
    if (!replaceable(dir, err)) return false;
    if (snprintf(tmp, sizeof tmp, "%s.XXXXXX", dir) >= (int)sizeof tmp ||
        snprintf(old, sizeof old, "%s.old.XXXXXX", dir) >= (int)sizeof old)
        return step_fail(err, "golden: --out %s: name too long", dir);
    cli_signals_defer_begin(); /* from before the folder exists: a signal stops between files */
    if (mkdtemp(tmp) == NULL) {
        cli_signals_defer_end();
        return step_fail(err, "golden: cannot create a folder beside %s: %s", dir, strerror(errno));
    }
    chmod(tmp, 0755);
    bool ok = fill(ctx, tmp, err);
    if (ok && cli_signal_caught())
        ok = step_fail(err, "golden: interrupted (%s)", cli_signal_name(cli_signal_caught()));
    struct stat st;
    bool had_old = ok && stat(dir, &st) == 0;
    /* An old set moves aside under a fresh name (mkdtemp makes it, rename
     * replaces the empty folder), the new one moves in, the old is removed. */
    if (had_old && (mkdtemp(old) == NULL || rename(dir, old) != 0))
        ok =
            step_fail(err, "golden: cannot move the old set at %s aside: %s", dir, strerror(errno));
    if (ok && rename(tmp, dir) != 0) {
        ok = step_fail(err, "golden: cannot rename %s to %s: %s", tmp, dir, strerror(errno));
        if (had_old) rename(old, dir);
    }
    if (!ok) remove_folder(tmp);
    if (ok && had_old) remove_folder(old);
    cli_signals_defer_end();
    return ok;
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
