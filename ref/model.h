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

/* Float32 views into Model.storage. Matrices are row-major [out, in]: row i
 * holds the weights that produce output i, so out[i] = dot(row i, input).
 * The matrix views are NULL when the matrices are held otherwise (packed,
 * int8, or as a file stores them): forward reads Model.layers. */
typedef struct {
    const float *token_embedding; /* [vocab_size, dim] */
    const float *rms_att;         /* [n_layers, dim] */
    const float *wq;              /* [n_layers, q_dim, dim] */
    const float *wk;              /* [n_layers, kv_dim, dim] */
    const float *wv;              /* [n_layers, kv_dim, dim] */
    const float *wo;              /* [n_layers, dim, q_dim] */
    const float *rms_ffn;         /* [n_layers, dim] */
    const float *gate;            /* [n_layers, hidden_dim, dim] (GPT-2: c_fc, ffn_up to GGUF) */
    const float *down;            /* [n_layers, dim, hidden_dim] */
    const float *up;              /* [n_layers, hidden_dim, dim] (none in GPT-2's MLP) */
    const float *rms_final;       /* [dim] */
    const float *wcls;            /* [vocab_size, dim]; == token_embedding when tied */
    /* only when the architecture has them (config.h), else NULL */
    const float *bq, *bk, *bv;    /* qkv_bias: [n_layers, q_dim], [n_layers, kv_dim] twice */
    const float *q_norm, *k_norm; /* qk_norm: [n_layers, head_dim] each */
    const float *att_norm_bias, *ffn_norm_bias; /* NORM_LAYER: [n_layers, dim] each */
    const float *final_norm_bias;               /* NORM_LAYER: [dim] */
    const float *bo, *b_gate, *b_down; /* proj_bias: [n_layers, dim], [n_layers, hidden_dim],
                                          [n_layers, dim] */
    const float *pos_embedding;        /* POS_LEARNED: [seq_len, dim] */
    const float *post_att_norm, *post_ffn_norm; /* post_norms: [n_layers, dim] each */
    /* a mixture of experts, its M MoE layers (config_moe_slot); gate, down
     * and up then hold the dense layers' only, by config_dense_slot */
    const float *router;      /* [M, n_experts, dim] */
    const float *expert_gate; /* [M, n_experts, expert_hidden_dim, dim] gate */
    const float *expert_down; /* [M, n_experts, dim, expert_hidden_dim] down */
    const float *expert_up;   /* [M, n_experts, expert_hidden_dim, dim] up */
    /* multi-head latent attention (config_mla; else NULL), S = n_shared_experts
     * x expert_hidden_dim: */
    const float *q_a_norm;  /* [n_layers, q_lora_rank] (with q_lora_rank) */
    const float *kv_a_norm; /* [n_layers, kv_lora_rank] */
    const float *q_a;       /* [n_layers, q_lora_rank, dim] */
    const float *q_b;       /* [n_layers, n_heads x head_dim, q_lora_rank] */
    const float *kv_a;      /* [n_layers, kv_lora_rank + qk_rope_head_dim, dim] */
    const float *kv_b;      /* [n_layers, n_heads x (head_dim - qk_rope_head_dim + v_head_dim),
                               kv_lora_rank] */
    const float *shared_gate, *shared_down, *shared_up; /* [M, S, dim], [M, dim, S], [M, S, dim] */
} Weights;

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
    Weights weights;
    float *storage;       /* every float weight; owned (freed by model_free) or, when
                             mapping is set, a view into the mapped checkpoint */
    void *mapping;        /* the checkpoint file mapped copy-on-write, or anonymous
                             memory a loader filled (mapping_is_file false), or NULL */
    size_t mapping_bytes; /* its length, for munmap */
    bool mapping_is_file; /* released pages read back from the file (else as zeros) */
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
                                     model_pack_q8) makes it true, and the block then takes
                                     the fast kernels (linear.c, kernels/fast_layers.h) */
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

/* Keep only the float32 vectors in m->storage (the norms, an untied float
 * embedding, biases and q/k norms) once every matrix is held elsewhere
 * (packed, say): the matrix views become NULL. */
bool model_compact_storage(Model *m, StepError *err);

/* Allocate m->storage for the float32 vectors only (norms, biases, q/k
 * norms, a mixture's routers; zeroed) and m->layers (and m->experts), for
 * a loader that leaves the matrices where the file stores them:
 * m->weights' matrix views stay NULL. */
bool model_alloc_vectors(Model *m, StepError *err);

/* Point m->layers, m->experts, m->classifier and m->embedding at the
 * float32 views of m->weights (allocating m->layers and m->experts when
 * NULL). */
bool model_bind_matrices(Model *m);

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

/* Writable pointer to a weight view inside m->storage (the views are const
 * for the maths; a loader fills them through this). */
float *model_weight_slot(Model *m, const float *view);

/* Free (or unmap) m->storage and set it to NULL; the views are not touched. */
void model_release_storage(Model *m);

/* Point m->weights into m->storage, laid out as in a checkpoint body (without
 * the RoPE tables), and m's matrices at them (model_bind_matrices). Used by
 * every loader once storage is allocated; false when out of memory. */
bool model_bind_weights(Model *m);

/* Number of floats model_bind_weights expects in storage. */
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
#define MODEL_RANDOM_PARTS 39

/* m's parts (its views bound), in the stream's order; returns how many. */
int model_random_parts(const Model *m, RandomPart parts[MODEL_RANDOM_PARTS]);

/* The next n values of the stream for a part of this scale, into v. */
void model_random_fill(float *v, uint64_t n, float scale, XorshiftRng *rng);

/* m's weight views bound over reserved address space that holds no memory
 * (and may not be read): the layout of a model of shape c for a writer
 * that makes each tensor as it writes it (hf_model_save_random). */
bool model_reserve_layout(Model *m, const Config *c, StepError *err);

/* Run m's fast kernels on n_threads threads (1: the caller's only; 0: one
 * per online processor). The plain kernels always run on one. Results are
 * the same bits for any n. */
bool model_use_threads(Model *m, int n_threads, StepError *err);

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
 * ExpertKind for an expert's); its expert (-1: the layer's own); its shape
 * (rows 0: a kind the layer has none of); and its float32 view in
 * m->weights, or NULL where the weights are not held as float32. */
typedef struct {
    int layer, kind, expert, rows, cols;
    const float *floats;
} MatrixPlace;
MatrixPlace model_matrix_place(const Model *m, int i);

/* Build m's RoPE tables for every position below seq_len, once its
 * config is final: the last step of every loader (and of
 * model_init_random). False (err says why) when out of memory. */
bool model_rope_init(Model *m, StepError *err);

void model_free(Model *m);

#endif
