/* work.h: counting what a forward pass does, so that the cost of a KV cache
 * (or of not having one) shows as numbers. */
#ifndef STEPWISE_WORK_H
#define STEPWISE_WORK_H

#include <stdint.h>

/* The work of one forward pass, counted where it is done. Bytes are
 * logical: each weight a pass uses counts once (an engine streaming the
 * weights reads each once per pass, for all its tokens). */
typedef struct {
    uint64_t macs;             /* multiply-adds: matmuls and attention */
    uint64_t weight_bytes;     /* weights used: matrices, norms, embedding rows */
    uint64_t kv_bytes_read;    /* cache rows attention reads: per query token and layer,
                                  (pos + 1) × kv_dim × 2 × 4 */
    uint64_t kv_bytes_written; /* cache rows written: T × n_layers × kv_dim × 2 × 4 */
} WorkCount;

/* A matmul of T rows through a [OC, C] weight of `bytes`: T·C·OC
 * multiply-adds, and the weight read once. */
static inline void work_add_matmul(WorkCount *w, int T, int C, int OC, uint64_t bytes) {
    w->macs += (uint64_t)T * (uint64_t)C * (uint64_t)OC;
    w->weight_bytes += bytes;
}

/* a += b, field by field. */
static inline void work_add(WorkCount *a, const WorkCount *b) {
    a->macs += b->macs;
    a->weight_bytes += b->weight_bytes;
    a->kv_bytes_read += b->kv_bytes_read;
    a->kv_bytes_written += b->kv_bytes_written;
}

#endif
