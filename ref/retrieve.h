/* retrieve.h: the retrieve context policy's store. Tokens that leave a
 * full window are kept as chunks; at each shift the chunks are ranked
 * against the user's message with BM25 over token ids (a token id is a
 * tokenizer piece: the "words" are the tokenizer's), and the best come back
 * into the window as documents. docs/context-window.md works a
 * three-chunk example by hand. */
#ifndef STEPWISE_RETRIEVE_H
#define STEPWISE_RETRIEVE_H

#include <stdbool.h>

/* Okapi BM25's usual constants (Robertson and Zaragoza; Lucene's defaults). */
#define BM25_K1 1.2
#define BM25_B  0.75

typedef struct {
    int *tokens; /* [n] owned */
    int n;
} Chunk;

typedef struct {
    Chunk *chunks; /* [n] in the order stored */
    int n, cap;
} ChunkStore;

/* Append a copy of tokens[0..n); false when out of memory. */
bool chunk_store_add(ChunkStore *s, const int *tokens, int n);
void chunk_store_free(ChunkStore *s);

/* scores[i] = BM25 of docs[i] against the distinct terms t of the query:
 *   Σ_t idf(t) · f(t,D) · (k1 + 1) / (f(t,D) + k1 · (1 − b + b · |D| / avgdl))
 *   idf(t) = ln(1 + (N − n(t) + 0.5) / (n(t) + 0.5))
 * f(t,D): occurrences of t in D; n(t): documents holding t; N documents of
 * average length avgdl. In double precision, terms summed in the order of
 * their first occurrence in the query. */
void bm25_scores(const Chunk *docs, int n_docs, const int *query, int n_query, double k1, double b,
                 double *scores);

/* Which chunks come back: the k best (a higher score first, the older of
 * two equal ones), scoring above 0, taken while their tokens fit in
 * budget. Sets returned[i], writes their indices best first into order and
 * returns how many. */
int retrieve_select(const double *scores, const Chunk *chunks, int n, int k, int budget,
                    bool *returned, int *order);

#endif
