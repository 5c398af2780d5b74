/* cli/progress.c: see progress.h. */
#include "ref/cli/progress.h"

#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "ref/util/clock.h"

void cli_progress_init(CliProgress *p, bool quiet) {
    *p = (CliProgress){.on = !quiet && isatty(STDERR_FILENO)};
}

static void sink_update(void *ctx, const char *what, uint64_t done, uint64_t total) {
    cli_progress_update(ctx, what, done, total);
}

ProgressSink cli_progress_sink(CliProgress *p) {
    return (ProgressSink){.ctx = p, .update = sink_update};
}

/* The terminal's width, so that the line never wraps (a wrapped line is
 * not redrawn in place). */
static int terminal_width(void) {
    struct winsize w;
    if (ioctl(STDERR_FILENO, TIOCGWINSZ, &w) == 0 && w.ws_col >= 20) return w.ws_col;
    return 80;
}

/* "\r" + text cut to the width + erase to the end of the line. */
static void draw(CliProgress *p, const char *text) {
    int width = terminal_width() - 1;
    fprintf(stderr, "\r%.*s\033[K", width, text);
    fflush(stderr);
    p->drawn = true;
    p->last = clock_seconds();
}

void cli_progress_note(CliProgress *p, const char *what) {
    if (!p->on) return;
    snprintf(p->what, sizeof p->what, "%s", what);
    p->start = clock_seconds();
    draw(p, what);
}

void cli_progress_update(CliProgress *p, const char *what, uint64_t done, uint64_t total) {
    if (!p->on) return;
    double now = clock_seconds();
    bool fresh = strcmp(p->what, what) != 0;
    if (fresh) {
        snprintf(p->what, sizeof p->what, "%s", what);
        p->start = now;
    } else if (now - p->last < 0.1 && done < total) {
        return;
    }
    double elapsed = now - p->start, rate = elapsed > 0 ? (double)done / elapsed : 0;
    char line[256], left[32] = "";
    if (rate > 0 && total >= done)
        snprintf(left, sizeof left, " | %.1f s left", (double)(total - done) / rate);
    snprintf(line, sizeof line, "%s: %llu/%llu | %.1f/s%s", what, (unsigned long long)done,
             (unsigned long long)total, rate, left);
    draw(p, line);
}

void cli_progress_clear(CliProgress *p) {
    if (!p->on || !p->drawn) return;
    fputs("\r\033[K", stderr);
    fflush(stderr);
    p->drawn = false;
    p->what[0] = '\0';
}
