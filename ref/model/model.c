/* model.c: the model's storage bound to its matrices and vectors
 * (weight_layout.h's table), its pages and memory, its random
 * initialisation and threads (llama2.c's checkpoint file:
 * formats/checkpoint.c). */

/* madvise(MADV_DONTNEED) is not in POSIX (posix_madvise's DONTNEED is only
 * advice, and glibc ignores it), nor is MAP_ANONYMOUS; _DEFAULT_SOURCE
 * declares both. */
#define _DEFAULT_SOURCE
#include "ref/model/model.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ref/util/file_util.h"
#include "ref/util/rng.h"
#include "ref/kernels/threads.h"

/* How many expert matrices a mixture has: [M, n_experts, EXPERT_MATRICES]. */
static size_t expert_matrices(const Config *c) {
    if (c->n_experts == 0) return 0;
    return (size_t)(c->n_layers - config_dense_layers(c)) * (size_t)c->n_experts * EXPERT_MATRICES;
}

/* m->layers and (a mixture) m->experts, zeroed, when not yet allocated. */
static bool alloc_matrix_arrays(Model *m) {
    const Config *c = &m->config;
    if (m->layers == NULL) m->layers = calloc((size_t)c->n_layers, sizeof *m->layers);
    if (m->experts == NULL && c->n_experts > 0)
        m->experts = calloc(expert_matrices(c), sizeof *m->experts);
    return m->layers != NULL && (c->n_experts == 0 || m->experts != NULL);
}

Matrix *model_expert(const Model *m, int l, int e, ExpertKind k) {
    size_t slot = (size_t)config_moe_slot(&m->config, l);
    return &m->experts[(slot * (size_t)m->config.n_experts + (size_t)e) * EXPERT_MATRICES + k];
}

int model_matrix_count(const Model *m) {
    if (m->layers == NULL) return 0;
    return m->config.n_layers * LAYER_MATRICES +
           (m->experts != NULL ? (int)expert_matrices(&m->config) : 0);
}

Matrix *model_matrix_at(const Model *m, int i) {
    int layer_ones = m->config.n_layers * LAYER_MATRICES;
    if (i < layer_ones) return &m->layers[i / LAYER_MATRICES].m[i % LAYER_MATRICES];
    return &m->experts[i - layer_ones];
}

MatrixPlace model_matrix_place(const Model *m, int i) {
    const Config *c = &m->config;
    int layer_ones = c->n_layers * LAYER_MATRICES;
    MatrixPlace p = {.expert = -1};
    if (i < layer_ones) { /* a layer's own */
        p.layer = i / LAYER_MATRICES, p.kind = i % LAYER_MATRICES;
        /* the dense MLP's only in dense layers, the shared experts' only in MoE ones */
        if (layer_has_kind(c, (MatrixKind)p.kind, p.layer))
            layer_matrix_shape(c, (MatrixKind)p.kind, &p.rows, &p.cols);
        return p;
    }
    int j = i - layer_ones, at = j / EXPERT_MATRICES; /* slot × n_experts + e */
    int slot = at / c->n_experts;
    p.kind = j % EXPERT_MATRICES, p.expert = at % c->n_experts;
    p.layer = config_moe_layer(c, slot);
    expert_matrix_shape(c, (ExpertKind)p.kind, &p.rows, &p.cols);
    return p;
}

void model_matrix_name(const Model *m, int i, char *buf, size_t size) {
    /* the names traces and messages have always given the matrices (the
     * trace's bytes stay; the code says gate, down and up) */
    static const char *const layer[LAYER_MATRICES] = {
        "attn.wq",   "attn.wk",         "attn.wv",         "attn.wo",      "mlp.w1",
        "mlp.w2",    "mlp.w3",          "attn.q_a",        "attn.q_b",     "attn.kv_a",
        "attn.kv_b", "moe.shared.gate", "moe.shared.down", "moe.shared.up"};
    static const char *const expert[EXPERT_MATRICES] = {"gate", "down", "up"};
    MatrixPlace p = model_matrix_place(m, i);
    if (p.expert < 0)
        snprintf(buf, size, "blocks.%d.%s", p.layer, layer[p.kind]);
    else
        snprintf(buf, size, "blocks.%d.moe.expert.%d.%s", p.layer, p.expert, expert[p.kind]);
}

/* Point m at part p of the layout, which starts at `at`: the embedding's
 * and the classifier's matrices, a vector kind's rows, or a matrix kind's
 * views in every layer (or expert) that holds one. */
static void bind_part(Model *m, WeightPart p, const float *at) {
    const Config *c = &m->config;
    int rows, cols, count, width;
    switch (p.type) {
        case PART_EMBEDDING:
            m->embedding = matrix_view(ELEM_F32, at, c->vocab_size, c->dim);
            break;
        case PART_CLASSIFIER: /* tied: the embedding's rows */
            m->classifier = c->shared_classifier
                                ? matrix_view(ELEM_F32, m->embedding.data, c->vocab_size, c->dim)
                                : matrix_view(ELEM_F32, at, c->vocab_size, c->dim);
            break;
        case PART_VECTOR:
            weight_vector_shape(c, (VectorKind)p.kind, &count, &width);
            m->vectors[p.kind] = count > 0 ? at : NULL;
            break;
        case PART_MATRIX:
            layer_matrix_shape(c, (MatrixKind)p.kind, &rows, &cols);
            for (int l = 0; l < c->n_layers; l++) {
                size_t slot = (size_t)layer_kind_slot(c, (MatrixKind)p.kind, l);
                bool held = layer_has_kind(c, (MatrixKind)p.kind, l);
                const float *data = held && rows > 0 ? at + slot * (size_t)rows * cols : NULL;
                m->layers[l].m[p.kind] =
                    matrix_view(ELEM_F32, data, held ? rows : 0, held ? cols : 0);
            }
            break;
        case PART_EXPERT:
            expert_matrix_shape(c, (ExpertKind)p.kind, &rows, &cols);
            for (size_t e = 0; c->n_experts > 0 && e < expert_matrices(c) / EXPERT_MATRICES; e++)
                m->experts[e * EXPERT_MATRICES + (size_t)p.kind] =
                    matrix_view(ELEM_F32, at + e * (size_t)rows * cols, rows, cols);
            break;
    }
}

uint64_t model_storage_floats(const Config *c) {
    uint64_t n = 0;
    for (int i = 0; i < WEIGHT_PARTS; i++) n += weight_part_floats(c, weight_part(i));
    return n;
}

/* Where part `part` starts in m->storage laid out in full (a llama2.c
 * checkpoint's RoPE tables, classifier_gap floats, before its classifier). */
static const float *part_start(const Model *m, int part) {
    const float *p = m->storage;
    for (int i = 0; i < part; i++) p += weight_part_floats(&m->config, weight_part(i));
    return p + (weight_part(part).type == PART_CLASSIFIER ? m->classifier_gap : 0);
}

/* The index in the table of the part of this type and kind. */
static int part_index(PartType type, int kind) {
    int i = 0;
    while (i < WEIGHT_PARTS - 1 && !(weight_part(i).type == type && weight_part(i).kind == kind))
        i++;
    return i;
}

bool model_bind_weights(Model *m) {
    if (!alloc_matrix_arrays(m)) return false;
    memset(m->vectors, 0, sizeof m->vectors);
    for (int i = 0; i < WEIGHT_PARTS; i++) bind_part(m, weight_part(i), part_start(m, i));
    m->storage_floats = model_storage_floats(&m->config) + m->classifier_gap;
    return true;
}

const float *model_matrix_original(const Model *m, int i) {
    const Config *c = &m->config;
    if (m->storage == NULL || m->storage_floats < model_storage_floats(c)) return NULL;
    int n = model_matrix_count(m);
    if (i >= n) /* the embedding, then the classifier (tied: the embedding) */
        return part_start(
            m, part_index(i > n && !c->shared_classifier ? PART_CLASSIFIER : PART_EMBEDDING, 0));
    MatrixPlace p = model_matrix_place(m, i);
    if (p.rows == 0) return NULL;
    if (p.expert < 0) /* the layer's slot among those that hold the kind */
        return part_start(m, part_index(PART_MATRIX, p.kind)) +
               (size_t)layer_kind_slot(c, (MatrixKind)p.kind, p.layer) * p.rows * p.cols;
    size_t at = (size_t)config_moe_slot(c, p.layer) * c->n_experts + (size_t)p.expert;
    return part_start(m, part_index(PART_EXPERT, p.kind)) + at * p.rows * p.cols;
}

const float *model_vector(const Model *m, VectorKind k, int i) {
    int count, width;
    weight_vector_shape(&m->config, k, &count, &width);
    return m->vectors[k] != NULL && i < count ? m->vectors[k] + (size_t)i * width : NULL;
}

float *model_vector_slot(Model *m, VectorKind k, int i) {
    const float *v = model_vector(m, k, i);
    return v != NULL ? model_weight_slot(m, v) : NULL;
}

/* Whether [from, from + bytes) lies inside [base, base + size). */
static bool inside(const void *from, size_t bytes, const void *base, size_t size) {
    uintptr_t a = (uintptr_t)from, b = (uintptr_t)base;
    return base != NULL && a >= b && a - b <= size && bytes <= size - (a - b);
}

const float *model_matrix_floats(const Model *m, const Matrix *x) {
    if (x->elem != ELEM_F32 || x->layout != MATRIX_ROWS || x->interleave_head_dim != 0 ||
        x->owned != NULL || x->data == NULL)
        return NULL;
    return inside(x->data, matrix_bytes(x), m->storage, m->storage_floats * sizeof(float)) ? x->data
                                                                                           : NULL;
}

bool model_in_storage(const Model *m) {
    if (m->storage_floats < model_storage_floats(&m->config) ||
        model_matrix_floats(m, &m->embedding) == NULL ||
        model_matrix_floats(m, &m->classifier) == NULL)
        return false;
    for (int i = 0; i < model_matrix_count(m); i++) {
        const Matrix *x = model_matrix_at(m, i);
        if (x->rows > 0 && model_matrix_floats(m, x) == NULL) return false;
    }
    return true;
}

float *model_matrix_slot(Model *m, const Matrix *x) {
    const float *v = model_matrix_floats(m, x);
    return v != NULL ? model_weight_slot(m, v) : NULL;
}

/* madvise(DONTNEED) over the whole pages inside [from, from + bytes). */
static void drop_pages(const void *from, size_t bytes) {
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t lo = ((uintptr_t)from + page - 1) / page * page; /* whole pages inside */
    uintptr_t hi = ((uintptr_t)from + bytes) / page * page;
    if (hi > lo) madvise((void *)lo, hi - lo, MADV_DONTNEED);
}

void model_release_pages(const Model *m, const float *from, uint64_t n_floats) {
    if (m->mapping == NULL || !m->mapping_is_file || n_floats == 0) return;
    drop_pages(from, (size_t)n_floats * sizeof(float));
}

void model_release_bytes(const Model *m, const void *from, size_t bytes) {
    bool readable = m->mapping_is_file && inside(from, bytes, m->mapping, m->mapping_bytes);
    for (int i = 0; !readable && i < m->n_files; i++) /* a copied file's pages are anonymous */
        readable = !m->files[i].copied && inside(from, bytes, m->files[i].addr, m->files[i].bytes);
    if (readable && bytes > 0) drop_pages(from, bytes);
}

void model_discard_bytes(const Model *m, const void *from, size_t bytes) {
    bool ours = inside(from, bytes, m->mapping, m->mapping_bytes);
    for (int i = 0; !ours && i < m->n_files; i++)
        ours = inside(from, bytes, m->files[i].addr, m->files[i].bytes);
    if (ours && bytes > 0) drop_pages(from, bytes);
}

void model_discard_pages(const Model *m, const float *from, uint64_t n_floats) {
    model_discard_bytes(m, from, (size_t)n_floats * sizeof(float));
}

bool model_memory_fits(uint64_t bytes, uint64_t available, const char *what, StepError *err) {
    if (available == 0 || bytes <= available) return true;
    return step_fail(err,
                     "%s: the weights need %llu bytes (%.2f GiB) as float32, and this process "
                     "can take %llu (%.2f GiB): too large for this machine",
                     what, (unsigned long long)bytes, (double)bytes / (1u << 30),
                     (unsigned long long)available, (double)available / (1u << 30));
}

uint64_t model_memory_available(void) {
    uint64_t available = 0;
    FILE *f = fopen("/proc/meminfo", "r");
    char line[256];
    unsigned long long kib;
    while (f != NULL && fgets(line, sizeof line, f) != NULL)
        if (sscanf(line, "MemAvailable: %llu kB", &kib) == 1) available = (uint64_t)kib * 1024u;
    if (f != NULL) fclose(f);
    struct rlimit lim;
    unsigned long long pages = 0;
    FILE *statm = fopen("/proc/self/statm", "r");
    bool sized = statm != NULL && fscanf(statm, "%llu", &pages) == 1;
    if (statm != NULL) fclose(statm);
    if (getrlimit(RLIMIT_AS, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY && sized) {
        uint64_t used = (uint64_t)pages * (uint64_t)sysconf(_SC_PAGESIZE);
        uint64_t left = lim.rlim_cur > used ? (uint64_t)lim.rlim_cur - used : 1;
        if (available == 0 || left < available) available = left;
    }
    return available;
}

bool model_alloc_storage(Model *m, const char *what, StepError *err) {
    size_t bytes = model_storage_floats(&m->config) * sizeof(float);
    if (!model_memory_fits(bytes, model_memory_available(), what, err)) return false;
    void *map = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (map == MAP_FAILED) return step_fail(err, "%s: out of memory for the weights", what);
    m->storage = map, m->mapping = map, m->mapping_bytes = bytes, m->mapping_is_file = false;
    if (!model_bind_weights(m)) {
        model_release_storage(m);
        return step_fail(err, "%s: out of memory for the weights", what);
    }
    return true;
}

float *model_weight_slot(Model *m, const float *view) {
    return m->storage + (view - m->storage);
}

void model_release_storage(Model *m) {
    if (m->mapping != NULL)
        munmap(m->mapping, m->mapping_bytes);
    else
        free(m->storage);
    m->storage = NULL, m->storage_floats = 0, m->mapping = NULL, m->mapping_bytes = 0;
}

void model_random_fill(float *v, uint64_t n, float scale, XorshiftRng *rng) {
    if (scale == 0) { /* a norm weight: ones, and no draws */
        for (uint64_t i = 0; i < n; i++) v[i] = 1.0f;
        return;
    }
    for (uint64_t i = 0; i < n; i++) v[i] = (2.0f * xorshift_f32(rng) - 1.0f) * scale;
}

int model_random_parts(const Model *m, RandomPart parts[MODEL_RANDOM_PARTS]) {
    /* in storage order, so that the stream of random numbers is the layout's */
    int n = 0;
    for (int i = 0; i < WEIGHT_PARTS; i++) {
        WeightPart p = weight_part(i);
        uint64_t floats = weight_part_floats(&m->config, p);
        if (floats > 0)
            parts[n++] = (RandomPart){part_start(m, i), floats, weight_part_scale(&m->config, p)};
    }
    return n;
}

bool model_init_random(Model *m, const Config *c, uint64_t seed, StepError *err) {
    memset(m, 0, sizeof *m);
    if (!config_validate(c, "make-model", err)) return false;
    if (seed == 0) return step_fail(err, "make-model: seed must not be 0");
    m->config = *c;
    if (!model_alloc_storage(m, "make-model", err)) return false;
    XorshiftRng rng = {seed};
    RandomPart parts[MODEL_RANDOM_PARTS];
    int n = model_random_parts(m, parts);
    for (int i = 0; i < n; i++)
        model_random_fill(model_weight_slot(m, parts[i].view), parts[i].n, parts[i].scale, &rng);
    if (!model_rope_init(m, err)) {
        model_free(m);
        return false;
    }
    return true;
}

bool model_reserve_layout(Model *m, const Config *c, StepError *err) {
    memset(m, 0, sizeof *m);
    if (!config_validate(c, "make-model", err)) return false;
    m->config = *c;
    size_t bytes = model_storage_floats(c) * sizeof(float);
    /* address space only: nothing may read or write it */
    void *map = mmap(NULL, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (map == MAP_FAILED) return step_fail(err, "make-model: cannot reserve the layout");
    m->storage = map, m->mapping = map, m->mapping_bytes = bytes, m->mapping_is_file = false;
    if (!model_bind_weights(m)) {
        model_free(m);
        return step_fail(err, "make-model: out of memory");
    }
    return true;
}

void model_choose_fast_kernels(Model *m) {
    m->fast_kernels = true;
    m->run.matmul = m->run.attention = m->run.mlp = KERNEL_FAST;
}

bool model_use_threads(Model *m, int n_threads, StepError *err) {
    thread_pool_free(m->pool);
    return thread_pool_create(&m->pool, n_threads > 0 ? n_threads : threads_online(), err);
}

/* The vectors-only layout: the table's vector kinds in its order, and
 * (embedding) a float32 embedding kept beside them; how many floats. */
static uint64_t vector_floats(const Config *c, bool embedding) {
    uint64_t n = 0;
    for (int i = 0; i < WEIGHT_PARTS; i++) {
        WeightPart p = weight_part(i);
        if (p.type == PART_VECTOR || (embedding && p.type == PART_EMBEDDING))
            n += weight_part_floats(c, p);
    }
    return n;
}

/* Point m->vectors (and, embedding: m->embedding) into storage laid out
 * as vector_floats counts it. */
static void bind_vectors(Model *m, float *storage, bool embedding) {
    memset(m->vectors, 0, sizeof m->vectors);
    const float *at = storage;
    for (int i = 0; i < WEIGHT_PARTS; i++) {
        WeightPart p = weight_part(i);
        if (p.type != PART_VECTOR && !(embedding && p.type == PART_EMBEDDING)) continue;
        bind_part(m, p, at);
        at += weight_part_floats(&m->config, p);
    }
    m->storage = storage;
    m->storage_floats = vector_floats(&m->config, embedding);
}

bool model_alloc_vectors(Model *m, StepError *err) {
    float *storage = calloc(vector_floats(&m->config, false), sizeof(float));
    if (storage == NULL || !alloc_matrix_arrays(m)) {
        free(storage);
        return step_fail(err, "out of memory");
    }
    bind_vectors(m, storage, false);
    return true;
}

WeightMemory model_weight_memory(const Model *m) {
    WeightMemory w = {0};
    for (int i = 0; i < m->n_files; i++)
        *(m->files[i].copied ? &w.anonymous : &w.mapped) += m->files[i].bytes;
    if (m->mapping != NULL && m->mapping_is_file)
        w.mapped += m->mapping_bytes;
    else if (m->mapping != NULL)
        w.anonymous += m->mapping_bytes;
    else if (m->storage != NULL) /* the vectors only (model_alloc_vectors, a .q8's norms) */
        w.anonymous += m->storage_floats * sizeof(float);
    for (int i = 0; i < model_matrix_count(m); i++) {
        const Matrix *x = model_matrix_at(m, i);
        w.packed += matrix_bytes(x);
        if (x->owned != NULL) w.anonymous += matrix_bytes(x);
    }
    w.packed += matrix_bytes(&m->classifier);
    if (m->classifier.owned != NULL) w.anonymous += matrix_bytes(&m->classifier);
    if (m->embedding.owned != NULL) w.anonymous += matrix_bytes(&m->embedding);
    return w;
}

bool model_compact_storage(Model *m, StepError *err) {
    const Config *c = &m->config;
    if (m->storage_floats <= vector_floats(c, true)) return true;   /* only vectors already */
    const float *embedding = model_matrix_floats(m, &m->embedding); /* kept as float32 */
    float *storage = malloc(vector_floats(c, embedding != NULL) * sizeof(float));
    if (storage == NULL) return step_fail(err, "out of memory for the weights");
    float *to = storage;
    for (int i = 0; i < WEIGHT_PARTS; i++) { /* in the order bind_vectors binds them */
        WeightPart p = weight_part(i);
        const float *from = p.type == PART_VECTOR      ? m->vectors[p.kind]
                            : p.type == PART_EMBEDDING ? embedding
                                                       : NULL;
        size_t n = (size_t)weight_part_floats(c, p);
        if (from != NULL) memcpy(to, from, n * sizeof(float)), to += n;
    }
    model_release_storage(m);
    bind_vectors(m, storage, embedding != NULL);
    return true;
}

/* Tables past this many floats (64 MiB) must not outweigh the model. */
#define ROPE_TABLES_FREE_FLOATS ((uint64_t)1 << 24)

bool model_rope_init(Model *m, StepError *err) {
    rope_tables_free(&m->rope); /* a loader that fails after it leaves nothing behind */
    const Config *c = &m->config;
    uint64_t floats = rope_tables_floats(c), params = config_param_count(c);
    /* seq_len is a number a file states, not a size it holds: tables for
     * more positions than are believable (more floats than the model has
     * weights, and over 64 MiB) are refused rather than built */
    if (floats > ROPE_TABLES_FREE_FLOATS && floats > params)
        return step_fail(err,
                         "RoPE tables for seq_len %d would take %llu MiB, more than the "
                         "model's %llu weights: the context length is not believable",
                         c->seq_len, (unsigned long long)(floats * sizeof(float) >> 20),
                         (unsigned long long)params);
    if (!model_memory_fits(floats * sizeof(float), model_memory_available(), "RoPE tables", err))
        return false;
    return rope_tables_init(&m->rope, c, err);
}

void model_free(Model *m) {
    model_release_storage(m);
    rope_tables_free(&m->rope);
    thread_pool_free(m->pool);
    for (int i = 0; i < model_matrix_count(m); i++) matrix_free(model_matrix_at(m, i));
    free(m->layers);
    free(m->experts);
    matrix_free(&m->classifier);
    matrix_free(&m->embedding);
    for (int i = 0; i < m->n_files; i++) {
        if (m->files[i].addr != NULL) munmap(m->files[i].addr, m->files[i].bytes);
        if (m->files[i].fd >= 0) close(m->files[i].fd);
    }
    memset(m, 0, sizeof *m);
}
