/* name_index.c: see name_index.h. */
#include "ref/util/name_index.h"

#include <stdlib.h>
#include <string.h>

bool name_index_alloc(NameIndex *ix, size_t n) {
    ix->items = calloc(n > 0 ? n : 1, sizeof *ix->items);
    ix->n = ix->items != NULL ? n : 0;
    return ix->items != NULL;
}

static int by_name(const void *a, const void *b) {
    return strcmp(((const NamedItem *)a)->name, ((const NamedItem *)b)->name);
}

const char *name_index_sort(NameIndex *ix) {
    qsort(ix->items, ix->n, sizeof *ix->items, by_name);
    for (size_t i = 1; i < ix->n; i++)
        if (strcmp(ix->items[i - 1].name, ix->items[i].name) == 0) return ix->items[i].name;
    return NULL;
}

void *name_index_find(const NameIndex *ix, const char *name) {
    size_t lo = 0, hi = ix->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int order = strcmp(ix->items[mid].name, name);
        if (order == 0) return ix->items[mid].item;
        if (order < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

void name_index_free(NameIndex *ix) {
    free(ix->items);
    *ix = (NameIndex){0};
}
