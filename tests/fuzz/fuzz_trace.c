/* fuzz_trace.c: a trace from elsewhere, through everything that reads one:
 * `trace validate` (schemas parsed once, not per input), `trace show` at
 * the first draw and at position 0, and diff's reader. */
#include "tests/fuzz/fuzz_file.h"

#include "trace/trace_diff.h"
#include "trace/trace_show.h"
#include "trace/trace_validate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static TraceSchemas *schemas;
    static FILE *sink;
    if (schemas == NULL && (schemas = trace_schemas_load()) == NULL) abort();
    if (sink == NULL && (sink = fopen("/dev/null", "w")) == NULL) abort();
    const char *path = fuzz_file("trace.jsonl", data, size);
    StepError err;
    trace_validate_with(schemas, path, sink, &err);
    trace_show_step(path, (TraceStepAt){.pos = -1}, NULL, 5, sink, &err);
    trace_show_step(path, (TraceStepAt){.pos = 0}, NULL, 5, sink, &err);
    trace_show_step(path, (TraceStepAt){.step = 2}, NULL, 5, sink, &err);
    float *logits;
    int n;
    char **pieces;
    if (trace_step_logits(path, (TraceStepAt){.step = 1}, &logits, &n, &pieces, &err)) {
        free(logits);
        trace_pieces_free(pieces, n);
    }
    DiffRun set;
    if (diff_run_read(&set, path, NULL, &err)) diff_run_free(&set);
    return 0;
}
