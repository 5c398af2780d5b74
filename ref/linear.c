/* linear.c: see linear.h. */
#include "ref/linear.h"

#include "ref/kernels/pack.h"
#include "ref/kernels/quant.h"
#include "ref/kernels/q8_packed.h"

ThreadPool *model_threads(const Model *m) {
    return m->run.matmul == KERNEL_FAST ? m->pool : NULL;
}

/* One packed matmul, shared out over threads by blocks of output rows. */
typedef struct {
    float *out;
    const LinearInput *in;
    const Matrix *w;
} LinearJob;

static void linear_blocks(void *ctx, int b0, int b1) {
    const LinearJob *j = ctx;
    const LinearInput *in = j->in;
    if (j->w->layout == MATRIX_Q8_PACKED)
        matmul_q8_packed_blocks(j->out, in->x, in->qx, in->sx, in->xsum, j->w, in->T, b0, b1);
    else
        matmul_packed_blocks(j->out, in->x, j->w, in->T, b0, b1);
}

LinearInput linear_input(PassScratch *s, const float *x, int T, const Matrix *w) {
    int C = w->cols;
    LinearInput in = {.x = x, .sx = s->xs, .T = T, .C = C};
    if (!s->int8_activations) return in;
    if (w->layout == MATRIX_Q8_ROWS ||
        w->layout == MATRIX_Q8_PACKED) { /* with the weights' groups */
        int groups = quant_groups(C, w->group);
        for (int t = 0; t < T; t++) {
            int8_t *codes = s->xq + (size_t)t * C;
            quantize_row(x + (size_t)t * C, C, w->group, codes, s->xs + (size_t)t * groups);
            if (w->q8_quads) q8_group_sums(codes, C, w->group, s->xsum + (size_t)t * groups);
        }
        in.qx = s->xq;
        in.xsum = w->q8_quads ? s->xsum : NULL;
        return in;
    }
    for (int t = 0; t < T; t++) { /* float weights: the input read back from its codes */
        quantize_row(x + (size_t)t * C, C, s->activation_group, s->xq, s->xs);
        dequantize_row(s->xq, s->xs, C, s->activation_group, s->xfake + (size_t)t * C);
    }
    in.x = s->xfake;
    return in;
}

void linear_forward(const Model *m, float *out, const LinearInput *in, const Matrix *w) {
    LinearJob job = {.out = out, .in = in, .w = w};
    ThreadPool *pool = model_threads(m);
    switch (w->layout) {
        case MATRIX_Q8_PACKED:
            parallel_for(pool, q8_blocks(w), linear_blocks, &job);
            break;
        case MATRIX_Q8_ROWS:
            matmul_q8_rows(out, in->x, in->qx, in->sx, w->data, w->scales, in->T, in->C, w->rows,
                           w->group);
            break;
        case MATRIX_PACKED:
            parallel_for(pool, packed_blocks(w), linear_blocks, &job);
            break;
        case MATRIX_ROWS:
        case MATRIX_BLOCKS:
            matmul_rows(out, in->x, w, in->T);
            break;
    }
}

void linear_rows(const Model *m, const ForwardRow *rows, int n_rows, float *out,
                 const LinearInput *in, const Matrix *w) {
    linear_forward(m, out, in, w);
    for (int r = 0; r < n_rows; r++)
        work_add_matmul(&rows[r].state->work, rows[r].n_tokens, w->cols, w->rows, matrix_bytes(w));
}

void linear_rows_of(const Model *m, PassScratch *s, const ForwardRow *rows, int n_rows, float *out,
                    const float *x, int N, const Matrix *w) {
    LinearInput in = linear_input(s, x, N, w);
    linear_rows(m, rows, n_rows, out, &in, w);
}
