/* mla.c: see mla.h. */
#include "ref/mla.h"

#include <math.h>
#include <string.h>

#include "ref/layers.h"
#include "ref/linear.h"

/* The widths MLA works in. */
typedef struct {
    int H, hd, rope, nope, v, rank, q_rank;
} MlaShape;

static MlaShape mla_shape(const Config *c) {
    int hd = config_head_dim(c), rope = c->qk_rope_head_dim;
    return (MlaShape){.H = c->n_heads,
                      .hd = hd,
                      .rope = rope,
                      .nope = hd - rope,
                      .v = config_v_head_dim(c),
                      .rank = c->kv_lora_rank,
                      .q_rank = c->q_lora_rank};
}

uint64_t mla_attention_macs(const Config *c, MlaForm form, int T, uint64_t pairs, int slots) {
    MlaShape d = mla_shape(c);
    uint64_t H = (uint64_t)d.H, rank = (uint64_t)d.rank;
    if (form == MLA_REBUILT) /* kv_b of every latent; then scores over head_dim, sums over v */
        return (uint64_t)slots * rank * H * (uint64_t)(d.nope + d.v) +
               pairs * H * (uint64_t)(d.hd + d.v);
    /* each query's W_ukᵀ q and W_uv · o; each pair's scores over the latent
     * and the rotary key, and Σ a c */
    return (uint64_t)T * H * (uint64_t)(d.nope + d.v) * rank +
           pairs * H * (2 * rank + (uint64_t)d.rope);
}

/* The rebuilt form: every head's key [P, H, hd] (its no-rope part from
 * kv_b, then the shared rotary key) and value [P, H, v] for the P = pos0 +
 * T positions seen, from their latents, into the pass's layer_k and layer_v;
 * then attention as MHA's. kv_b runs over the latents max_tokens rows at a
 * time (the pass's scratch s holds that many); each row's sums are its own. */
static void attend_rebuilt(const Model *m, PassScratch *s, const ForwardRow *row, const int *pos,
                           int l, const float *q, float *out, const HookSite *site) {
    const Config *c = &m->config;
    MlaShape d = mla_shape(c);
    SeqState *rs = row->state;
    int P = row->pos0 + row->n_tokens, kvb = d.H * (d.nope + d.v);
    const float *latent = rs->cache.value + (size_t)l * rs->cache.capacity * d.rank;
    const float *k_rope = rs->cache.key + (size_t)l * rs->cache.capacity * d.rope;
    const Matrix *w = &m->layers[l].m[MAT_KV_B];
    for (int p0 = 0; p0 < P; p0 += s->max_tokens) {
        int n = P - p0 < s->max_tokens ? P - p0 : s->max_tokens;
        LinearInput in = linear_input(s, latent + (size_t)p0 * d.rank, n, w);
        linear_forward(m, s->mla_kv_b + (size_t)p0 * kvb, &in, w);
    }
    rs->work.weight_bytes += matrix_bytes(w);
    for (int p = 0; p < P; p++)
        for (int h = 0; h < d.H; h++) {
            const float *from = s->mla_kv_b + (size_t)p * kvb + (size_t)h * (d.nope + d.v);
            float *k = s->layer_k + ((size_t)p * d.H + h) * d.hd;
            memcpy(k, from, (size_t)d.nope * sizeof(float));
            memcpy(k + d.nope, k_rope + (size_t)p * d.rope, (size_t)d.rope * sizeof(float));
            memcpy(s->layer_v + ((size_t)p * d.H + h) * d.v, from + d.nope,
                   (size_t)d.v * sizeof(float));
        }
    hook_emit_rows(site, HOOK_ATTN_K, s->layer_k + (size_t)row->pos0 * d.H * d.hd, row->n_tokens,
                   d.H, d.hd);
    hook_emit_rows(site, HOOK_ATTN_V, s->layer_v + (size_t)row->pos0 * d.H * d.v, row->n_tokens,
                   d.H, d.v);
    AttentionSpec spec = config_attention_spec(c, l);
    attention_forward(out, q, s->layer_k, s->layer_v, s->scores, row->n_tokens, pos, &spec, site);
}

/* The absorbed form, query t of the row (at position pos) and head h:
 * q_lat = W_ukᵀ q_nope [rank], score_p = (q_lat · c_p + q_rope · k_r_p) /
 * sqrt(query_scale), softmax over the positions p it sees
 * (attention_visible), o = Σ_p a_p c_p [rank], z = W_uv · o [v]. w_head:
 * head h's rows of kv_b [nope + v, rank] as floats. */
static void absorbed_query_head(const MlaShape *d, const AttentionSpec *a, const float *w_head,
                                const float *qh, const float *latent, const float *k_rope,
                                float *scores, float *scratch, float div, int t, int pos, int h,
                                float *zh, const HookSite *site) {
    float *q_lat = scratch, *o = scratch + d->rank;
    memset(q_lat, 0, (size_t)d->rank * sizeof(float));
    for (int i = 0; i < d->nope; i++) /* each q_lat[j] summed over i in order */
        for (int j = 0; j < d->rank; j++) q_lat[j] += qh[i] * w_head[(size_t)i * d->rank + j];
    for (int p = 0; p <= pos; p++) {
        const float *cp = latent + (size_t)p * d->rank, *kp = k_rope + (size_t)p * d->rope;
        float score = 0.0f;
        for (int j = 0; j < d->rank; j++) score += q_lat[j] * cp[j];
        for (int r = 0; r < d->rope; r++) score += qh[d->nope + r] * kp[r];
        scores[p] = score / div;
    }
    hook_emit_head(site, HOOK_ATTN_SCORES, t, h, scores, pos + 1);
    int first = attention_first_seen(a, pos); /* a key it does not see weighs e^-inf = 0 */
    for (int p = first; p <= pos; p++)
        if (!attention_visible(a, pos, p)) scores[p] = -INFINITY;
    softmax_forward(scores + first, pos + 1 - first);
    memset(scores, 0, (size_t)first * sizeof(float));
    hook_emit_head(site, HOOK_ATTN_PATTERN, t, h, scores, pos + 1);
    memset(o, 0, (size_t)d->rank * sizeof(float));
    for (int p = first; p <= pos; p++) /* in position order */
        if (attention_visible(a, pos, p))
            for (int j = 0; j < d->rank; j++) o[j] += scores[p] * latent[(size_t)p * d->rank + j];
    for (int i = 0; i < d->v; i++) {
        const float *wv = w_head + (size_t)(d->nope + i) * d->rank;
        float sum = 0.0f;
        for (int j = 0; j < d->rank; j++) sum += wv[j] * o[j];
        zh[i] = sum;
    }
}

static void attend_absorbed(const Model *m, const PassScratch *s, const ForwardRow *row,
                            const int *pos, int l, const float *q, float *out,
                            const HookSite *site) {
    const Config *c = &m->config;
    MlaShape d = mla_shape(c);
    SeqState *rs = row->state;
    const float *latent = rs->cache.value + (size_t)l * rs->cache.capacity * d.rank;
    const float *k_rope = rs->cache.key + (size_t)l * rs->cache.capacity * d.rope;
    const Matrix *w = &m->layers[l].m[MAT_KV_B];
    float div = sqrtf(config_query_scale(c));
    AttentionSpec spec = config_attention_spec(c, l);
    for (int h = 0; h < d.H; h++) {
        float *w_head = s->mla_kv_b; /* head h's nope + v rows of kv_b, widened once */
        for (int r = 0; r < d.nope + d.v; r++)
            matrix_row(w, h * (d.nope + d.v) + r, w_head + (size_t)r * d.rank);
        for (int t = 0; t < row->n_tokens; t++)
            absorbed_query_head(&d, &spec, w_head, q + ((size_t)t * d.H + h) * d.hd, latent, k_rope,
                                s->scores, s->mla_latent, div, t, pos[t], h,
                                out + ((size_t)t * d.H + h) * d.v, site);
    }
    rs->work.weight_bytes += matrix_bytes(w);
}

/* One row's part: RoPE on its queries' and new rotary keys' turned dims
 * by their positions (pos: the row's), its new latents and rotary keys
 * into its cache slots, then attention over its cache by the visibility
 * rule in m's form, into out [T, H x v]. */
static void mla_row(const Model *m, PassScratch *s, const ForwardRow *row, const int *pos, int l,
                    float *q, float *kv_a, float *out) {
    const Config *c = &m->config;
    MlaShape d = mla_shape(c);
    SeqState *rs = row->state;
    int T = row->n_tokens, pos0 = row->pos0, width = d.rank + d.rope;
    HookSite site = {.obs = row->obs, .layer = l, .pos0 = pos0, .tokens = row->tokens};
    const float *cos_t, *sin_t;
    rope_tables_for(&m->rope, c, false, positions_last(pos, T), &cos_t, &sin_t); /* no window */
    rope_forward(q + d.nope, T, d.H * d.hd, d.hd, d.rope, pos, cos_t, sin_t, c->rope_layout);
    rope_forward(kv_a + d.rank, T, width, width, d.rope, pos, cos_t, sin_t, c->rope_layout);
    hook_emit_rows(&site, HOOK_ATTN_Q, q, T, d.H, d.hd);
    KVCache *k = &rs->cache;
    float *latent = k->value + ((size_t)l * k->capacity + (size_t)pos0) * d.rank;
    float *k_rope = k->key + ((size_t)l * k->capacity + (size_t)pos0) * d.rope;
    for (int t = 0; t < T; t++) { /* the cache's rows: the latent, the rotary key */
        memcpy(latent + (size_t)t * d.rank, kv_a + (size_t)t * width,
               (size_t)d.rank * sizeof(float));
        memcpy(k_rope + (size_t)t * d.rope, kv_a + (size_t)t * width + d.rank,
               (size_t)d.rope * sizeof(float));
    }
    rs->work.kv_bytes_written += (uint64_t)T * kv_row_bytes(c, false);
    AttentionSpec spec = config_attention_spec(c, l);
    uint64_t pairs = 0; /* the (query, key) pairs: attention_visible's */
    for (int t = 0; t < T; t++) pairs += (uint64_t)attention_seen(&spec, pos[t]);
    rs->work.kv_bytes_read += pairs * kv_row_bytes(c, false); /* once for all heads */
    hook_emit_rows(&site, HOOK_ATTN_LATENT, latent, T, 1, d.rank);
    hook_emit_rows(&site, HOOK_ATTN_K_ROPE, k_rope, T, 1, d.rope);
    if (m->mla_form == MLA_ABSORBED)
        attend_absorbed(m, s, row, pos, l, q, out, &site);
    else
        attend_rebuilt(m, s, row, pos, l, q, out, &site);
    rs->work.macs += mla_attention_macs(c, m->mla_form, T, pairs, pos0 + T);
}

void mla_attention(const Model *m, PassScratch *s, const ForwardRow *rows, int n_rows, int N,
                   int l) {
    const Config *c = &m->config;
    const Matrix *mats = m->layers[l].m;
    MlaShape d = mla_shape(c);
    float eps = config_norm_eps(c);
    if (d.q_rank > 0) { /* q = q_b · rmsnorm(q_a · x̂) */
        linear_rows_of(m, s, rows, n_rows, s->mla_q_a, s->xb, N, &mats[MAT_Q_A]);
        rmsnorm_forward(s->mla_q_a, s->mla_q_a, model_vector(m, VEC_Q_A_NORM, l), N, d.q_rank, eps);
        linear_rows_of(m, s, rows, n_rows, s->q, s->mla_q_a, N, &mats[MAT_Q_B]);
    } else {
        linear_rows_of(m, s, rows, n_rows, s->q, s->xb, N, &mats[MAT_WQ]);
    }
    int width = d.rank + d.rope; /* kv_a's row: the latent, then the rotary key */
    linear_rows_of(m, s, rows, n_rows, s->mla_kv_a, s->xb, N, &mats[MAT_KV_A]);
    const float *norm = model_vector(m, VEC_KV_A_NORM, l);
    for (int t = 0; t < N; t++) { /* the latent normed in place, the rotary key as it is */
        float *row = s->mla_kv_a + (size_t)t * width;
        rmsnorm_forward(row, row, norm, 1, d.rank, eps);
    }
    rows_emit(rows, n_rows, l, HOOK_ATTN_Q_PRE, s->q, d.H, d.hd);
    for (int r = 0, t0 = 0; r < n_rows; t0 += rows[r++].n_tokens)
        mla_row(m, s, &rows[r], s->positions + t0, l, s->q + (size_t)t0 * d.H * d.hd,
                s->mla_kv_a + (size_t)t0 * width, s->xb + (size_t)t0 * d.H * d.v);
}
