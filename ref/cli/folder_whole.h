/* cli/folder_whole.h: a command's output folder, written whole or not at
 * all (golden's sets, make-model's Hugging Face folders). */
#ifndef STEPWISE_CLI_FOLDER_WHOLE_H
#define STEPWISE_CLI_FOLDER_WHOLE_H

#include <stdbool.h>

#include "ref/util/error.h"

/* Fill a new, empty folder: write every file of the output into dir. */
typedef bool (*FolderFill)(void *ctx, const char *dir, StepError *err);

/* Make the folder at dir: fill() writes into a new folder beside it
 * (dir.XXXXXX), which is renamed into place only when whole, with signals
 * deferred from before it exists. A failure, or a first SIGINT, SIGTERM or
 * SIGHUP (then err says "COMMAND: interrupted (SIGTERM)" and
 * cli_signal_caught which), leaves no partial folder; a second signal ends
 * the process at once, leaving only the new name. A folder already at dir
 * (the caller has decided it may be replaced) is moved aside, then removed
 * once the new one is in place. `command` names the command in errors. */
bool cli_folder_write_whole(const char *command, const char *dir, FolderFill fill, void *ctx,
                            StepError *err);

#endif
