/* test_cli_run.h - run cli_main in-process for the CLI tests and capture stdout, stderr and the exit code. */
#ifndef STEPSIM_TEST_CLI_RUN_H
#define STEPSIM_TEST_CLI_RUN_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define CLI_RUN_MAX_ARGS 48

typedef struct cli_run {
    int rc;
    char *out; /* NUL-terminated captured stdout */
    char *err; /* NUL-terminated captured stderr */
} cli_run_t;

static inline char *cli_run_slurp(FILE *f) {
    fflush(f);
    long n = ftell(f);
    char *buf = malloc(n > 0 ? (size_t)n + 1 : 1);
    if (!buf)
        abort();
    rewind(f);
    size_t got = n > 0 ? fread(buf, 1, (size_t)n, f) : 0;
    buf[got] = '\0';
    fclose(f);
    return buf;
}

/* An argument "@name" is replaced by STEPSIM_FIXTURE_DIR "/name". */
static inline cli_run_t cli_run_argv(int argc, const char *const *args) {
    static const char fixture_dir[] = STEPSIM_FIXTURE_DIR;
    char *argv[CLI_RUN_MAX_ARGS + 2];
    char paths[CLI_RUN_MAX_ARGS][512];
    int n = 0;
    argv[n++] = (char *)"stepsim";
    for (int i = 0; i < argc && n <= CLI_RUN_MAX_ARGS; i++) {
        if (args[i][0] == '@') {
            snprintf(paths[i], sizeof paths[i], "%s/%s", fixture_dir, args[i] + 1);
            argv[n++] = paths[i];
        } else {
            argv[n++] = (char *)args[i];
        }
    }
    argv[n] = NULL;
    FILE *out = tmpfile(), *err = tmpfile();
    if (!out || !err)
        abort();
    cli_run_t r;
    r.rc = cli_main(n, argv, out, err);
    r.out = cli_run_slurp(out);
    r.err = cli_run_slurp(err);
    return r;
}

/* cli_run("estimate", "--json", NULL) */
static inline cli_run_t cli_run(const char *first, ...) {
    const char *args[CLI_RUN_MAX_ARGS];
    int n = 0;
    va_list ap;
    va_start(ap, first);
    for (const char *a = first; a && n < CLI_RUN_MAX_ARGS; a = va_arg(ap, const char *))
        args[n++] = a;
    va_end(ap);
    return cli_run_argv(n, args);
}

static inline void cli_run_free(cli_run_t *r) {
    free(r->out);
    free(r->err);
}

static inline int cli_run_lines(const char *s) {
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

#endif
