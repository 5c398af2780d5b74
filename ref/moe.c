/* moe.c: see moe.h. */
#include "ref/moe.h"

#include <string.h>

#include "ref/kernels/fast_layers.h"
#include "ref/layers.h"
#include "ref/linear.h"

MoeRouting moe_routing(const Config *c) {
    return (MoeRouting){.n_experts = c->n_experts,
                        .k = c->n_experts_used,
                        .groups = c->expert_groups,
                        .groups_used = c->expert_groups_used,
                        .renormalise = c->expert_norm_topk,
                        .scale = c->routed_scaling_factor > 0 ? c->routed_scaling_factor : 1.0f};
}

/* The most probable of experts [0, n) not in taken [n_taken] and (groups
 * > 0) in one of the groups in chosen [n_chosen], each group `per` experts
 * wide; a tie goes to the lower index. */
static int most_probable(const float *probs, int n, const int *taken, int n_taken, int per,
                         const int *chosen, int n_chosen) {
    int best = -1;
    for (int e = 0; e < n; e++) {
        bool out = false, in_group = chosen == NULL;
        for (int i = 0; i < n_taken; i++) out |= taken[i] == e;
        for (int i = 0; i < n_chosen; i++) in_group |= chosen[i] == e / per;
        if (!out && in_group && (best < 0 || probs[e] > probs[best])) best = e; /* strict */
    }
    return best;
}

void moe_route(const MoeRouting *r, const float *logits, float *probs, int *experts,
               float *weights) {
    int E = r->n_experts, k = r->k;
    memcpy(probs, logits, (size_t)E * sizeof(float));
    softmax_forward(probs, E);
    int chosen[64], n_chosen = 0, per = r->groups > 0 ? E / r->groups : E; /* groups <= 64 */
    if (r->groups > 0) {
        float best_in[64]; /* each group's largest probability */
        for (int g = 0; g < r->groups; g++) {
            best_in[g] = probs[g * per];
            for (int e = g * per + 1; e < (g + 1) * per; e++)
                if (probs[e] > best_in[g]) best_in[g] = probs[e];
        }
        for (; n_chosen < r->groups_used; n_chosen++) /* the groups, as the experts below */
            chosen[n_chosen] = most_probable(best_in, r->groups, chosen, n_chosen, 1, NULL, 0);
    }
    for (int j = 0; j < k; j++) { /* the j-th most probable of those not yet chosen */
        experts[j] =
            most_probable(probs, E, experts, j, per, r->groups > 0 ? chosen : NULL, n_chosen);
        weights[j] = probs[experts[j]];
    }
    if (!r->renormalise && r->scale != 1.0f) /* DeepSeek-V2's routed_scaling_factor */
        for (int j = 0; j < k; j++) weights[j] *= r->scale;
    if (!r->renormalise) return;
    float sum = 0.0f;
    for (int j = 0; j < k; j++) sum += weights[j];
    for (int j = 0; j < k; j++) weights[j] /= sum;
}

unsigned long long moe_token_macs(const Config *c) {
    unsigned long long d = (unsigned long long)c->dim;
    unsigned long long experts = (unsigned long long)(c->n_experts_used + c->n_shared_experts);
    return (unsigned long long)c->n_experts * d +
           experts * 3ull * (unsigned long long)c->expert_hidden_dim * d;
}

/* The row of a pass that token t (of all N) belongs to, and t's position. */
static int row_of(const ForwardRow *rows, int n_rows, int t, int *pos) {
    int t0 = 0, r = 0;
    for (; r < n_rows - 1 && t >= t0 + rows[r].n_tokens; r++) t0 += rows[r].n_tokens;
    *pos = rows[r].pos0 + (t - t0);
    return r;
}

/* Route all N tokens of s->xb through layer l's router: logits, probs,
 * chosen experts and weights into s's scratch, each shown to the hooks and
 * the observers. */
static void route_all(const Model *m, PassScratch *s, const ForwardRow *rows, int n_rows, int N,
                      int l) {
    const Config *c = &m->config;
    int dim = c->dim, E = c->n_experts, k = c->n_experts_used;
    const float *router = model_vector(m, VEC_ROUTER, config_moe_slot(c, l));
    matmul_forward(s->moe_logits, s->xb, router, N, dim, E); /* [N, E] */
    MoeRouting routing = moe_routing(c);
    for (int t = 0; t < N; t++)
        moe_route(&routing, s->moe_logits + (size_t)t * E, s->moe_probs + (size_t)t * E,
                  s->moe_experts + (size_t)t * k, s->moe_weights + (size_t)t * k);
    for (int r = 0, t0 = 0; r < n_rows; t0 += rows[r++].n_tokens) {
        HookSite site = {
            .obs = rows[r].obs, .layer = l, .pos0 = rows[r].pos0, .tokens = rows[r].tokens};
        hook_emit_rows(&site, HOOK_MOE_ROUTER, s->moe_logits + (size_t)t0 * E, rows[r].n_tokens, 1,
                       E);
        const StepObserver *obs = rows[r].obs;
        for (int t = 0; obs != NULL && obs->route != NULL && t < rows[r].n_tokens; t++) {
            size_t at = (size_t)(t0 + t);
            RouteRecord rec = {.layer = l,
                               .pos = rows[r].pos0 + t,
                               .token = rows[r].tokens[t],
                               .n_experts = E,
                               .k = k,
                               .logits = s->moe_logits + at * E,
                               .probs = s->moe_probs + at * E,
                               .experts = s->moe_experts + at * k,
                               .weights = s->moe_weights + at * k};
            obs->route(obs->ctx, &rec);
        }
    }
}

/* Each row's work for the layer: its tokens' router and expert
 * multiply-adds, the router read once and each expert its tokens chose,
 * as the expert is held. */
static void count_moe(const Model *m, PassScratch *s, const ForwardRow *rows, int n_rows, int l) {
    const Config *c = &m->config;
    int E = c->n_experts, k = c->n_experts_used;
    for (int r = 0, t0 = 0; r < n_rows; t0 += rows[r++].n_tokens) {
        WorkCount *w = &rows[r].state->work;
        w->macs += (uint64_t)rows[r].n_tokens * moe_token_macs(c);
        w->weight_bytes += (uint64_t)E * (uint64_t)c->dim * sizeof(float);
        for (int e = 0; e < E; e++) {
            bool used = false;
            for (int i = t0 * k; !used && i < (t0 + rows[r].n_tokens) * k; i++)
                used = s->moe_experts[i] == e;
            for (int part = 0; used && part < EXPERT_MATRICES; part++)
                w->weight_bytes += matrix_bytes(model_expert(m, l, e, (ExpertKind)part));
        }
        for (int k = MAT_SHARED_GATE; k <= MAT_SHARED_UP; k++) /* 0 bytes without them */
            w->weight_bytes += matrix_bytes(&m->layers[l].m[k]);
    }
}

/* s->xb2 [N, dim] += shared(s->xb): the shared experts, one SwiGLU MLP of
 * n_shared_experts x expert_hidden_dim every token runs (DeepSeek-V2),
 * through hb, hb2 [N, S] and moe_y [N, dim]. */
static void shared_experts(const Model *m, PassScratch *s, int N, int l) {
    const Matrix *mats = m->layers[l].m;
    int dim = m->config.dim, S = m->config.n_shared_experts * m->config.expert_hidden_dim;
    LinearInput x = linear_input(s, s->xb, N, &mats[MAT_SHARED_GATE]); /* once, for both */
    linear_forward(m, s->hb, &x, &mats[MAT_SHARED_GATE]);
    linear_forward(m, s->hb2, &x, &mats[MAT_SHARED_UP]);
    if (m->run.mlp == KERNEL_FAST)
        swiglu_many_forward(s->hb, s->hb2, N * S, s->exp);
    else
        swiglu_forward(s->hb, s->hb2, N * S);
    LinearInput hidden = linear_input(s, s->hb, N, &mats[MAT_SHARED_DOWN]);
    linear_forward(m, s->moe_y, &hidden, &mats[MAT_SHARED_DOWN]);
    residual_forward(s->xb2, s->moe_y, N * dim);
}

void moe_forward(const Model *m, PassScratch *s, const ForwardRow *rows, int n_rows, int N, int l) {
    const Config *c = &m->config;
    int dim = c->dim, E = c->n_experts, k = c->n_experts_used, eh = c->expert_hidden_dim;
    route_all(m, s, rows, n_rows, N, l);
    memset(s->xb2, 0, (size_t)N * dim * sizeof(float)); /* out [N, dim], summed into */
    for (int e = 0; e < E; e++) { /* ascending: each token's sum in expert order */
        int n = 0;                /* the tokens that chose e, gathered: x [n, dim] */
        for (int t = 0; t < N; t++)
            for (int j = 0; j < k; j++)
                if (s->moe_experts[(size_t)t * k + j] == e) {
                    s->moe_rows[n] = t, s->moe_gate[n] = s->moe_weights[(size_t)t * k + j];
                    memcpy(s->moe_x + (size_t)n++ * dim, s->xb + (size_t)t * dim,
                           (size_t)dim * sizeof(float));
                }
        if (n == 0) continue;
        /* each a linear over the kernels and threads the block's use; the
         * gate and the up projection read one input, prepared once */
        const Matrix *gate = model_expert(m, l, e, EXPERT_GATE);
        LinearInput x = linear_input(s, s->moe_x, n, gate);
        linear_forward(m, s->moe_h1, &x, gate);                             /* [n, eh] */
        linear_forward(m, s->moe_h3, &x, model_expert(m, l, e, EXPERT_UP)); /* [n, eh] */
        if (m->run.mlp == KERNEL_FAST)
            swiglu_many_forward(s->moe_h1, s->moe_h3, n * eh, s->exp);
        else
            swiglu_forward(s->moe_h1, s->moe_h3, n * eh);
        const Matrix *down = model_expert(m, l, e, EXPERT_DOWN);
        LinearInput hidden = linear_input(s, s->moe_h1, n, down);
        linear_forward(m, s->moe_y, &hidden, down); /* [n, dim] */
        for (int i = 0; i < n; i++) {
            int t = s->moe_rows[i], pos, r = row_of(rows, n_rows, t, &pos);
            const float *y = s->moe_y + (size_t)i * dim;
            if (hook_wanted(rows[r].obs, HOOK_MOE_EXPERT, l, pos)) {
                HookTensor h = {.point = HOOK_MOE_EXPERT,
                                .layer = l,
                                .pos = pos,
                                .head = e,
                                .token = rows[r].tokens[pos - rows[r].pos0],
                                .a = y,
                                .rows = 1,
                                .cols = dim};
                rows[r].obs->emit(rows[r].obs->ctx, &h);
            }
            float *out = s->xb2 + (size_t)t * dim, g = s->moe_gate[i];
            for (int d = 0; d < dim; d++) out[d] += g * y[d];
        }
    }
    if (c->n_shared_experts > 0) shared_experts(m, s, N, l);
    memcpy(s->xb, s->xb2, (size_t)N * dim * sizeof(float));
    count_moe(m, s, rows, n_rows, l);
}
