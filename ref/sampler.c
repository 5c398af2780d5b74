/* sampler.c: the sampling stages and the seeded draw. */
#include "ref/sampler.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ref/layers.h"

static const SamplerStage ORDER_DEFAULT[N_STAGES] = {STAGE_TEMPERATURE, STAGE_TOP_K, STAGE_TOP_P,
                                                     STAGE_MIN_P};
static const SamplerStage ORDER_LLAMA_CPP[N_STAGES] = {STAGE_TOP_K, STAGE_TOP_P, STAGE_MIN_P,
                                                       STAGE_TEMPERATURE};
static const SamplerStage ORDER_VLLM[N_STAGES] = {STAGE_TEMPERATURE, STAGE_MIN_P, STAGE_TOP_K,
                                                  STAGE_TOP_P};

void sampler_params_default(SamplerParams *p) {
    *p = (SamplerParams){.temperature = 0.0f,
                         .top_k = 0,
                         .top_p = 1.0f,
                         .min_p = 0.0f,
                         .order_name = "default",
                         .seed = 42};
    memcpy(p->order, ORDER_DEFAULT, sizeof ORDER_DEFAULT);
}

bool sampler_order_parse(SamplerParams *p, const char *name, StepError *err) {
    const SamplerStage *order = NULL;
    if (strcmp(name, "default") == 0)
        order = ORDER_DEFAULT, p->order_name = "default";
    else if (strcmp(name, "hf") == 0)
        order = ORDER_DEFAULT, p->order_name = "hf";
    else if (strcmp(name, "llama.cpp") == 0)
        order = ORDER_LLAMA_CPP, p->order_name = "llama.cpp";
    else if (strcmp(name, "vllm") == 0)
        order = ORDER_VLLM, p->order_name = "vllm";
    if (order == NULL)
        return step_fail(err, "unknown sampler order '%s' (default, hf, llama.cpp, vllm)", name);
    memcpy(p->order, order, sizeof p->order);
    return true;
}

bool sampler_params_validate(const SamplerParams *p, StepError *err) {
    if (!(p->temperature >= 0.0f) || isinf(p->temperature))
        return step_fail(err, "temperature must be a finite number >= 0, got %g",
                         (double)p->temperature);
    if (p->top_k < 0) return step_fail(err, "top-k must be >= 0 (0 = off), got %d", p->top_k);
    if (!(p->top_p > 0.0f && p->top_p <= 1.0f))
        return step_fail(err, "top-p must be in (0, 1] (1 = off), got %g", (double)p->top_p);
    if (!(p->min_p >= 0.0f && p->min_p <= 1.0f))
        return step_fail(err, "min-p must be in [0, 1] (0 = off), got %g", (double)p->min_p);
    if (p->seed == 0) return step_fail(err, "seed must not be 0 (xorshift's state 0 never moves)");
    return true;
}

const char *sampler_stage_name(SamplerStage s) {
    switch (s) {
        case STAGE_TEMPERATURE:
            return "temperature";
        case STAGE_TOP_K:
            return "top_k";
        case STAGE_TOP_P:
            return "top_p";
        case STAGE_MIN_P:
            return "min_p";
        case N_STAGES:
            break;
    }
    return "unknown";
}

int sample_argmax(const float *logits, int n) {
    int best = 0;
    for (int i = 1; i < n; i++) {
        if (logits[i] > logits[best]) best = i;
    }
    return best;
}

/* A candidate for sorting: descending key, then ascending id. */
typedef struct {
    float key;
    int id;
} KeyedId;

static int compare_keyed_desc(const void *a, const void *b) {
    const KeyedId *x = a, *y = b;
    if (x->key != y->key) return x->key > y->key ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

bool sampler_init(Sampler *s, int vocab_size, const SamplerParams *p, StepError *err) {
    memset(s, 0, sizeof *s);
    if (!sampler_params_validate(p, err)) return false;
    size_t V = (size_t)vocab_size;
    s->vocab_size = vocab_size;
    s->params = *p;
    s->rng.state = p->seed;
    s->ids = malloc(V * sizeof(int));
    s->values = malloc(V * sizeof(float));
    s->probs = malloc(V * sizeof(float));
    s->sorted = malloc(V * sizeof(int));
    s->final_probs = malloc(V * sizeof(float));
    s->kept_store = malloc(N_STAGES * V * sizeof(int));
    s->order_scratch = malloc(V * sizeof(KeyedId));
    if (!s->ids || !s->values || !s->probs || !s->sorted || !s->final_probs || !s->kept_store ||
        !s->order_scratch) {
        sampler_free(s);
        return step_fail(err, "sampler: out of memory for %d tokens", vocab_size);
    }
    return true;
}

void sampler_free(Sampler *s) {
    free(s->ids);
    free(s->values);
    free(s->probs);
    free(s->sorted);
    free(s->final_probs);
    free(s->kept_store);
    free(s->order_scratch);
    memset(s, 0, sizeof *s);
}

/* Sort the n candidates by descending key[j] (ties: lower id) into out ids.
 * Only candidates with key >= floor take part (pass -INFINITY for all).
 * Returns how many were sorted. */
static int sort_candidates(Sampler *s, const float *key, int n, float floor, int *out) {
    KeyedId *pairs = s->order_scratch;
    int m = 0;
    for (int j = 0; j < n; j++) {
        if (key[j] >= floor) pairs[m++] = (KeyedId){key[j], s->ids[j]};
    }
    qsort(pairs, (size_t)m, sizeof *pairs, compare_keyed_desc);
    for (int j = 0; j < m; j++) out[j] = pairs[j].id;
    return m;
}

/* Where candidate `id` sits among the n candidates (ids ascending). */
static int candidate_index(const Sampler *s, int n, int id) {
    int lo = 0, hi = n - 1;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (s->ids[mid] < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Keep only the candidates whose id is in keep[0..k), preserving id order
 * in ids/values/probs. */
static int keep_only(Sampler *s, int n, const int *keep, int k) {
    float *mark = s->final_probs; /* scratch: 1 = keep */
    for (int j = 0; j < n; j++) mark[j] = 0.0f;
    for (int i = 0; i < k; i++) mark[candidate_index(s, n, keep[i])] = 1.0f;
    int m = 0;
    for (int j = 0; j < n; j++) {
        if (mark[j] == 0.0f) continue;
        s->ids[m] = s->ids[j], s->values[m] = s->values[j], s->probs[m] = s->probs[j];
        m++;
    }
    return m;
}

/* probs[j] = softmax(values)[j] over the n candidates, summed in id order
 * (the arithmetic of run.c's softmax). */
static void candidate_softmax(Sampler *s, int n) {
    memcpy(s->probs, s->values, (size_t)n * sizeof(float));
    softmax_forward(s->probs, n);
}

static StageResult *record_stage(Sampler *s, int slot, SamplerStage stage, bool active) {
    StageResult *r = &s->stages[slot];
    *r = (StageResult){stage, active, 0, NULL, 0.0f};
    return r;
}

/* Top-k: the k largest logits survive; ties at the boundary go to the
 * lower id. */
static int stage_top_k(Sampler *s, int n, StageResult *r) {
    int *kept = s->kept_store + (size_t)STAGE_TOP_K * s->vocab_size;
    int k = s->params.top_k;
    int m = sort_candidates(s, s->values, n, -INFINITY, kept);
    r->n_kept = k < m ? k : m;
    r->kept = kept;
    return keep_only(s, n, kept, r->n_kept);
}

/* Top-p: the smallest set, taken in descending probability, whose mass
 * reaches p. Only tokens with prob >= (1 - p) / (n - 1) can belong to it
 * (the rest together weigh less than 1 - p), so only those are sorted. */
static int stage_top_p(Sampler *s, int n, StageResult *r) {
    int *kept = s->kept_store + (size_t)STAGE_TOP_P * s->vocab_size;
    float p = s->params.top_p;
    candidate_softmax(s, n);
    float floor = n > 1 ? (1.0f - p) / (float)(n - 1) : 0.0f;
    /* sort_candidates reads keys aligned with ids: probs are. */
    int m = sort_candidates(s, s->probs, n, floor, kept);
    float mass = 0.0f;
    int count = m;
    for (int j = 0; j < m; j++) {
        mass += s->probs[candidate_index(s, n, kept[j])];
        if (mass >= p) {
            count = j + 1;
            break;
        }
    }
    r->n_kept = count;
    r->kept = kept;
    r->mass = mass;
    return keep_only(s, n, kept, count);
}

/* Min-p: tokens at least min_p × the top probability survive. */
static int stage_min_p(Sampler *s, int n, bool probs_valid, StageResult *r) {
    int *kept = s->kept_store + (size_t)STAGE_MIN_P * s->vocab_size;
    if (!probs_valid) candidate_softmax(s, n);
    float top = 0.0f;
    for (int j = 0; j < n; j++) top = s->probs[j] > top ? s->probs[j] : top;
    r->n_kept = sort_candidates(s, s->probs, n, s->params.min_p * top, kept);
    r->kept = kept;
    return keep_only(s, n, kept, r->n_kept);
}

/* Sort the n survivors by descending probability into s->sorted, with
 * their probabilities at the latest softmax in s->final_probs; returns
 * their total mass, summed in that order (as run.c's top-p does). */
static float sort_survivors(Sampler *s, int n) {
    int m = sort_candidates(s, s->probs, n, -INFINITY, s->sorted);
    float total = 0.0f;
    for (int j = 0; j < m; j++) {
        s->final_probs[j] = s->probs[candidate_index(s, n, s->sorted[j])];
        total += s->final_probs[j];
    }
    s->n_survivors = m;
    s->survivors = s->sorted;
    s->survivor_probs = s->final_probs;
    return total;
}

/* Renormalise the recorded survivors' probabilities so they sum to 1. The
 * sum is redone in double, so that the record sums to 1 within float
 * rounding of each term, whatever the count (the draw used `total`). */
static void renormalise_survivors(Sampler *s) {
    double sum = 0.0;
    for (int j = 0; j < s->n_survivors; j++) sum += s->final_probs[j];
    for (int j = 0; j < s->n_survivors; j++) s->final_probs[j] = (float)(s->final_probs[j] / sum);
}

/* Long, and kept whole on purpose: it is the sampler as a reader follows it,
 * logits to token, with each stage in the order the user chose and its
 * record (kept ids, mass) written where the trace reads it; its pieces
 * (stage_top_k and its siblings, renormalise_survivors) are above. */
bool sampler_sample(Sampler *s, const float *logits, int *token, StepError *err) {
    const SamplerParams *p = &s->params;
    int n = 0;
    for (int i = 0; i < s->vocab_size; i++) {
        if (isnan(logits[i])) return step_fail(err, "logit %d is NaN", i);
        if (logits[i] == INFINITY) /* softmax would be inf / inf: NaN for every token */
            return step_fail(err, "logit %d is +inf: no probability can be computed", i);
        if (logits[i] == -INFINITY) continue; /* masked: never drawn */
        s->ids[n] = i, s->values[n] = logits[i], n++;
    }
    if (n == 0) return step_fail(err, "every logit is -inf: no token can be drawn");
    memset(s->stages, 0, sizeof s->stages);
    s->greedy = p->temperature == 0.0f;
    if (s->greedy) {
        /* T = 0: the argmax, lowest id on ties; nothing is drawn. */
        int best = 0;
        for (int j = 1; j < n; j++) best = s->values[j] > s->values[best] ? j : best;
        s->token = *token = s->ids[best];
        s->sorted[0] = s->token, s->final_probs[0] = 1.0f;
        s->n_survivors = s->n_candidates = 1;
        s->survivors = s->sorted, s->survivor_probs = s->final_probs;
        s->u = 0.0f;
        return true;
    }
    bool probs_valid = false; /* probs match the current values */
    for (int slot = 0; slot < N_STAGES; slot++) {
        SamplerStage stage = p->order[slot];
        switch (stage) {
            case STAGE_TEMPERATURE: {
                StageResult *r = record_stage(s, slot, stage, true);
                for (int j = 0; j < n; j++) {
                    s->values[j] /= p->temperature;
                    if (s->values[j] == INFINITY) /* -inf: a probability of 0, harmless */
                        return step_fail(err,
                                         "logit %d / temperature %g overflows a float: no "
                                         "probability can be computed",
                                         s->ids[j], (double)p->temperature);
                }
                r->n_kept = n;
                probs_valid = false;
                break;
            }
            case STAGE_TOP_K: {
                StageResult *r = record_stage(s, slot, stage, p->top_k > 0);
                r->n_kept = n; /* k >= candidates keeps them all */
                if (p->top_k > 0 && p->top_k < n) n = stage_top_k(s, n, r), probs_valid = false;
                break;
            }
            case STAGE_TOP_P: {
                StageResult *r = record_stage(s, slot, stage, p->top_p < 1.0f);
                r->n_kept = n;
                if (p->top_p < 1.0f) n = stage_top_p(s, n, r), probs_valid = true;
                break;
            }
            case STAGE_MIN_P: {
                StageResult *r = record_stage(s, slot, stage, p->min_p > 0.0f);
                r->n_kept = n;
                if (p->min_p > 0.0f) n = stage_min_p(s, n, probs_valid, r), probs_valid = true;
                break;
            }
            case N_STAGES:
                break;
        }
        StageResult *r = &s->stages[slot];
        if (s->record_every_stage && stage != STAGE_TEMPERATURE && r->kept == NULL) {
            int *kept = s->kept_store + (size_t)stage * s->vocab_size;
            r->n_kept = sort_candidates(s, s->values, n, -INFINITY, kept);
            r->kept = kept;
        }
    }
    /* No cut can empty the set of finite logits (each keeps its top token);
     * were one to, there would be nothing to draw from: an error, not a
     * token read from outside the survivors. */
    if (n == 0) return step_fail(err, "the sampler's cuts left no token to draw");
    /* The draw. Weights are the survivors' probabilities from the latest
     * softmax (a fresh one if none, or if the temperature came after it). */
    if (!probs_valid) candidate_softmax(s, n);
    s->n_candidates = n;
    s->u = xorshift_f32(&s->rng);
    bool any_filter = p->top_k > 0 || p->top_p < 1.0f || p->min_p > 0.0f;
    if (!any_filter) {
        /* Every filter off: walk the ids in index order with r = u, as run.c's
         * sample_mult does. The probabilities already sum to 1. */
        float cdf = 0.0f;
        s->token = s->ids[n - 1];
        for (int j = 0; j < n; j++) {
            cdf += s->probs[j];
            if (s->u < cdf) {
                s->token = s->ids[j];
                break;
            }
        }
        s->n_survivors = 0; /* recorded only when asked for */
        if (s->record_survivors) {
            sort_survivors(s, n);
            renormalise_survivors(s);
        }
    } else {
        /* Inverse CDF over the survivors in descending probability, scaled
         * by their mass: r = u · total, the first whose running sum exceeds
         * r (run.c's sample_topp). */
        float total = sort_survivors(s, n);
        float r = s->u * total, cdf = 0.0f;
        s->token = s->sorted[s->n_survivors - 1];
        for (int j = 0; j < s->n_survivors; j++) {
            cdf += s->final_probs[j];
            if (r < cdf) {
                s->token = s->sorted[j];
                break;
            }
        }
        renormalise_survivors(s);
    }
    *token = s->token;
    return true;
}
