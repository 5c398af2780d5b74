/* nonfinite.c: see nonfinite.h. */
#include "nonfinite.h"

#include <math.h>
#include <stdio.h>

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

bool fail_nonfinite(const Model *m, const ForwardRow *row, const char *what, StepError *err) {
    FirstNonFinite first = {0};
    StepObserver watch = {.ctx = &first, .wants = wants_every_hook, .emit = note_nonfinite};
    ForwardRow again = *row;
    again.obs = &watch;
    forward(m, row->state, &again, 1);
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

bool model_check_finite(const Model *m, StepError *err) {
    const Config *c = &m->config;
    const Weights *w = &m->weights;
    size_t d = (size_t)c->dim, h = (size_t)c->hidden_dim, kv = (size_t)config_kv_dim(c);
    size_t qd = (size_t)config_q_dim(c), hd = (size_t)config_head_dim(c), V = (size_t)c->vocab_size;
    const struct {
        const char *name;
        const float *values;
        size_t rows, cols; /* of one layer's tensor (rows 1: a vector) */
        bool per_layer;
    } tensors[] = {
        {"embedding", w->token_embedding, V, d, false},
        {"attn.rms", w->rms_att, 1, d, true},
        {"attn.wq", w->wq, qd, d, true},
        {"attn.wk", w->wk, kv, d, true},
        {"attn.wv", w->wv, kv, d, true},
        {"attn.wo", w->wo, d, qd, true},
        {"attn.bq", w->bq, 1, qd, true},
        {"attn.bk", w->bk, 1, kv, true},
        {"attn.bv", w->bv, 1, kv, true},
        {"attn.q_norm", w->q_norm, 1, hd, true},
        {"attn.k_norm", w->k_norm, 1, hd, true},
        {"mlp.rms", w->rms_ffn, 1, d, true},
        {"mlp.w1", w->w1, h, d, true},
        {"mlp.w2", w->w2, d, h, true},
        {"mlp.w3", w->w3, h, d, true},
        {"final_norm", w->rms_final, 1, d, false},
        {"classifier", c->shared_classifier ? NULL : w->wcls, V, d, false},
    };
    for (size_t i = 0; i < sizeof tensors / sizeof tensors[0]; i++) {
        if (tensors[i].values == NULL) continue; /* not this architecture's, or int8 */
        size_t size = tensors[i].rows * tensors[i].cols;
        int layers = tensors[i].per_layer ? c->n_layers : 1;
        for (int l = 0; l < layers; l++) {
            long at = first_nonfinite(tensors[i].values + (size_t)l * size, size);
            if (at < 0) continue;
            char name[64];
            if (tensors[i].per_layer)
                snprintf(name, sizeof name, "blocks.%d.%s", l, tensors[i].name);
            else
                snprintf(name, sizeof name, "%s", tensors[i].name);
            return step_fail(err, "weight %s [%zu, %zu] holds %g at row %zu, column %zu", name,
                             tensors[i].rows, tensors[i].cols,
                             (double)tensors[i].values[(size_t)l * size + (size_t)at],
                             (size_t)at / tensors[i].cols, (size_t)at % tensors[i].cols);
        }
    }
    return true;
}
