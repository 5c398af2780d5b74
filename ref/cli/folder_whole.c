/* cli/folder_whole.c: see folder_whole.h. */
#include "ref/cli/folder_whole.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ref/cli/signals.h"
#include "ref/util/file_util.h"

bool cli_folder_write_whole(const char *command, const char *dir, FolderFill fill, void *ctx,
                            StepError *err) {
    char tmp[PATH_MAX], old[PATH_MAX];
    if (snprintf(tmp, sizeof tmp, "%s.XXXXXX", dir) >= (int)sizeof tmp ||
        snprintf(old, sizeof old, "%s.old.XXXXXX", dir) >= (int)sizeof old)
        return step_fail(err, "%s: --out %s: name too long", command, dir);
    cli_signals_defer_begin(); /* from before the folder exists: a signal stops between files */
    if (mkdtemp(tmp) == NULL) {
        cli_signals_defer_end();
        return step_fail(err, "%s: cannot create a folder beside %s: %s", command, dir,
                         strerror(errno));
    }
    chmod(tmp, 0755);
    bool ok = fill(ctx, tmp, err);
    if (ok && cli_signal_caught())
        ok = step_fail(err, "%s: interrupted (%s)", command, cli_signal_name(cli_signal_caught()));
    struct stat st;
    bool had_old = ok && stat(dir, &st) == 0;
    /* An old folder moves aside under a fresh name (mkdtemp makes it, rename
     * replaces the empty folder), the new one moves in, the old is removed. */
    bool old_made = had_old && mkdtemp(old) != NULL, old_moved = old_made && rename(dir, old) == 0;
    if (had_old && !old_moved)
        ok = step_fail(err, "%s: cannot move the old folder at %s aside: %s", command, dir,
                       strerror(errno));
    if (ok && rename(tmp, dir) != 0) {
        ok = step_fail(err, "%s: cannot rename %s to %s: %s", command, tmp, dir, strerror(errno));
        if (old_moved && rename(old, dir) == 0) old_moved = false; /* the old folder back */
    }
    if (!ok) folder_remove_made(tmp);
    if (old_moved)
        folder_remove_made(old); /* the old folder, replaced */
    else if (old_made)
        rmdir(old); /* the empty folder mkdtemp made */
    cli_signals_defer_end();
    return ok;
}
