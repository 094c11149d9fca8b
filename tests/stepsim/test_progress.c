/* stepsim/test_progress.c - the progress display (tools/stepsim/output/progress.c) with a fake clock:
 * nothing before 2 s on a terminal, then one line rewritten in place with "\r" (padded over a longer
 * previous line), at most 4 times a second, cleared at the end; the line's shape for one simulation,
 * for simulation k of n and for a caller's units (sweep); nothing at all when quiet or when stderr
 * is not a terminal, unless forced (sweep --progress: a line at once, then every 5 s, and a last
 * one). The terminal decision itself on a pseudo-terminal (posix_openpt), and through cli_main: a
 * run whose stderr is a terminal prints the same --json as one whose stderr is a file, and the real
 * binary with stderr redirected to a file writes nothing there. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "progress.h"
#include "test_cli_run.h"

typedef struct fake_clock {
    double now_s;
} fake_clock_t;

static double fake_now(void *ctx) {
    return ((fake_clock_t *)ctx)->now_s;
}

/* A memory stream for err and its text so far. */
typedef struct sink {
    FILE *f;
    char *buf;
    size_t len;
} sink_t;

static void sink_open(sink_t *s) {
    memset(s, 0, sizeof *s);
    s->f = open_memstream(&s->buf, &s->len);
    assert_non_null(s->f);
}

static const char *sink_text(sink_t *s) {
    fflush(s->f);
    return s->buf ? s->buf : "";
}

static void sink_close(sink_t *s) {
    fclose(s->f);
    free(s->buf);
}

static sim_progress_t at(double simulated_s, int32_t done, int32_t total) {
    const sim_progress_t p = {sim_s_to_ps(simulated_s), done, total, 10 * (int64_t)done};
    return p;
}

static void test_terminal_lines(void **state) {
    (void)state;
    sink_t s;
    sink_open(&s);
    fake_clock_t c = {100.0};
    cli_progress_t p;
    cli_progress_init_with(&p, s.f, "run", 1, 0, 0, fake_now, &c);
    /* nothing in the first 2 s */
    c.now_s = 101.9;
    sim_progress_t sp = at(0.25, 10, 100);
    cli_progress_sim(&p, &sp);
    assert_string_equal(sink_text(&s), "");
    /* then one line, in place */
    c.now_s = 103.0;
    sp = at(0.123456, 50, 100);
    cli_progress_sim(&p, &sp);
    assert_string_equal(sink_text(&s),
                        "\rrun: simulated 0.1235 s, 50/100 operations (50%), 3 s elapsed, ETA 1 s");
    const size_t first = strlen(sink_text(&s));
    /* not again within 0.25 s */
    c.now_s = 103.1;
    sp = at(0.6, 60, 100);
    cli_progress_sim(&p, &sp);
    assert_int_equal(strlen(sink_text(&s)), first);
    /* a shorter line is padded over the longer one */
    c.now_s = 103.5;
    sp = at(1, 100, 100);
    cli_progress_sim(&p, &sp);
    const char *second = sink_text(&s) + first;
    assert_string_equal(second, "\rrun: simulated 1 s, 100/100 operations (100%), 4 s elapsed, ETA 0 s   ");
    const size_t width = strlen("run: simulated 1 s, 100/100 operations (100%), 4 s elapsed, ETA 0 s");
    /* the end clears the line */
    const size_t before_end = strlen(sink_text(&s));
    cli_progress_end(&p);
    const char *end = sink_text(&s) + before_end;
    assert_int_equal(strlen(end), width + 2);
    assert_true(end[0] == '\r' && end[width + 1] == '\r');
    assert_int_equal(strspn(end + 1, " "), width);
    /* nothing after the end */
    cli_progress_sim(&p, &sp);
    assert_int_equal(strlen(sink_text(&s)), before_end + width + 2);
    sink_close(&s);
}

static void test_short_work_prints_nothing(void **state) {
    (void)state;
    sink_t s;
    sink_open(&s);
    fake_clock_t c = {0.0};
    cli_progress_t p;
    cli_progress_init_with(&p, s.f, "run", 1, 0, 0, fake_now, &c);
    for (int i = 0; i <= 19; i++) {
        c.now_s = 0.1 * i;
        const sim_progress_t sp = at(0.01 * i, i, 20);
        cli_progress_sim(&p, &sp);
    }
    cli_progress_end(&p);
    assert_string_equal(sink_text(&s), "");
    sink_close(&s);
}

static void test_k_of_n(void **state) {
    (void)state;
    sink_t s;
    sink_open(&s);
    fake_clock_t c = {0.0};
    cli_progress_t p;
    cli_progress_init_with(&p, s.f, "compare", 1, 0, 0, fake_now, &c);
    cli_progress_stage(&p, 1, 4, "fat-tree, 64 GPUs");
    c.now_s = 6.0;
    const sim_progress_t sp = at(0.125, 1, 1);
    cli_progress_sim(&p, &sp); /* from 1 of 4 to (1 + 1) of 4 in 6 s: 12 s to go */
    assert_string_equal(sink_text(&s),
                        "\rcompare: fat-tree, 64 GPUs (2 of 4): simulated 0.125 s, 1/1 operations "
                        "(100%), 6 s elapsed, ETA 12 s");
    /* a stage without operations yet: its own fraction */
    c.now_s = 10.0;
    cli_progress_stage(&p, 3, 4, "dragonfly, 64 GPUs");
    assert_non_null(strstr(sink_text(&s), "\rcompare: dragonfly, 64 GPUs (4 of 4): 10 s elapsed, ETA 5 s"));
    /* a message of the caller's own: the line is cleared first */
    const size_t n = strlen(sink_text(&s));
    cli_progress_clear(&p);
    const char *cleared = sink_text(&s) + n;
    assert_true(cleared[0] == '\r' && cleared[strlen(cleared) - 1] == '\r');
    sink_close(&s);
}

static void test_quiet_and_not_a_terminal(void **state) {
    (void)state;
    for (int mode = 0; mode < 3; mode++) {
        sink_t s;
        sink_open(&s);
        fake_clock_t c = {0.0};
        cli_progress_t p;
        /* 0: a terminal but quiet; 1: not a terminal; 2: forced but quiet */
        cli_progress_init_with(&p, s.f, "run", mode == 0, mode != 1, mode == 2, fake_now, &c);
        assert_int_equal(p.on, 0);
        cli_progress_stage(&p, 0, 2, "ideal, 8 GPUs");
        for (int i = 1; i < 100; i++) {
            c.now_s = 0.5 * i;
            const sim_progress_t sp = at(0.01 * i, i, 100);
            cli_progress_sim(&p, &sp);
            cli_progress_count(&p, 0.01 * i, "points");
        }
        cli_progress_clear(&p);
        cli_progress_end(&p);
        assert_string_equal(sink_text(&s), "");
        sink_close(&s);
    }
}

static void test_forced_log_lines(void **state) {
    (void)state;
    sink_t s;
    sink_open(&s);
    fake_clock_t c = {0.0};
    cli_progress_t p;
    cli_progress_init_with(&p, s.f, "sweep", 0, 0, 1, fake_now, &c);
    assert_int_equal(p.on, 1);
    c.now_s = 0.5; /* at once, a whole line */
    cli_progress_count(&p, 0.25, "1/4 points (25.0%), 0 errors");
    assert_string_equal(sink_text(&s), "sweep: 1/4 points (25.0%), 0 errors, 0 s elapsed, ETA ?\n");
    c.now_s = 4.0; /* within 5 s: nothing */
    cli_progress_count(&p, 0.5, "2/4 points (50.0%), 0 errors");
    assert_int_equal(cli_run_lines(sink_text(&s)), 1);
    c.now_s = 6.0;
    cli_progress_count(&p, 0.75, "3/4 points (75.0%), 1 errors");
    c.now_s = 8.0;
    cli_progress_count(&p, 1.0, "4/4 points (100.0%), 1 errors");
    cli_progress_end(&p); /* the last state, always */
    assert_string_equal(sink_text(&s), "sweep: 1/4 points (25.0%), 0 errors, 0 s elapsed, ETA ?\n"
                                       "sweep: 3/4 points (75.0%), 1 errors, 6 s elapsed, ETA 3 s\n"
                                       "sweep: 4/4 points (100.0%), 1 errors, 8 s elapsed, ETA 0 s\n");
    sink_close(&s);
}

static void test_duration(void **state) {
    (void)state;
    char b[32];
    cli_progress_duration(b, sizeof b, 12.2);
    assert_string_equal(b, "12 s");
    cli_progress_duration(b, sizeof b, 184);
    assert_string_equal(b, "3 min 04 s");
    cli_progress_duration(b, sizeof b, 7500);
    assert_string_equal(b, "2 h 05 min");
}

/* A pseudo-terminal's slave side as a FILE (NULL if the system has none). */
static FILE *open_pty(int *master) {
    *master = posix_openpt(O_RDWR | O_NOCTTY);
    if (*master < 0 || grantpt(*master) != 0 || unlockpt(*master) != 0) {
        if (*master >= 0)
            close(*master);
        return NULL;
    }
    const char *name = ptsname(*master);
    const int fd = name ? open(name, O_RDWR | O_NOCTTY) : -1;
    if (fd < 0) {
        close(*master);
        return NULL;
    }
    return fdopen(fd, "w");
}

/* Cut out the value of "wall_time_s" (host time, different in every run). */
static void mask_wall(char *json) {
    char *w = strstr(json, "\"wall_time_s\":");
    assert_non_null(w);
    w += strlen("\"wall_time_s\":");
    const size_t n = strcspn(w, ",\n");
    memmove(w, w + n, strlen(w + n) + 1);
}

static void test_terminal_decision(void **state) {
    (void)state;
    sink_t s;
    sink_open(&s);
    cli_progress_t p;
    cli_progress_init(&p, s.f, "run", 0, 0); /* a memory stream is no terminal */
    assert_int_equal(p.tty, 0);
    assert_int_equal(p.on, 0);
    cli_progress_init(&p, s.f, "sweep", 0, 1); /* --progress */
    assert_int_equal(p.on, 1);
    sink_close(&s);
    int master;
    FILE *tty = open_pty(&master);
    if (!tty)
        skip();
    cli_progress_init(&p, tty, "run", 0, 0);
    assert_int_equal(p.tty, 1);
    assert_int_equal(p.on, 1);
    cli_progress_init(&p, tty, "run", 1, 0); /* --quiet */
    assert_int_equal(p.on, 0);
    /* the same --json with the progress callback installed (stderr a terminal) and without */
    const char *args[] = {"run", "--model", "gpt3", "--gpus", "64", "--gbs",
                          "16",  "--pp",    "4",    "--dp",   "2",  "--json"};
    const int n = (int)(sizeof args / sizeof args[0]);
    char *argv[16];
    argv[0] = (char *)"stepsim";
    for (int i = 0; i < n; i++)
        argv[i + 1] = (char *)args[i];
    argv[n + 1] = NULL;
    FILE *out = tmpfile();
    assert_non_null(out);
    assert_int_equal(cli_main(n + 1, argv, out, tty), 0);
    char *with = cli_run_slurp(out);
    cli_run_t plain = cli_run_argv(n, args);
    assert_int_equal(plain.rc, 0);
    assert_true(strlen(with) > 100);
    mask_wall(with);
    mask_wall(plain.out);
    assert_string_equal(with, plain.out);
    assert_string_equal(plain.err, "");
    free(with);
    cli_run_free(&plain);
    fclose(tty);
    close(master);
}

/* The binary with stderr redirected to a file (not a terminal): nothing on it. */
static void test_binary_stderr_empty(void **state) {
    (void)state;
    char path[] = "/tmp/stepsim-progress-XXXXXX";
    const int fd = mkstemp(path);
    assert_true(fd >= 0);
    const pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        const int devnull = open("/dev/null", O_WRONLY);
        dup2(devnull, 1);
        dup2(fd, 2);
        execl(STEPSIM_BIN, "stepsim", "run", "--model", "gpt3", "--gpus", "64", "--gbs", "16", "--pp", "4",
              "--dp", "2", (char *)NULL);
        _exit(127);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    assert_int_equal(lseek(fd, 0, SEEK_END), 0);
    close(fd);
    unlink(path);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_terminal_lines),
        cmocka_unit_test(test_short_work_prints_nothing),
        cmocka_unit_test(test_k_of_n),
        cmocka_unit_test(test_quiet_and_not_a_terminal),
        cmocka_unit_test(test_forced_log_lines),
        cmocka_unit_test(test_duration),
        cmocka_unit_test(test_terminal_decision),
        cmocka_unit_test(test_binary_stderr_empty),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
