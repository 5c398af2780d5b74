/* cli/signals.h: what SIGINT, SIGTERM and SIGHUP do to a running command.
 *
 * Outside a deferring stretch, a signal ends the process at once: the
 * temporary files of unfinished outputs are removed (atomic_file_*), one
 * line says why on stderr, and the exit status is 128 + the signal, as
 * shells report it. Inside one (cli_signals_defer_begin ... _end), a first
 * signal only raises a flag: the loop that checks it stops at its next step
 * and ends its outputs properly (a trace's error event, no partial golden
 * set). A second signal ends the process even there. SIGBUS (a mapped
 * model file truncated under the run) ends it with one line and status 2. */
#ifndef STEPWISE_CLI_SIGNALS_H
#define STEPWISE_CLI_SIGNALS_H

#include <signal.h>

/* Install the handlers; called once, first thing in main. */
void cli_signals_install(void);

/* Raised (to the signal's number) by the first signal while deferring; the
 * engine's loops read it through GenerateOptions.interrupt. */
const volatile sig_atomic_t *cli_interrupt_flag(void);

/* The signal caught while deferring, or 0. */
int cli_signal_caught(void);

/* The name of a signal: "SIGINT", "SIGTERM", "SIGHUP" or "signal". */
const char *cli_signal_name(int sig);

/* Stretches may nest (golden runs generate and score inside its own). */
void cli_signals_defer_begin(void);
void cli_signals_defer_end(void);

#endif
