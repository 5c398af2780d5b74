/* cli/presets.h: real models' shapes for make-model and inspect. */
#ifndef STEPWISE_CLI_PRESETS_H
#define STEPWISE_CLI_PRESETS_H

#include "ref/config.h"
#include "ref/family.h"
#include "ref/util/error.h"

/* Real models' shapes, from each one's published config.json on Hugging
 * Face (the repository in `source`): the same sizes, heads, vocabulary,
 * window, RoPE and norm epsilon, with seeded random weights. For timing
 * and memory (make bench-scale), not for text. */
typedef struct {
    const char *name, *source;
    const char *note;   /* a word on its size for --preset's help ("16 GB in bf16"), or NULL */
    const char *family; /* its row of family.h (make-model's --arch name) */
    bool untied;        /* a classifier of its own */
    Config config;      /* its shape and numbers (config_table.h), as its config.json gives
                           them; a number left 0 is the family's default (family.h) */
} ModelPreset;

/* "name (source; note), ... or name (source)" of every preset, one line:
 * --preset's help (cli_help_wrap breaks it). */
void model_presets_text(char *buf, size_t size, bool sources);

/* The preset called name, or NULL (err names the known ones). */
const ModelPreset *model_preset_find(const char *name, StepError *err);

/* make-model and inspect mark every number but the shape's "not given"
 * (-1) before the command line sets it (a bool, or a shape's 0, is its own
 * mark): model_field_marked says which fields, model_fields_mark marks
 * them, model_field_given tells a given one, and model_fields_settle
 * turns the marks still there into 0. */
bool model_field_marked(const ConfigField *f);
void model_fields_mark(Config *c);
bool model_field_given(const Config *c, const ConfigField *f);
void model_fields_settle(Config *c);

/* Fill every field of c not given from p (or, where p leaves it 0, its
 * family's make-model default), and the flags p or its family sets, always
 * its RoPE scaling; and *untied when p stores a classifier of its own. */
void model_preset_apply(const ModelPreset *p, Config *c, bool *untied);

#endif
