/* clock.h: a monotonic clock for timing phases inside the process. */
#ifndef STEPWISE_CLOCK_H
#define STEPWISE_CLOCK_H

#include <time.h>

static inline double clock_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#endif
