/* sampler.h: turning a logit vector into the next token, one visible stage
 * at a time: temperature, top-k, top-p, min-p (in a chosen order), then a
 * softmax over the survivors and one seeded draw. docs/sampling.md explains
 * each stage with the (2, 1, 0) example. */
#ifndef STEPWISE_SAMPLER_H
#define STEPWISE_SAMPLER_H

#include <stdbool.h>
#include <stdint.h>

#include "ref/util/error.h"
#include "ref/util/rng.h"

typedef enum { STAGE_TEMPERATURE, STAGE_TOP_K, STAGE_TOP_P, STAGE_MIN_P, N_STAGES } SamplerStage;

typedef struct {
    float temperature; /* logits are divided by it; 0 means greedy (argmax, no draw) */
    int top_k;         /* keep the k highest logits; 0 = off */
    float top_p;       /* keep the smallest top set with mass >= p; 1 = off */
    float min_p;       /* keep p >= min_p × the top probability; 0 = off */
    SamplerStage order[N_STAGES];
    const char *order_name; /* "default", "hf", "llama.cpp" or "vllm" */
    uint64_t seed;          /* xorshift* state; must not be 0 */
} SamplerParams;

/* Greedy, every filter off, the default order, seed 42. */
void sampler_params_default(SamplerParams *p);

/* Set p->order from a preset name: "default" and "hf" (temperature, top-k,
 * top-p, min-p), "llama.cpp" (top-k, top-p, min-p, temperature), "vllm"
 * (temperature, min-p, top-k, top-p). */
bool sampler_order_parse(SamplerParams *p, const char *name, StepError *err);

/* Check the ranges: temperature >= 0, top_k >= 0, top_p in (0, 1],
 * min_p in [0, 1], seed != 0. */
bool sampler_params_validate(const SamplerParams *p, StepError *err);

const char *sampler_stage_name(SamplerStage s); /* "temperature", "top_k", "top_p", "min_p" */

/* What one stage did in the last draw. */
typedef struct {
    SamplerStage stage;
    bool active;     /* false when the stage is off (k = 0, p = 1, min_p = 0) */
    int n_kept;      /* candidates after the stage */
    const int *kept; /* [n_kept] their ids in descending probability; NULL for temperature */
    float mass;      /* top_p: the probability mass of the kept set */
} StageResult;

/* The sampler: parameters, generator, workspace, and the record of its
 * last draw, which the trace and `stepwise sample` print. */
typedef struct Sampler {
    int vocab_size;
    SamplerParams params;
    XorshiftRng rng;
    /* With every filter off the survivors are the whole vocabulary; sorting
     * them is only done when someone reads the record (a trace). */
    bool record_survivors;
    /* Also record the kept list of filter stages that are off or removed
     * nothing (for `stepwise sample`, whose vocabulary is small). */
    bool record_every_stage;
    /* the last draw */
    bool greedy;                  /* temperature 0: argmax, nothing drawn */
    StageResult stages[N_STAGES]; /* in the order they ran */
    int n_candidates;             /* candidates left for the draw */
    int n_survivors;              /* of them listed below (0: not recorded) */
    const int *survivors;         /* [n_survivors] ids, descending probability */
    const float *survivor_probs;  /* [n_survivors] renormalised: they sum to 1 */
    float u;                      /* the uniform number drawn */
    int token;                    /* the chosen token */
    /* workspace, all [vocab_size] */
    int *ids;            /* candidate ids, always in id order */
    float *values;       /* their logits, divided by the temperature once applied */
    float *probs;        /* their probabilities at the latest softmax */
    int *sorted;         /* survivors by descending probability */
    float *final_probs;  /* renormalised probabilities, aligned with sorted */
    int *kept_store;     /* [N_STAGES, vocab_size] kept lists of the stages */
    void *order_scratch; /* (probability, id) pairs for sorting */
} Sampler;

bool sampler_init(Sampler *s, int vocab_size, const SamplerParams *p, StepError *err);
void sampler_free(Sampler *s);

/* Choose the next token from logits [vocab_size] (not modified) and record
 * every stage. Tokens whose logit is -inf are masked: never drawn. Fails
 * (with err) if a logit is NaN or every token is masked. */
bool sampler_sample(Sampler *s, const float *logits, int *token, StepError *err);

/* Greedy decoding: the index of the largest logit, the lowest index winning
 * ties. No random number is drawn. */
int sample_argmax(const float *logits, int n);

#endif
