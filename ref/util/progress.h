/* progress.h: how long work says how far it has got, to whoever watches
 * (the command line's progress line: ref/cli/progress.h). The engine never
 * draws anything; it reports counts through a sink it is given, or none. */
#ifndef STEPWISE_PROGRESS_H
#define STEPWISE_PROGRESS_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    void *ctx;
    /* done of total units of `what` ("packing the weights: matrices", say) */
    void (*update)(void *ctx, const char *what, uint64_t done, uint64_t total);
} ProgressSink;

/* Report to p, if there is one. */
static inline void progress_report(const ProgressSink *p, const char *what, uint64_t done,
                                   uint64_t total) {
    if (p != NULL && p->update != NULL) p->update(p->ctx, what, done, total);
}

#endif
