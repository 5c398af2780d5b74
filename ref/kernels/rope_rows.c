/* kernels/rope_rows.c: see rope_rows.h. */
#include "ref/kernels/rope_rows.h"

uint64_t rope_source_row(uint64_t r, int head_dim, RowOrder order) {
    if (order == ROWS_AS_HELD) return r;
    uint64_t hd = (uint64_t)head_dim, head = r / hd, k = r % hd, half = hd / 2;
    if (order == ROWS_TO_HALVES) return head * hd + 2 * (k % half) + k / half;
    return head * hd + (k % 2) * half + k / 2;
}
