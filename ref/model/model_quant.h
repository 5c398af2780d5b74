/* model_quant.h: a model's weights in int8: every matrix (Q/K/V/O, the
 * feed-forward, the classifier) and the token embedding int8 with one
 * scale per group; the norm weights stay float32. Its file, .q8, is
 * formats/q8_file.h's. */
#ifndef STEPWISE_MODEL_QUANT_H
#define STEPWISE_MODEL_QUANT_H

#include "ref/matrix.h"
#include "ref/model/model.h"
#include "ref/kernels/quant.h"

/* Replace m's matrices (every layer's, the classifier, the embedding) by
 * int8 ones with groups of `group` (MATRIX_Q8_ROWS, owned), quantized from
 * whatever they held, and set m->weight_group. Float32 storage stays, for
 * the trace's before/after (its pages released where they can be read
 * again). */
bool model_quantize(Model *m, int group, StepError *err);

/* A GGUF file whose every matrix (the embedding and classifier too) is
 * Q8_0 or Q4_0 blocks already is int8 in groups of 32: set m->weight_group
 * to 32 and keep the blocks as they are, for model_pack_q8 to pack straight
 * from the mapped file, a run of rows at a time, giving its pages back as
 * it goes (no row-major copy between: the file's bytes are held about
 * once). False, and m untouched, for any other model. */
bool model_adopt_q8_blocks(Model *m);

/* Put m's int8 matrices in the layout the fast kernel reads (the row-major
 * ones go; a tied embedding is then looked up in the packed classifier):
 * for a run that quantizes its activations (int8_activations), in quads
 * for VNNI dot products where the processor has them (q8_packed.h).
 * Their sources are MATRIX_Q8_ROWS or, after model_adopt_q8_blocks, a
 * file's blocks. Nothing to do for a float model or a packed one. */
bool model_pack_q8(Model *m, bool int8_activations, StepError *err);

/* Bytes of a model whose matrices are int8 with this group: every tensor,
 * the matrices' codes and scales (a mixture's experts' too) and every
 * float32 vector (norms, biases, q/k norms, MLA's norms, a learned
 * position table, a mixture's routers). */
uint64_t quant_weight_bytes(const Config *c, int group);

/* The longest row of any of a model's matrices: one row's scratch. */
int quant_widest_row(const Config *c);

#endif
