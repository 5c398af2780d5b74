/* linear.c: see linear.h. */
#include "ref/linear.h"

#include "ref/kernels/pack.h"
#include "ref/kernels/quant.h"
#include "ref/kernels/q8_packed.h"

bool model_fast(const Model *m) {
    MatrixLayout l = m->classifier.layout;
    return l == MATRIX_PACKED || l == MATRIX_Q8_PACKED;
}

ThreadPool *model_threads(const Model *m) {
    return model_fast(m) ? m->pool : NULL;
}

/* One packed matmul, shared out over threads by blocks of output rows. */
typedef struct {
    float *out;
    const float *x;
    const int8_t *qx;
    const float *sx;
    const int32_t *xsum;
    const Matrix *w;
    int T;
} LinearJob;

static void linear_blocks(void *ctx, int b0, int b1) {
    const LinearJob *j = ctx;
    if (j->w->layout == MATRIX_Q8_PACKED)
        matmul_q8_packed_blocks(j->out, j->x, j->qx, j->sx, j->xsum, j->w, j->T, b0, b1);
    else
        matmul_packed_blocks(j->out, j->x, j->w, j->T, b0, b1);
}

void linear_forward(RunState *s, const Model *m, float *out, const float *x, int T, const Matrix *w,
                    InputUse use) {
    ThreadPool *pool = model_threads(m);
    const int8_t *qx = NULL;
    int C = w->cols;
    bool int8 = w->layout == MATRIX_Q8_ROWS || w->layout == MATRIX_Q8_PACKED;
    if (use == INPUT_AS_BEFORE && s->quant.activations) { /* quantized by the call before */
        if (int8)
            qx = s->xq;
        else
            x = s->xfake;
    } else if (int8 && s->quant.activations) { /* each token once, for every row */
        int groups = quant_groups(C, w->group);
        for (int t = 0; t < T; t++) {
            int8_t *codes = s->xq + (size_t)t * C;
            quantize_row(x + (size_t)t * C, C, w->group, codes, s->xs + (size_t)t * groups);
            if (w->q8_quads) q8_group_sums(codes, C, w->group, s->xsum + (size_t)t * groups);
        }
        qx = s->xq;
    } else if (!int8 && s->quant.activations) {
        for (int t = 0; t < T; t++) {
            quantize_row(x + (size_t)t * C, C, s->quant.group, s->xq, s->xs);
            dequantize_row(s->xq, s->xs, C, s->quant.group, s->xfake + (size_t)t * C);
        }
        x = s->xfake;
    }
    LinearJob job = {.out = out, .x = x, .qx = qx, .sx = s->xs, .xsum = s->xsum, .w = w, .T = T};
    switch (w->layout) {
        case MATRIX_Q8_PACKED:
            parallel_for(pool, q8_blocks(w), linear_blocks, &job);
            break;
        case MATRIX_Q8_ROWS:
            matmul_q8_rows(out, x, qx, s->xs, w->data, w->scales, T, C, w->rows, w->group);
            break;
        case MATRIX_PACKED:
            parallel_for(pool, packed_blocks(w), linear_blocks, &job);
            break;
        case MATRIX_ROWS:
        case MATRIX_BLOCKS:
            matmul_rows(out, x, w, T);
            break;
    }
}
