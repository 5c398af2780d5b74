/* added_trie.c: see added_trie.h. */
#include "ref/text/added_trie.h"

#include <stdlib.h>
#include <string.h>

int added_trie_compare(const char *a, size_t a_len, const char *b, size_t b_len) {
    int order = memcmp(a, b, a_len < b_len ? a_len : b_len);
    if (order != 0) return order;
    return (a_len > b_len) - (a_len < b_len);
}

/* Breadth first: the node array is its own queue. A node at depth d stands
 * for the sorted contents [lo[i], hi[i]) that share its d-byte prefix;
 * those of exactly d bytes come first (a prefix sorts first), and the rest
 * split by their byte d into runs, which become its children in order. */
bool added_trie_build(AddedTrie *trie, const char *const *contents, const size_t *lens, int n) {
    *trie = (AddedTrie){0};
    size_t cap = 1;
    for (int k = 0; k < n; k++) cap += lens[k];
    AddedTrieNode *nodes = malloc(cap * sizeof *nodes);
    int *lo = malloc(cap * sizeof *lo), *hi = malloc(cap * sizeof *hi);
    size_t *depth = malloc(cap * sizeof *depth);
    bool ok = nodes != NULL && lo != NULL && hi != NULL && depth != NULL;
    uint32_t count = 0;
    if (ok) {
        nodes[0] = (AddedTrieNode){.token = -1};
        lo[0] = 0, hi[0] = n, depth[0] = 0, count = 1;
    }
    for (uint32_t i = 0; ok && i < count; i++) {
        size_t d = depth[i];
        int k = lo[i];
        if (k < hi[i] && lens[k] == d) nodes[i].token = k;
        while (k < hi[i] && lens[k] == d) k++; /* the same content again: a lower id first */
        nodes[i].first_child = count;
        while (k < hi[i]) {
            unsigned char b = (unsigned char)contents[k][d];
            int end = k;
            while (end < hi[i] && (unsigned char)contents[end][d] == b) end++;
            nodes[count] = (AddedTrieNode){.token = -1, .byte = b};
            lo[count] = k, hi[count] = end, depth[count] = d + 1;
            count++, k = end;
        }
        nodes[i].n_children = count - nodes[i].first_child;
    }
    free(lo), free(hi), free(depth);
    if (!ok) {
        free(nodes);
        return false;
    }
    trie->nodes = nodes, trie->n_nodes = count;
    return true;
}

void added_trie_free(AddedTrie *trie) {
    free(trie->nodes);
    *trie = (AddedTrie){0};
}

/* The child of node reached by byte b, or NULL. */
static const AddedTrieNode *child(const AddedTrie *trie, const AddedTrieNode *node,
                                  unsigned char b) {
    uint32_t lo = node->first_child, hi = node->first_child + node->n_children;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (trie->nodes[mid].byte == b) return &trie->nodes[mid];
        if (trie->nodes[mid].byte < b)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

int added_trie_prefixes(const AddedTrie *trie, const char *s, size_t n, int32_t *out) {
    int found = 0;
    const AddedTrieNode *node = trie->n_nodes > 0 ? &trie->nodes[0] : NULL;
    for (size_t d = 0; node != NULL; d++) {
        if (node->token >= 0 && found < ADDED_TOKEN_MAX_BYTES) out[found++] = node->token;
        node = d < n ? child(trie, node, (unsigned char)s[d]) : NULL;
    }
    return found;
}
