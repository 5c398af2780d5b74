/* diff_routing.c: see diff_routing.h. */
#include "trace/diff_routing.h"

#include <stdlib.h>
#include <string.h>

/* (pos, layer) as one sortable key. */
static long long route_key(const DiffRun *r, int i) {
    return (long long)r->route_pos[i] * 1000000LL + r->route_layer[i];
}

/* A candidate's routing event, by its key. */
typedef struct {
    long long key;
    int index;
} Keyed;

static int by_key(const void *a, const void *b) {
    long long ka = ((const Keyed *)a)->key, kb = ((const Keyed *)b)->key;
    return ka < kb ? -1 : ka > kb;
}

/* Whether two lists of k experts hold the same experts, in any order. */
static bool same_set(const int *a, const int *b, int k) {
    for (int i = 0; i < k; i++) {
        bool found = false;
        for (int j = 0; j < k && !found; j++) found = a[i] == b[j];
        if (!found) return false;
    }
    return true;
}

bool diff_routing(const DiffRun *ref, const DiffRun *cand, int limit, DiffRouting *out) {
    memset(out, 0, sizeof *out);
    out->pos = out->layer = -1;
    if (ref->n_routes == 0 || cand->n_routes == 0 || ref->route_k != cand->route_k) return true;
    Keyed *order = malloc((size_t)cand->n_routes * sizeof *order);
    if (order == NULL) return false;
    for (int i = 0; i < cand->n_routes; i++) order[i] = (Keyed){route_key(cand, i), i};
    qsort(order, (size_t)cand->n_routes, sizeof *order, by_key);
    int k = ref->route_k;
    long long first = -1;
    for (int i = 0; i < ref->n_routes; i++) {
        if (ref->route_pos[i] >= limit) continue;
        long long key = route_key(ref, i);
        int lo = 0, hi = cand->n_routes - 1, at = -1;
        while (lo <= hi) { /* the candidate's routing of the same (pos, layer) */
            int mid = (lo + hi) / 2;
            long long km = order[mid].key;
            if (km == key) {
                at = order[mid].index;
                break;
            }
            if (km < key)
                lo = mid + 1;
            else
                hi = mid - 1;
        }
        if (at < 0) continue;
        out->compared++;
        const int *a = ref->route_experts + (size_t)i * k,
                  *b = cand->route_experts + (size_t)at * k;
        if (same_set(a, b, k) || (first >= 0 && key >= first)) continue;
        first = key;
        out->diverged = true;
        out->pos = ref->route_pos[i], out->layer = ref->route_layer[i], out->k = k;
        for (int j = 0; j < k && j < DIFF_ROUTE_SHOWN; j++) out->ref[j] = a[j], out->cand[j] = b[j];
    }
    free(order);
    return true;
}
