/* hook_names.h: other engines' names for stepwise's hooks, from
 * data/hook-names.json (compiled in): Hugging Face module outputs ("hf")
 * and llama.cpp's graph tensors ("llama.cpp"), with the hooks whose rows
 * another engine keeps in RoPE's halves layout. */
#ifndef STEPWISE_HOOK_NAMES_H
#define STEPWISE_HOOK_NAMES_H

#include <stdbool.h>
#include <stddef.h>

#include "../ref/error.h"

typedef struct {
    char *theirs, *ours; /* patterns with {L} for the layer */
    bool halves;         /* their rows of each head are halves, ours interleaved pairs */
} HookNameRule;

typedef struct {
    HookNameRule *rules;
    int n;
} HookNames;

/* The rules of engine ("hf" or "llama.cpp"); rope_halves adds the hooks
 * the engine keeps in halves only for some models (llama.cpp's qwen). */
bool hook_names_load(HookNames *h, const char *engine, bool rope_halves, StepError *err);
void hook_names_free(HookNames *h);

/* stepwise's name for their name `theirs` into buf, and whether its rows
 * are halves; false when no rule names it. */
bool hook_names_map(const HookNames *h, const char *theirs, char *buf, size_t size, bool *halves);

#endif
