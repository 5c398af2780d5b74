/* added_trie.h: a tokenizer.json's added tokens as a trie, so that finding
 * the added token at each position of a text costs at most the length of
 * the longest added token, whatever their number. (A scan of every token
 * that shares a first byte cost text length × number of tokens: 150,000
 * added tokens over 100,000 characters took minutes.) */
#ifndef STEPWISE_ADDED_TRIE_H
#define STEPWISE_ADDED_TRIE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The longest added token stepwise takes, in bytes: real ones are under a
 * hundred; the bound keeps the scan linear in the text. */
#define ADDED_TOKEN_MAX_BYTES 1024

/* A node is a prefix of some token. Its children are contiguous in the
 * node array, in ascending byte order (a binary search finds one). */
typedef struct {
    uint32_t first_child, n_children;
    int32_t token;      /* the first token (in sorted order) that is exactly this prefix, or -1 */
    unsigned char byte; /* the byte that leads here from the parent */
} AddedTrieNode;

typedef struct {
    AddedTrieNode *nodes; /* [n_nodes], owned; nodes[0] is the empty prefix */
    uint32_t n_nodes;
} AddedTrie;

/* Build the trie of n contents (lens[k] bytes each, each 1 to
 * ADDED_TOKEN_MAX_BYTES), which must be sorted as added_trie_compare sorts
 * them. False when out of memory. */
bool added_trie_build(AddedTrie *trie, const char *const *contents, const size_t *lens, int n);
void added_trie_free(AddedTrie *trie);

/* The order the contents must be in: byte by byte, a prefix first. */
int added_trie_compare(const char *a, size_t a_len, const char *b, size_t b_len);

/* Every token that is a prefix of s[0..n), shortest first: their indices
 * (as added_trie_build numbered them) into out[0..return), at most
 * ADDED_TOKEN_MAX_BYTES of them (out has room for that many). */
int added_trie_prefixes(const AddedTrie *trie, const char *s, size_t n, int32_t *out);

#endif
