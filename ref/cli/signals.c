/* cli/signals.c: see signals.h. */
#include "ref/cli/signals.h"

#include <string.h>
#include <unistd.h>

#include "ref/util/file_util.h"

/* A signal handler can only reach static storage: these two and
 * file_util.c's list of temporary files are stepwise's only global mutable
 * state, and only the CLI touches them. */
static volatile sig_atomic_t caught;      /* the deferred signal, or 0 */
static volatile sig_atomic_t defer_depth; /* > 0: a loop checks `caught` */

const char *cli_signal_name(int sig) {
    return sig == SIGINT    ? "SIGINT"
           : sig == SIGTERM ? "SIGTERM"
           : sig == SIGHUP  ? "SIGHUP"
                            : "signal";
}

/* Only async-signal-safe calls: unlink (inside the removal), write, _exit. */
static void on_signal(int sig) {
    if (defer_depth > 0 && caught == 0) {
        caught = sig;
        return;
    }
    atomic_file_remove_all_temps();
    const char *name = cli_signal_name(sig);
    static const char head[] = "stepwise: error: interrupted by ";
    ssize_t ignored = write(STDERR_FILENO, head, sizeof head - 1);
    ignored = write(STDERR_FILENO, name, strlen(name));
    ignored = write(STDERR_FILENO, "\n", 1);
    (void)ignored;
    _exit(128 + sig);
}

/* A read of a mapped page the file no longer has (a model file truncated
 * while in use) raises SIGBUS: one line and exit status 2, as for any bad
 * input, not a crash. Async-signal-safe calls only. */
static void on_bus_error(int sig) {
    (void)sig;
    atomic_file_remove_all_temps();
    static const char line[] = "stepwise: error: a mapped input file (the model's weights) was "
                               "truncated or replaced while in use (SIGBUS on reading it)\n";
    ssize_t ignored = write(STDERR_FILENO, line, sizeof line - 1);
    (void)ignored;
    _exit(2);
}

void cli_signals_install(void) {
    /* No SA_RESTART: a blocking read or write returns EINTR, so that a
     * command waiting on a pipe still reaches its check of the flag. */
    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    const int signals[] = {SIGINT, SIGTERM, SIGHUP};
    for (size_t i = 0; i < sizeof signals / sizeof signals[0]; i++)
        sigaction(signals[i], &sa, NULL);
    struct sigaction bus = {.sa_handler = on_bus_error};
    sigemptyset(&bus.sa_mask);
    sigaction(SIGBUS, &bus, NULL);
}

const volatile sig_atomic_t *cli_interrupt_flag(void) {
    return &caught;
}

int cli_signal_caught(void) {
    return caught;
}

void cli_signals_defer_begin(void) {
    defer_depth++;
}

void cli_signals_defer_end(void) {
    if (defer_depth > 0) defer_depth--;
}
