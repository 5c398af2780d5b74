/* name_index.h: items found by name with a binary search, after one sort,
 * which also finds a name given twice. For the readers of files that name
 * their tensors (GGUF, safetensors): checking each name against every other
 * was quadratic in the count a file can claim. */
#ifndef STEPWISE_NAME_INDEX_H
#define STEPWISE_NAME_INDEX_H

#include <stdbool.h>
#include <stddef.h>

typedef struct {
    const char *name; /* the item's own (not copied) */
    void *item;
} NamedItem;

typedef struct {
    NamedItem *items; /* [n], owned, sorted by name once built */
    size_t n;
} NameIndex;

/* Room for n items, for the caller to fill in items[0..n); false when out
 * of memory. */
bool name_index_alloc(NameIndex *ix, size_t n);
/* Sort the items by name. Returns a name that two items share, or NULL when
 * every name is unique. */
const char *name_index_sort(NameIndex *ix);
/* The item called name, or NULL. */
void *name_index_find(const NameIndex *ix, const char *name);
void name_index_free(NameIndex *ix);

#endif
