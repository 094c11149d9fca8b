/* test_csv.c - the CSV reader's RFC 4180 quoting (tools/common/csv.c), each case on its own: quoted
 * fields with commas, doubled quotes, quoted line breaks (LF and CRLF), blank lines, a quote never
 * closed (the line it opens on) and an empty file; and `stepsim validate --measured` on a file whose
 * quoted name spans two lines (read as one run, not "empty file") or never closes its quote. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "csv.h"
#include "test_cli_run.h"

/* A temporary file holding text; its path into path. */
static void write_tmp(char *path, size_t n, const char *text) {
    const char *dir = getenv("TMPDIR");
    snprintf(path, n, "%s/stepsim_csv_%ld.csv", dir && dir[0] ? dir : "/tmp", (long)getpid());
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fputs(text, f) >= 0, 1);
    assert_int_equal(fclose(f), 0);
}

static void load_text(const char *text, csv_table_t *t, int expect_rc) {
    char path[256];
    write_tmp(path, sizeof path, text);
    const int rc = csv_load(path, t);
    unlink(path);
    assert_int_equal(rc, expect_rc);
}

static void quoted_commas(void **state) {
    (void)state;
    csv_table_t t;
    load_text("name,x\n\"a, b, c\",1\n", &t, 0);
    assert_int_equal(t.n_rows, 2);
    assert_int_equal(t.widths[1], 2);
    assert_string_equal(csv_cell(&t, 1, 0), "a, b, c");
    assert_string_equal(csv_cell(&t, 1, 1), "1");
    csv_free(&t);
}

static void doubled_quotes(void **state) {
    (void)state;
    csv_table_t t;
    load_text("name,x\n\"say \"\"hi\"\"\",2\n\"\"\"\",3\n", &t, 0);
    assert_int_equal(t.n_rows, 3);
    assert_string_equal(csv_cell(&t, 1, 0), "say \"hi\"");
    assert_string_equal(csv_cell(&t, 2, 0), "\"");
    assert_string_equal(csv_cell(&t, 2, 1), "3");
    csv_free(&t);
}

static void quoted_newlines(void **state) {
    (void)state;
    csv_table_t t;
    load_text("name,x\n\"two\nlines\",1\n\"three\r\nlines, and\na comma\",2\nlast,3\n", &t, 0);
    assert_int_equal(t.n_rows, 4);
    assert_string_equal(csv_cell(&t, 1, 0), "two\nlines");
    assert_string_equal(csv_cell(&t, 1, 1), "1");
    assert_string_equal(csv_cell(&t, 2, 0), "three\r\nlines, and\na comma");
    assert_string_equal(csv_cell(&t, 2, 1), "2");
    assert_string_equal(csv_cell(&t, 3, 0), "last");
    csv_free(&t);
    /* a quoted line break in the header, CRLF line ends and no final line break */
    load_text("\"a\nb\",c\r\n1,2", &t, 0);
    assert_int_equal(t.n_rows, 2);
    assert_int_equal(csv_column(&t, "a\nb"), 0);
    assert_string_equal(csv_cell(&t, 1, 1), "2");
    csv_free(&t);
}

static void blank_lines_and_errors(void **state) {
    (void)state;
    csv_table_t t;
    load_text("\nname,x\n\n\r\nb,1\n\n", &t, 0);
    assert_int_equal(t.n_rows, 2);
    assert_string_equal(csv_cell(&t, 1, 0), "b");
    csv_free(&t);
    /* a quote never closed: EINVAL and the line its record starts on (after a quoted line break) */
    load_text("name,x\n\"a\nb\",1\nc,\"open\n2\n", &t, -1);
    assert_int_equal(errno, EINVAL);
    assert_int_equal(t.error_line, 4);
    /* an empty file: EINVAL, no line */
    load_text("", &t, -1);
    assert_int_equal(errno, EINVAL);
    assert_int_equal(t.error_line, 0);
    /* csv_split_line (one line of the report tools) still ends at the line break */
    char line[] = "\"a,b\",c\n";
    char *f[4];
    assert_int_equal(csv_split_line(line, f, 4), 2);
    assert_string_equal(f[0], "a,b");
    assert_string_equal(f[1], "c");
}

#define HEADER                                                                                               \
    "name,hidden,heads,layers,seq_len,vocab,ffn_hidden,gpus,tp,pp,dp,cp,gbs,mbs,interleave,recompute,"       \
    "sequence_parallel,system,measured_iteration_s\n"
#define ROW ",2304,24,24,2048,51200,9216,32,1,1,32,1,512,2,,full,0,DGX-A100,3.5\n"

/* validate reads a run whose quoted name spans two lines as that one run. */
static void validate_quoted_newline(void **state) {
    (void)state;
    char path[256];
    write_tmp(path, sizeof path, HEADER "\"small, full\nrecompute\"" ROW);
    cli_run_t r = cli_run("validate", "--measured", path, "--json", NULL);
    if (r.rc != 0)
        fail_msg("exit %d: %s", r.rc, r.err);
    assert_non_null(strstr(r.out, "\"small, full\\nrecompute\""));
    cli_run_free(&r);
    write_tmp(path, sizeof path, HEADER "\"small" ROW);
    r = cli_run("validate", "--measured", path, NULL);
    unlink(path);
    assert_int_equal(r.rc, 2);
    assert_non_null(strstr(r.err, "line 2: a quoted field is never closed"));
    assert_null(strstr(r.err, "empty file"));
    assert_int_equal(cli_run_lines(r.err), 1);
    cli_run_free(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(quoted_commas),           cmocka_unit_test(doubled_quotes),
        cmocka_unit_test(quoted_newlines),         cmocka_unit_test(blank_lines_and_errors),
        cmocka_unit_test(validate_quoted_newline),
    };
    return cmocka_run_group_tests_name("stepsim.csv", tests, NULL, NULL);
}
