/* cli/progress.h: one progress line on stderr for long work: what is being
 * done, done/total, the rate and the time left, redrawn in place (at most
 * ten times a second) and cleared at the end. Only when stderr is a
 * terminal and not --quiet: traces, tests and pipes never see it. */
#ifndef STEPWISE_CLI_PROGRESS_H
#define STEPWISE_CLI_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>

#include "ref/util/progress.h"

typedef struct {
    bool on;       /* stderr is a terminal, and not --quiet */
    bool drawn;    /* a line is on the screen */
    char what[96]; /* what the counts are of */
    double start;  /* when `what` began */
    double last;   /* when the line was last drawn */
} CliProgress;

/* Set p up: on when stderr is a terminal and quiet is false. */
void cli_progress_init(CliProgress *p, bool quiet);

/* A sink that updates p (for the engine's reports). */
ProgressSink cli_progress_sink(CliProgress *p);

/* done of total of `what`: redraw the line (the first report of a new
 * `what` at once, then at most every 100 ms, and the last one). */
void cli_progress_update(CliProgress *p, const char *what, uint64_t done, uint64_t total);

/* A line with no counts ("loading M"), shown until the next update. */
void cli_progress_note(CliProgress *p, const char *what);

/* Clear the line, if one is drawn. */
void cli_progress_clear(CliProgress *p);

#endif
