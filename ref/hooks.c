/* hooks.c: hook names, and emitting activations row by row. */
#include "ref/hooks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const HOOK_SUFFIX[N_HOOKS] = {
    [HOOK_EMBED] = "embed",
    [HOOK_EMBED_POS] = "embed.pos",
    [HOOK_RESID_PRE] = "resid_pre",
    [HOOK_LN1] = "ln1",
    [HOOK_ATTN_Q_PRE] = "attn.q_pre",
    [HOOK_ATTN_K_PRE] = "attn.k_pre",
    [HOOK_ATTN_Q] = "attn.q",
    [HOOK_ATTN_K] = "attn.k",
    [HOOK_ATTN_V] = "attn.v",
    [HOOK_ATTN_LATENT] = "attn.latent",
    [HOOK_ATTN_K_ROPE] = "attn.k_rope",
    [HOOK_ATTN_SCORES] = "attn.scores",
    [HOOK_ATTN_PATTERN] = "attn.pattern",
    [HOOK_ATTN_Z] = "attn.z",
    [HOOK_ATTN_OUT] = "attn_out",
    [HOOK_ATTN_POST_NORM] = "attn.post_norm",
    [HOOK_RESID_MID] = "resid_mid",
    [HOOK_LN2] = "ln2",
    [HOOK_MLP_GATE] = "mlp.gate",
    [HOOK_MLP_UP] = "mlp.up",
    [HOOK_MLP_HIDDEN] = "mlp.hidden",
    [HOOK_MOE_ROUTER] = "moe.router",
    [HOOK_MOE_EXPERT] = "moe.expert",
    [HOOK_MLP_OUT] = "mlp_out",
    [HOOK_MLP_POST_NORM] = "mlp.post_norm",
    [HOOK_RESID_POST] = "resid_post",
    [HOOK_FINAL_NORM] = "final_norm",
    [HOOK_LOGITS] = "logits",
    [HOOK_KV_ROW] = "kv",
    [HOOK_KV_SNAPSHOT] = "kv_snapshot",
};

bool hook_in_block(HookPoint point) {
    return point >= HOOK_RESID_PRE && point <= HOOK_RESID_POST;
}

const char *hook_name(HookPoint point, int layer, char *buf, size_t size) {
    if (hook_in_block(point))
        snprintf(buf, size, "blocks.%d.%s", layer, HOOK_SUFFIX[point]);
    else
        snprintf(buf, size, "%s", HOOK_SUFFIX[point]);
    return buf;
}

bool hook_parse(const char *name, HookPoint *point, int *layer) {
    int l = -1;
    const char *suffix = name;
    if (strncmp(name, "blocks.", 7) == 0) {
        char *end;
        if (name[7] < '0' || name[7] > '9') return false;
        long v = strtol(name + 7, &end, 10);
        if (v > 1 << 20 || *end != '.') return false;
        l = (int)v, suffix = end + 1;
    }
    for (int p = 0; p < N_HOOKS; p++) {
        if (strcmp(suffix, HOOK_SUFFIX[p]) == 0 && hook_in_block((HookPoint)p) == (l >= 0)) {
            *point = (HookPoint)p, *layer = l;
            return true;
        }
    }
    return false;
}

#ifdef STEPWISE_INJECT_BUG
void hook_inject(HookPoint point, int layer, int pos, float *x, int n) {
    const char *spec = getenv("STEPWISE_INJECT_BUG");
    char name[64], want[64];
    int at;
    float scale;
    if (spec == NULL || sscanf(spec, "%63[^@]@%d*%f", want, &at, &scale) != 3 || at != pos ||
        strcmp(hook_name(point, layer, name, sizeof name), want) != 0)
        return;
    for (int i = 0; i < n; i++) x[i] *= scale;
}
#endif

void hook_emit_rows(const HookSite *site, HookPoint point, const float *x, int T, int rows,
                    int cols) {
    for (int t = 0; t < T; t++) {
        int pos = site->pos0 + t;
#ifdef STEPWISE_INJECT_BUG /* the engine's buffer: casting the const away is sound */
        hook_inject(point, site->layer, pos, (float *)x + (size_t)t * rows * cols, rows * cols);
#endif
        if (!hook_wanted(site->obs, point, site->layer, pos)) continue;
        HookTensor h = {.point = point,
                        .layer = site->layer,
                        .pos = pos,
                        .head = -1,
                        .token = site->tokens[t],
                        .a = x + (size_t)t * rows * cols,
                        .rows = rows,
                        .cols = cols};
        site->obs->emit(site->obs->ctx, &h);
    }
}

void hook_emit_head(const HookSite *site, HookPoint point, int t, int head, const float *row,
                    int n) {
#ifdef STEPWISE_INJECT_BUG /* every head's row at that position (docs/first-wrong-number.md) */
    if (site != NULL) hook_inject(point, site->layer, site->pos0 + t, (float *)row, n);
#endif
    if (site == NULL || !hook_wanted(site->obs, point, site->layer, site->pos0 + t)) return;
    HookTensor h = {.point = point,
                    .layer = site->layer,
                    .pos = site->pos0 + t,
                    .head = head,
                    .token = site->tokens[t],
                    .a = row,
                    .rows = 1,
                    .cols = n};
    site->obs->emit(site->obs->ctx, &h);
}

const char *pass_phase_name(PassPhase phase) {
    switch (phase) {
        case PASS_PREFILL:
            return "prefill";
        case PASS_DECODE:
            return "decode";
        case PASS_RECOMPUTE:
            return "recompute";
        case PASS_REBUILD:
            return "rebuild";
    }
    return "unknown";
}
