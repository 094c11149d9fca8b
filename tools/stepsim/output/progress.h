/* progress.h - the one progress display of the commands that can run long (run, compare, validate,
 * collective, sweep), on stderr. The engine only reports where a run is (sim_progress_t); this
 * decides whether and how to show it.
 *
 * Contract
 * - Shown only when err is a terminal, or when forced (sweep --progress: also a log file), and never
 *   when silenced (--quiet). On a terminal nothing is drawn before PROGRESS_DELAY_S of wall time
 *   since cli_progress_init: a command that finishes sooner prints nothing.
 * - On a terminal: one line rewritten in place ("\r", padded over the previous one) at most every
 *   PROGRESS_TTY_INTERVAL_S; cli_progress_end clears it. Forced on a non-terminal: one line ending in
 *   "\n" at the first update and then at most every PROGRESS_LOG_INTERVAL_S, and a last one at the end.
 * - The line: "COMMAND: [WHAT (k of n): ]DETAIL, T elapsed, ETA T". WHAT names the current
 *   simulation of several (cli_progress_stage); DETAIL is the simulated time reached and the
 *   operations done of the current simulation (cli_progress_sim), or the caller's (cli_progress_count).
 *   The ETA comes from the fraction done, (k + operations done / total) / n over n simulations, and
 *   the rate at which it grew since it was first known (so that building a step before its run does
 *   not count as progress); "?" until it has grown.
 * - The clock is injectable (tests); by default CLOCK_MONOTONIC. Nothing is allocated.
 */
#ifndef STEPSIM_PROGRESS_H
#define STEPSIM_PROGRESS_H

#include <stdint.h>
#include <stdio.h>

#include "sim.h"

#define PROGRESS_DELAY_S 2.0
#define PROGRESS_TTY_INTERVAL_S 0.25
#define PROGRESS_LOG_INTERVAL_S 5.0

typedef double (*cli_clock_fn)(void *ctx); /* seconds, monotonic */

typedef struct cli_progress {
    FILE *err;
    int on;     /* anything may be drawn */
    int tty;    /* one line rewritten in place */
    int forced; /* shown although err is not a terminal */
    cli_clock_fn clock;
    void *clock_ctx;
    double t0_s, last_s;
    int drawn; /* lines drawn so far */
    int width; /* characters of the line on the terminal */
    const char *command;
    char what[96];
    int64_t k, n;                 /* current simulation (0-based) of n; n <= 1: one */
    double fraction;              /* of the whole command done, 0..1; < 0 unknown */
    double base_s, base_fraction; /* when the first fraction was known, and it (base_s < 0: not yet) */
    char detail[160];             /* the last detail drawn or offered */
} cli_progress_t;

/* Decide from err (a terminal?), quiet (--quiet) and force (sweep --progress). */
void cli_progress_init(cli_progress_t *p, FILE *err, const char *command, int quiet, int force);
/* The same with the terminal decision and the clock given (clock NULL: CLOCK_MONOTONIC). */
void cli_progress_init_with(cli_progress_t *p, FILE *err, const char *command, int tty, int quiet, int force,
                            cli_clock_fn clock, void *clock_ctx);
/* Simulation k (0-based) of n begins; what (may be NULL) names it. May draw. */
void cli_progress_stage(cli_progress_t *p, int64_t k, int64_t n, const char *what);
/* A sim_progress_fn (step_sim_options_t.progress); ctx is a cli_progress_t (NULL: nothing). */
void cli_progress_sim(void *ctx, const sim_progress_t *s);
/* Units of the caller's own: fraction of the work done (< 0 unknown) and the detail text. */
void cli_progress_count(cli_progress_t *p, double fraction, const char *detail);
/* Clear the line on a terminal before the caller writes a message of its own on err (the next
 * update draws it again). */
void cli_progress_clear(cli_progress_t *p);
/* The end: clear the line on a terminal; the last line when forced on a non-terminal. */
void cli_progress_end(cli_progress_t *p);

/* "12 s", "3 min 04 s", "2 h 05 min". */
void cli_progress_duration(char *buf, size_t n, double s);

#endif
