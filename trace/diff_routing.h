/* diff_routing.h: where two runs of a mixture of experts first route a
 * token differently. A routing divergence comes before the numbers that
 * follow from it: once one token runs another expert, its MLP output and
 * everything after it differ for that reason, not a numerical one. */
#ifndef STEPWISE_DIFF_ROUTING_H
#define STEPWISE_DIFF_ROUTING_H

#include <stdbool.h>

#include "trace/diff_run.h"

#define DIFF_ROUTE_SHOWN 8 /* experts a report names, at most */

typedef struct {
    int compared;              /* (layer, pos) pairs both runs route */
    bool diverged;             /* some pair chose other experts (as sets) */
    int pos, layer;            /* the first such: the lowest position, then layer */
    int k;                     /* experts each side chose there */
    int ref[DIFF_ROUTE_SHOWN]; /* the reference's, most probable first */
    int cand[DIFF_ROUTE_SHOWN];
} DiffRouting;

/* Compare the routing events of ref and cand at the positions before limit;
 * false when out of memory. */
bool diff_routing(const DiffRun *ref, const DiffRun *cand, int limit, DiffRouting *out);

#endif
