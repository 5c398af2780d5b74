/* hook_names.h: other engines' names for stepwise's hooks, from
 * data/hook-names.json (compiled in): Hugging Face module outputs ("hf")
 * and llama.cpp's graph tensors ("llama.cpp", and "llama.cpp-2025-02" for
 * the builds before its graph rework renamed them), with the hooks whose
 * rows another engine keeps in RoPE's halves layout. */
#ifndef STEPWISE_HOOK_NAMES_H
#define STEPWISE_HOOK_NAMES_H

#include <stdbool.h>
#include <stddef.h>

#include "ref/util/error.h"

typedef struct {
    char *theirs, *ours; /* patterns with {L} for the layer */
    bool halves;         /* their rows of each head are halves, ours interleaved pairs */
} HookNameRule;

typedef struct {
    char engine[32]; /* the map's name in data/hook-names.json */
    HookNameRule *rules;
    int n;
} HookNames;

/* The rules of engine ("hf", "llama.cpp", "llama.cpp-2025-02"); rope_halves
 * adds the hooks the engine keeps in halves only for some models
 * (llama.cpp's qwen). An unknown engine's error lists the known ones. */
bool hook_names_load(HookNames *h, const char *engine, bool rope_halves, StepError *err);
void hook_names_free(HookNames *h);

/* stepwise's name for their name `theirs` into buf, and whether its rows
 * are halves; false when no rule names it. */
bool hook_names_map(const HookNames *h, const char *theirs, char *buf, size_t size, bool *halves);

/* The reverse: their name for stepwise's hook `ours` ("blocks.0.attn_out")
 * into buf; false when the map has none. */
bool hook_names_theirs(const HookNames *h, const char *ours, char *buf, size_t size);

/* The maps in data/hook-names.json that send their name `theirs` to our
 * hook `ours` (NULL: to any hook), comma-separated into buf ("" when
 * none): which engine version a candidate's names fit. */
void hook_names_fitting(const char *theirs, const char *ours, char *buf, size_t size);

#endif
