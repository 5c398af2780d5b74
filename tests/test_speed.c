/* test_speed.c: the fast kernels change no bit. The benchmark's 15M shape
 * (dim 288, hidden 768, 6 layers, 6 heads, vocab 32000) runs its prefill
 * and first 8 decode steps with the packed layout and fast kernels, and
 * again with the plain kernel (the model as loaded, row-major); every logit
 * must be the same bits. The plain kernel itself is checked against the
 * naive matmul below, one dot product at a time. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "ref/forward.h"
#include "ref/layers.h"
#include "ref/kernels/pack.h"
#include "ref/model/model_pack.h"

/* Deliberately naive and obviously correct: out[t][o] = Σ_i w[o][i]·x[t][i],
 * summed in index order from 0.0f. */
static void naive_matmul(float *out, const float *x, const float *w, int T, int C, int OC) {
    for (int t = 0; t < T; t++) {
        for (int o = 0; o < OC; o++) {
            float sum = 0.0f;
            for (int i = 0; i < C; i++) sum += w[(size_t)o * C + i] * x[(size_t)t * C + i];
            out[(size_t)t * OC + o] = sum;
        }
    }
}

/* Prefill `prompt`, then feed 8 more tokens one at a time; keep every logit. */
static float *run(const Model *m, const int *tokens, int n_prompt, int steps) {
    RunState s;
    StepError err;
    int V = m->config.vocab_size;
    cr_assert(run_state_init(&s, &m->config, n_prompt + steps, n_prompt, &err), "%s", err.message);
    float *all = malloc((size_t)(steps + 1) * V * sizeof(float));
    const float *logits = forward_tokens(m, &s, tokens, n_prompt, 0, false, NULL);
    memcpy(all, logits, (size_t)V * sizeof(float));
    for (int k = 0; k < steps; k++) {
        logits = forward_tokens(m, &s, &tokens[n_prompt + k], 1, n_prompt + k, false, NULL);
        memcpy(all + (size_t)(k + 1) * V, logits, (size_t)V * sizeof(float));
    }
    run_state_free(&s);
    return all;
}

Test(speed, fast_kernels_are_bitwise_the_naive_matmul_on_the_benchmark_shape, .timeout = 120) {
    Config c = {.dim = 288,
                .hidden_dim = 768,
                .n_layers = 6,
                .n_heads = 6,
                .n_kv_heads = 6,
                .vocab_size = 32000,
                .seq_len = 256,
                .shared_classifier = true};
    Model naive, fast;
    StepError err;
    cr_assert(model_init_random(&naive, &c, 42, &err), "%s", err.message);
    cr_assert(model_init_random(&fast, &c, 42, &err), "%s", err.message);
    cr_assert(model_pack(&fast, &err), "%s", err.message);
    cr_assert_eq(fast.classifier.layout, MATRIX_PACKED);
    cr_assert_eq(fast.layers[0].m[MAT_DOWN].layout, MATRIX_PACKED);
    /* 20 prompt tokens (a prefill that uses the 4-token tiles and their tail), then 8 */
    int tokens[28];
    for (int i = 0; i < 28; i++) tokens[i] = i == 0 ? 1 : (i * 7919) % 32000;
    float *a = run(&naive, tokens, 20, 8), *b = run(&fast, tokens, 20, 8);
    for (int k = 0; k < 9; k++)
        cr_expect_eq(memcmp(a + (size_t)k * 32000, b + (size_t)k * 32000, 32000 * sizeof(float)), 0,
                     "logits differ at step %d", k);
    /* the plain kernel is the naive loop, on each matrix shape of layer 0 */
    const Matrix *layer0 = naive.layers[0].m;
    const struct {
        const float *w;
        int C, OC;
    } shapes[] = {{model_matrix_floats(&naive, &layer0[MAT_WQ]), 288, 288},
                  {model_matrix_floats(&naive, &layer0[MAT_GATE]), 288, 768},
                  {model_matrix_floats(&naive, &layer0[MAT_DOWN]), 768, 288},
                  {model_matrix_floats(&naive, &naive.classifier), 288, 32000}};
    float *x = malloc(20 * 768 * sizeof(float)), *o1 = malloc(20 * 32000 * sizeof(float)),
          *o2 = malloc(20 * 32000 * sizeof(float));
    for (int i = 0; i < 20 * 768; i++) x[i] = (float)((i * 2654435761u) % 2001) / 1000.0f - 1.0f;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        naive_matmul(o1, x, shapes[i].w, 20, shapes[i].C, shapes[i].OC);
        matmul_forward(o2, x, shapes[i].w, 20, shapes[i].C, shapes[i].OC);
        cr_expect_eq(memcmp(o1, o2, (size_t)20 * shapes[i].OC * sizeof(float)), 0,
                     "the plain kernel differs on a %d x %d matrix", shapes[i].OC, shapes[i].C);
    }
    free(x), free(o1), free(o2);
    free(a), free(b);
    model_free(&naive), model_free(&fast);
}
