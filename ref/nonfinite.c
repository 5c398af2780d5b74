/* nonfinite.c: see nonfinite.h. */
#include "ref/nonfinite.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

long first_nonfinite(const float *x, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i])) return (long)i;
    return -1;
}

/* The first hook seen holding a value that is not finite. */
typedef struct {
    bool found;
    int pos, layer;
    HookPoint point;
    long index; /* in the hook's values (a, then b) */
} FirstNonFinite;

static bool wants_every_hook(void *ctx, HookPoint point, int layer, int pos) {
    (void)ctx, (void)layer, (void)pos;
    return point != HOOK_KV_SNAPSHOT; /* the rows of the cache come as HOOK_KV_ROW already */
}

/* Hooks arrive layer by layer, each for every position of the pass: a
 * lower position replaces what was found, the same one keeps the first. */
static void note_nonfinite(void *ctx, const HookTensor *h) {
    FirstNonFinite *f = ctx;
    if (f->found && h->pos >= f->pos) return;
    size_t n = (size_t)h->rows * (size_t)h->cols;
    long at = first_nonfinite(h->a, n);
    if (at < 0 && h->b != NULL && (at = first_nonfinite(h->b, n)) >= 0) at += (long)n;
    if (at < 0) return;
    *f = (FirstNonFinite){
        .found = true, .pos = h->pos, .layer = h->layer, .point = h->point, .index = at};
}

bool fail_nonfinite(const Model *m, PassScratch *scratch, const ForwardRow *row, const char *what,
                    StepError *err) {
    FirstNonFinite first = {0};
    StepObserver watch = {.ctx = &first, .wants = wants_every_hook, .emit = note_nonfinite};
    ForwardRow again = *row;
    again.obs = &watch;
    forward(m, scratch, &again, 1);
    if (!first.found)
        return step_fail(err,
                         "%s: the logits hold a value that is not finite (NaN or infinity); "
                         "the weights may hold one (stepwise inspect --check-weights)",
                         what);
    char name[64];
    hook_name(first.point, first.layer, name, sizeof name);
    return step_fail(err,
                     "%s: a value that is not finite (NaN or infinity) first appears at "
                     "position %d, hook %s (element %ld); the weights may hold one (stepwise "
                     "inspect --check-weights)",
                     what, first.pos, name, first.index);
}

/* The first value of matrix w that is not finite: its row and column, and
 * the value, into *row, *col, *value; false when all are finite. Rows are
 * widened one at a time into scratch [cols]. */
static bool matrix_nonfinite(const Matrix *w, float *scratch, int *row, int *col, float *value) {
    for (int r = 0; w->data != NULL && r < w->rows; r++) {
        matrix_row(w, r, scratch);
        long at = first_nonfinite(scratch, (size_t)w->cols);
        if (at >= 0) {
            *row = r, *col = (int)at, *value = scratch[at];
            return true;
        }
    }
    return false;
}

static bool fail_weight(const char *name, int rows, int cols, float value, size_t row, size_t col,
                        StepError *err) {
    return step_fail(err, "weight %s [%d, %d] holds %g at row %zu, column %zu", name, rows, cols,
                     (double)value, row, col);
}

bool model_check_finite(const Model *m, StepError *err) {
    const Config *c = &m->config;
    /* the vectors, float32 in storage: each row named as the layer (or
     * MoE layer) it belongs to, or by its index (a position) */
    for (int k = 0; k < VECTOR_KINDS; k++) {
        int count, width;
        weight_vector_shape(c, (VectorKind)k, &count, &width);
        for (int i = 0; m->vectors[k] != NULL && i < count; i++) {
            const float *v = model_vector(m, (VectorKind)k, i);
            long at = first_nonfinite(v, (size_t)width);
            if (at < 0) continue;
            char name[64];
            VectorRows rows = weight_vector_rows((VectorKind)k);
            int layer = rows == ROWS_MOE_LAYERS ? config_moe_layer(c, i) : i;
            if (rows == ROWS_LAYERS || rows == ROWS_MOE_LAYERS)
                snprintf(name, sizeof name, "blocks.%d.%s", layer,
                         weight_vector_name((VectorKind)k));
            else
                snprintf(name, sizeof name, "%s", weight_vector_name((VectorKind)k));
            bool one_row = rows != ROWS_POSITIONS;
            return fail_weight(name, one_row ? 1 : count, width, v[at], one_row ? 0 : (size_t)i,
                               (size_t)at, err);
        }
    }
    /* the matrices, however they are held (read a row at a time into a
     * row as wide as the widest: the shared experts' down is n_shared x
     * expert_hidden_dim wide, MLA's wo n_heads x v_head_dim) */
    int widest = c->dim;
    for (int i = 0; i < model_matrix_count(m); i++)
        if (model_matrix_at(m, i)->cols > widest) widest = model_matrix_at(m, i)->cols;
    float *scratch = malloc((size_t)widest * sizeof(float));
    if (scratch == NULL) return step_fail(err, "--check-weights: out of memory");
    bool ok = true;
    int row, col;
    float value;
    char name[64] = "";
    const Matrix *bad = NULL;
    /* each read once: a mapped file's pages go back as soon as they are
     * checked (read again if needed), so that a large model is not all held */
    if (matrix_nonfinite(&m->embedding, scratch, &row, &col, &value))
        bad = &m->embedding, snprintf(name, sizeof name, "embedding");
    model_release_bytes(m, m->embedding.data, matrix_bytes(&m->embedding));
    for (int i = 0; bad == NULL && i < model_matrix_count(m); i++) {
        const Matrix *w = model_matrix_at(m, i);
        if (w->rows > 0 && matrix_nonfinite(w, scratch, &row, &col, &value))
            bad = w, model_matrix_name(m, i, name, sizeof name);
        if (w->rows > 0) model_release_bytes(m, w->data, matrix_bytes(w));
    }
    if (bad == NULL && !c->shared_classifier &&
        matrix_nonfinite(&m->classifier, scratch, &row, &col, &value))
        bad = &m->classifier, snprintf(name, sizeof name, "classifier");
    if (!c->shared_classifier)
        model_release_bytes(m, m->classifier.data, matrix_bytes(&m->classifier));
    if (bad != NULL)
        ok = fail_weight(name, bad->rows, bad->cols, value, (size_t)row, (size_t)col, err);
    free(scratch);
    return ok;
}
