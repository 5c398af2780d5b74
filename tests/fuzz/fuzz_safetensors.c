/* fuzz_safetensors.c: a Hugging Face model directory from elsewhere: its
 * config.json (a 2-byte length and the text), then its model.safetensors
 * (the rest), through the loader `--model DIR` runs; a model that loads
 * runs one token. The safetensors parser also sees the bytes in memory. */
#include "tests/fuzz/fuzz_file.h"
#include "tests/fuzz/fuzz_forward.h"

#include <sys/stat.h>

#include "ref/forward.h"
#include "ref/formats/hf_model.h"
#include "ref/formats/safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const uint8_t *config, *weights;
    size_t n_config, n_weights;
    fuzz_split(data, size, &config, &n_config, &weights, &n_weights);
    StepError err;
    SafetensorsFile f;
    if (safetensors_parse(&f, weights, n_weights, "fuzz", &err)) {
        float one[4];
        for (int i = 0; i < f.n; i++) { /* convert a few values of every tensor */
            if (f.tensors[i].numel > 0 && f.tensors[i].numel <= 4)
                safetensors_to_f32(&f.tensors[i], one);
            if (safetensors_find(&f, f.tensors[i].name) != &f.tensors[i])
                abort(); /* names are unique: each finds itself */
        }
        safetensors_close(&f);
    }
    /* the folder: fuzz_file's folder holds config.json and model.safetensors */
    const char *cfg_path = fuzz_file("config.json", config, n_config);
    fuzz_file("model.safetensors", weights, n_weights);
    char dir[512];
    snprintf(dir, sizeof dir, "%s", cfg_path);
    *strrchr(dir, '/') = '\0';
    /* both ways of holding the weights: widened at load, and as stored
     * (mapped, read in place, q and k rows interleaved as read); the token
     * read at the last row of the embedding and the logits of every row */
    for (int mode = 0; mode < 2; mode++) {
        Model m;
        HfLoadReport report;
        if (!hf_model_load(&m, dir, mode ? WEIGHTS_STORED : WEIGHTS_F32, NULL, &report, &err))
            continue;
        fuzz_forward_last_token(&m);
        model_free(&m);
    }
    return 0;
}
