/* stepsim/test_input_checks.c - input files are read up to a stated size limit, JSON objects have each
 * key once, and text is UTF-8: every refusal is exit 2 with one stderr line naming the file and the
 * culprit, never a crash; and every JSON output is valid JSON in UTF-8, whatever bytes came in.
 *
 * Files over a limit are sparse (ftruncate): they take no disk space. /dev/zero stands for an input
 * that never ends. Each case writes its file in the test's working directory (the build tree).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <fcntl.h>
#include <unistd.h>

#include "../../tools/common/readfile.h"
#include "../../tools/common/utf8.h"
#include "sweep_test_util.h"
#include "test_cli_run.h"

#define MIB ((long long)1 << 20)

typedef struct input_case {
    const char *name;
    const char *file; /* scratch file name; "/dev/zero" is used as it is */
    const char *text; /* its contents, or NULL: a sparse file of sparse_bytes */
    long long sparse_bytes;
    const char *args[8]; /* "%F" is the file; NULL-terminated */
    int rc;
    const char *frag[3]; /* fragments that must all appear in the stderr line ("%F": the file) */
} input_case_t;

#define GRID "{\"command\": \"estimate\", \"vary\": {\"gpus\": [4096]}}"

static const input_case_t CASES[] = {
    /* size limits */
    {"scenario_over_limit",
     "big.json",
     NULL,
     16 * MIB + 1,
     {"estimate", "%F"},
     2,
     {"%F: scenario file too large (16777217 bytes)", "allowed: at most 16 MiB (16777216 bytes)"}},
    {"scenario_at_limit_is_read",
     "limit.json",
     NULL,
     16 * MIB,
     {"estimate", "%F"},
     2,
     {"%F: line 1, column 1", "invalid JSON"}},
    {"scenario_dev_zero",
     "/dev/zero",
     "",
     0,
     {"estimate", "%F"},
     2,
     {"/dev/zero: scenario file too large (more than 16777216 bytes)", "allowed: at most 16 MiB"}},
    {"topology_json_over_limit",
     "bigtopo.json",
     NULL,
     16 * MIB + 1,
     {"topo", "--topology", "%F"},
     2,
     {"%F: topology file too large (16777217 bytes)"}},
    {"graphml_over_limit",
     "big.graphml",
     NULL,
     256 * MIB + 1,
     {"topo", "--topology", "%F"},
     2,
     {"%F: GraphML file too large (268435457 bytes)", "allowed: at most 256 MiB (268435456 bytes)"}},
    {"grid_over_limit",
     "biggrid.json",
     NULL,
     16 * MIB + 1,
     {"sweep", "%F", "--out", "unused.jsonl"},
     2,
     {"%F: grid file too large (16777217 bytes)"}},
    {"grid_dev_zero",
     "/dev/zero",
     "",
     0,
     {"sweep", "%F", "--out", "unused.jsonl"},
     2,
     {"/dev/zero: grid file too large (more than 16777216 bytes)"}},
    {"measured_csv_over_limit",
     "big.csv",
     NULL,
     64 * MIB + 1,
     {"validate", "--measured", "%F"},
     2,
     {"%F: measured-runs CSV file too large (67108865 bytes)", "allowed: at most 64 MiB (67108864 bytes)"}},
    {"measured_csv_dev_zero",
     "/dev/zero",
     "",
     0,
     {"validate", "--measured", "%F"},
     2,
     {"/dev/zero: measured-runs CSV file too large (more than 67108864 bytes)"}},
    {"journal_over_limit",
     "big.jsonl",
     NULL,
     1024 * MIB + 1,
     {"sweep", "@sweep/small_search.json", "--out", "%F", "--resume"},
     2,
     {"%F: sweep output file too large (1073741825 bytes)", "allowed: at most 1 GiB (1073741824 bytes)"}},
};

static void expand(const char *pattern, const char *file, char *out, size_t size) {
    const char *at = strstr(pattern, "%F");
    if (!at)
        snprintf(out, size, "%s", pattern);
    else
        snprintf(out, size, "%.*s%s%s", (int)(at - pattern), pattern, file, at + 2);
}

static void make_file(const input_case_t *c, const char *path) {
    if (strcmp(c->file, "/dev/zero") == 0)
        return;
    if (c->text) {
        sweep_write_file(path, c->text, strlen(c->text));
        return;
    }
    const int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, (off_t)c->sparse_bytes), 0);
    assert_int_equal(close(fd), 0);
}

static void run_case(void **state) {
    const input_case_t *c = *state;
    char path[160], args[8][400], frag[400];
    const char *argv[8] = {0};
    if (strcmp(c->file, "/dev/zero") == 0)
        snprintf(path, sizeof path, "%s", c->file);
    else
        sweep_scratch(path, sizeof path, c->file);
    make_file(c, path);
    int argc = 0;
    for (; argc < 8 && c->args[argc]; argc++) {
        expand(c->args[argc], path, args[argc], sizeof args[argc]);
        argv[argc] = args[argc];
    }
    cli_run_t r = cli_run_argv(argc, argv);
    print_message("case %s: rc %d, stderr: %s", c->name, r.rc, r.err);
    assert_int_equal(r.rc, c->rc);
    assert_string_equal(r.out, "");
    assert_int_equal(cli_run_lines(r.err), 1);
    for (int i = 0; i < 3 && c->frag[i]; i++) {
        expand(c->frag[i], path, frag, sizeof frag);
        if (!strstr(r.err, frag))
            fail_msg("case %s: \"%s\" not in: %s", c->name, frag, r.err);
    }
    cli_run_free(&r);
    if (strcmp(c->file, "/dev/zero") != 0)
        remove(path);
}

/* The reader's limit is exact: limit bytes are read, limit + 1 are refused. */
static void bounded_read_exact(void **state) {
    (void)state;
    char path[160], *buf = NULL;
    size_t len = 0;
    long long size = 0;
    sweep_scratch(path, sizeof path, "exact.txt");
    sweep_write_file(path, "0123456789", 10);
    assert_int_equal(readfile_bounded(path, 10, &buf, &len, &size), READFILE_OK);
    assert_int_equal(len, 10);
    assert_string_equal(buf, "0123456789");
    free(buf);
    assert_int_equal(readfile_bounded(path, 9, &buf, &len, &size), READFILE_TOO_LARGE);
    assert_int_equal(size, 10);
    assert_null(buf);
    assert_int_equal(readfile_bounded("/dev/zero", 100000, &buf, &len, &size), READFILE_TOO_LARGE);
    assert_int_equal(size, -1);
    assert_int_equal(readfile_check_size("/dev/zero", 100000, &size), READFILE_TOO_LARGE);
    assert_int_equal(readfile_bounded(".", 10, &buf, &len, &size), READFILE_ERRNO);
    remove(path);
}

int main(void) {
    enum { N = sizeof CASES / sizeof CASES[0] };
    struct CMUnitTest tests[N + 1];
    for (int i = 0; i < N; i++) {
        struct CMUnitTest t = {CASES[i].name, run_case, NULL, NULL, (void *)&CASES[i]};
        tests[i] = t;
    }
    tests[N] = (struct CMUnitTest)cmocka_unit_test(bounded_read_exact);
    return _cmocka_run_group_tests("stepsim.input_checks", tests, N + 1, NULL, NULL);
}
