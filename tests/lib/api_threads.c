/* api_threads.c: one model shared by many threads (stepwise.h, "Threads").
 * A model opened with two pool threads is used by 2, then 4 threads at
 * once, each mixing sw_score, sw_generate (greedy and seeded) and
 * sw_tokenize; every result must be the bits the same calls give from one
 * thread, in every one of N rounds. Built with -fsanitize=thread in `make
 * sanitize` (any race report fails it); a hang is the pool's job slot
 * overwritten, which the test's caller times out.
 *
 * usage: api_threads ROUNDS [MODEL.gguf] (no model: the built-in tiny one) */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ref/api/stepwise.h"

#define MAX_IDS    64
#define NEW_TOKENS 8

/* What one thread computes, and what one thread alone computed first. */
typedef struct {
    int ids[MAX_IDS], n_ids;
    float *logits; /* [n_ids, vocab] */
    int greedy[MAX_IDS + NEW_TOKENS], n_greedy;
    int sampled[MAX_IDS + NEW_TOKENS], n_sampled;
    int tokenized[MAX_IDS], n_tokenized;
} Results;

typedef struct {
    sw_model *m;
    int prompt, new_tokens; /* the generations' prompt (the first ids) and length */
    int kind;               /* which call comes first: the threads interleave them differently */
    const char *text;
    int vocab;
    Results got;
    char error[600];
} Worker;

static const sw_sampler GREEDY = {.temperature = 0.0f, .top_p = 1.0f, .seed = 42};
static const sw_sampler SEEDED = {.temperature = 1.0f, .top_k = 40, .top_p = 0.9f, .seed = 7};

/* score, generate twice and tokenize, in an order that depends on kind. */
static void *work(void *arg) {
    Worker *w = arg;
    Results *r = &w->got;
    sw_error err = {0};
    int ok = 1;
    for (int step = 0; ok && step < 4; step++) {
        switch ((step + w->kind) % 4) {
            case 0: {
                sw_scores *s = NULL;
                ok = sw_score(w->m, r->ids, r->n_ids, w->kind % 2 ? "blocks.*.mlp_out" : NULL, &s,
                              &err) == SW_OK;
                if (ok) {
                    size_t n = (size_t)r->n_ids * (size_t)w->vocab;
                    r->logits = malloc(n * sizeof(float));
                    if (r->logits != NULL)
                        memcpy(r->logits, sw_scores_logits(s), n * sizeof(float));
                    ok = r->logits != NULL;
                }
                sw_scores_free(s);
                break;
            }
            case 1:
                ok = sw_generate(w->m, r->ids, w->prompt, &GREEDY, w->new_tokens, r->greedy,
                                 MAX_IDS + NEW_TOKENS, &r->n_greedy, &err) == SW_OK;
                break;
            case 2:
                ok = sw_generate(w->m, r->ids, w->prompt, &SEEDED, w->new_tokens, r->sampled,
                                 MAX_IDS + NEW_TOKENS, &r->n_sampled, &err) == SW_OK;
                break;
            default:
                ok = sw_tokenize(w->m, w->text, 1, r->tokenized, MAX_IDS, &r->n_tokenized, &err) ==
                     SW_OK;
        }
    }
    if (!ok) snprintf(w->error, sizeof w->error, "%s", err.message);
    return NULL;
}

static int same(const Results *a, const Results *b, int vocab) {
    size_t n = (size_t)a->n_ids * (size_t)vocab * sizeof(float);
    return a->logits != NULL && b->logits != NULL && memcmp(a->logits, b->logits, n) == 0 &&
           a->n_greedy == b->n_greedy &&
           memcmp(a->greedy, b->greedy, (size_t)a->n_greedy * sizeof(int)) == 0 &&
           a->n_sampled == b->n_sampled &&
           memcmp(a->sampled, b->sampled, (size_t)a->n_sampled * sizeof(int)) == 0 &&
           a->n_tokenized == b->n_tokenized &&
           memcmp(a->tokenized, b->tokenized, (size_t)a->n_tokenized * sizeof(int)) == 0;
}

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 100;
    const char *path = argc > 2 ? argv[2] : NULL;
    const char *text = "Once upon a time, there was a little cat";
    sw_open_options opt = {.threads = 2};
    sw_model *m;
    sw_error err;
    if (sw_model_open(path, NULL, &opt, &m, &err) != SW_OK)
        return fprintf(stderr, "api_threads: %s\n", err.message), 1;
    sw_model_shape shape = sw_model_get_shape(m);
    int vocab = shape.vocab_size;
    /* the reference: one thread, each call once */
    Worker alone = {.m = m, .text = text, .vocab = vocab};
    int n = 0;
    if (sw_tokenize(m, text, 1, alone.got.ids, MAX_IDS, &n, &err) != SW_OK || n < 4)
        return fprintf(stderr, "api_threads: tokenize: %s\n", err.message), 1;
    if (n > shape.seq_len) n = shape.seq_len; /* the built-in model holds 8 */
    alone.got.n_ids = n;
    alone.prompt = 2;
    alone.new_tokens = shape.seq_len - 2 < NEW_TOKENS ? shape.seq_len - 2 : NEW_TOKENS;
    work(&alone);
    if (alone.error[0]) return fprintf(stderr, "api_threads: %s\n", alone.error), 1;
    int failed = 0;
    for (int round = 0; round < rounds && !failed; round++) {
        for (int threads = 2; threads <= 4 && !failed; threads += 2) {
            Worker w[4];
            pthread_t t[4];
            for (int i = 0; i < threads; i++) {
                w[i] = (Worker){.m = m,
                                .prompt = alone.prompt,
                                .new_tokens = alone.new_tokens,
                                .kind = i + round,
                                .text = text,
                                .vocab = vocab};
                memcpy(w[i].got.ids, alone.got.ids, sizeof alone.got.ids);
                w[i].got.n_ids = n;
                pthread_create(&t[i], NULL, work, &w[i]);
            }
            for (int i = 0; i < threads; i++) pthread_join(t[i], NULL);
            for (int i = 0; i < threads; i++) {
                if (w[i].error[0] || !same(&w[i].got, &alone.got, vocab)) {
                    fprintf(stderr, "api_threads: round %d, %d threads, thread %d: %s\n", round,
                            threads, i, w[i].error[0] ? w[i].error : "other bits than alone");
                    failed = 1;
                }
                free(w[i].got.logits);
            }
        }
    }
    free(alone.got.logits);
    sw_model_free(m);
    if (failed) return 1;
    printf("ok    one model (%s), 2 and 4 threads at once, score, generate and tokenize mixed: "
           "the bits of one thread, %d rounds\n",
           path != NULL ? path : "built-in", rounds);
    return 0;
}
