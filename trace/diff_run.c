/* diff_run.c: see diff_run.h. */
#include "diff_run.h"

#include <stdlib.h>
#include <string.h>

void diff_run_free(DiffRun *r) {
    free(r->pos), free(r->logits), free(r->input_pos), free(r->input_token);
    free(r->kv_layer), free(r->kv_pos), free(r->k), free(r->v);
    for (int i = 0; i < r->n_acts; i++) free(r->acts[i].data);
    free(r->acts);
    for (int i = 0; i < r->n_pieces; i++) free(r->pieces[i]);
    free(r->piece_ids), free(r->pieces);
    memset(r, 0, sizeof *r);
}

const char *diff_run_piece(const DiffRun *r, int id) {
    for (int i = 0; i < r->n_pieces; i++)
        if (r->piece_ids[i] == id) return r->pieces[i];
    return NULL;
}

int diff_run_input(const DiffRun *r, int pos) {
    int lo = 0, hi = r->n_inputs;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (r->input_pos[mid] < pos)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < r->n_inputs && r->input_pos[lo] == pos ? r->input_token[lo] : -1;
}
