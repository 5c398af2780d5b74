/* fuzz_checkpoint.c: llama2.c checkpoints and stepwise .q8 files, read by
 * the loader that `--model FILE` picks for them. A file that loads is also
 * run for one token, so that a header that passes validation but lies
 * about its weights shows up as a bad read. */
#include "tests/fuzz/fuzz_file.h"
#include "ref/formats/checkpoint.h"
#include "tests/fuzz/fuzz_forward.h"

#include "ref/model/model.h"
#include "ref/model/model_quant.h"
#include "ref/formats/q8_file.h"
#include "ref/forward.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = fuzz_file("model.bin", data, size);
    Model m;
    StepError err;
    bool ok = model_file_is_q8(path) ? model_load_q8(&m, path, &err)
                                     : model_load_checkpoint(&m, path, &err);
    if (ok) fuzz_forward_last_token(&m);
    if (ok) model_free(&m);
    return 0;
}
