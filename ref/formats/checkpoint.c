/* checkpoint.c: see checkpoint.h. */
#include "ref/formats/checkpoint.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "ref/util/file_util.h"

#define HEADER_INTS 7

/* Bytes a checkpoint with this config must have: the header, the weights, and
 * the two legacy RoPE tables that llama2.c still writes and we skip. */
static uint64_t checkpoint_bytes(const Config *c) {
    uint64_t rope_floats = (uint64_t)c->seq_len * (uint64_t)config_head_dim(c); /* 2 × half */
    return HEADER_INTS * sizeof(int32_t) + (model_storage_floats(c) + rope_floats) * sizeof(float);
}

static bool read_exact(FILE *f, void *dst, size_t bytes) {
    return fread(dst, 1, bytes, f) == bytes;
}

bool model_load_checkpoint(Model *m, const char *path, StepError *err) {
    memset(m, 0, sizeof *m);
    FILE *f = file_open_input(path, "model", err);
    if (f == NULL) return false;
    struct stat st;
    if (fstat(fileno(f), &st) != 0) {
        fclose(f);
        return step_fail(err, "model %s: cannot stat: %s", path, strerror(errno));
    }
    uint64_t file_bytes = (uint64_t)st.st_size;
    int32_t header[HEADER_INTS];
    if (file_bytes < sizeof header || !read_exact(f, header, sizeof header)) {
        fclose(f);
        return step_fail(err, "model %s: %llu bytes is too short for the %zu-byte header", path,
                         (unsigned long long)file_bytes, sizeof header);
    }
    Config *c = &m->config;
    c->dim = header[0], c->hidden_dim = header[1], c->n_layers = header[2];
    c->n_heads = header[3], c->n_kv_heads = header[4], c->seq_len = header[6];
    /* The one legal negative: vocab_size < 0 marks an untied classifier. */
    c->shared_classifier = header[5] > 0;
    c->vocab_size = header[5] == INT32_MIN ? 0 : (header[5] < 0 ? -header[5] : header[5]);
    char what[600];
    snprintf(what, sizeof what, "model %s", path);
    if (!config_validate(c, what, err)) {
        fclose(f);
        return false;
    }
    uint64_t expected = checkpoint_bytes(c);
    if (file_bytes != expected) {
        fclose(f);
        return step_fail(err, "model %s: header expects %llu bytes but the file has %llu (%s)",
                         path, (unsigned long long)expected, (unsigned long long)file_bytes,
                         file_bytes < expected ? "truncated" : "oversized");
    }
    /* Copy-on-write, so that the weights are ours to read for the model's
     * life whatever happens to the file's name, and writable like any other
     * model's storage without touching the file. */
    void *map = mmap(NULL, (size_t)file_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE, fileno(f), 0);
    fclose(f);
    if (map == MAP_FAILED)
        return step_fail(err, "model %s: cannot map the weights: %s", path, strerror(errno));
    m->mapping = map, m->mapping_bytes = (size_t)file_bytes, m->mapping_is_file = true;
    m->storage = (float *)((char *)map + sizeof header);
    /* an untied classifier comes after the RoPE tables */
    m->classifier_gap = c->shared_classifier ? 0 : (uint64_t)c->seq_len * config_head_dim(c);
    bool ok = model_bind_weights(m) && model_add_file(m, NULL, 0, path); /* its identity only */
    snprintf(m->source, sizeof m->source, "llama2.c checkpoint (float32)");
    if (!ok) {
        model_free(m);
        return step_fail(err, "model %s: out of memory", path);
    }
    if (!model_rope_init(m, err)) {
        model_free(m);
        return false;
    }
    return true;
}

/* Write n floats; false on a short write. */
static bool write_floats(FILE *f, const float *v, uint64_t n) {
    return fwrite(v, sizeof(float), n, f) == n;
}

bool model_save_checkpoint(const Model *m, const char *path, StepError *err) {
    if (!config_is_llama2c(&m->config))
        return step_fail(err, "%s: a llama2.c checkpoint holds llama2.c's architecture only", path);
    const Config *c = &m->config;
    /* the body is storage as laid out in full (weight_layout.h), the
     * classifier wherever it lies */
    const float *classifier = model_matrix_floats(m, &m->classifier);
    if (classifier == NULL || m->storage_floats < model_storage_floats(c))
        return step_fail(err, "%s: only a float32 model as loaded can be written", path);
    AtomicFile out;
    if (!atomic_file_open(&out, path, err)) return false;
    int32_t header[HEADER_INTS] = {
        c->dim,     c->hidden_dim, c->n_layers,
        c->n_heads, c->n_kv_heads, c->shared_classifier ? c->vocab_size : -c->vocab_size,
        c->seq_len};
    uint64_t cls = (uint64_t)c->vocab_size * (uint64_t)c->dim;
    uint64_t body = model_storage_floats(c) - (c->shared_classifier ? 0 : cls);
    bool ok =
        fwrite(header, sizeof header, 1, out.file) == 1 && write_floats(out.file, m->storage, body);
    int half = config_head_dim(c) / 2;
    for (int table = 0; ok && table < 2; table++) { /* freq_cis_real, then freq_cis_imag */
        for (int pos = 0; ok && pos < c->seq_len; pos++) {
            for (int i = 0; ok && i < half; i++) {
                float freq = 1.0f / powf(10000.0f, (float)(2 * i) / (float)config_head_dim(c));
                float v = table == 0 ? cosf((float)pos * freq) : sinf((float)pos * freq);
                ok = write_floats(out.file, &v, 1);
            }
        }
    }
    if (ok && !c->shared_classifier) ok = write_floats(out.file, classifier, cls);
    if (!ok) {
        atomic_file_discard(&out);
        return step_fail(err, "model %s: write failed", path);
    }
    return atomic_file_commit(&out, err);
}
