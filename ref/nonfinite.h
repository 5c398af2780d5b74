/* nonfinite.h: where a NaN or an infinity first appears in a forward pass.
 * A weight that is not a finite number (a corrupt file, a bad conversion)
 * makes every later number NaN; the logits alone cannot say where it came
 * in. So when a pass's logits are not all finite, the pass is run once more
 * with an observer that looks at every hook, and the first one (the lowest
 * position, then the first in the forward pass's order) holding a value
 * that is not finite is named. Only a failing pass pays for this. */
#ifndef STEPWISE_NONFINITE_H
#define STEPWISE_NONFINITE_H

#include <stddef.h>

#include "ref/util/error.h"
#include "ref/forward.h"
#include "ref/hooks.h"
#include "ref/model/model.h"

/* The index of the first value of x[0..n) that is NaN or infinite, or -1. */
long first_nonfinite(const float *x, size_t n);

/* row's pass run again on scratch (its state holding the cache as the
 * pass found it; the pass writes the same rows again), watched at every
 * hook; then err
 * names the first hook with a value that is not finite, with `what` ("score",
 * "generate") in front. Always returns false, for `return` at the caller. */
bool fail_nonfinite(const Model *m, PassScratch *scratch, const ForwardRow *row, const char *what,
                    StepError *err);

/* Every float weight of m scanned: false, with err naming the first tensor
 * (stepwise's name, "blocks.0.attn.wq") and the first index in it that is
 * NaN or infinite; true when all are finite. (int8 codes are always finite;
 * a .q8 file's float weights are scanned.) For `inspect --check-weights`. */
bool model_check_finite(const Model *m, StepError *err);

#endif
