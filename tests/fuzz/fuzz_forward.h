/* fuzz_forward.h: what the loaders' fuzz targets do with a model that
 * loaded: one forward pass of its last token, through every matrix (the
 * embedding row read is the last one, where an off-by-one would show). */
#ifndef STEPWISE_FUZZ_FORWARD_H
#define STEPWISE_FUZZ_FORWARD_H

#include "ref/forward.h"

static inline void fuzz_forward_last_token(const Model *m) {
    RunState s;
    StepError err;
    if (!run_state_init(&s, &m->config, 1, 1, &err)) return;
    int token = m->config.vocab_size - 1;
    forward_tokens(m, &s, &token, 1, 0, false, NULL);
    run_state_free(&s);
}

#endif
