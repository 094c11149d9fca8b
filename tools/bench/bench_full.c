/* bench_full.c - the full simulation (`run --collapse off`: every GPU simulated) at scale: operations,
 * events, flows, wall time, operations per second, peak resident memory and bytes per GPU of each
 * row, what the run collapsed, with the exact command. Each run is a child process (so its peak
 * resident set is its own), repeated (default 3, --repeat N); prints the median wall time and the
 * largest peak RSS. docs/performance.md holds the tables it produced.
 *
 * Two row sets: the six acceptance rows (default), and with --matrix the scaling matrix: GPT-18B
 * weak scaling (tp 8, pp 1, one microbatch per data-parallel replica: global batch = GPUs / 8) on
 * 256, 1,024, 4,096 and 16,384 GPUs x fat-tree, dgx-h100-superpod (rail-optimized, sized by --gpus),
 * dragonfly (minimal) and dragonfly-ugal x --collapse off and auto. A third, --defaults: `stepsim
 * run` as a user first meets it (the built-in job on ideal and on dgx-a100-superpod, collapsed where
 * exact, and with analytic communication; docs/run.md, "Speed"). A fourth, --what-if: stragglers at
 * scale (docs/performance.md, "Stragglers at scale"): the default gpt3_1T job on 4,096 GPUs of
 * perlmutter with 1% of its GPUs (seeded) 10% slower, every GPU simulated; the what-if alone
 * (--baseline off, the acceptance figure), its baseline alone, and both as `run` does by default.
 *
 * Usage: bench_full [--matrix | --defaults | --what-if] [--repeat N] [--rows LIST] (LIST: row numbers of the
 * chosen set, e.g. 1,2). A program, not a test: it prints figures and never fails on speed. */
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
#define MAX_ARGS 16

typedef struct row {
    const char *name;
    int gpus;
    const char *args[MAX_ARGS];
} row_t;

static const row_t ROWS[] = {
    {"GPT-18B, 256 GPUs, dragonfly",
     256,
     {"run", "--model", "GPT-18B", "--gpus", "256", "--tp", "8", "--pp", "1", "--gbs", "512", "--topology",
      "dragonfly", "--collapse", "off", NULL}},
    {"gpt3, 1024 GPUs, dragonfly",
     1024,
     {"run", "--model", "gpt3", "--gpus", "1024", "--gbs", "1536", "--topology", "dragonfly", "--collapse",
      "off", NULL}},
    {"gpt3_1T, 4096 GPUs, perlmutter minimal",
     4096,
     {"run", "--topology", "{\"preset\":\"perlmutter\",\"routing\":\"minimal\"}", "--nvs", "4", "--collapse",
      "off", NULL}},
    {"gpt3_1T, 4096 GPUs, perlmutter UGAL",
     4096,
     {"run", "--topology", "perlmutter", "--nvs", "4", "--collapse", "off", NULL}},
    {"gpt3_1T, 4096 GPUs, dgx-a100-superpod",
     4096,
     {"run", "--topology", "dgx-a100-superpod", "--collapse", "off", NULL}},
    {"gpt3_1T, 16384 GPUs, dgx-h100-superpod",
     16384,
     {"run", "--gpus", "16384", "--topology", "dgx-h100-superpod", "--collapse", "off", NULL}},
};
#define N_ROWS ((int)(sizeof ROWS / sizeof ROWS[0]))

static const row_t DEFAULT_ROWS[] = {
    {"default (gpt3_1T, network on ideal)", 4096, {"run", NULL}},
    {"default on dgx-a100-superpod", 4096, {"run", "--topology", "dgx-a100-superpod", NULL}},
    {"default, analytic communication", 4096, {"run", "--comm", "analytic", NULL}},
};
#define N_DEFAULT_ROWS ((int)(sizeof DEFAULT_ROWS / sizeof DEFAULT_ROWS[0]))

static const row_t WHAT_IF_ROWS[] = {
    {"perlmutter, 1% slowed x1.1, what-if only",
     4096,
     {"run", "--topology", "perlmutter", "--nvs", "4", "--slow-fraction", "0.01:1.1", "--seed", "1",
      "--baseline", "off", NULL}},
    {"perlmutter, its baseline (no perturbations)",
     4096,
     {"run", "--topology", "perlmutter", "--nvs", "4", NULL}},
    {"perlmutter, 1% slowed x1.1, with baseline",
     4096,
     {"run", "--topology", "perlmutter", "--nvs", "4", "--slow-fraction", "0.01:1.1", "--seed", "1", NULL}},
};
#define N_WHAT_IF_ROWS ((int)(sizeof WHAT_IF_ROWS / sizeof WHAT_IF_ROWS[0]))

static const int MATRIX_GPUS[] = {256, 1024, 4096, 16384};
static const char *const MATRIX_TOPOLOGIES[] = {"fat-tree", "dgx-h100-superpod", "dragonfly",
                                                "dragonfly-ugal"};
static const char *const MATRIX_COLLAPSE[] = {"off", "auto"};
#define N_MATRIX 32
#define MAX_ROWS N_MATRIX

/* The numbers of a matrix row's command (--gpus and --gbs), kept beside the rows that point at them. */
typedef struct matrix_text {
    char name[64];
    char gpus[16];
    char gbs[16];
} matrix_text_t;

/* The scaling matrix: size, then topology, then collapse (off before auto) vary fastest last. */
static void matrix_rows(row_t *rows, matrix_text_t *text) {
    int k = 0;
    for (int g = 0; g < 4; g++)
        for (int t = 0; t < 4; t++)
            for (int c = 0; c < 2; c++, k++) {
                const int gpus = MATRIX_GPUS[g];
                snprintf(text[k].name, sizeof text[k].name, "GPT-18B, %d GPUs, %s, %s", gpus,
                         MATRIX_TOPOLOGIES[t], MATRIX_COLLAPSE[c]);
                snprintf(text[k].gpus, sizeof text[k].gpus, "%d", gpus);
                snprintf(text[k].gbs, sizeof text[k].gbs, "%d", gpus / 8);
                const row_t r = {text[k].name,
                                 gpus,
                                 {"run", "--model", "GPT-18B", "--gpus", text[k].gpus, "--tp", "8", "--pp",
                                  "1", "--gbs", text[k].gbs, "--topology", MATRIX_TOPOLOGIES[t], "--collapse",
                                  MATRIX_COLLAPSE[c], NULL}};
                rows[k] = r;
            }
}

typedef struct figures {
    double wall_s;
    long rss_kb;
    double operations, events, flows;
    char collapsed[32]; /* simulation.collapse.collapsed: "none" or what was collapsed */
} figures_t;

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* The number after "key": in a JSON text (the first occurrence), -1 if absent. */
static double json_number(const char *text, const char *key) {
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = strstr(text, pat);
    return p ? strtod(p + strlen(pat), NULL) : -1.0;
}

/* The string after "key": in a JSON text (the first occurrence) into out, "?" if absent. */
static void json_string(const char *text, const char *key, char *out, size_t size) {
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = strstr(text, pat);
    snprintf(out, size, "?");
    if (!p)
        return;
    p = strchr(p + strlen(pat), '"');
    const char *end = p ? strchr(p + 1, '"') : NULL;
    if (end)
        snprintf(out, size, "%.*s", (int)(end - p - 1), p + 1);
}

/* One run in a child process (its --json output into a temporary file): wall seconds, the child's
 * peak RSS (KB, reported through a pipe) and its counts; -1 on failure. */
static int one(const row_t *r, figures_t *f) {
    int fd[2];
    FILE *tf = tmpfile();
    if (!tf || pipe(fd) != 0)
        return -1;
    const double t0 = now_s();
    const pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        char *argv[MAX_ARGS + 3];
        int argc = 0;
        argv[argc++] = (char *)"stepsim";
        for (int i = 0; r->args[i]; i++)
            argv[argc++] = (char *)r->args[i];
        argv[argc++] = (char *)"--json";
        argv[argc] = NULL;
        close(fd[0]);
        const int rc = cli_main(argc, argv, tf, stderr);
        fflush(tf);
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
        got != (ssize_t)sizeof kb) {
        fclose(tf);
        return -1;
    }
    f->wall_s = now_s() - t0;
    f->rss_kb = kb;
    rewind(tf);
    static char text[1 << 16];
    const size_t n = fread(text, 1, sizeof text - 1, tf);
    text[n] = '\0';
    fclose(tf);
    f->operations = json_number(text, "operations");
    f->events = json_number(text, "events");
    f->flows = json_number(text, "flows");
    json_string(text, "collapsed", f->collapsed, sizeof f->collapsed);
    return 0;
}

static void print_command(const row_t *r) {
    printf("  command: stepsim");
    for (int i = 0; r->args[i]; i++)
        printf(strchr(r->args[i], '"') ? " '%s'" : " %s", r->args[i]);
    printf(" --json\n");
}

int main(int argc, char **argv) {
    int repeat = 3, matrix = 0, defaults = 0, what_if = 0;
    const char *rows_arg = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--repeat") == 0 && i + 1 < argc) {
            repeat = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--rows") == 0 && i + 1 < argc) {
            rows_arg = argv[++i];
        } else if (strcmp(argv[i], "--matrix") == 0 && !defaults && !what_if) {
            matrix = 1;
        } else if (strcmp(argv[i], "--defaults") == 0 && !matrix && !what_if) {
            defaults = 1;
        } else if (strcmp(argv[i], "--what-if") == 0 && !matrix && !defaults) {
            what_if = 1;
        } else {
            fprintf(stderr,
                    "usage: bench_full [--matrix | --defaults | --what-if] [--repeat N] [--rows LIST]\n");
            return 2;
        }
    }
    if (repeat < 1 || repeat > MAX_REPEAT) {
        fprintf(stderr, "bench_full: --repeat: %d; allowed: 1..%d\n", repeat, MAX_REPEAT);
        return 2;
    }
    row_t matrix_set[N_MATRIX];
    matrix_text_t text[N_MATRIX];
    if (matrix)
        matrix_rows(matrix_set, text);
    const row_t *rows = matrix ? matrix_set : defaults ? DEFAULT_ROWS : what_if ? WHAT_IF_ROWS : ROWS;
    const int n_rows = matrix ? N_MATRIX : defaults ? N_DEFAULT_ROWS : what_if ? N_WHAT_IF_ROWS : N_ROWS;
    int wanted[MAX_ROWS];
    for (int k = 0; k < n_rows; k++)
        wanted[k] = rows_arg == NULL;
    for (const char *p = rows_arg; p && *p;) {
        char *end = NULL;
        const long k = strtol(p, &end, 10);
        if (end == p || k < 1 || k > n_rows || (*end && *end != ',')) {
            fprintf(stderr, "bench_full: --rows: \"%s\"; allowed: row numbers 1..%d, e.g. 1,2\n", rows_arg,
                    n_rows);
            return 2;
        }
        wanted[k - 1] = 1;
        p = *end ? end + 1 : end;
    }
    printf("%-3s %-44s %12s %12s %10s %5s %10s %10s %12s %12s  %s\n", "row", "scenario", "operations",
           "events", "flows", "runs", "median_s", "ops_per_s", "peak_rss_mb", "bytes_per_gpu", "collapsed");
    for (int k = 0; k < n_rows; k++) {
        if (!wanted[k])
            continue;
        double t[MAX_REPEAT];
        figures_t f = {0};
        long rss = 0;
        for (int r = 0; r < repeat; r++) {
            if (one(&rows[k], &f) != 0) {
                fprintf(stderr, "bench_full: row %d (%s) failed\n", k + 1, rows[k].name);
                return 1;
            }
            t[r] = f.wall_s;
            rss = f.rss_kb > rss ? f.rss_kb : rss;
        }
        const double med_s = stats_median(t, (size_t)repeat);
        printf("%-3d %-44s %12.0f %12.0f %10.0f %5d %10.2f %10.0f %12.1f %12.0f  %s\n", k + 1, rows[k].name,
               f.operations, f.events, f.flows, repeat, med_s, f.operations / med_s, (double)rss / 1024.0,
               (double)rss * 1024.0 / rows[k].gpus, f.collapsed);
        print_command(&rows[k]);
        fflush(stdout);
    }
    return 0;
}
