/* build_info.c: compiled with -DSTEPWISE_CFLAGS="..." by the Makefile. */
#include "ref/util/build_info.h"

#ifndef STEPWISE_CFLAGS
#define STEPWISE_CFLAGS "unknown"
#endif

const char *build_cflags(void) {
    return STEPWISE_CFLAGS;
}

const char *build_compiler(void) {
#ifdef __VERSION__
    return __VERSION__;
#else
    return "unknown";
#endif
}
