/* diff_run.c: see diff_run.h. */
#include "trace/diff_run.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ref/config.h"
#include "ref/formats/safetensors.h"

void diff_run_free(DiffRun *r) {
    free(r->pos), free(r->logits), free(r->input_pos), free(r->input_token);
    free(r->kv_layer), free(r->kv_pos), free(r->k), free(r->v);
    free(r->k_stored), free(r->v_stored);
    for (int i = 0; i < r->n_acts; i++) free(r->acts[i].data);
    free(r->acts);
    free(r->route_layer), free(r->route_pos), free(r->route_experts);
    for (int i = 0; i < r->n_pieces; i++) free(r->pieces[i]);
    free(r->piece_ids), free(r->pieces);
    for (int i = 0; i < r->n_files; i++) fclose(r->files[i]);
    free(r->files), free(r->short_read);
    memset(r, 0, sizeof *r);
}

bool diff_run_keep_file(DiffRun *r, FILE *f, int *file) {
    FILE **files = realloc(r->files, ((size_t)r->n_files + 1) * sizeof *files);
    if (files != NULL) r->files = files;
    if (r->short_read == NULL) r->short_read = calloc(1, sizeof *r->short_read);
    if (files == NULL || r->short_read == NULL) {
        fclose(f);
        return false;
    }
    *file = r->n_files;
    r->files[r->n_files++] = f;
    return true;
}

bool diff_run_read_short(const DiffRun *r) {
    return r->short_read != NULL && *r->short_read;
}

/* n values stored at s, read and converted to float32 into room [2 n]:
 * float32 bytes in place, 2-byte ones into its second half first. */
const float *diff_run_stored_row(const DiffRun *r, DiffStored s, size_t n, float *room) {
    size_t elem = s.dtype == ST_F32 ? 4 : 2, want = n * elem, got = 0;
    unsigned char *raw = s.dtype == ST_F32 ? (unsigned char *)room : (unsigned char *)(room + n);
    int fd = fileno(r->files[s.file]);
    while (got < want) {
        ssize_t k = pread(fd, raw + got, want - got, (off_t)(s.offset + got));
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) break;
        got += (size_t)k;
    }
    if (got < want) { /* the file shrank since its header was checked */
        *r->short_read = true;
        for (size_t i = 0; i < n; i++) room[i] = NAN;
        return room;
    }
    safetensors_convert((SafetensorsDtype)s.dtype, raw, n, room);
    return room;
}

const float *diff_run_logits_row(const DiffRun *r, int i, float *scratch) {
    size_t V = (size_t)r->vocab_size;
    if (r->logits != NULL) return r->logits + (size_t)i * V;
    DiffStored row = r->logits_stored;
    row.offset += (uint64_t)i * V * (row.dtype == ST_F32 ? 4 : 2);
    return diff_run_stored_row(r, row, V, scratch);
}

const float *diff_run_kv_row(const DiffRun *r, int i, bool v, float *scratch) {
    const float *mem = v ? r->v : r->k;
    if (mem != NULL) return mem + (size_t)i * (size_t)r->kv_dim;
    return diff_run_stored_row(r, (v ? r->v_stored : r->k_stored)[i], (size_t)r->kv_dim, scratch);
}

const float *diff_run_activation(const DiffRun *r, const DiffActivation *a, float *scratch) {
    const float *x =
        a->data != NULL ? a->data : diff_run_stored_row(r, a->stored, (size_t)a->n, scratch);
    int hd = r->unhalve_head_dim;
    if (!a->halves || hd <= 0) return x;
    /* each head's values are its rows, of one value each: halves back to pairs */
    float *out = x == scratch ? scratch + a->n : scratch;
    for (int h = 0; h < a->n / hd; h++)
        for (int j = 0; j < hd; j++)
            out[h * hd + j] =
                x[h * hd + (int)rope_source_row((uint64_t)j, hd, ROWS_TO_INTERLEAVED)];
    return out;
}

float *diff_run_logits_copy(const DiffRun *r) {
    size_t V = (size_t)r->vocab_size;
    float *all = malloc(((size_t)r->n * V > 0 ? (size_t)r->n * V : 1) * sizeof(float));
    float *room = malloc(2 * (V > 0 ? V : 1) * sizeof(float));
    for (int i = 0; all != NULL && room != NULL && i < r->n; i++)
        memcpy(all + (size_t)i * V, diff_run_logits_row(r, i, room), V * sizeof(float));
    if (room == NULL) free(all), all = NULL;
    free(room);
    return all;
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
