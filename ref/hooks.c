/* hooks.c: hook names, and emitting activations row by row. */
#include "hooks.h"

#include <stdio.h>

static const char *const HOOK_SUFFIX[N_HOOKS] = {
    [HOOK_EMBED] = "embed",
    [HOOK_RESID_PRE] = "resid_pre",
    [HOOK_LN1] = "ln1",
    [HOOK_ATTN_Q_PRE] = "attn.q_pre",
    [HOOK_ATTN_K_PRE] = "attn.k_pre",
    [HOOK_ATTN_Q] = "attn.q",
    [HOOK_ATTN_K] = "attn.k",
    [HOOK_ATTN_V] = "attn.v",
    [HOOK_ATTN_SCORES] = "attn.scores",
    [HOOK_ATTN_PATTERN] = "attn.pattern",
    [HOOK_ATTN_Z] = "attn.z",
    [HOOK_ATTN_OUT] = "attn_out",
    [HOOK_RESID_MID] = "resid_mid",
    [HOOK_LN2] = "ln2",
    [HOOK_MLP_GATE] = "mlp.gate",
    [HOOK_MLP_UP] = "mlp.up",
    [HOOK_MLP_HIDDEN] = "mlp.hidden",
    [HOOK_MLP_OUT] = "mlp_out",
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

void hook_emit_rows(const HookSite *site, HookPoint point, const float *x, int T, int rows,
                    int cols) {
    for (int t = 0; t < T; t++) {
        int pos = site->pos0 + t;
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
