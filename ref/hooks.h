/* hooks.h: the one narrow interface between the engine and whatever watches
 * it (the trace writer, a test). The engine names a point and hands over the
 * numbers there; it never formats anything. An observer with NULL functions,
 * or a NULL observer, costs nothing. */
#ifndef STEPWISE_HOOKS_H
#define STEPWISE_HOOKS_H

#include <stdbool.h>
#include <stddef.h>

#include "sampler.h"

typedef enum {
    HOOK_LOGITS, /* a: [vocab_size] logits at pos, token = input token there */
    HOOK_KV_ROW, /* a: K row, b: V row, each [kv_dim], written at (layer, pos) */
} HookPoint;

typedef struct {
    HookPoint point;
    int layer; /* -1 where no layer applies */
    int pos;
    int token; /* input token at pos */
    const float *a;
    int na;
    const float *b; /* second tensor, or NULL */
    int nb;
} HookTensor;

typedef struct {
    void *ctx;
    /* Whether the observer wants this point at (layer, pos); NULL means no. */
    bool (*wants)(void *ctx, HookPoint point, int layer, int pos);
    /* Receives the tensor; the pointers are valid only during the call. */
    void (*emit)(void *ctx, const HookTensor *tensor);
    /* After each draw: the logits at pos (raw, as the forward pass gave them)
     * and the sampler holding the record of every stage. NULL: not wanted. */
    void (*sample)(void *ctx, int pos, const float *logits, const Sampler *sampler);
} StepObserver;

static inline bool hook_wanted(const StepObserver *o, HookPoint point, int layer, int pos) {
    return o != NULL && o->wants != NULL && o->emit != NULL && o->wants(o->ctx, point, layer, pos);
}

#endif
