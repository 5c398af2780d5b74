/* model.h: a transformer's weights, loaded read-only and shared by every
 * request that runs on them. */
#ifndef STEPWISE_MODEL_H
#define STEPWISE_MODEL_H

#include "ref/config.h"
#include "ref/util/error.h"
#include "ref/matrix.h"
#include "ref/rope_tables.h"
#include "ref/util/progress.h"
#include "ref/util/rng.h"
#include "ref/model/weight_layout.h"
#include "ref/run/run_options.h"

struct ThreadPool; /* threads.h */

/* How a loader keeps the weights: as the file stores them (mapped, widened
 * as read; the default), or widened to float32 at load (--weights f32). The
 * logits are the same bits either way. */
typedef enum { WEIGHTS_STORED, WEIGHTS_F32 } WeightsMode;

/* How multi-head latent attention (config_mla; mla.h) reads its cache of
 * latents: each head's keys and values rebuilt from them at every pass
 * (the paper's definition, the default), or kv_b absorbed into the query
 * and the output (what fast engines run): the same maths, the sums in
 * another order, so within rounding of each other. */
typedef enum { MLA_REBUILT, MLA_ABSORBED } MlaForm;

/* A file mapped read-only that matrices point into (owned by the model),
 * and what it was when mapped: an open descriptor of it, its size and its
 * modification time, so that a run can tell whether it changed underneath
 * (model_files_unchanged). */
typedef struct {
    void *addr;
    size_t bytes;
    int fd; /* -1: none */
    int64_t size;
    int64_t mtime_ns;
    bool copied; /* its pages were read into anonymous memory (model_copy_files): no page is
                    read from the file again, nor released (it would come back as zeros) */
} MappedFile;

#define MODEL_MAX_FILES 64

typedef struct {
    Config config;
    float *storage;          /* every float weight (weight_layout.h's parts, in its order), or
                                the vectors only; owned (freed by model_free) or, when
                                mapping is set, a view into the mapped checkpoint */
    uint64_t storage_floats; /* how many floats storage holds */
    uint64_t classifier_gap; /* floats laid out before an untied classifier: a
                                llama2.c checkpoint's two RoPE tables (else 0) */
    const float *vectors[VECTOR_KINDS]; /* by VectorKind, [count, width] each, into storage
                                           (NULL: the architecture has none): model_vector */
    void *mapping;                      /* the checkpoint file mapped copy-on-write, or anonymous
                                           memory a loader filled (mapping_is_file false), or NULL */
    size_t mapping_bytes;               /* its length, for munmap */
    bool mapping_is_file;               /* released pages read back from the file (else as zeros) */
    /* What forward reads: every layer's matrices, the classifier and the
     * embedding (looked up a row at a time; tied: the classifier's data),
     * each however it is held (matrix.h). */
    LayerMatrices *layers; /* [n_layers] (owned) */
    Matrix *experts;       /* a mixture's: [M MoE layers, n_experts, EXPERT_MATRICES] (owned;
                              NULL when dense): model_expert */
    Matrix classifier;     /* [vocab_size, dim] */
    Matrix embedding;      /* [vocab_size, dim] */
    MappedFile files[MODEL_MAX_FILES]; /* the weight files the matrices point into */
    int n_files;
    int weight_group;             /* the matrices are int8 with this many values per scale
                                     (model_quant.h), or 0: they hold floats */
    bool q8_0_file;               /* every layer's matrices came from GGUF Q8_0 blocks: int8
                                     in groups of 32, however they are held now */
    bool fast_kernels;            /* the kernels, chosen once: false (the plain loops) as
                                     loaded; packing the weights (model_prepare: model_pack,
                                     model_pack_q8) makes it true, and chooses the run's
                                     fast kernels (run below) */
    RunOptions run;               /* how this run computes the model, chosen once (packing:
                                     the kernels; model_prepare: the cache's type and the
                                     rounding choices); the block reads it, never the Config */
    RopeTables rope;              /* RoPE's cos and sin for every position (model_rope_init) */
    MlaForm mla_form;             /* MLA's form (model_prepare; MLA_REBUILT as loaded) */
    struct ThreadPool *pool;      /* the threads the fast kernels split work over (owned;
                                     NULL: one thread): model_use_threads */
    const ProgressSink *progress; /* told how far packing, quantizing and long forward passes
                                     have got (borrowed; NULL: nobody) */
    /* What was loaded, for inspect and the trace: the format, the
     * architecture and the files' dtypes ("" when nobody said). */
    char source[384];
} Model;

/* The checkpoint is mapped (mmap, private), not read: a weight costs memory
 * only once it is touched, and model_pack releases each matrix's pages as it
 * repacks them, so the resident peak stays near one copy of the weights.
 * Pages of a mapped model that nobody wrote are read again from the file if
 * touched after a release: the values never change. For any other model
 * this does nothing. */
void model_release_pages(const Model *m, const float *from, uint64_t n_floats);

/* The same for any weights' bytes: pages wholly inside that can be read
 * back unchanged (a mapped checkpoint's, a mapped weight file's) are
 * dropped; anonymous memory is kept. */
void model_release_bytes(const Model *m, const void *from, size_t bytes);

/* The same for pages that will never be read again (a matrix just packed),
 * for anonymous storage too: it gives the memory back at once. Only pages
 * of m's storage mapping or of its mapped files are touched. */
void model_discard_pages(const Model *m, const float *from, uint64_t n_floats);
void model_discard_bytes(const Model *m, const void *from, size_t bytes);

/* Record a mapped file in m->files (the model then unmaps it), with the
 * identity model_files_unchanged compares; false when m has no room. */
bool model_add_file(Model *m, void *addr, size_t bytes, const char *path);

/* Whether every mapped file is as it was when loaded (same size, same
 * modification time): if one was written while the model ran, its
 * matrices may have read old and new weights, and err says which file. */
bool model_files_unchanged(const Model *m, StepError *err);

/* Read every mapped weight file's pages into the process's own memory, in
 * place (the views stay valid): afterwards nothing reads the files, so one
 * truncated or replaced meanwhile cannot raise SIGBUS. False (err says why)
 * when a file changed since it was loaded. model_files.c. */
bool model_copy_files(Model *m, StepError *err);

/* Where a loaded model's weights live, in bytes. */
typedef struct {
    uint64_t mapped;    /* file pages the weights are read from: shared with the page cache,
                           evictable (read again from the file when needed) */
    uint64_t anonymous; /* the process's own: widened float32, the vectors, owned copies
                           (int8 matrices among them) */
    uint64_t packed;    /* what the fast kernels' packed copies of the matrices take, in
                           their element types (anonymous; the mapped pages go as they are
                           packed); the plain kernels read the matrices where they are */
} WeightMemory;

WeightMemory model_weight_memory(const Model *m);

/* Keep only the float32 vectors in m->storage (and a float32 embedding)
 * once every matrix is held elsewhere (packed, say). */
bool model_compact_storage(Model *m, StepError *err);

/* Allocate m->storage for the float32 vectors only (zeroed) and m->layers
 * (and m->experts), for a loader that leaves the matrices where the file
 * stores them: the matrices stay empty until the loader sets them. */
bool model_alloc_vectors(Model *m, StepError *err);

/* Row i of vector kind k [width] (a layer's, a MoE layer's router, a
 * position's; 0 for the final norm and its bias), or NULL when m's
 * architecture has none. */
const float *model_vector(const Model *m, VectorKind k, int i);

/* The same row, writable, for a loader filling it. */
float *model_vector_slot(Model *m, VectorKind k, int i);

/* x's float32 values when it is a row-major view into m->storage (a model
 * whose weights were laid out there: model_bind_weights), else NULL (held
 * as a file stores it, packed, int8). Writers read matrices through this. */
const float *model_matrix_floats(const Model *m, const Matrix *x);

/* The same values, writable, for a loader filling them. */
float *model_matrix_slot(Model *m, const Matrix *x);

/* The i-th matrix's (model_matrix_at; i == model_matrix_count(m): the
 * embedding, one more: the classifier) float32 values where m->storage
 * laid out in full keeps them, whatever holds the matrix now (int8
 * quantized from them, say); NULL when storage holds only the vectors. */
const float *model_matrix_original(const Model *m, int i);

/* Whether every weight of m is float32 in m->storage, laid out in full (a
 * model as loaded to float32, not packed, int8 or as a file stores it):
 * what the writers read. */
bool model_in_storage(const Model *m);

/* Allocate m->storage for m->config (model_storage_floats, zeroed) and bind
 * the views into it, after checking that it fits in memory
 * (model_memory_fits). Anonymous memory owned as a mapping: model_pack can then
 * give each matrix's pages back as it packs them (model_discard_pages), and
 * the fast kernels' peak stays near one copy of the weights. `what` names the
 * model in the error. */
bool model_alloc_storage(Model *m, const char *what, StepError *err);

/* Whether `bytes` of weights fit in `available` bytes of memory (0: not
 * known, so they may); if not, err says both, for a model that would
 * otherwise be killed halfway through its load. */
bool model_memory_fits(uint64_t bytes, uint64_t available, const char *what, StepError *err);

/* The memory this process may still take: the kernel's MemAvailable, or
 * less under an address-space limit (RLIMIT_AS); 0 when neither is known. */
uint64_t model_memory_available(void);

/* Writable pointer to a weight inside m->storage (the views are const for
 * the maths; a loader fills them through this). */
float *model_weight_slot(Model *m, const float *view);

/* Free (or unmap) m->storage and set it to NULL; the views into it are not
 * touched. */
void model_release_storage(Model *m);

/* Point m's matrices and vectors into m->storage, laid out as
 * weight_layout.h's table says (a llama2.c checkpoint's body without its
 * RoPE tables, then the extras). Used by every loader once storage is
 * allocated; false when out of memory. */
bool model_bind_weights(Model *m);

/* Number of floats model_bind_weights expects in storage: the table's
 * parts summed (config_param_count's closed form counts the same). */
uint64_t model_storage_floats(const Config *c);

/* A model of shape c with seeded random weights: norm weights 1, every
 * matrix (the embedding too) uniform in ±1/sqrt(fan_in), from llama2.c's
 * xorshift* generator. The same seed gives the same weights, bit for bit. */
bool model_init_random(Model *m, const Config *c, uint64_t seed, StepError *err);

/* One run of that random stream, in storage order: n values at view,
 * uniform in ±scale (scale 0: a norm's ones, which take no draws). */
typedef struct {
    const float *view;
    uint64_t n;
    float scale;
} RandomPart;
#define MODEL_RANDOM_PARTS WEIGHT_PARTS

/* m's parts that hold values (weight_layout.h's, m->storage laid out in
 * full), in the stream's order; returns how many. */
int model_random_parts(const Model *m, RandomPart parts[MODEL_RANDOM_PARTS]);

/* The next n values of the stream for a part of this scale, into v. */
void model_random_fill(float *v, uint64_t n, float scale, XorshiftRng *rng);

/* m's weights bound over reserved address space that holds no memory
 * (and may not be read): the layout of a model of shape c for a writer
 * that makes each tensor as it writes it (hf_model_save_random). */
bool model_reserve_layout(Model *m, const Config *c, StepError *err);

/* Run m's fast kernels on n_threads threads (1: the caller's only; 0: one
 * per online processor). The plain kernels always run on one. Results are
 * the same bits for any n. */
bool model_use_threads(Model *m, int n_threads, StepError *err);

/* The weights are packed: the run's matmuls, attention and MLP take the
 * fast kernels from here on (m->fast_kernels, m->run). */
void model_choose_fast_kernels(Model *m);

/* Expert e's matrix of kind k in MoE layer l (config_layer_moe). */
Matrix *model_expert(const Model *m, int l, int e, ExpertKind k);

/* Every matrix of m's layers, then of its experts, in the one order that
 * packing, quantizing, checking and freeing walk them: [n_layers,
 * LAYER_MATRICES] then [M, n_experts, EXPERT_MATRICES]. A kind the
 * architecture has none of has rows 0. model_matrix_name names the i-th
 * for messages ("blocks.2.attn.wq", "blocks.1.moe.expert.3.down"). */
int model_matrix_count(const Model *m);
Matrix *model_matrix_at(const Model *m, int i);
void model_matrix_name(const Model *m, int i, char *buf, size_t size);

/* Where the i-th matrix lies: its layer; its kind (MatrixKind, or
 * ExpertKind for an expert's); its expert (-1: the layer's own); and its
 * shape (rows 0: a kind the layer has none of). */
typedef struct {
    int layer, kind, expert, rows, cols;
} MatrixPlace;
MatrixPlace model_matrix_place(const Model *m, int i);

/* Build m's RoPE tables for every position below seq_len, once its
 * config is final: the last step of every loader (and of
 * model_init_random). False (err says why) when out of memory. */
bool model_rope_init(Model *m, StepError *err);

void model_free(Model *m);

#endif
