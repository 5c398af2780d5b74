/* kernels/rope_rows.h: the rows of a rotated projection in one order or
 * the other: Meta's interleaved pairs (2i, 2i+1) or Hugging Face's halves
 * (i, i + head_dim/2). A matrix read in place in the other order
 * (matrix.h's interleave_head_dim) and the readers and writers of files
 * move rows by it. */
#ifndef STEPWISE_KERNELS_ROPE_ROWS_H
#define STEPWISE_KERNELS_ROPE_ROWS_H

#include <stdint.h>

/* Which rows of a rotated projection (q, k, their biases and norms) go
 * where, head by head: as held, or moved between interleaved pairs
 * (2i, 2i+1) and halves (i, i + head_dim/2). */
typedef enum { ROWS_AS_HELD, ROWS_TO_HALVES, ROWS_TO_INTERLEAVED } RowOrder;

/* The row of the held tensor that row r of the reordered one comes from:
 * halves row j·half + i is interleaved row 2i + j. The GGUF and Hugging
 * Face writers, the Hugging Face loader and diff's reader of other
 * engines' q/k all move rows by it. */
uint64_t rope_source_row(uint64_t r, int head_dim, RowOrder order);

#endif
