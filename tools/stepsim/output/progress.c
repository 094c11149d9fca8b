/* progress.c - the progress display of the long commands (progress.h). */
#include "progress.h"

#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double monotonic_s(void *ctx) {
    (void)ctx;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void cli_progress_duration(char *buf, size_t n, double s) {
    if (s < 60)
        snprintf(buf, n, "%.0f s", s);
    else if (s < 3600)
        snprintf(buf, n, "%d min %02d s", (int)(s / 60), (int)s % 60);
    else
        snprintf(buf, n, "%d h %02d min", (int)(s / 3600), (int)(s / 60) % 60);
}

void cli_progress_init_with(cli_progress_t *p, FILE *err, const char *command, int tty, int quiet, int force,
                            cli_clock_fn clock, void *clock_ctx) {
    memset(p, 0, sizeof *p);
    p->err = err;
    p->tty = tty;
    p->forced = force && !tty;
    p->on = err && !quiet && (tty || force);
    p->clock = clock ? clock : monotonic_s;
    p->clock_ctx = clock_ctx;
    p->command = command;
    p->fraction = -1;
    p->base_s = -1;
    p->t0_s = p->clock(p->clock_ctx);
}

void cli_progress_init(cli_progress_t *p, FILE *err, const char *command, int quiet, int force) {
    const int fd = err ? fileno(err) : -1;
    cli_progress_init_with(p, err, command, fd >= 0 && isatty(fd), quiet, force, NULL, NULL);
}

/* Write the line now (the caller decided it is time). */
static void draw(cli_progress_t *p, double now) {
    char line[400], el[32], eta[32];
    const double elapsed = now - p->t0_s;
    cli_progress_duration(el, sizeof el, elapsed);
    if (p->fraction >= 1)
        cli_progress_duration(eta, sizeof eta, 0);
    else if (p->base_s >= 0 && p->fraction > p->base_fraction && now > p->base_s)
        cli_progress_duration(eta, sizeof eta,
                              (1 - p->fraction) * (now - p->base_s) / (p->fraction - p->base_fraction));
    else
        snprintf(eta, sizeof eta, "?");
    int n = snprintf(line, sizeof line, "%s: ", p->command);
    if (p->what[0] && p->n > 1)
        n += snprintf(line + n, sizeof line - (size_t)n, "%s (%lld of %lld): ", p->what, (long long)p->k + 1,
                      (long long)p->n);
    else if (p->what[0])
        n += snprintf(line + n, sizeof line - (size_t)n, "%s: ", p->what);
    else if (p->n > 1)
        n += snprintf(line + n, sizeof line - (size_t)n, "%lld of %lld: ", (long long)p->k + 1,
                      (long long)p->n);
    if (p->detail[0])
        n += snprintf(line + n, sizeof line - (size_t)n, "%s, ", p->detail);
    n += snprintf(line + n, sizeof line - (size_t)n, "%s elapsed, ETA %s", el, eta);
    if (n >= (int)sizeof line)
        n = (int)sizeof line - 1;
    if (p->tty) {
        const int pad = p->width > n ? p->width - n : 0;
        fprintf(p->err, "\r%s%*s", line, pad, "");
        p->width = n;
    } else {
        fprintf(p->err, "%s\n", line);
    }
    fflush(p->err);
    p->last_s = now;
    p->drawn++;
}

/* 1 and *now if it is time to draw (noting the ETA's origin): on a terminal after the delay and the interval;
 * forced: at once, then the interval. */
static int due(cli_progress_t *p, double *now) {
    if (!p->on)
        return 0;
    *now = p->clock(p->clock_ctx);
    if (p->base_s < 0 && p->fraction >= 0) { /* the first known fraction: the ETA's origin */
        p->base_s = *now;
        p->base_fraction = p->fraction;
    }
    if (p->tty && *now - p->t0_s < PROGRESS_DELAY_S)
        return 0;
    return !p->drawn || *now - p->last_s >= (p->tty ? PROGRESS_TTY_INTERVAL_S : PROGRESS_LOG_INTERVAL_S);
}

static void maybe_draw(cli_progress_t *p) {
    double now;
    if (due(p, &now))
        draw(p, now);
}

void cli_progress_stage(cli_progress_t *p, int64_t k, int64_t n, const char *what) {
    if (!p)
        return;
    p->k = k;
    p->n = n;
    snprintf(p->what, sizeof p->what, "%s", what ? what : "");
    p->detail[0] = '\0';
    if (n > 0)
        p->fraction = (double)k / (double)n;
    maybe_draw(p);
}

void cli_progress_sim(void *ctx, const sim_progress_t *s) {
    cli_progress_t *p = ctx;
    if (!p || !p->on)
        return;
    const double f = s->ops_total > 0 ? (double)s->ops_done / (double)s->ops_total : -1;
    if (f >= 0)
        p->fraction = p->n > 1 ? ((double)p->k + f) / (double)p->n : f;
    double now;
    if (!due(p, &now)) /* the usual case: no formatting */
        return;
    snprintf(p->detail, sizeof p->detail, "simulated %.4g s, %d/%d operations (%.0f%%)",
             sim_ps_to_s(s->now_ps), (int)s->ops_done, (int)s->ops_total, f >= 0 ? 100.0 * f : 0.0);
    draw(p, now);
}

void cli_progress_count(cli_progress_t *p, double fraction, const char *detail) {
    if (!p)
        return;
    p->fraction = fraction;
    snprintf(p->detail, sizeof p->detail, "%s", detail ? detail : "");
    maybe_draw(p);
}

void cli_progress_clear(cli_progress_t *p) {
    if (!p || !p->on || !p->tty || !p->width)
        return;
    fprintf(p->err, "\r%*s\r", p->width, "");
    fflush(p->err);
    p->width = 0;
    p->last_s = p->t0_s - PROGRESS_TTY_INTERVAL_S; /* redraw at the next update */
}

void cli_progress_end(cli_progress_t *p) {
    if (!p || !p->on)
        return;
    if (p->tty) {
        if (p->width)
            fprintf(p->err, "\r%*s\r", p->width, "");
    } else {
        draw(p, p->clock(p->clock_ctx));
    }
    fflush(p->err);
    p->on = 0;
}
