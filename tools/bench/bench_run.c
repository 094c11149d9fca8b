/* bench_run.c - wall time and peak memory of `stepsim run` on the scenarios the acceptance
 * names: the built-in default (gpt3_1T on 4096 A100, tp 8, pp 32, dp 16, network mode on the ideal
 * topology), the same step on the dgx-a100-superpod fabric, and the default with analytic
 * communication. Each run is a child process (so its peak resident set is its own), repeated
 * (default 3, --repeat N); prints the median wall time and the largest peak RSS.
 *
 * Usage: bench_run [--repeat N]. A program, not a test: it prints figures and never fails on speed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "stats.h"

#define MAX_REPEAT 21

typedef struct scenario {
    const char *name;
    const char *args[8];
} scenario_t;

static const scenario_t SCENARIOS[] = {
    {"default (network, ideal)", {"run", NULL}},
    {"default on dgx-a100-superpod", {"run", "--topology", "dgx-a100-superpod", NULL}},
    {"default, analytic comm", {"run", "--comm", "analytic", NULL}},
};

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* One run in a child process: wall seconds and the child's peak RSS (KB, which it reports itself
 * through a pipe); -1 on failure. */
static int one(const scenario_t *s, double *wall_s, long *rss_kb) {
    int fd[2];
    if (pipe(fd) != 0)
        return -1;
    const double t0 = now_s();
    const pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        char *argv[10];
        int argc = 0;
        argv[argc++] = (char *)"stepsim";
        for (int i = 0; s->args[i]; i++)
            argv[argc++] = (char *)s->args[i];
        argv[argc] = NULL;
        close(fd[0]);
        FILE *out = fopen("/dev/null", "w");
        const int rc = cli_main(argc, argv, out ? out : stdout, stderr);
        if (out)
            fclose(out);
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        const long kb = ru.ru_maxrss;
        if (write(fd[1], &kb, sizeof kb) != (ssize_t)sizeof kb)
            _exit(1);
        _exit(rc);
    }
    close(fd[1]);
    long kb = -1;
    const ssize_t got = read(fd[0], &kb, sizeof kb);
    close(fd[0]);
    int status = 0;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0 ||
        got != (ssize_t)sizeof kb)
        return -1;
    *wall_s = now_s() - t0;
    *rss_kb = kb;
    return 0;
}

int main(int argc, char **argv) {
    int repeat = 3;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--repeat") == 0 && i + 1 < argc) {
            repeat = atoi(argv[++i]);
        } else {
            fprintf(stderr, "usage: bench_run [--repeat N]\n");
            return 2;
        }
    }
    if (repeat < 1 || repeat > MAX_REPEAT) {
        fprintf(stderr, "bench_run: --repeat: %d; allowed: 1..%d\n", repeat, MAX_REPEAT);
        return 2;
    }
    printf("%-32s %8s %14s %14s %14s\n", "scenario", "runs", "median_wall_s", "min_wall_s", "peak_rss_mb");
    for (size_t k = 0; k < sizeof SCENARIOS / sizeof SCENARIOS[0]; k++) {
        double t[MAX_REPEAT];
        long rss = 0;
        for (int r = 0; r < repeat; r++) {
            long kb = 0;
            if (one(&SCENARIOS[k], &t[r], &kb) != 0) {
                fprintf(stderr, "bench_run: %s failed\n", SCENARIOS[k].name);
                return 1;
            }
            rss = kb > rss ? kb : rss;
        }
        const double med_s = stats_median(t, (size_t)repeat); /* t is sorted: t[0] is the minimum */
        printf("%-32s %8d %14.3f %14.3f %14.1f\n", SCENARIOS[k].name, repeat, med_s, t[0],
               (double)rss / 1024.0);
    }
    return 0;
}
