/* test_retrieve.c: the retrieve policy's BM25 ranking against the
 * three-chunk example of docs/context-window.md, computed by hand there:
 * query "cat sat cat", chunks "cat cat the", "sat the the the", "sat mat".
 * Token ids stand for the pieces: cat 7, sat 9, the 3, mat 5. */
#include <criterion/criterion.h>
#include <math.h>

#include "ref/retrieve.h"

enum { CAT = 7, SAT = 9, THE = 3, MAT = 5 };

/* N = 3 chunks of 3, 4 and 2 tokens: avgdl = 3. "cat" is in one chunk:
 * idf = ln(1 + (3 - 1 + 0.5) / (1 + 0.5)) = ln(8/3); "sat" in two:
 * idf = ln(1 + (3 - 2 + 0.5) / (2 + 0.5)) = ln(1.6). The length norms
 * k1 (1 - b + b |D| / avgdl) are 1.2, 1.5 and 0.9. "cat" counts once
 * although the query has it twice. */
Test(retrieve, bm25_matches_the_hand_computed_example) {
    int d1[] = {CAT, CAT, THE}, d2[] = {SAT, THE, THE, THE}, d3[] = {SAT, MAT};
    Chunk docs[] = {{d1, 3}, {d2, 4}, {d3, 2}};
    int query[] = {CAT, SAT, CAT};
    double scores[3];
    bm25_scores(docs, 3, query, 3, BM25_K1, BM25_B, scores);
    double want[] = {
        log(8.0 / 3.0) * 2 * 2.2 / (2 + 1.2), /* 1.348640... */
        log(1.6) * 2.2 / (1 + 1.5),           /* 0.413603... */
        log(1.6) * 2.2 / (1 + 0.9),           /* 0.544215... */
    };
    for (int i = 0; i < 3; i++)
        cr_expect(fabs(scores[i] - want[i]) < 1e-12, "chunk %d: %.15f, by hand %.15f", i + 1,
                  scores[i], want[i]);
    /* the printed figures in the docs */
    cr_expect(fabs(scores[0] - 1.348640) < 5e-7 && fabs(scores[1] - 0.413603) < 5e-7 &&
              fabs(scores[2] - 0.544215) < 5e-7);

    /* k = 2: the first and the third (the shorter "sat" chunk beats the longer) */
    bool returned[3];
    int order[3];
    cr_expect_eq(retrieve_select(scores, docs, 3, 2, 100, returned, order), 2);
    cr_expect(order[0] == 0 && order[1] == 2 && returned[0] && !returned[1] && returned[2]);
    /* a budget of 4 tokens: chunk 1 (3 tokens) fits, then only chunk 3 (2) would not */
    cr_expect_eq(retrieve_select(scores, docs, 3, 3, 4, returned, order), 1);
    cr_expect_eq(order[0], 0);
    /* a chunk with no query term scores 0 and never comes back */
    int none[] = {MAT, THE};
    Chunk other[] = {{none, 2}};
    bm25_scores(other, 1, query, 3, BM25_K1, BM25_B, scores);
    cr_expect_eq(scores[0], 0.0);
    cr_expect_eq(retrieve_select(scores, other, 1, 1, 10, returned, order), 0);
}

Test(retrieve, the_store_copies_and_frees) {
    ChunkStore s = {0};
    int tokens[] = {1, 2, 3};
    for (int i = 0; i < 20; i++) cr_assert(chunk_store_add(&s, tokens, 1 + i % 3));
    tokens[0] = 99; /* the store holds copies */
    cr_expect_eq(s.n, 20);
    cr_expect_eq(s.chunks[19].n, 2);
    cr_expect_eq(s.chunks[19].tokens[0], 1);
    chunk_store_free(&s);
    cr_expect_eq(s.n, 0);
}
