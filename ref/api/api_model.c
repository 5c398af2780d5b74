/* api/api_model.c: libstepwise (stepwise.h) over the engine's own parts:
 * model_open, score_tokens with an observer that keeps hooks, generate
 * (the runs and their diff: api_runs.c). */
#include "ref/api/stepwise.h"

#include <fnmatch.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ref/generate.h"
#include "ref/formats/model_open.h"
#include "ref/model/model_prepare.h"
#include "ref/sampler.h"
#include "ref/score.h"
#include "ref/kernels/threads.h"
#include "ref/util/build_info.h"
#include "ref/api/api_status.h"

#define SW_HOOKS_MAX 16 /* comma-separated globs in one sw_score call */

/* The lock: a call that runs the model (its thread pool takes one job at a
 * time, and its scratch is one) holds it for the call's whole length
 * (stepwise.h, "Threads"). */
struct sw_model {
    Model model;
    Tokenizer tok;
    bool has_tokenizer;
    pthread_mutex_t lock;
};

/* One captured hook: its values at every position, [positions, width]. */
typedef struct {
    char name[64];
    int point, layer, width;
    float *values;
} CapturedHook;

struct sw_scores {
    int positions, vocab_size;
    float *logits;
    double cross_entropy;
    CapturedHook *hooks;
    int n_hooks, cap_hooks;
};

#define STEPWISE_STRING(x) #x
#define STEPWISE_NUMBER(x) STEPWISE_STRING(x)

const char *stepwise_version(void) {
    return "stepwise " STEPWISE_VERSION " (api " STEPWISE_NUMBER(STEPWISE_API_VERSION) ")";
}

/* ---- a model ---- */

sw_status sw_model_open(const char *path, const char *tokenizer, const sw_open_options *options,
                        sw_model **out, sw_error *err) {
    if (out == NULL) return api_fail(err, SW_ERR_INPUT, "sw_model_open: out is NULL");
    *out = NULL;
    sw_open_options o = options != NULL ? *options : (sw_open_options){0};
    if (o.threads < 0 || o.threads > THREADS_MAX)
        return api_fail(err, SW_ERR_INPUT, "threads must be in [0, %d], got %d", THREADS_MAX,
                        o.threads);
    sw_model *m = calloc(1, sizeof *m);
    if (m == NULL) return api_fail(err, SW_ERR_MEMORY, "out of memory");
    if (pthread_mutex_init(&m->lock, NULL) != 0) {
        free(m);
        return api_fail(err, SW_ERR_MEMORY, "sw_model_open: cannot make the model's lock");
    }
    StepError e;
    /* a checkpoint without a tokenizer opens too: scoring ids needs none */
    bool want_tok = tokenizer != NULL || model_path_has_tokenizer(path);
    bool opened = model_open(path, tokenizer, &m->model, want_tok ? &m->tok : NULL,
                             o.weights_f32 ? WEIGHTS_F32 : WEIGHTS_STORED, NULL, NULL, &e);
    if (!opened) {
        pthread_mutex_destroy(&m->lock);
        free(m);
        return api_fail_step(err, &e);
    }
    m->has_tokenizer = want_tok;
    /* copied before packing: the packed copies are made from memory that is
     * the process's own, and nothing reads the files after this */
    bool ready =
        (!o.copy_weights || model_copy_files(&m->model, &e)) &&
        model_prepare(&m->model,
                      &(ModelPrepare){.kernels = o.plain_kernels ? KERNELS_PLAIN : KERNELS_FAST,
                                      .threads = o.threads > 0 ? o.threads : 1,
                                      .gelu_f16_table = o.gelu_ggml != 0,
                                      .kv = (KvType)o.kv_dtype,
                                      .kv_rounding_ggml = o.kv_rounding_ggml != 0},
                      &e);
    if (!ready) {
        sw_model_free(m);
        return api_fail_step(err, &e);
    }
    *out = m;
    return api_ok(err);
}

void sw_model_free(sw_model *m) {
    if (m == NULL) return;
    model_free(&m->model);
    if (m->has_tokenizer) tokenizer_free(&m->tok);
    pthread_mutex_destroy(&m->lock);
    free(m);
}

sw_model_shape sw_model_get_shape(const sw_model *m) {
    if (m == NULL) return (sw_model_shape){0};
    const Config *c = &m->model.config;
    return (sw_model_shape){.vocab_size = c->vocab_size,
                            .dim = c->dim,
                            .hidden_dim = c->hidden_dim,
                            .n_layers = c->n_layers,
                            .n_heads = c->n_heads,
                            .n_kv_heads = c->n_kv_heads,
                            .head_dim = config_head_dim(c),
                            .seq_len = c->seq_len};
}

/* ---- tokens ---- */

sw_status sw_tokenize(const sw_model *m, const char *text, int add_bos, int *ids, int capacity,
                      int *n, sw_error *err) {
    if (m == NULL || text == NULL || n == NULL || (ids == NULL && capacity > 0))
        return api_fail(err, SW_ERR_INPUT, "sw_tokenize: a NULL argument");
    if (capacity < 0)
        return api_fail(err, SW_ERR_INPUT, "sw_tokenize: capacity %d is negative", capacity);
    if (!m->has_tokenizer)
        return api_fail(err, SW_ERR_INPUT, "sw_tokenize: the model was opened without a tokenizer");
    int *got = NULL, count = 0;
    StepError e;
    /* no lock: encoding only reads the tokenizer (its regex scratch is per call) */
    if (!tokenizer_encode(&m->tok, text, add_bos != 0, &got, &count, &e))
        return api_fail_step(err, &e);
    *n = count;
    if (count > capacity) {
        free(got);
        return api_fail(err, SW_ERR_SMALL, "sw_tokenize: %d ids, room for %d", count, capacity);
    }
    if (count > 0) memcpy(ids, got, (size_t)count * sizeof *ids);
    free(got);
    return api_ok(err);
}

/* ---- scoring ---- */

/* The observer sw_score hands the engine: which hooks, and where they go. */
typedef struct {
    char *patterns[SW_HOOKS_MAX];
    int n_patterns;
    /* Set as the engine asks, which it may do from the pool's threads at
     * once (attention's heads): atomics, each only ever set to true. */
    atomic_bool matched[SW_HOOKS_MAX]; /* pattern i matched a hook the model fired */
    atomic_bool fired[N_HOOKS];        /* the points the model fired, for the error */
    int heads; /* the model's query heads: a per-head hook's rows are [heads, positions] */
    sw_scores *s;
    bool out_of_memory;
} HookCatcher;

static bool per_head(int point) {
    return point == HOOK_ATTN_SCORES || point == HOOK_ATTN_PATTERN;
}

static bool catcher_wants(void *ctx, HookPoint point, int layer, int pos) {
    HookCatcher *c = ctx;
    (void)pos;
    if (point == HOOK_LOGITS || point == HOOK_KV_ROW || point == HOOK_KV_SNAPSHOT)
        return false; /* the logits come whole */
    atomic_store_explicit(&c->fired[point], true, memory_order_relaxed);
    char name[64];
    hook_name(point, layer, name, sizeof name);
    bool wanted = false;
    for (int i = 0; i < c->n_patterns; i++) {
        if (fnmatch(c->patterns[i], name, 0) != 0) continue;
        atomic_store_explicit(&c->matched[i], true, memory_order_relaxed);
        wanted = true;
    }
    return wanted;
}

/* The first glob that matched nothing, as an error naming the hooks the
 * model fired ("blocks.N.x" for a block's, N below n_layers). */
static sw_status unmatched_glob(const HookCatcher *c, int n_layers, sw_error *err) {
    int i = 0;
    while (i < c->n_patterns && atomic_load(&c->matched[i])) i++;
    if (i == c->n_patterns) return SW_OK;
    char names[400] = "";
    size_t used = 0;
    for (int p = 0; p < N_HOOKS && used < sizeof names; p++) {
        if (!atomic_load(&c->fired[p])) continue;
        char name[64];
        hook_name((HookPoint)p, 0, name, sizeof name);
        /* "blocks.0.mlp_out": what follows the layer's number */
        const char *rest =
            hook_in_block((HookPoint)p) ? strchr(name + sizeof "blocks." - 1, '.') : NULL;
        int w = rest != NULL ? snprintf(names + used, sizeof names - used, "%sblocks.N%s",
                                        used > 0 ? ", " : "", rest)
                             : snprintf(names + used, sizeof names - used, "%s%s",
                                        used > 0 ? ", " : "", name);
        used += w > 0 ? (size_t)w : 0;
    }
    return api_fail(err, SW_ERR_INPUT,
                    "sw_score: hooks \"%s\" matches no hook of this model; it fires %s (N from 0 "
                    "to %d; the logits come whole, not as a hook)",
                    c->patterns[i], names, n_layers - 1);
}

static CapturedHook *find_hook(HookCatcher *c, const HookTensor *t) {
    sw_scores *s = c->s;
    for (int i = 0; i < s->n_hooks; i++)
        if (s->hooks[i].point == (int)t->point && s->hooks[i].layer == t->layer)
            return &s->hooks[i];
    if (s->n_hooks == s->cap_hooks) {
        int cap = s->cap_hooks > 0 ? 2 * s->cap_hooks : 32;
        CapturedHook *grown = realloc(s->hooks, (size_t)cap * sizeof *grown);
        if (grown == NULL) return NULL;
        s->hooks = grown, s->cap_hooks = cap;
    }
    /* a per-head hook: [heads, positions] a position, each head's row
     * padded past its position as the causal mask makes it (-inf scores,
     * 0 pattern) */
    int width = per_head(t->point) ? c->heads * s->positions : t->rows * t->cols;
    CapturedHook *h = &s->hooks[s->n_hooks];
    *h = (CapturedHook){.point = (int)t->point, .layer = t->layer, .width = width};
    hook_name(t->point, t->layer, h->name, sizeof h->name);
    size_t count = (size_t)s->positions * (size_t)width;
    h->values = calloc(count, sizeof(float));
    if (h->values == NULL) return NULL;
    for (size_t i = 0; t->point == HOOK_ATTN_SCORES && i < count; i++) h->values[i] = -INFINITY;
    s->n_hooks++;
    return h;
}

static void catcher_emit(void *ctx, const HookTensor *t) {
    HookCatcher *c = ctx;
    CapturedHook *h = find_hook(c, t);
    int n = t->rows * t->cols, positions = c->s->positions;
    bool fits =
        h != NULL && t->pos >= 0 && t->pos < positions &&
        (per_head(t->point) ? t->head >= 0 && t->head < c->heads && n <= positions : n == h->width);
    if (!fits) {
        c->out_of_memory |= h == NULL;
        return;
    }
    size_t at = (size_t)t->pos * (size_t)h->width +
                (per_head(t->point) ? (size_t)t->head * (size_t)positions : 0);
    memcpy(h->values + at, t->a, (size_t)n * sizeof(float));
}

/* Split hooks ("a,b,c") into c's patterns (owned copies). */
static bool catcher_init(HookCatcher *c, const char *hooks, sw_scores *s) {
    memset(c, 0, sizeof *c); /* every flag false */
    c->s = s;
    for (const char *at = hooks; at != NULL;) /* "", "a," and "a,,b" hold an empty glob */ {
        const char *end = strchr(at, ',');
        size_t len = end != NULL ? (size_t)(end - at) : strlen(at);
        if (c->n_patterns == SW_HOOKS_MAX || len == 0) return false;
        char *p = malloc(len + 1);
        if (p == NULL) return false;
        memcpy(p, at, len), p[len] = '\0';
        c->patterns[c->n_patterns++] = p;
        at = end != NULL ? end + 1 : NULL;
    }
    return true;
}

static void catcher_free(HookCatcher *c) {
    for (int i = 0; i < c->n_patterns; i++) free(c->patterns[i]);
}

sw_status sw_score(sw_model *m, const int *ids, int n, const char *hooks, sw_scores **out,
                   sw_error *err) {
    if (m == NULL || ids == NULL || out == NULL)
        return api_fail(err, SW_ERR_INPUT, "sw_score: a NULL argument");
    *out = NULL;
    const Config *c = &m->model.config;
    if (hooks != NULL && strlen(hooks) > 4096)
        return api_fail(err, SW_ERR_INPUT, "sw_score: hooks is %zu characters long, at most 4096",
                        strlen(hooks));
    if (n < 2 || n > c->seq_len)
        return api_fail(err, SW_ERR_INPUT, "sw_score: %d ids, the model takes 2 to %d", n,
                        c->seq_len);
    for (int i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= c->vocab_size)
            return api_fail(err, SW_ERR_INPUT,
                            "sw_score: id %d at %d is outside the vocabulary [0, %d)", ids[i], i,
                            c->vocab_size);
    sw_scores *s = calloc(1, sizeof *s);
    if (s == NULL) return api_fail(err, SW_ERR_MEMORY, "out of memory");
    s->positions = n, s->vocab_size = c->vocab_size;
    HookCatcher catcher;
    bool caught = catcher_init(&catcher, hooks, s);
    catcher.heads = c->n_heads;
    if (!caught) {
        catcher_free(&catcher), sw_scores_free(s);
        return api_fail(err, SW_ERR_INPUT,
                        "sw_score: hooks takes 1 to %d globs separated by commas, none empty",
                        SW_HOOKS_MAX);
    }
    StepObserver obs = {.ctx = &catcher, .wants = catcher_wants, .emit = catcher_emit};
    ScoreResult r = {.keep_logits = true};
    StepError e;
    pthread_mutex_lock(&m->lock);
    bool scored =
        score_tokens(&m->model, ids, n, 0, NULL, catcher.n_patterns > 0 ? &obs : NULL, &r, &e);
    pthread_mutex_unlock(&m->lock);
    sw_status status = !scored                 ? api_fail_step(err, &e)
                       : catcher.out_of_memory ? api_fail(err, SW_ERR_MEMORY, "out of memory")
                                               : unmatched_glob(&catcher, c->n_layers, err);
    catcher_free(&catcher);
    if (status != SW_OK) {
        score_result_free(&r), sw_scores_free(s);
        return status;
    }
    s->logits = r.logits, r.logits = NULL; /* kept, not copied */
    s->cross_entropy = r.cross_entropy;
    score_result_free(&r);
    *out = s;
    return api_ok(err);
}

void sw_scores_free(sw_scores *s) {
    if (s == NULL) return;
    for (int i = 0; i < s->n_hooks; i++) free(s->hooks[i].values);
    free(s->hooks), free(s->logits), free(s);
}

int sw_scores_positions(const sw_scores *s) {
    return s != NULL ? s->positions : 0;
}
int sw_scores_vocab_size(const sw_scores *s) {
    return s != NULL ? s->vocab_size : 0;
}
const float *sw_scores_logits(const sw_scores *s) {
    return s != NULL ? s->logits : NULL;
}
double sw_scores_cross_entropy(const sw_scores *s) {
    return s != NULL ? s->cross_entropy : 0;
}
int sw_scores_hook_count(const sw_scores *s) {
    return s != NULL ? s->n_hooks : 0;
}
const char *sw_scores_hook_name(const sw_scores *s, int i) {
    return s != NULL && i >= 0 && i < s->n_hooks ? s->hooks[i].name : NULL;
}
const float *sw_scores_hook_values(const sw_scores *s, int i, int *width) {
    if (width != NULL) *width = 0;
    if (s == NULL || i < 0 || i >= s->n_hooks) return NULL;
    if (width != NULL) *width = s->hooks[i].width;
    return s->hooks[i].values;
}

/* ---- generating ---- */

sw_status sw_generate(sw_model *m, const int *prompt, int n_prompt, const sw_sampler *sampler,
                      int max_new, int *out, int capacity, int *n_out, sw_error *err) {
    if (m == NULL || prompt == NULL || n_out == NULL || (out == NULL && capacity > 0))
        return api_fail(err, SW_ERR_INPUT, "sw_generate: a NULL argument");
    if (max_new < 1) return api_fail(err, SW_ERR_INPUT, "sw_generate: max_new must be >= 1");
    if (capacity < 0)
        return api_fail(err, SW_ERR_INPUT, "sw_generate: capacity %d is negative", capacity);
    int seq_len = m->model.config.seq_len;
    if (n_prompt < 1 || n_prompt > seq_len)
        return api_fail(err, SW_ERR_INPUT, "sw_generate: %d prompt ids, the model takes 1 to %d",
                        n_prompt, seq_len);
    GenerateOptions opt;
    generate_options_default(&opt);
    opt.steps = max_new;
    if (sampler != NULL) {
        opt.sampler.temperature = sampler->temperature;
        opt.sampler.top_k = sampler->top_k;
        opt.sampler.top_p = sampler->top_p;
        opt.sampler.min_p = sampler->min_p;
        opt.sampler.seed = sampler->seed; /* 0 is refused below, as the CLI refuses it */
    }
    if (m->has_tokenizer) opt.bos_id = m->tok.bos_id, opt.eos_id = m->tok.eos_id;
    StepError e;
    GenerateResult r = {0};
    bool valid = generate_options_validate(&opt, &m->model.config, &e) &&
                 sampler_params_validate(&opt.sampler, &e);
    if (valid) pthread_mutex_lock(&m->lock);
    bool done = valid && generate(&m->model, prompt, n_prompt, &opt, NULL, NULL, &r, &e);
    if (valid) pthread_mutex_unlock(&m->lock);
    if (!done) {
        generate_result_free(&r);
        return api_fail_step(err, &e);
    }
    *n_out = r.n_tokens;
    bool fits = r.n_tokens <= capacity;
    if (fits) memcpy(out, r.tokens, (size_t)r.n_tokens * sizeof *out);
    generate_result_free(&r);
    return fits ? api_ok(err)
                : api_fail(err, SW_ERR_SMALL, "sw_generate: %d tokens, room for %d", *n_out,
                           capacity);
}
