/* rope_tables.c: RoPE's cos and sin tables, with the scalings that change
 * its frequencies (linear, Llama 3's, per-frequency factors, longrope,
 * YaRN). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ref/rope_tables.h"

/* YaRN's share of pair i's own frequency (1: kept, 0: divided by the
 * factor), as DeepSeek-V2's yarn_linear_ramp_mask: the pair index at which
 * a wavelength fits original_context b times is rot · ln(context / (2π b))
 * / (2 ln theta); from beta_fast's (floored) to beta_slow's (ceiled) the
 * share falls linearly from 1 to 0. */
static float yarn_kept(int i, int rot, float theta, const RopeScaling *s) {
    const double two_pi = 6.28318530717958647692;
    double context = (double)s->original_context, twice_log = 2.0 * log((double)theta);
    double low = floor((double)rot * log(context / (s->beta_fast * two_pi)) / twice_log);
    double high = ceil((double)rot * log(context / (s->beta_slow * two_pi)) / twice_log);
    low = low < 0 ? 0 : low, high = high > rot - 1 ? rot - 1 : high;
    if (low == high) high += 0.001;
    double ramp = ((double)i - low) / (high - low);
    ramp = ramp < 0 ? 0 : ramp > 1 ? 1 : ramp;
    return (float)(1.0 - ramp);
}

/* The frequency of pair i after scaling. Linear divides every frequency
 * by the factor. Llama 3's keeps the high frequencies (wavelength below
 * original_context / high_freq_factor), divides the low ones (wavelength
 * above original_context / low_freq_factor) by the factor, and blends the
 * two linearly in 1/wavelength between, as Hugging Face's
 * _compute_llama3_parameters does. Per-frequency factors (a GGUF file's
 * rope_freqs.weight, which is how llama.cpp's converter writes Llama 3's
 * rule) divide frequency i by factors[i]; longrope by its short or long
 * factor i. YaRN keeps pair i's frequency by yarn_kept(i) and takes the
 * rest from it divided by the factor. */
static float scaled_frequency(float freq, int i, int rot, float theta, const RopeScaling *s,
                              bool long_factors) {
    const float two_pi = 6.28318530717958647692f;
    switch (s->type) {
        case ROPE_SCALING_NONE:
            return freq;
        case ROPE_SCALING_LINEAR:
            return freq / s->factor;
        case ROPE_SCALING_LLAMA3: {
            float wavelen = two_pi / freq, old = (float)s->original_context;
            if (wavelen < old / s->high_freq_factor) return freq;
            if (wavelen > old / s->low_freq_factor) return freq / s->factor;
            float smooth =
                (old / wavelen - s->low_freq_factor) / (s->high_freq_factor - s->low_freq_factor);
            return (1.0f - smooth) * freq / s->factor + smooth * freq;
        }
        case ROPE_SCALING_FACTORS:
            return freq / s->factors[i];
        case ROPE_SCALING_LONGROPE:
            return freq / (long_factors ? s->long_factors[i] : s->factors[i]);
        case ROPE_SCALING_YARN: {
            float kept = yarn_kept(i, rot, theta, s);
            return freq / s->factor * (1.0f - kept) + freq * kept;
        }
    }
    return freq;
}

/* RoPE angle for position pos and pair i of a head: pos · θ_i with
 * θ_i = theta^(-2i / rot) (theta 10000 in llama2.c; rot the dims RoPE
 * turns, head_dim but for a partial RoPE), scaled as the architecture
 * says, in run.c's float arithmetic. θ_i does not depend on pos, so it is
 * made once a pair (freq [pairs], the caller's room): the same bits as
 * run.c's loop, which makes it anew at every position. longrope and YaRN
 * multiply cos and sin by their attention factor, as Hugging Face's rotary
 * embedding does: q·k grows by its square. */
static void rope_tables_fill(float *cos_t, float *sin_t, float *freq, int capacity, const Config *c,
                             float theta, const RopeScaling *scaling, bool long_factors) {
    int rot = config_rope_dims(c), half = rot / 2; /* the turned dims' pairs (partial RoPE) */
    bool amplified = scaling->type == ROPE_SCALING_LONGROPE || scaling->type == ROPE_SCALING_YARN;
    float amplitude = amplified ? scaling->attention_factor : 1.0f;
    for (int i = 0; i < half; i++) {
        freq[i] = 1.0f / powf(theta, (float)(2 * i) / (float)rot);
        freq[i] = scaled_frequency(freq[i], i, rot, theta, scaling, long_factors);
    }
    for (int pos = 0; pos < capacity; pos++) {
        for (int i = 0; i < half; i++) {
            float angle = (float)pos * freq[i];
            cos_t[(size_t)pos * half + i] = cosf(angle) * amplitude; /* x 1: the same bits */
            sin_t[(size_t)pos * half + i] = sinf(angle) * amplitude;
        }
    }
}

uint64_t rope_tables_floats(const Config *c) {
    if (c->position != POS_ROPE) return 0;
    uint64_t kinds =
        1u + (c->rope_scaling.type == ROPE_SCALING_LONGROPE) + (c->rope_local_theta > 0);
    return kinds * 2u * (uint64_t)c->seq_len * (uint64_t)(config_rope_dims(c) / 2);
}

bool rope_tables_init(RopeTables *t, const Config *c, StepError *err) {
    memset(t, 0, sizeof *t);
    if (c->position != POS_ROPE) return true; /* learned positions: no tables */
    t->capacity = c->seq_len;
    t->pairs = config_rope_dims(c) / 2;
    size_t n = (size_t)t->capacity * (size_t)t->pairs;
    bool longrope = c->rope_scaling.type == ROPE_SCALING_LONGROPE;
    bool local = c->rope_local_theta > 0; /* Gemma 3's sliding layers turn at their own base */
    float *freq = malloc(((size_t)t->pairs + 1) * sizeof(float));
    t->cos = malloc(n * sizeof(float));
    t->sin = malloc(n * sizeof(float));
    if (longrope) t->cos_long = malloc(n * sizeof(float)), t->sin_long = malloc(n * sizeof(float));
    if (local) t->cos_local = malloc(n * sizeof(float)), t->sin_local = malloc(n * sizeof(float));
    bool ok = freq && t->cos && t->sin && (!longrope || (t->cos_long && t->sin_long)) &&
              (!local || (t->cos_local && t->sin_local));
    if (ok) {
        float theta = config_rope_theta(c);
        rope_tables_fill(t->cos, t->sin, freq, t->capacity, c, theta, &c->rope_scaling, false);
        if (longrope)
            rope_tables_fill(t->cos_long, t->sin_long, freq, t->capacity, c, theta,
                             &c->rope_scaling, true);
        if (local)
            rope_tables_fill(t->cos_local, t->sin_local, freq, t->capacity, c, c->rope_local_theta,
                             &(RopeScaling){.type = ROPE_SCALING_NONE}, false);
    }
    free(freq);
    if (!ok) {
        rope_tables_free(t);
        return step_fail(err, "RoPE tables: out of memory for %d positions", c->seq_len);
    }
    return true;
}

void rope_tables_free(RopeTables *t) {
    float *all[] = {t->cos, t->sin, t->cos_local, t->sin_local, t->cos_long, t->sin_long};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) free(all[i]);
    memset(t, 0, sizeof *t);
}

void rope_tables_for(const RopeTables *t, const Config *c, bool sliding, int last,
                     const float **cos_t, const float **sin_t) {
    if (t->cos_local != NULL && sliding) { /* Gemma 3's sliding layers */
        *cos_t = t->cos_local, *sin_t = t->sin_local;
    } else if (config_rope_long(c, last)) { /* Phi-3's longrope, per pass */
        *cos_t = t->cos_long, *sin_t = t->sin_long;
    } else {
        *cos_t = t->cos, *sin_t = t->sin;
    }
}
