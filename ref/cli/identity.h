/* cli/identity.h: which files a run read, by name and SHA-256: for a
 * golden set's manifest, inspect, and the trace's run header. */
#ifndef STEPWISE_CLI_IDENTITY_H
#define STEPWISE_CLI_IDENTITY_H

#include <cjson/cJSON.h>

#include "ref/util/error.h"

/* {"file", "sha256"} of a file, or for a folder (a Hugging Face model)
 * {"folder", "files": [{"file", "sha256"}, ...]} of its .json and
 * .safetensors files by name. NULL (err set) when one cannot be read.
 * Caller owns the result. */
cJSON *cli_file_identity(const char *path, StepError *err);

/* The identity of the model at model_path for a run header (*out, caller
 * deletes), or *out NULL for the built-in model or with --no-hash. */
bool cli_model_files(const char *model_path, bool no_hash, cJSON **out, StepError *err);

#endif
