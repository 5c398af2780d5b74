/* test_tokenizer.c: encoding against sentencepiece, merges traced by hand,
 * and run.c's decoding rules. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "tests/helpers.h"

/* data/tokenizer/tok512_expected.json was written by sentencepiece itself
 * (tests/sentencepiece_check.py write) from tok512.model. */
Test(tokenizer, tok512_matches_sentencepiece_on_every_expected_case) {
    const char *bin = model_file("tok512.bin");
    if (bin == NULL) cr_skip_test("tok512.bin not found");
    Tokenizer tok;
    StepError err;
    cr_assert(tokenizer_load_bin(&tok, bin, 512, &err), "%s", err.message);
    cr_expect(tok.collapse_spaces, "tok512 has no multi-space piece");
    cJSON *doc = read_json_file("data/tokenizer/tok512_expected.json");
    cr_assert_not_null(doc);
    const cJSON *cases = cJSON_GetObjectItem(doc, "cases"), *c;
    cr_assert_gt(cJSON_GetArraySize(cases), 200);
    cJSON_ArrayForEach(c, cases) {
        const char *text = cJSON_GetObjectItem(c, "text")->valuestring;
        const cJSON *want = cJSON_GetObjectItem(c, "ids");
        int *ids, n;
        cr_assert(tokenizer_encode(&tok, text, false, &ids, &n, &err), "%s", err.message);
        cr_expect_eq(n, cJSON_GetArraySize(want), "'%s': %d ids, sentencepiece %d", text, n,
                     cJSON_GetArraySize(want));
        for (int i = 0; i < n && i < cJSON_GetArraySize(want); i++)
            cr_expect_eq(ids[i], cJSON_GetArrayItem(want, i)->valueint, "'%s' id %d", text, i);
        free(ids);
    }
    cJSON_Delete(doc);
    tokenizer_free(&tok);
}

/* " cat sat" (dummy prefix added) starts as the characters
 *   ' ' c a t ' ' s a t
 * The best-scoring pairs merge first, leftmost on ties:
 *   "at" (-1) twice:   ' ' c at ' ' s at
 *   " c" (-2):         ' c' at ' ' s at
 *   " s" (-3):         ' c' at ' s' at
 *   " cat" (-4):       ' cat' ' s' at
 *   " sat" (-5):       ' cat' ' sat'        → [BOS, 11, 12] */
Test(tokenizer, tiny_vocabulary_merges_as_traced_by_hand) {
    Model m;
    Tokenizer tok;
    load_tiny(&m, &tok);
    int *ids, n;
    StepError err;
    cr_assert(tokenizer_encode(&tok, "cat   sat ", true, &ids, &n, &err));
    cr_assert_eq(n, 3);
    cr_expect_eq(ids[0], 1);
    cr_expect_eq(ids[1], 11);
    cr_expect_eq(ids[2], 12);
    free(ids);
    /* "tac": ' ' t a c, no pair of which is a piece; no byte pieces here, so
     * 't' a 'c' stay single characters: [ ' ', t, a, c ] = [3, 7, 4, 5] */
    cr_assert(tokenizer_encode(&tok, "tac", false, &ids, &n, &err));
    cr_assert_eq(n, 4);
    int want[] = {3, 7, 4, 5};
    for (int i = 0; i < 4; i++) cr_expect_eq(ids[i], want[i]);
    free(ids);
    /* "z" is not in the vocabulary and there are no byte pieces: <unk> */
    cr_assert(tokenizer_encode(&tok, "z", false, &ids, &n, &err));
    cr_assert_eq(n, 2);
    cr_expect_eq(ids[0], 3);
    cr_expect_eq(ids[1], TOKEN_UNK);
    free(ids);
    model_free(&m);
    tokenizer_free(&tok);
}

/* Merges go by score, not by id: a vocabulary whose scores are not in id
 * order ("ab" has the lower id, "bc" the better score). "abc" with the
 * dummy prefix is ' ' a b c; the pairs that are pieces: " a" (-9), "ab"
 * (-5), "bc" (-1). The best score first: "bc" → ' ' a bc; then " a" →
 * ' a' bc; "abc" is no piece, so [9, 8]. Merging the lowest id first
 * would give ' ' ab c = [3, 7, 6]. In tok512 the score is minus the id,
 * so the two rules cannot be told apart there. */
Test(tokenizer, merges_follow_scores_not_ids) {
    const char *pieces[] = {"<unk>", "<s>", "</s>", " ", "a", "b", "c", "ab", "bc", " a"};
    const float scores[] = {0, 0, 0, 0, 0, 0, 0, -5, -1, -9};
    Tokenizer tok;
    StepError err;
    cr_assert(tokenizer_init(&tok, 10, pieces, scores, &err), "%s", err.message);
    int *ids, n;
    cr_assert(tokenizer_encode(&tok, "abc", false, &ids, &n, &err), "%s", err.message);
    cr_assert_eq(n, 2, "%d ids", n);
    cr_expect_eq(ids[0], 9);
    cr_expect_eq(ids[1], 8);
    free(ids);
    tokenizer_free(&tok);
}

Test(tokenizer, empty_prompt_is_bos_alone) {
    Model m;
    Tokenizer tok;
    load_tiny(&m, &tok);
    int *ids, n;
    StepError err;
    cr_assert(tokenizer_encode(&tok, "   ", true, &ids, &n, &err));
    cr_assert_eq(n, 1);
    cr_expect_eq(ids[0], TOKEN_BOS);
    free(ids);
    model_free(&m);
    tokenizer_free(&tok);
}

/* run.c's decoding: the piece after BOS loses its leading (dummy-prefix)
 * space; <0x0A> is the byte 0x0A. tok512: 403 = " Once", 13 = <0x0A>. */
Test(tokenizer, decode_strips_space_after_bos_and_maps_byte_pieces) {
    const char *bin = model_file("tok512.bin");
    if (bin == NULL) cr_skip_test("tok512.bin not found");
    Tokenizer tok;
    StepError err;
    cr_assert(tokenizer_load_bin(&tok, bin, 512, &err), "%s", err.message);
    char buf[8];
    int len;
    const char *p = tokenizer_decode(&tok, TOKEN_BOS, 403, buf, &len);
    cr_expect_eq(len, 4);
    cr_expect_eq(strncmp(p, "Once", 4), 0);
    p = tokenizer_decode(&tok, 403, 403, buf, &len);
    cr_expect_eq(strncmp(p, " Once", 5), 0);
    p = tokenizer_decode(&tok, 403, 13, buf, &len);
    cr_expect_eq(len, 1);
    cr_expect_eq(p[0], '\n');
    int ids[] = {1, 403, 407, 13, 2};
    char *text = tokenizer_decode_tokens(&tok, ids, 5, -1);
    cr_expect_str_eq(text, "Once upon\n");
    free(text);
    tokenizer_free(&tok);
}

Test(tokenizer, llama2_vocabulary_keeps_runs_of_spaces) {
    const char *bin = model_file("tokenizer.bin");
    if (bin == NULL) cr_skip_test("tokenizer.bin not found");
    Tokenizer tok;
    StepError err;
    cr_assert(tokenizer_load_bin(&tok, bin, 32000, &err), "%s", err.message);
    cr_expect(!tok.collapse_spaces, "Llama 2's vocabulary has a piece of two spaces");
    tokenizer_free(&tok);
}

Test(tokenizer, vocabulary_size_mismatch_is_an_error) {
    const char *bin = model_file("tok512.bin");
    if (bin == NULL) cr_skip_test("tok512.bin not found");
    Tokenizer tok;
    StepError err;
    cr_assert(!tokenizer_load_bin(&tok, bin, 32000, &err));
    cr_expect(strstr(err.message, "has 512 tokens but the model's vocabulary has 32000") != NULL,
              "%s", err.message);
    cr_assert(!tokenizer_load_bin(&tok, bin, 500, &err));
    cr_expect(strstr(err.message, "has 512 tokens") != NULL, "%s", err.message);
}
