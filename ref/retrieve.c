/* retrieve.c: see retrieve.h. */
#include "ref/retrieve.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

bool chunk_store_add(ChunkStore *s, const int *tokens, int n) {
    if (s->n == s->cap) {
        int cap = s->cap ? 2 * s->cap : 8;
        Chunk *grown = realloc(s->chunks, (size_t)cap * sizeof *grown);
        if (grown == NULL) return false;
        s->chunks = grown, s->cap = cap;
    }
    int *copy = malloc((size_t)(n > 0 ? n : 1) * sizeof *copy);
    if (copy == NULL) return false;
    memcpy(copy, tokens, (size_t)n * sizeof *copy);
    s->chunks[s->n++] = (Chunk){.tokens = copy, .n = n};
    return true;
}

void chunk_store_free(ChunkStore *s) {
    for (int i = 0; i < s->n; i++) free(s->chunks[i].tokens);
    free(s->chunks);
    *s = (ChunkStore){0};
}

static int count_in(const int *tokens, int n, int t) {
    int f = 0;
    for (int i = 0; i < n; i++) f += tokens[i] == t;
    return f;
}

/* A query term and where it first occurs. */
typedef struct {
    int token, at;
} Term;

static int by_token_then_place(const void *a, const void *b) {
    const Term *x = a, *y = b;
    if (x->token != y->token) return x->token < y->token ? -1 : 1;
    return (x->at > y->at) - (x->at < y->at);
}

static int by_place(const void *a, const void *b) {
    const Term *x = a, *y = b;
    return (x->at > y->at) - (x->at < y->at);
}

/* The query's distinct terms in the order of their first occurrence (a
 * sort, not a quadratic search: a query may be a long prompt). Returns how
 * many, or -1 when out of memory. */
static int distinct_terms(const int *query, int n_query, Term **out) {
    Term *t = malloc((size_t)(n_query > 0 ? n_query : 1) * sizeof *t);
    if (t == NULL) return -1;
    for (int i = 0; i < n_query; i++) t[i] = (Term){.token = query[i], .at = i};
    qsort(t, (size_t)n_query, sizeof *t, by_token_then_place);
    int n = 0;
    for (int i = 0; i < n_query; i++)
        if (i == 0 || t[i].token != t[i - 1].token) t[n++] = t[i];
    qsort(t, (size_t)n, sizeof *t, by_place);
    *out = t;
    return n;
}

void bm25_scores(const Chunk *docs, int n_docs, const int *query, int n_query, double k1, double b,
                 double *scores) {
    double total = 0;
    for (int i = 0; i < n_docs; i++) {
        scores[i] = 0;
        total += docs[i].n;
    }
    if (n_docs == 0) return;
    double avgdl = total / n_docs;
    Term *terms;
    int n_terms = distinct_terms(query, n_query, &terms);
    int *f = malloc((size_t)n_docs * sizeof *f);     /* f[i]: the term's count in docs[i] */
    for (int q = 0; f != NULL && q < n_terms; q++) { /* (out of memory: every score 0) */
        int holding = 0;
        for (int i = 0; i < n_docs; i++) {
            f[i] = count_in(docs[i].tokens, docs[i].n, terms[q].token);
            holding += f[i] > 0;
        }
        double idf = log(1.0 + (n_docs - holding + 0.5) / (holding + 0.5));
        for (int i = 0; i < n_docs; i++) {
            if (f[i] == 0) continue;
            double norm = avgdl > 0 ? k1 * (1.0 - b + b * docs[i].n / avgdl) : k1;
            scores[i] += idf * f[i] * (k1 + 1.0) / (f[i] + norm);
        }
    }
    free(f);
    if (n_terms >= 0) free(terms);
}

int retrieve_select(const double *scores, const Chunk *chunks, int n, int k, int budget,
                    bool *returned, int *order) {
    int picked = 0, used = 0;
    for (int i = 0; i < n; i++) returned[i] = false;
    while (picked < k) {
        int best = -1;
        for (int i = 0; i < n; i++) {
            if (returned[i] || !(scores[i] > 0) || used + chunks[i].n > budget) continue;
            if (best < 0 || scores[i] > scores[best]) best = i;
        }
        if (best < 0) break;
        returned[best] = true;
        used += chunks[best].n;
        order[picked++] = best;
    }
    return picked;
}
