/* cli/identity.c: see identity.h. */
#include "ref/cli/identity.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ref/util/sha256.h"

static int compare_names(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool is_weights_or_config(const char *name) {
    size_t n = strlen(name);
    return (n > 5 && strcmp(name + n - 5, ".json") == 0) ||
           (n > 12 && strcmp(name + n - 12, ".safetensors") == 0);
}

/* A model folder (Hugging Face's): every .json and .safetensors file in it,
 * by name, each with its SHA-256. */
static cJSON *folder_identity(const char *path, StepError *err) {
    DIR *d = opendir(path);
    if (d == NULL) {
        step_fail(err, "golden: cannot list %s: %s", path, strerror(errno));
        return NULL;
    }
    char *names[256];
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL && n < 256) {
        if (is_weights_or_config(e->d_name) && (names[n] = strdup(e->d_name)) != NULL) n++;
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof names[0], compare_names);
    const char *base = strrchr(path, '/');
    cJSON *o = cJSON_CreateObject(), *files = cJSON_AddArrayToObject(o, "files");
    cJSON_AddStringToObject(o, "folder", base && base[1] ? base + 1 : path);
    bool ok = true;
    for (int i = 0; i < n; i++) {
        char file[PATH_MAX + 300], hex[65];
        snprintf(file, sizeof file, "%s/%s", path, names[i]);
        if (ok && (ok = sha256_file(file, hex, err))) {
            cJSON *f = cJSON_CreateObject();
            cJSON_AddStringToObject(f, "file", names[i]);
            cJSON_AddStringToObject(f, "sha256", hex);
            cJSON_AddItemToArray(files, f);
        }
        free(names[i]);
    }
    if (!ok) cJSON_Delete(o);
    return ok ? o : NULL;
}

cJSON *cli_file_identity(const char *path, StepError *err) {
    char hex[65];
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) return folder_identity(path, err);
    if (!sha256_file(path, hex, err)) return NULL;
    const char *base = strrchr(path, '/');
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "file", base ? base + 1 : path);
    cJSON_AddStringToObject(o, "sha256", hex);
    return o;
}

bool cli_model_files(const char *model_path, bool no_hash, cJSON **out, StepError *err) {
    *out = NULL;
    if (model_path == NULL || no_hash) return true;
    *out = cli_file_identity(model_path, err);
    return *out != NULL;
}
