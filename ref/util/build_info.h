/* build_info.h: which program, version and build wrote a trace. */
#ifndef STEPWISE_BUILD_INFO_H
#define STEPWISE_BUILD_INFO_H

#define STEPWISE_VERSION "0.3.0"

/* The compiler flags this binary was built with (set by the Makefile). */
const char *build_cflags(void);
/* The compiler's own version string. */
const char *build_compiler(void);

#endif
