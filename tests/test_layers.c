/* test_layers.c: layers.h's functions against their definitions computed in
 * double here (libm's tanh and exp), with tolerances set so that the
 * planted bugs of issue 46 fail by a wide margin: GELU with a wrong
 * coefficient, a softmax (attention's, both paths) that does not subtract
 * the maximum before it exponentiates. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "ref/kernels/exp.h"
#include "ref/kernels/fast_layers.h"
#include "ref/forward_jobs.h"
#include "ref/layers.h"

/* GELU's tanh form in double: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). */
static double gelu_definition(double x) {
    return 0.5 * x * (1.0 + tanh(sqrt(2.0 / 3.14159265358979323846) * (x + 0.044715 * x * x * x)));
}

/* Over [-6, 6] in steps of 1/64 the float GELU stays within 2e-7 · max(1,
 * |x|) of the double definition (measured: 7.8e-8 at most). The
 * coefficient 0.0447 for 0.044715 moves the result by up to 8.7e-6 (near
 * x = ±2, where the bound is 4e-7): 20 times the tolerance. */
Test(layers, gelu_is_its_definition) {
    double worst = 0;
    for (int i = -384; i <= 384; i++) {
        float x = (float)i / 64.0f, y = x;
        gelu_forward(&y, 1);
        double err = fabs((double)y - gelu_definition(x)) / fmax(1.0, fabs((double)x));
        worst = fmax(worst, err);
        cr_expect(err <= 2e-7, "gelu(%g) = %.9g, by definition %.9g", (double)x, (double)y,
                  gelu_definition(x));
    }
    cr_log_info("gelu: worst error %.3g (relative to max(1, |x|))", worst);
}

/* Scores far past expf's overflow (about 88.7): q·k of 100 and 90, one
 * head of width 1 (divided by sqrt(1)). softmax = (1, e^-10) / (1 + e^-10),
 * so out = p0 · 1 + p1 · 0 = 1 / (1 + e^-10). A softmax that exponentiates
 * before subtracting the max gives inf / inf: NaN. */
Test(layers, attention_softmax_survives_scores_past_exp_overflow) {
    const float q[1] = {10.0f}, keys[2] = {10.0f, 9.0f}, values[2] = {1.0f, 0.0f};
    const AttentionSpec a = {.n_heads = 1, .n_kv_heads = 1, .head_dim = 1, .query_scale = 1.0f};
    double want = 1.0 / (1.0 + exp(-10.0));
    float out = -1, scores[2];
    const int at[1] = {1}; /* the query at position 1 */
    attention_forward(&out, q, keys, values, scores, 1, at, &a, NULL);
    cr_expect(fabs(out - want) < 1e-6, "plain: %.9g, by definition %.9g", (double)out, want);
    float fast = -1, rows[16];
    attention_heads_fast(&fast, q, keys, NULL, values, rows, 16, 1, at, &a, 0, 1,
                         exp_kind_of_libm());
    cr_expect(fabs(fast - want) < 1e-6, "fast: %.9g, by definition %.9g", (double)fast, want);
    float x[3] = {1000.0f, 999.0f, -1000.0f};
    softmax_forward(x, 3);
    double e1 = exp(-1.0), sum = 1.0 + e1;
    cr_expect(fabs(x[0] - 1.0 / sum) < 1e-6 && fabs(x[1] - e1 / sum) < 1e-6 && x[2] == 0.0f,
              "softmax(1000, 999, -1000) = %g %g %g", (double)x[0], (double)x[1], (double)x[2]);
}

/* The visibility rule (attention_spec.h) against tables written by hand
 * from its definition: a query at q sees k when k <= q and (k < sink or k
 * is in its band: k > q - window, and k in q's chunk, the positions
 * c·chunk .. c·chunk + chunk - 1 holding q). Row q of each table is what
 * query q sees of keys 0..7 ('1': seen). The count (attention_seen), the
 * first seen and the pairs of a pass (attention_pairs) from the same rows.
 *   chunk 2, sink 1:       q=2 sees 0 (a sink) and 2 (its chunk 2..3), not 1
 *   window 3, sink 1:      q=5 sees 0 (a sink), then 3..5
 *   window 3, chunk 4:     q=4 sees only itself (its chunk starts at 4);
 *                          q=7 its window 5..7 (inside the chunk 4..7)
 *   chunk 3, window 0:     chunks 0..2, 3..5, 6..8 */
Test(layers, visibility_rule_is_the_hand_written_tables) {
    static const struct {
        AttentionSpec a;
        const char *rows[8];
    } cases[] = {
        {{.chunk = 2, .sink = 1},
         {"1.......", "11......", "1.1.....", "1.11....", "1...1...", "1...11..", "1.....1.",
          "1.....11"}},
        {{.window = 3, .sink = 1},
         {"1.......", "11......", "111.....", "1111....", "1.111...", "1..111..", "1...111.",
          "1....111"}},
        {{.window = 3, .chunk = 4},
         {"1.......", "11......", "111.....", ".111....", "....1...", "....11..", "....111.",
          ".....111"}},
        {{.chunk = 3},
         {"1.......", "11......", "111.....", "...1....", "...11...", "...111..", "......1.",
          "......11"}},
        {{.window = 0},
         {"1.......", "11......", "111.....", "1111....", "11111...", "111111..", "1111111.",
          "11111111"}},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const AttentionSpec *a = &cases[c].a;
        uint64_t pairs = 0;
        for (int q = 0; q < 8; q++) {
            int seen = 0, first = -1;
            for (int k = 0; k < 8; k++) {
                bool want = cases[c].rows[q][k] == '1';
                cr_expect_eq(attention_visible(a, q, k), want,
                             "window %d chunk %d sink %d: query %d, key %d: want %s", a->window,
                             a->chunk, a->sink, q, k, want ? "seen" : "not seen");
                seen += want;
                if (want && first < 0) first = k;
            }
            cr_expect_eq(attention_seen(a, q), seen, "case %zu: query %d sees %d keys", c, q, seen);
            cr_expect_eq(attention_first_seen(a, q), first, "case %zu: query %d's first key %d", c,
                         q, first);
            pairs += (uint64_t)seen;
            cr_expect_eq(attention_pairs(a, q + 1, 0), pairs, "case %zu: queries 0..%d", c, q);
            cr_expect_eq(attention_pairs(a, 1, q), (uint64_t)seen, "case %zu: query %d alone", c,
                         q);
        }
    }
}

/* A tiny attention with chunks of 2 and one sink, both paths, by hand: one
 * head of width 1, query_scale 1, every query 1 and key p = ln(p + 1), so
 * that the score of p is ln(p + 1) and its weight (p + 1) / Σ (j + 1) over
 * the keys the query sees; values 1, 2, 4, 8, 16. From the table above
 * (chunk 2, sink 1):
 *   q0 sees {0}:       1
 *   q1 sees {0, 1}:    (1·1 + 2·2) / 3        = 5/3
 *   q2 sees {0, 2}:    (1·1 + 3·4) / 4        = 13/4
 *   q3 sees {0, 2, 3}: (1·1 + 3·4 + 4·8) / 8  = 45/8
 *   q4 sees {0, 4}:    (1·1 + 5·16) / 6       = 27/2
 * once as a pass of five queries, once as five decode steps. */
Test(layers, chunk_and_sink_attention_by_hand) {
    const AttentionSpec a = {
        .n_heads = 1, .n_kv_heads = 1, .head_dim = 1, .query_scale = 1.0f, .chunk = 2, .sink = 1};
    const double want[5] = {1.0, 5.0 / 3.0, 13.0 / 4.0, 45.0 / 8.0, 27.0 / 2.0};
    float q[5] = {1, 1, 1, 1, 1}, keys[5], values[5] = {1, 2, 4, 8, 16};
    for (int p = 0; p < 5; p++) keys[p] = logf((float)(p + 1));
    float plain[5], fast[5], scores[5], rows[5];
    const int positions[5] = {0, 1, 2, 3, 4};
    attention_forward(plain, q, keys, values, scores, 5, positions, &a, NULL);
    attention_heads_fast(fast, q, keys, NULL, values, rows, 5, 5, positions, &a, 0, 1,
                         exp_kind_of_libm());
    for (int t = 0; t < 5; t++) {
        cr_expect(fabs(plain[t] - want[t]) < 1e-5 * want[t], "plain, query %d: %.9g, by hand %.9g",
                  t, (double)plain[t], want[t]);
        cr_expect(fabs(fast[t] - want[t]) < 1e-5 * want[t], "fast, query %d: %.9g, by hand %.9g", t,
                  (double)fast[t], want[t]);
        float step = -1;
        attention_forward(&step, q + t, keys, values, scores, 1, positions + t, &a, NULL);
        cr_expect(step == plain[t], "decode step %d: %.9g, in the pass %.9g", t, (double)step,
                  (double)plain[t]);
    }
}

/* Positions are data: RoPE turns each row by its own position, in any
 * order, and the work count reads each query's. By hand: one head of 2
 * dimensions, θ = 1 (tables cos p, sin p), x = (1, 0) at positions 2, 0
 * and 1 becomes (cos 2, sin 2), (1, 0), (cos 1, sin 1). With a window of
 * 3, queries at positions 4 and 0 see 3 keys (2..4) and 1 (0): 4 pairs,
 * each 2 · 2 heads · 8 multiply-adds and a K and a V row of 10 bytes. */
Test(layers, rope_and_the_work_count_read_each_tokens_position) {
    float cos_t[3], sin_t[3], x[6] = {1, 0, 1, 0, 1, 0};
    for (int p = 0; p < 3; p++) cos_t[p] = cosf((float)p), sin_t[p] = sinf((float)p);
    const int positions[3] = {2, 0, 1};
    rope_forward(x, 3, 2, 2, 2, positions, cos_t, sin_t, ROPE_INTERLEAVED);
    const double want[6] = {cos(2.0), sin(2.0), 1.0, 0.0, cos(1.0), sin(1.0)};
    for (int i = 0; i < 6; i++)
        cr_expect(fabs(x[i] - want[i]) < 1e-6, "x[%d] = %.9g, by hand %.9g", i, (double)x[i],
                  want[i]);
    const AttentionSpec a = {.n_heads = 2, .n_kv_heads = 1, .head_dim = 8, .window = 3};
    const int queries[2] = {4, 0};
    WorkCount w = {0};
    count_attention(&w, &a, 2, queries, 10);
    cr_expect_eq(w.macs, 4u * 2u * 8u * 2u, "macs %llu", (unsigned long long)w.macs);
    cr_expect_eq(w.kv_bytes_read, 4u * 10u * 2u, "bytes %llu", (unsigned long long)w.kv_bytes_read);
}

/* The fast attention gives the plain loops' bits (layers.c: one position
 * and one dimension at a time, each sum in index order from 0.0f): its
 * blocks of four positions' scores, of 64 and 16 dimensions of the values,
 * four query heads of one KV head together (32 dimensions at a time) and
 * every tail. Head widths that use each block and tail; GQA groups of 2
 * (never four together), 4 and 6 (four together, then two alone); the
 * heads split between two threads' shares at every point; queries at every
 * position from 0 to 19, as decode steps and as passes of three; with no
 * window, and with a window of 5, Gemma 2's soft-cap and llama.cpp's
 * float16 probabilities (the steps between the scores and the values);
 * with chunks of 4 and two sinks (keys with a gap between them), and
 * with a window of 5, chunks of 3 and a sink. */
Test(layers, fast_attention_is_the_plain_sums_at_every_width_and_position) {
    enum { POSITIONS = 22, MAX_HEADS = 8, MAX_DIM = 88 };
    const int widths[] = {8, 24, 40, 64, 72, 88};
    const int shapes[][2] = {{4, 2}, {8, 2}, {6, 1}}; /* query heads, KV heads */
    static float q[3 * MAX_HEADS * MAX_DIM], keys[POSITIONS * MAX_HEADS * MAX_DIM],
        values[POSITIONS * MAX_HEADS * MAX_DIM];
    static float plain[3 * MAX_HEADS * MAX_DIM], fast[3 * MAX_HEADS * MAX_DIM];
    static float scores[POSITIONS], rows[MAX_HEADS * POSITIONS];
    unsigned seed = 12345u;
    for (size_t w = 0; w < sizeof widths / sizeof widths[0]; w++)
        for (size_t g = 0; g < 4 * sizeof shapes / sizeof shapes[0]; g++) {
            int hd = widths[w], heads = shapes[g / 4][0], kv_heads = shapes[g / 4][1];
            int variant = (int)(g % 4); /* none, window, chunks and sinks, all three */
            bool windowed = variant == 1 || variant == 3;
            const AttentionSpec a = {.n_heads = heads,
                                     .n_kv_heads = kv_heads,
                                     .head_dim = hd,
                                     .query_scale = (float)hd,
                                     .window = windowed ? 5 : 0,
                                     .chunk = variant == 2   ? 4
                                              : variant == 3 ? 3
                                                             : 0,
                                     .sink = variant == 2   ? 2
                                             : variant == 3 ? 1
                                                            : 0,
                                     .softcap = windowed ? 0.5f : 0.0f,
                                     .f16_probs = windowed};
            float *all[] = {q, keys, values};
            size_t counts[] = {3 * (size_t)heads * hd, POSITIONS * (size_t)kv_heads * hd,
                               POSITIONS * (size_t)kv_heads * hd};
            for (int b = 0; b < 3; b++)
                for (size_t i = 0; i < counts[b]; i++) {
                    seed = seed * 1664525u + 1013904223u;
                    all[b][i] = (float)(int)(seed >> 9) / (float)(1 << 22) - 1.0f; /* [-1, 1) */
                }
            for (int T = 1; T <= 3; T += 2)
                for (int pos0 = 0; pos0 + T <= 20; pos0++)
                    for (int split = 0; split < heads; split++) {
                        size_t n = (size_t)T * heads * hd;
                        const int at[3] = {pos0, pos0 + 1, pos0 + 2};
                        attention_forward(plain, q, keys, values, scores, T, at, &a, NULL);
                        memset(fast, 0, n * sizeof(float));
                        attention_heads_fast(fast, q, keys, NULL, values, rows, POSITIONS, T, at,
                                             &a, 0, split, exp_kind_of_libm());
                        attention_heads_fast(fast, q, keys, NULL, values, rows, POSITIONS, T, at,
                                             &a, split, heads, exp_kind_of_libm());
                        cr_expect(memcmp(plain, fast, n * sizeof(float)) == 0,
                                  "head width %d, %d heads on %d KV heads split at %d, %d "
                                  "queries from position %d, window %d, chunk %d, sink %d: fast "
                                  "%.9g, plain %.9g",
                                  hd, heads, kv_heads, split, T, pos0, a.window, a.chunk, a.sink,
                                  (double)fast[n - 1], (double)plain[n - 1]);
                    }
        }
}

/* ggml's GELU (--gelu ggml), against numpy: y = float16(gelu(float16(x)))
 * in float32 arithmetic, with numpy's float16 rounding (round to nearest
 * even), 0 at x <= -10 and x at x >= 10 (ggml_vec_gelu_f32's ends):
 *   np.float32(np.float16(g(np.float32(np.float16(x))))). */
Test(layers, gelu_ggml_is_ggmls_table) {
    const float x[] = {-10.0f, -9.99f, -1.0f, -0.5f, 0.0f,  0.3f,
                       1.0f,   2.5f,   9.99f, 10.0f, 12.0f, 0.1234f};
    const float want[] = {
        0.0f,           -0.0f,     -0.1588134765625f, -0.154296875f, 0.0f,  0.1854248046875f,
        0.84130859375f, 2.484375f, 9.9921875f,        10.0f,         12.0f, 0.0677490234375f};
    float y[12], gate[12], up[12];
    for (int i = 0; i < 12; i++) y[i] = x[i], gate[i] = x[i], up[i] = 2.0f;
    gelu_ggml_forward(y, 12);
    geglu_ggml_forward(gate, up, 12);
    for (int i = 0; i < 12; i++) {
        cr_expect_eq(y[i], want[i], "ggml gelu(%g) = %.9g, numpy says %.9g", (double)x[i],
                     (double)y[i], (double)want[i]);
        cr_expect_eq(gate[i], 2.0f * want[i], "ggml geglu(%g, 2)", (double)x[i]);
    }
}
