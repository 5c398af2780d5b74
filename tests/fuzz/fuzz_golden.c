/* fuzz_golden.c: `stepwise golden merge`'s check of the parts' manifests
 * (golden_parts_check) on manifests from elsewhere. The input is a 2-byte
 * length, the first part's manifest.json, then the second part's; each is
 * written into a folder of its own and the two are checked as a set. The
 * second is also scanned as merge scans a JSON Lines file it copies
 * (GoldenTensorsScan: which tensors file it names), in chunks whose size
 * the first byte sets, against a listed tensors file or none. */
#include <sys/stat.h>

#include "tests/fuzz/fuzz_file.h"

#include "ref/formats/golden_parts.h"

/* Write data as FOLDER/manifest.json beside fuzz_file's files; returns the
 * folder. */
static const char *write_part(const char *folder, const uint8_t *data, size_t n) {
    static char dirs[2][600];
    char *dir = dirs[folder[1] == '2'];
    const char *probe = fuzz_file("probe", data, 0);
    snprintf(dir, sizeof dirs[0], "%.*s/%s", (int)(strrchr(probe, '/') - probe), probe, folder);
    mkdir(dir, 0755);
    char path[700];
    snprintf(path, sizeof path, "%s/manifest.json", dir);
    FILE *f = fopen(path, "wb");
    if (f == NULL || (n > 0 && fwrite(data, 1, n, f) != n) || fclose(f) != 0) abort();
    return dir;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const uint8_t *a, *b;
    size_t na, nb;
    fuzz_split(data, size, &a, &na, &b, &nb);
    const char *parts[2] = {write_part("p1", a, na), write_part("p2", b, nb)};
    GoldenParts g;
    StepError err;
    golden_parts_check(&g, parts, 2, &err);
    golden_parts_free(&g);
    GoldenTensorsScan scan;
    golden_tensors_scan_init(&scan, "p2/score.jsonl");
    size_t chunk = na > 0 ? (size_t)a[0] % 7 + 1 : 1;
    bool ok = true;
    for (size_t at = 0; ok && at < nb; at += chunk)
        ok = golden_tensors_scan_feed(&scan, (const char *)b + at,
                                      nb - at < chunk ? nb - at : chunk, &err);
    if (ok) golden_tensors_scan_finish(&scan, na > 0 && a[0] & 1 ? "t.safetensors" : NULL, &err);
    golden_tensors_scan_free(&scan);
    return 0;
}
