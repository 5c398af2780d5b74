/* fuzz_tensors.c: a score file's tensors from elsewhere. The first byte
 * says how the rest is read: bit 0 a score file and the tensors file it
 * names ([2-byte length][JSON Lines][safetensors], the tensors event naming
 * "t.safetensors"), else a safetensors file on its own as a candidate; bit
 * 1 reads its hooks with llama.cpp's names (and the rows as text); bit 2
 * the attention patterns too. Each is read as diff reads it, and the score
 * file's logits (and patterns) as trace show and view read them. */
#include "tests/fuzz/fuzz_file.h"

#include "trace/diff_input.h"
#include "trace/diff_tensors.h"
#include "trace/trace_reader.h"

static bool drop(void *ctx, cJSON *e) {
    (void)ctx;
    cJSON_Delete(e);
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    int mode = data[0];
    StepError err;
    HookNames names;
    if (!hook_names_load(&names, "llama.cpp", true, &err)) abort();
    DiffRun run;
    const char *path;
    if (mode & 1) {
        const uint8_t *jsonl, *tensors;
        size_t n_jsonl, n_tensors;
        fuzz_split(data + 1, size - 1, &jsonl, &n_jsonl, &tensors, &n_tensors);
        fuzz_file("t.safetensors", tensors, n_tensors);
        path = fuzz_file("t.jsonl", jsonl, n_jsonl);
        /* as show and view take the logits and patterns: the tensors event's rows */
        TraceReader r;
        if (trace_reader_open(&r, path, &err)) {
            bool not_json;
            cJSON *e;
            while ((e = trace_reader_next(&r, &not_json)) != NULL || not_json) {
                const char *name = e != NULL ? trace_event_name(e) : NULL;
                if (name != NULL && strcmp(name, "tensors") == 0)
                    tensors_events(e, path, mode & 2, mode & 4, drop, NULL, &err);
                cJSON_Delete(e);
            }
            trace_reader_close(&r);
        }
    } else {
        path = fuzz_file("c.safetensors", data + 1, size - 1);
    }
    if (diff_run_read(&run, path, mode & 2 ? &names : NULL, &err)) diff_run_free(&run);
    hook_names_free(&names);
    return 0;
}
