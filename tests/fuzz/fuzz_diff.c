/* fuzz_diff.c: `stepwise diff REF CANDIDATE` on inputs from elsewhere. The
 * first byte says what each side is: bit 0 an array file for the
 * reference (else a trace), bit 1 for the candidate; bit 3 makes the
 * reference's array a .npy (else .f32), bit 4 the candidate's; bit 2 takes
 * the int8 preset, bit 5 --teacher-forced, bit 6 reads the candidate's
 * hooks with llama.cpp's names (--names llama.cpp --rope-halves). Then a 2-byte length and the
 * reference's bytes, the rest being the candidate's. An array side's bytes
 * are a 2-byte length, the sidecar JSON, then the .f32 or .npy bytes. */
#include "tests/fuzz/fuzz_file.h"

#include "trace/trace_diff.h"

/* Write one side and return its path. */
static const char *write_side(const char *name, bool array, bool npy, const uint8_t *data,
                              size_t n) {
    static char paths[2][512];
    char file[64];
    int which = name[0] == 'c';
    if (!array) {
        snprintf(file, sizeof file, "%s.jsonl", name);
        snprintf(paths[which], sizeof paths[which], "%s", fuzz_file(file, data, n));
        return paths[which];
    }
    const uint8_t *meta, *values;
    size_t n_meta, n_values;
    fuzz_split(data, n, &meta, &n_meta, &values, &n_values);
    const char *ext = npy ? "npy" : "f32";
    snprintf(file, sizeof file, "%s.%s.json", name, ext);
    fuzz_file(file, meta, n_meta);
    snprintf(file, sizeof file, "%s.%s", name, ext);
    snprintf(paths[which], sizeof paths[which], "%s", fuzz_file(file, values, n_values));
    return paths[which];
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    int mode = data[0];
    const uint8_t *ref_bytes, *cand_bytes;
    size_t n_ref, n_cand;
    fuzz_split(data + 1, size - 1, &ref_bytes, &n_ref, &cand_bytes, &n_cand);
    const char *ref_path = write_side("ref", mode & 1, mode & 8, ref_bytes, n_ref);
    const char *cand_path = write_side("cand", mode & 2, mode & 16, cand_bytes, n_cand);
    DiffRun ref, cand;
    StepError err;
    HookNames names;
    if (!hook_names_load(&names, "llama.cpp", true, &err)) abort();
    bool ref_ok = diff_run_read(&ref, ref_path, NULL, &err);
    bool cand_ok = diff_run_read(&cand, cand_path, mode & 64 ? &names : NULL, &err);
    DiffTolerance tol;
    if (!diff_tolerance_preset(&tol, mode & 4 ? "int8" : "fp32", &err)) abort();
    DiffReport rep;
    if (ref_ok && cand_ok) trace_diff(&ref, &cand, &tol, mode & 32, &rep, &err);
    if (ref_ok) trace_diff(&ref, &ref, &tol, mode & 32, &rep, &err);
    if (cand_ok && ref_ok) diff_run_unhalve(&cand, ref.head_dim, &err);
    if (ref_ok) diff_run_free(&ref);
    if (cand_ok) diff_run_free(&cand);
    hook_names_free(&names);
    return 0;
}
