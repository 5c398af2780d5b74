/* model_pack.c: see model_pack.h. */
#include "ref/model/model_pack.h"

#include "ref/kernels/pack.h"

void model_pack_release_rows(void *ctx, const Matrix *w, int r0, int r1) {
    const Model *m = ctx;
    size_t row = matrix_row_bytes(w);
    if (w->interleave_head_dim != 0 || w->owned != NULL) return; /* rows out of order, or owned */
    model_discard_bytes(m, (const char *)w->data + (size_t)r0 * row, (size_t)(r1 - r0) * row);
}

/* Pack matrix *w in place (the packed copy replaces it; an owned source is
 * freed). */
static bool pack_in_place(Model *m, Matrix *w) {
    Matrix packed;
    if (!matrix_pack_releasing(&packed, w, model_pack_release_rows, m)) return false;
    matrix_free(w);
    *w = packed;
    return true;
}

bool model_pack(Model *m, StepError *err) {
    if (m->classifier.layout == MATRIX_PACKED) m->fast_kernels = true;
    if (m->weight_group > 0 || m->layers == NULL || m->classifier.layout == MATRIX_PACKED)
        return true;
    int n = model_matrix_count(m);
    bool tied = m->embedding.data == m->classifier.data;
    bool ok = true;
    for (int i = 0; ok && i < n; i++) {
        Matrix *w = model_matrix_at(m, i);
        if (w->rows == 0) continue; /* a kind the architecture has none of */
        ok = pack_in_place(m, w);
        progress_report(m->progress, "packing the weights (matrices)", (uint64_t)i + 1,
                        (uint64_t)n + 1);
    }
    if (ok && tied) m->embedding = (Matrix){0}; /* the classifier's rows, packed below */
    ok = ok && pack_in_place(m, &m->classifier);
    if (ok && tied) /* looked up in the packed classifier: a view of it */
        m->embedding = matrix_borrow(&m->classifier);
    /* What stays row-major in the float storage: the norms, an untied
     * embedding (for lookups), and the architecture's biases and q/k norms
     * (added, not multiplied). The rest of the storage goes. */
    ok = ok && model_compact_storage(m, err);
    if (!ok) return step_fail(err, "pack: out of memory for the weights");
    model_choose_fast_kernels(m); /* the block's fast kernels from here on */
    return true;
}
