/* quant_model.h: a model's weights in int8, and stepwise's quantized file.
 *
 * Every matrix (Q/K/V/O, the feed-forward, the classifier) and the token
 * embedding are int8 with one scale per group; the norm weights stay
 * float32. The file (.q8) is: "SWQ8", uint32 version 1, the seven int32 of a
 * llama2.c header (vocab_size negative when the classifier is untied), int32
 * group size; then the tensors in checkpoint order, each matrix as its int8
 * codes [rows × cols] followed by its float32 scales [rows × groups per row],
 * each norm as float32. docs/quantization.md shows it byte by byte. */
#ifndef STEPWISE_QUANT_MODEL_H
#define STEPWISE_QUANT_MODEL_H

#include "matrix.h"
#include "model.h"
#include "quant.h"

typedef struct QuantWeights {
    int group;
    int n_layers;
    /* the fast layout, one per layer (and the classifier), built by
     * model_pack_q8 (--kernels fast); all NULL for the plain kernel */
    PackedQ8 *pwq, *pwk, *pwv, *pwo, *pw1, *pw2, *pw3;
    PackedQ8 pcls;
    QuantMatrix token_embedding; /* [vocab, dim] */
    QuantMatrix wq, wk, wv, wo;  /* [n_layers × out, in] */
    QuantMatrix w1, w2, w3;
    QuantMatrix wcls; /* [vocab, dim]; empty when tied (the embedding serves) */
} QuantWeights;

/* Blocks of 32 output rows in w: the units threads share out. */
int q8_blocks(const PackedQ8 *w);

/* out[t][o] for the output rows o of blocks b0..b1-1 of the packed int8 w
 * [OC, C] and float x [T, C]: per group, Σ x·q in float then × scale; with
 * qx/sx given (activations quantized with the same grouping, [T, C] and
 * [T, groups]), per group Σ qx·q in int32 then × sx·sw. Bitwise quant.h's
 * dot_f32_q8 and dot_q8. */
void matmul_q8_packed_blocks(float *out, const float *x, const int8_t *qx, const float *sx,
                             const PackedQ8 *w, int T, int b0, int b1);

/* The classifier: wcls, or the embedding when tied. */
const QuantMatrix *quant_classifier(const QuantWeights *q);

/* Quantize m's float matrices with groups of `group` and attach them as
 * m->quant (the float weights stay, for the trace's before/after). */
bool model_quantize(Model *m, int group, StepError *err);

/* Put m's int8 matrices also in the layout the fast kernel reads (the
 * row-major ones stay: the embedding is looked up there, and .q8 files are
 * written from them). Nothing to do for a float model or a packed one. */
bool model_pack_q8(Model *m, StepError *err);

/* Point m's matrices (model.h's layers, classifier, embedding) at its int8
 * ones, packed when they are; with m->quant NULL, at its float32 views
 * (compare-quant switches between the two). False when out of memory. */
bool model_bind_quant(Model *m);

/* Bytes of a model whose matrices are int8 with this group: codes, scales
 * and the float32 norms. */
uint64_t quant_weight_bytes(const Config *c, int group);

bool model_save_q8(const Model *m, const char *path, StepError *err);

/* Load a .q8 file: m->quant holds the matrices and m->storage the norms
 * only (m->weights' matrix views are NULL). The header is checked as
 * strictly as a checkpoint's, and against the file size. */
bool model_load_q8(Model *m, const char *path, StepError *err);

/* Whether path starts with the .q8 magic. */
bool model_file_is_q8(const char *path);

void quant_weights_free(QuantWeights *q);

#endif
