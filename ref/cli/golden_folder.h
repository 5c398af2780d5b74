/* cli/golden_folder.h: a golden set's folder, written whole or not at all.
 * Shared by `golden` (a set, or a part of one) and `golden merge`. */
#ifndef STEPWISE_CLI_GOLDEN_FOLDER_H
#define STEPWISE_CLI_GOLDEN_FOLDER_H

#include <cjson/cJSON.h>

#include "ref/util/error.h"

/* Fill a new folder: write every file of the set into dir
 * (cli_folder_write_whole's FolderFill). */
typedef bool (*GoldenFill)(void *ctx, const char *dir, StepError *err);

/* Make the set at dir (cli_folder_write_whole: written beside it, renamed
 * into place only when whole), so that a failure or a signal leaves no
 * partial set and an older set at dir (a folder with a manifest.json) is
 * replaced in one step. Any other non-empty folder at dir is refused. */
bool golden_folder_replace(const char *dir, GoldenFill fill, void *ctx, StepError *err);

/* Write manifest (cJSON_Print, then a newline) as dir/manifest.json. */
bool golden_manifest_write(const cJSON *manifest, const char *dir, StepError *err);

#endif
