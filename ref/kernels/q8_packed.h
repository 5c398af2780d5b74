/* q8_packed.h: int8 matrices in the fast kernels' layout, and their
 * matmul.
 *
 * A MATRIX_Q8_PACKED matrix holds blocks of Q8_ROWS output rows (matrix.h).
 * In the plain form each block's codes are [cols, Q8_ROWS]: one input's
 * codes for all its rows together, so that a vector holds one input of
 * many rows. In quads (q8_quads) they are [cols / 4, Q8_ROWS, 4], each
 * code plus 128 as an unsigned byte: one 32-bit lane holds four inputs of
 * one row, the operand AVX-512 VNNI's dot product of unsigned and signed
 * bytes takes. Either way each group's sum of code products is an exact
 * integer, so every form and order gives the same integers; the float
 * steps after it (× the scales, + the running sum) keep the plain
 * kernel's order: the same bits (docs/performance.md). */
#ifndef STEPWISE_Q8_PACKED_H
#define STEPWISE_Q8_PACKED_H

#include <stdbool.h>
#include <stdint.h>

#include "ref/kernels/matrix.h"
#include "ref/kernels/pack.h"

/* Whether this processor runs the quads' kernel (AVX-512 VNNI), and
 * whether a shape allows quads (whole quads in its rows and its groups). */
bool q8_vnni_available(void);
bool q8_quads_fit(int cols, int group);

/* p = the row-major int8 src (MATRIX_Q8_ROWS) packed (owned), in quads
 * when `quads` and the processor and the shape allow them. */
bool matrix_pack_q8(Matrix *p, const Matrix *src, bool quads);

/* The same from MATRIX_Q8_ROWS or from a GGUF file's Q8_0 or Q4_0 blocks
 * (MATRIX_BLOCKS: their codes and scales as stored, groups of 32), telling
 * release (may be NULL) after each run of source rows, so that a mapped
 * file's pages go as they are packed: the two never both hold the whole
 * matrix. */
bool matrix_pack_q8_releasing(Matrix *p, const Matrix *src, bool quads, PackReleaseRows release,
                              void *ctx);

/* sums[g] = the sum of group g's codes of one quantized row codes [n]
 * (the xsum a matrix in quads needs). */
void q8_group_sums(const int8_t *codes, int n, int group, int32_t *sums);

/* out[t][o] for the output rows o of blocks b0..b1-1 of the packed int8 w
 * [OC, C] and float x [T, C]: per group, Σ x·q in float then × scale; with
 * qx/sx given (activations quantized with the same grouping, [T, C] and
 * [T, groups]), per group Σ qx·q in int32 then × sx·sw. xsum [T, groups]:
 * each group's sum of the activation codes (what quads' +128 adds, taken
 * off again); needed with qx for a matrix in quads. Bitwise quant.h's
 * dot_f32_q8 and dot_q8. */
void matmul_q8_packed_blocks(float *out, const float *x, const int8_t *qx, const float *sx,
                             const int32_t *xsum, const Matrix *w, int T, int b0, int b1);

#endif
