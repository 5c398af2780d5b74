/* hf_tokenizer.c: see hf_tokenizer.h. */
#include "ref/text/hf_tokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdlib.h>
#include <string.h>

const MergeRule *hf_merge_find(const HfTokenizer *hf, int left, int right) {
    int lo = 0, hi = hf->n_merges;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        const MergeRule *m = &hf->merges[mid];
        if (m->left < left || (m->left == left && m->right < right))
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < hf->n_merges && hf->merges[lo].left == left && hf->merges[lo].right == right)
        return &hf->merges[lo];
    return NULL;
}

void hf_tokenizer_free(HfTokenizer *hf) {
    if (hf == NULL) return;
    for (int i = 0; hf->vocab != NULL && i < hf->n_ids; i++) free(hf->vocab[i]);
    for (int i = 0; hf->bytes != NULL && i < hf->n_ids; i++) free(hf->bytes[i]);
    for (int i = 0; i < hf->n_added; i++) free(hf->added[i].content);
    for (int i = 0; i < hf->n_norm; i++) free(hf->norm[i].from), free(hf->norm[i].to);
    for (int i = 0; i < hf->n_pre; i++) {
        if (hf->pre[i].regex != NULL) pcre2_code_free(hf->pre[i].regex);
        free(hf->pre[i].replacement);
        free(hf->pre[i].pattern);
    }
    if (hf->match_context != NULL) pcre2_match_context_free(hf->match_context);
    free(hf->vocab), free(hf->bytes), free(hf->byte_lens), free(hf->merges), free(hf->added);
    free(hf->norm), free(hf->pre), free(hf->chat_template);
    added_trie_free(&hf->added_trie);
    memset(hf, 0, sizeof *hf);
}
