/* model.c: the model's storage and weight views, its pages and memory, its
 * random initialisation and threads (llama2.c's checkpoint file:
 * formats/checkpoint.c). */

/* madvise(MADV_DONTNEED) is not in POSIX (posix_madvise's DONTNEED is only
 * advice, and glibc ignores it), nor is MAP_ANONYMOUS; _DEFAULT_SOURCE
 * declares both. */
#define _DEFAULT_SOURCE
#include "ref/model.h"

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

uint64_t model_storage_floats(const Config *c) {
    return config_param_count(c);
}

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
    const Weights *w = &m->weights;
    int layer_ones = c->n_layers * LAYER_MATRICES;
    MatrixPlace p = {.expert = -1};
    if (i < layer_ones) { /* a layer's own: its slot among the layers that have it */
        const float *all[LAYER_MATRICES] = {
            w->wq,  w->wk,  w->wv,   w->wo,   w->gate,        w->down,        w->up,
            w->q_a, w->q_b, w->kv_a, w->kv_b, w->shared_gate, w->shared_down, w->shared_up};
        p.layer = i / LAYER_MATRICES, p.kind = i % LAYER_MATRICES;
        /* the dense MLP's only in dense layers, the shared experts' only in MoE ones */
        if (!layer_has_kind(c, (MatrixKind)p.kind, p.layer)) return p; /* rows 0 */
        layer_matrix_shape(c, (MatrixKind)p.kind, &p.rows, &p.cols);
        size_t slot = (size_t)layer_kind_slot(c, (MatrixKind)p.kind, p.layer);
        if (all[p.kind] != NULL && p.rows > 0) p.floats = all[p.kind] + slot * p.rows * p.cols;
        return p;
    }
    const float *parts[EXPERT_MATRICES] = {w->expert_gate, w->expert_down, w->expert_up};
    int j = i - layer_ones, at = j / EXPERT_MATRICES; /* slot × n_experts + e */
    int slot = at / c->n_experts;
    p.kind = j % EXPERT_MATRICES, p.expert = at % c->n_experts;
    while (p.layer < c->n_layers &&
           !(config_layer_moe(c, p.layer) && config_moe_slot(c, p.layer) == slot))
        p.layer++;
    expert_matrix_shape(c, (ExpertKind)p.kind, &p.rows, &p.cols);
    if (parts[p.kind] != NULL) p.floats = parts[p.kind] + (size_t)at * p.rows * p.cols;
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

bool model_bind_matrices(Model *m) {
    const Config *c = &m->config;
    const Weights *w = &m->weights;
    if (!alloc_matrix_arrays(m)) return false;
    for (int i = 0; i < model_matrix_count(m); i++) {
        MatrixPlace p = model_matrix_place(m, i);
        if (p.expert >= 0 && p.floats == NULL) continue; /* experts held elsewhere */
        *model_matrix_at(m, i) = matrix_view(ELEM_F32, p.floats, p.rows, p.cols);
    }
    m->classifier = matrix_view(ELEM_F32, w->wcls, c->vocab_size, c->dim);
    m->embedding = matrix_view(ELEM_F32, w->token_embedding, c->vocab_size, c->dim);
    return true;
}

/* The architecture's extra vectors, in the one order both layouts keep
 * them (after llama2.c's, which has none): q/k/v biases, q/k norms, the
 * norms' biases, the projections' biases, the position embedding. Binds
 * them from p. */
static void bind_extras(const Config *c, Weights *w, const float *p, bool matrices) {
    uint64_t L = (uint64_t)c->n_layers, d = (uint64_t)c->dim, h = (uint64_t)c->hidden_dim;
    uint64_t qd = (uint64_t)config_q_dim(c), kv = (uint64_t)config_kv_dim(c);
    uint64_t hd = (uint64_t)config_head_dim(c);
    if (c->qkv_bias)
        w->bq = p, w->bk = p + L * qd, w->bv = p + L * (qd + kv), p += L * (qd + 2 * kv);
    if (c->qk_norm) w->q_norm = p, w->k_norm = p + L * hd, p += 2 * L * hd;
    if (c->norm == NORM_LAYER)
        w->att_norm_bias = p, w->ffn_norm_bias = p + L * d, w->final_norm_bias = p + 2 * L * d,
        p += (2 * L + 1) * d;
    if (c->proj_bias)
        w->bo = p, w->b_gate = p + L * d, w->b_down = p + L * (d + h), p += L * (2 * d + h);
    if (c->position == POS_LEARNED) w->pos_embedding = p, p += (uint64_t)c->seq_len * d;
    if (c->post_norms) w->post_att_norm = p, w->post_ffn_norm = p + L * d, p += 2 * L * d;
    if (c->q_lora_rank > 0) w->q_a_norm = p, p += L * (uint64_t)c->q_lora_rank;
    if (config_mla(c)) w->kv_a_norm = p, p += L * (uint64_t)c->kv_lora_rank;
    uint64_t M = L - (uint64_t)config_dense_layers(c), E = (uint64_t)c->n_experts;
    if (c->n_experts > 0) w->router = p, p += M * E * d;
    if (!matrices) return; /* the vectors' layout: the matrices are held elsewhere */
    if (c->n_experts > 0) {
        uint64_t eh = (uint64_t)c->expert_hidden_dim;
        w->expert_gate = p, p += M * E * eh * d;
        w->expert_down = p, p += M * E * d * eh;
        w->expert_up = p, p += M * E * eh * d;
    }
    /* MLA's matrices and the shared experts, each kind over the layers that hold it */
    const float **views[] = {&w->q_a,         &w->q_b,         &w->kv_a,     &w->kv_b,
                             &w->shared_gate, &w->shared_down, &w->shared_up};
    for (int k = MAT_Q_A; k <= MAT_SHARED_UP; k++) {
        int rows, cols;
        layer_matrix_shape(c, (MatrixKind)k, &rows, &cols);
        if (rows == 0) continue;
        *views[k - MAT_Q_A] = p;
        p += (uint64_t)layer_kind_layers(c, (MatrixKind)k) * (uint64_t)rows * (uint64_t)cols;
    }
}

/* How many floats bind_extras binds. */
static uint64_t extras_floats(const Config *c, bool matrices) {
    uint64_t L = (uint64_t)c->n_layers, d = (uint64_t)c->dim, h = (uint64_t)c->hidden_dim;
    uint64_t n = 0;
    if (config_mla(c)) n += L * (uint64_t)(c->q_lora_rank + c->kv_lora_rank); /* their norms */
    for (int k = MAT_Q_A; matrices && k <= MAT_SHARED_UP; k++) {
        int rows, cols;
        layer_matrix_shape(c, (MatrixKind)k, &rows, &cols);
        n += (uint64_t)layer_kind_layers(c, (MatrixKind)k) * (uint64_t)rows * (uint64_t)cols;
    }
    if (c->qkv_bias) n += L * (uint64_t)(config_q_dim(c) + 2 * config_kv_dim(c));
    if (c->qk_norm) n += 2 * L * (uint64_t)config_head_dim(c);
    if (c->norm == NORM_LAYER) n += (2 * L + 1) * d;
    if (c->proj_bias) n += L * (2 * d + h);
    if (c->position == POS_LEARNED) n += (uint64_t)c->seq_len * d;
    if (c->post_norms) n += 2 * L * d;
    if (c->n_experts > 0) { /* the router, then the experts' matrices, after the extras */
        uint64_t M = L - (uint64_t)config_dense_layers(c), E = (uint64_t)c->n_experts;
        n += M * E * d * (1 + (matrices ? 3 * (uint64_t)c->expert_hidden_dim : 0));
    }
    return n;
}

/* The first extra vector of w, where the block of them starts (NULL: none). */
static const float *first_extra(const Weights *w) {
    const float *in_order[] = {w->bq,       w->q_norm,        w->att_norm_bias,
                               w->bo,       w->pos_embedding, w->post_att_norm,
                               w->q_a_norm, w->kv_a_norm,     w->router};
    for (size_t i = 0; i < sizeof in_order / sizeof in_order[0]; i++)
        if (in_order[i] != NULL) return in_order[i];
    return NULL;
}

bool model_bind_weights(Model *m) {
    const Config *c = &m->config;
    uint64_t dim = (uint64_t)c->dim, hidden = (uint64_t)c->hidden_dim;
    uint64_t layers = (uint64_t)c->n_layers;
    const float *p = m->storage;
    Weights *w = &m->weights;
    *w = (Weights){0};
    w->token_embedding = p, p += (uint64_t)c->vocab_size * dim;
    w->rms_att = p, p += layers * dim;
    const float **attn[4] = {&w->wq, &w->wk, &w->wv, &w->wo}; /* MLA's may have rows 0 */
    for (int k = MAT_WQ; k <= MAT_WO; k++) {
        int rows, cols;
        layer_matrix_shape(c, (MatrixKind)k, &rows, &cols);
        *attn[k] = p, p += layers * (uint64_t)rows * (uint64_t)cols;
    }
    w->rms_ffn = p, p += layers * dim;
    uint64_t dense = (uint64_t)config_dense_layers(c); /* the layers with a dense MLP */
    w->gate = p, p += dense * hidden * dim;
    w->down = p, p += dense * dim * hidden;
    if (c->mlp != MLP_GELU) w->up = p, p += dense * hidden * dim; /* GELU has none */
    w->rms_final = p, p += dim;
    w->wcls = c->shared_classifier ? w->token_embedding : p;
    if (!c->shared_classifier) p += (uint64_t)c->vocab_size * dim;
    bind_extras(c, w, p, true); /* the architecture's extras, after llama2.c's layout */
    return model_bind_matrices(m);
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

/* Whether [from, from + bytes) lies inside [base, base + size). */
static bool inside(const void *from, size_t bytes, const void *base, size_t size) {
    uintptr_t a = (uintptr_t)from, b = (uintptr_t)base;
    return base != NULL && a >= b && a - b <= size && bytes <= size - (a - b);
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
    m->storage = NULL, m->mapping = NULL, m->mapping_bytes = 0;
}

void model_random_fill(float *v, uint64_t n, float scale, XorshiftRng *rng) {
    if (scale == 0) { /* a norm weight: ones, and no draws */
        for (uint64_t i = 0; i < n; i++) v[i] = 1.0f;
        return;
    }
    for (uint64_t i = 0; i < n; i++) v[i] = (2.0f * xorshift_f32(rng) - 1.0f) * scale;
}

int model_random_parts(const Model *m, RandomPart parts[MODEL_RANDOM_PARTS]) {
    const Config *c = &m->config;
    const Weights *w = &m->weights;
    uint64_t dim = (uint64_t)c->dim, hidden = (uint64_t)c->hidden_dim, L = (uint64_t)c->n_layers;
    uint64_t kv = (uint64_t)config_kv_dim(c), vocab = (uint64_t)c->vocab_size;
    uint64_t qd = (uint64_t)config_q_dim(c), hd = (uint64_t)config_head_dim(c);
    float in_dim = 1.0f / sqrtf((float)c->dim), in_hidden = 1.0f / sqrtf((float)c->hidden_dim);
    float in_q = 1.0f / sqrtf((float)qd);
    uint64_t dense = (uint64_t)config_dense_layers(c), moe = L - dense;
    uint64_t E = (uint64_t)c->n_experts, eh = (uint64_t)c->expert_hidden_dim;
    float in_expert = c->n_experts > 0 ? 1.0f / sqrtf((float)c->expert_hidden_dim) : 0;
    /* In storage order, so that the stream of random numbers is the layout's. */
    uint64_t floats[LAYER_MATRICES]; /* each kind's, over the layers that hold it */
    float in_scale[LAYER_MATRICES];  /* 1/sqrt(its fan-in) */
    for (int k = 0; k < LAYER_MATRICES; k++) {
        int rows, cols;
        layer_matrix_shape(c, (MatrixKind)k, &rows, &cols);
        floats[k] = (uint64_t)layer_kind_layers(c, (MatrixKind)k) * (uint64_t)rows * (uint64_t)cols;
        in_scale[k] = rows > 0 ? 1.0f / sqrtf((float)cols) : 0;
    }
    const RandomPart all[MODEL_RANDOM_PARTS] = {
        {w->token_embedding, vocab * dim, in_dim},
        {w->rms_att, L * dim, 0},
        {w->wq, floats[MAT_WQ], in_dim},
        {w->wk, floats[MAT_WK], in_dim},
        {w->wv, floats[MAT_WV], in_dim},
        {w->wo, floats[MAT_WO], in_scale[MAT_WO]},
        {w->rms_ffn, L * dim, 0},
        {w->gate, dense * hidden * dim, in_dim},
        {w->down, dense * dim * hidden, in_hidden},
        {w->up, dense * hidden * dim, in_dim},
        {w->rms_final, dim, 0},
        {c->shared_classifier ? NULL : w->wcls, vocab * dim, in_dim},
        /* the architecture's extras: biases as small as a weight row's
         * contribution, q/k norms ones (as a trained model starts) */
        {w->bq, L * qd, in_dim},
        {w->bk, L * kv, in_dim},
        {w->bv, L * kv, in_dim},
        {w->q_norm, L * hd, 0},
        {w->k_norm, L * hd, 0},
        /* GPT-2's: norm biases, projection biases and positions as small
         * as a weight row's contribution (a bias of 0 would hide its use) */
        {w->att_norm_bias, L * dim, in_dim},
        {w->ffn_norm_bias, L * dim, in_dim},
        {w->final_norm_bias, dim, in_dim},
        {w->bo, L * dim, in_q},
        {w->b_gate, L * hidden, in_dim},
        {w->b_down, L * dim, in_hidden},
        {w->pos_embedding, (uint64_t)c->seq_len * dim, in_dim},
        {w->post_att_norm, L * dim, 0}, /* Gemma's: ones, as the other norms */
        {w->post_ffn_norm, L * dim, 0},
        /* a mixture of experts: the router and each expert as a dense MLP's */
        {w->router, moe * E * dim, in_dim},
        {w->expert_gate, moe * E * eh * dim, in_dim},
        {w->expert_down, moe * E * dim * eh, in_expert},
        {w->expert_up, moe * E * eh * dim, in_dim},
        /* multi-head latent attention: its norms ones, its matrices as the others;
         * then the shared experts */
        {w->q_a_norm, L * (uint64_t)c->q_lora_rank, 0},
        {w->kv_a_norm, L * (uint64_t)c->kv_lora_rank, 0},
        {w->q_a, floats[MAT_Q_A], in_scale[MAT_Q_A]},
        {w->q_b, floats[MAT_Q_B], in_scale[MAT_Q_B]},
        {w->kv_a, floats[MAT_KV_A], in_scale[MAT_KV_A]},
        {w->kv_b, floats[MAT_KV_B], in_scale[MAT_KV_B]},
        {w->shared_gate, floats[MAT_SHARED_GATE], in_scale[MAT_SHARED_GATE]},
        {w->shared_down, floats[MAT_SHARED_DOWN], in_scale[MAT_SHARED_DOWN]},
        {w->shared_up, floats[MAT_SHARED_UP], in_scale[MAT_SHARED_UP]}};
    int n = 0;
    for (int i = 0; i < MODEL_RANDOM_PARTS; i++)
        if (all[i].view != NULL) parts[n++] = all[i];
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

bool model_use_threads(Model *m, int n_threads, StepError *err) {
    thread_pool_free(m->pool);
    return thread_pool_create(&m->pool, n_threads > 0 ? n_threads : threads_online(), err);
}

/* The float32 vectors a model keeps whatever holds its matrices: norms
 * [2 n_layers + 1, dim], then (embedding) an untied float embedding, then
 * the biases and q/k norms; how many floats, and the views into storage. */
static uint64_t vector_floats(const Config *c, bool embedding) {
    uint64_t L = (uint64_t)c->n_layers, d = (uint64_t)c->dim;
    return (2 * L + 1) * d + (embedding ? (uint64_t)c->vocab_size * d : 0) +
           extras_floats(c, false);
}

static Weights bind_vectors(const Config *c, float *storage, bool embedding) {
    size_t L = (size_t)c->n_layers, d = (size_t)c->dim;
    Weights w = {.rms_att = storage, .rms_ffn = storage + L * d, .rms_final = storage + 2 * L * d};
    float *p = storage + (2 * L + 1) * d;
    if (embedding) w.token_embedding = p, p += (size_t)c->vocab_size * d;
    bind_extras(c, &w, p, false);
    return w;
}

bool model_alloc_vectors(Model *m, StepError *err) {
    m->storage = calloc(vector_floats(&m->config, false), sizeof(float));
    if (m->storage == NULL || !alloc_matrix_arrays(m)) return step_fail(err, "out of memory");
    m->weights = bind_vectors(&m->config, m->storage, false);
    return true;
}

WeightMemory model_weight_memory(const Model *m) {
    WeightMemory w = {0};
    const Config *c = &m->config;
    for (int i = 0; i < m->n_files; i++)
        *(m->files[i].copied ? &w.anonymous : &w.mapped) += m->files[i].bytes;
    if (m->mapping != NULL && m->mapping_is_file)
        w.mapped += m->mapping_bytes;
    else if (m->mapping != NULL)
        w.anonymous += m->mapping_bytes;
    else if (m->storage != NULL) /* the vectors only (model_alloc_vectors, a .q8's norms) */
        w.anonymous += vector_floats(c, m->weights.token_embedding != NULL) * sizeof(float);
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
    const Weights *w = &m->weights;
    if (w->wq == NULL) return true; /* only vectors already */
    bool float_embedding = m->embedding.layout == MATRIX_ROWS && m->embedding.elem == ELEM_F32 &&
                           m->embedding.data == w->token_embedding && w->token_embedding != NULL;
    float *storage = malloc(vector_floats(c, float_embedding) * sizeof(float));
    if (storage == NULL) return step_fail(err, "out of memory for the weights");
    Weights kept = bind_vectors(c, storage, float_embedding);
    size_t L = (size_t)c->n_layers, d = (size_t)c->dim;
    memcpy(storage, w->rms_att, L * d * sizeof(float));
    memcpy(storage + L * d, w->rms_ffn, L * d * sizeof(float));
    memcpy(storage + 2 * L * d, w->rms_final, d * sizeof(float));
    if (float_embedding)
        memcpy(storage + (kept.token_embedding - storage), w->token_embedding,
               (size_t)c->vocab_size * d * sizeof(float));
    /* the extras lie together, in one order, in both layouts */
    const float *first = first_extra(w), *to = first_extra(&kept);
    uint64_t extra = vector_floats(c, false) - (2 * L + 1) * d;
    if (extra > 0) memcpy(storage + (to - storage), first, (size_t)extra * sizeof(float));
    model_release_storage(m);
    m->storage = storage;
    m->weights = kept;
    if (float_embedding) m->embedding.data = kept.token_embedding;
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
