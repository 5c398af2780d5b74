/* sampler.c: see sampler.h. */
#include "sampler.h"

int sample_argmax(const float *logits, int n) {
    int best = 0;
    for (int i = 1; i < n; i++) {
        if (logits[i] > logits[best]) best = i;
    }
    return best;
}
