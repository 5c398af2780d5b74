/* cli/golden_merge.c: `stepwise golden merge PART... --out DIR`, the parts
 * of a golden set made with --shard K/N (on one machine or many) joined into
 * the set, byte for byte what one `stepwise golden` writes. Every part is
 * checked before anything is written: that it is a part (its manifest's
 * fields and numbers), that all are parts of one set (the same model,
 * tokenizer, stepwise build and options), that each part comes once and
 * none is missing, that each file of the set comes once, and that each
 * file's bytes (and its tensors file's, `golden --tensors`) have the
 * SHA-256 its part's manifest gives. */
#include <cjson/cJSON.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ref/cli/command.h"
#include "ref/cli/commands.h"
#include "ref/cli/common.h"
#include "ref/cli/golden_folder.h"
#include "ref/cli/options.h"
#include "ref/cli/signals.h"
#include "ref/util/file_util.h"
#include "ref/formats/golden_parts.h"
#include "ref/util/sha256.h"

static const char MERGE_USAGE[] =
    "usage: stepwise golden merge PART... --out DIR\n"
    "\n"
    "Join the parts of a golden set (folders written by `stepwise golden --shard\n"
    "K/N`) into DIR: the files of every part and the set's manifest.json, the\n"
    "same bytes one `stepwise golden` without --shard writes. Refused, naming\n"
    "the problem, unless the parts are all N parts of one set: the same model,\n"
    "tokenizer, build and options, each part once, each file once, every\n"
    "file's SHA-256 and size as its manifest says. Each file must be a regular\n"
    "file (no FIFO, device or link to one). DIR is written whole or not at all,\n"
    "and replaced only as `stepwise golden` replaces it (see its --help).\n";

/* Copy one file of the set into dir, hashing it on the way: a regular file
 * (a FIFO or device, or a link to one, is refused before it is opened for
 * good), of the size its manifest gives, read no further than that size,
 * with the SHA-256 its manifest gives; a JSON Lines file's bytes go
 * through scan too (which tensors file it names). A signal stops the copy
 * between chunks. */
static bool copy_checked(const char *part, const char *file, const char *want_sha,
                         long long want_bytes, const char *dir, GoldenTensorsScan *scan,
                         StepError *err) {
    char from[PATH_MAX + 256], to[PATH_MAX + 256];
    snprintf(from, sizeof from, "%s/%s", part, file);
    snprintf(to, sizeof to, "%s/%s", dir, file);
    FILE *in = file_open_input(from, "golden merge: part file", err);
    if (in == NULL) return false;
    struct stat st;
    if (fstat(fileno(in), &st) != 0 || (want_bytes >= 0 && st.st_size != want_bytes)) {
        fclose(in);
        return step_fail(err, "golden merge: %s holds %lld bytes, its manifest says %lld", from,
                         (long long)st.st_size, want_bytes);
    }
    AtomicFile out;
    if (!atomic_file_open(&out, to, err)) {
        fclose(in);
        return false;
    }
    Sha256 h;
    sha256_init(&h);
    char buf[1 << 16], hex[65];
    long long left = (long long)st.st_size;
    bool ok = true, scanned = true;
    while (ok && left > 0 && !cli_signal_caught()) {
        size_t want = left < (long long)sizeof buf ? (size_t)left : sizeof buf;
        size_t n = fread(buf, 1, want, in);
        sha256_update(&h, buf, n);
        ok = n == want && fwrite(buf, 1, n, out.file) == n;
        if (ok && scan != NULL) ok = scanned = golden_tensors_scan_feed(scan, buf, n, err);
        left -= (long long)n;
    }
    bool grew = ok && left == 0 && fgetc(in) != EOF;
    fclose(in);
    sha256_hex(&h, hex);
    if (!ok || grew || cli_signal_caught()) {
        atomic_file_discard(&out);
        return cli_signal_caught() ? step_fail(err, "golden merge: interrupted (%s)",
                                               cli_signal_name(cli_signal_caught()))
               : grew     ? step_fail(err, "golden merge: %s changed size while read", from)
               : !scanned ? false /* the scan said why */
                          : step_fail(err, "golden merge: %s: read or write failed", from);
    }
    if (strcmp(hex, want_sha) != 0) {
        atomic_file_discard(&out);
        return step_fail(err, "golden merge: %s: its SHA-256 is not the one its manifest gives",
                         from);
    }
    return atomic_file_commit(&out, err);
}

/* Fill dir with the set: every file, then the manifest (the first part's,
 * without its shard, listing every file by number). */
static bool write_merged(void *ctx, const char *dir, StepError *err) {
    const GoldenParts *mg = ctx;
    for (int i = 0; i < mg->n_files; i++) {
        const GoldenSetFile *f = &mg->files[i];
        size_t len = strlen(f->file);
        bool jsonl = len > 6 && strcmp(f->file + len - 6, ".jsonl") == 0;
        char from[PATH_MAX + 256];
        snprintf(from, sizeof from, "%s/%s", f->part, f->file);
        GoldenTensorsScan scan;
        golden_tensors_scan_init(&scan, from);
        bool ok =
            copy_checked(f->part, f->file, f->sha256, f->bytes, dir, jsonl ? &scan : NULL, err) &&
            (!jsonl || golden_tensors_scan_finish(&scan, f->tensors_file, err));
        golden_tensors_scan_free(&scan);
        if (!ok ||
            (f->tensors_file != NULL && !copy_checked(f->part, f->tensors_file, f->tensors_sha256,
                                                      f->tensors_bytes, dir, NULL, err)))
            return false;
    }
    cJSON *manifest = cJSON_Duplicate(mg->manifests[0], true);
    cJSON_DeleteItemFromObjectCaseSensitive(manifest, "shard");
    cJSON *files = cJSON_CreateArray();
    for (int i = 0; i < mg->n_files; i++)
        cJSON_AddItemToArray(files, cJSON_Duplicate(mg->files[i].entry, true));
    cJSON_ReplaceItemInObjectCaseSensitive(manifest, "files", files);
    bool ok = golden_manifest_write(manifest, dir, err);
    cJSON_Delete(manifest);
    return ok;
}

typedef struct {
    const char *out;
} MergeArgs;

static const CliOption MERGE_OPTIONS[] = {
    {"out", "DIR", OPTION_TEXT, offsetof(MergeArgs, out), .required = true, .path = PATH_OUT_FOLDER,
     .help = "where the set goes (written whole or not at all)"},
    CLI_OPTIONS_END};

static const CliCommandOptions MERGE_COMMAND = {.command = "golden merge",
                                                .options = MERGE_OPTIONS,
                                                .min_operands = 1,
                                                .max_operands = INT_MAX,
                                                .operands = "the parts",
                                                .operand_input = "part",
                                                .usage = MERGE_USAGE};

static int merge(void *merge_args, int n, char **parts, StepError *err) {
    const MergeArgs *args = merge_args;
    GoldenParts mg = {0};
    bool ok = golden_parts_check(&mg, (const char **)parts, n, err) &&
              golden_folder_replace(args->out, write_merged, &mg, err);
    int n_files = mg.n_files, n_parts = mg.n_parts;
    golden_parts_free(&mg);
    if (!ok) return EXIT_BAD_INPUT;
    fprintf(stderr, "golden set of %d files from %d parts written to %s\n", n_files, n_parts,
            args->out);
    return 0;
}

int cli_golden_merge(int argc, char **argv) {
    MergeArgs args = {0};
    return cli_command_run(&MERGE_COMMAND, argc, argv, &args, merge);
}
