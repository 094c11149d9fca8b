/* test_columns.c - every command's text output fits 100 columns: every line of the golden cases run
 * without --json (tests/stepsim/test_golden.c's command lines), of a what-if run and of jobs on one
 * fabric, of `stepsim help` and of every command's --help. Columns are counted in characters (UTF-8
 * code points). Runs from the source root, as the golden test does. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_cli_run.h"

#define COLUMNS 100
#define SMALL "tests/fixtures/golden/small.json"
#define THREE_ROWS "tests/fixtures/measured/three_rows.csv"

static const char *const CASES[] = {
    "estimate " SMALL,
    "estimate " SMALL " --layers",
    "search " SMALL " --top 5",
    "topo " SMALL,
    "topo --topology tests/fixtures/topo/dragonfly.json",
    "collective " SMALL,
    "run " SMALL,
    "run " SMALL " --comm analytic",
    "compare " SMALL,
    "compare " SMALL " --gpus 8,16 --topologies ideal,fat-tree",
    "validate " SMALL,
    "validate --measured " THREE_ROWS,
    "validate --measured " THREE_ROWS " --sim",
    "sweep tests/fixtures/golden/sweep.json --out @OUT@ --force --quiet",
    "sweep tests/fixtures/sweep/small_search.json --out @OUT@ --force --quiet",
    /* beyond the golden cases: a what-if, jobs on one fabric, the default job's estimate and search */
    "run " SMALL " --slow-gpus 0-3:1.5 --slow-links class:network:0.5",
    "run tests/fixtures/jobs/mixed.json",
    "compare tests/fixtures/jobs/mixed.json --topologies fat-tree",
    "estimate",
    "search --top 3",
    "help",
};

static const char *const COMMANDS[] = {"estimate", "search",  "topo",     "collective",
                                       "run",      "compare", "validate", "sweep"};

/* Characters of a line (UTF-8 continuation bytes not counted). */
static int width(const char *s, size_t n) {
    int w = 0;
    for (size_t i = 0; i < n; i++)
        w += ((unsigned char)s[i] & 0xC0) != 0x80;
    return w;
}

/* Every line of out within COLUMNS; the number of lines checked. */
static int check_lines(const char *what, const char *out) {
    int lines = 0, bad = 0;
    for (const char *p = out; *p;) {
        const char *nl = strchr(p, '\n');
        const size_t n = nl ? (size_t)(nl - p) : strlen(p);
        const int w = width(p, n);
        if (w > COLUMNS) {
            fprintf(stderr, "%s: %d columns: %.*s\n", what, w, (int)n, p);
            bad++;
        }
        lines++;
        p += n + (nl ? 1 : 0);
    }
    if (bad)
        fail_msg("%s: %d of %d lines wider than %d columns", what, bad, lines, COLUMNS);
    return lines;
}

static void run_case(const char *line, char *journal) {
    char buf[512];
    const char *argv[CLI_RUN_MAX_ARGS];
    int n = 0;
    snprintf(buf, sizeof buf, "%s", line);
    for (char *t = strtok(buf, " "); t && n < CLI_RUN_MAX_ARGS; t = strtok(NULL, " "))
        argv[n++] = strcmp(t, "@OUT@") == 0 ? journal : t;
    cli_run_t r = cli_run_argv(n, argv);
    if (r.rc != 0)
        fail_msg("%s: exit %d: %s", line, r.rc, r.err);
    assert_true(check_lines(line, r.out) > 0);
    cli_run_free(&r);
}

static void cases(void **state) {
    (void)state;
    char journal[256];
    const char *dir = getenv("TMPDIR");
    snprintf(journal, sizeof journal, "%s/stepsim_columns_%ld.jsonl", dir && dir[0] ? dir : "/tmp",
             (long)getpid());
    for (size_t i = 0; i < sizeof CASES / sizeof *CASES; i++)
        run_case(CASES[i], journal);
    remove(journal);
}

static void helps(void **state) {
    (void)state;
    for (size_t i = 0; i < sizeof COMMANDS / sizeof *COMMANDS; i++) {
        cli_run_t r = cli_run(COMMANDS[i], "--help", NULL);
        assert_int_equal(r.rc, 0);
        char what[64];
        snprintf(what, sizeof what, "%s --help", COMMANDS[i]);
        assert_true(check_lines(what, r.out) > 10);
        cli_run_free(&r);
    }
}

/* The check itself: a line of 101 columns fails, one of 100 (with a multi-byte character) passes. */
static void the_check(void **state) {
    (void)state;
    char line[128];
    memset(line, 'x', 101);
    line[101] = '\0';
    assert_int_equal(width(line, strlen(line)), 101);
    memcpy(line, "\xc3\xa9", 2); /* é: two bytes, one column */
    assert_int_equal(width(line, strlen(line)), 100);
}

int main(void) {
    if (chdir(STEPSIM_SOURCE_DIR) != 0) {
        fprintf(stderr, "test_columns: cannot chdir to %s\n", STEPSIM_SOURCE_DIR);
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_check),
        cmocka_unit_test(cases),
        cmocka_unit_test(helps),
    };
    return cmocka_run_group_tests_name("stepsim.columns", tests, NULL, NULL);
}
