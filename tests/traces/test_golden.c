/* traces/test_golden.c - the trace of the small hand-built step (trace_test_util.h) is byte for byte
 * tests/golden/trace_small.json, and writing it twice (two engines, two writers, one process) gives
 * identical bytes. After an intended change of the format, regenerate the golden file with
 *   STEPSIM_UPDATE_GOLDEN=1 build/test_traces_golden
 * and review its diff. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "trace_format.h"
#include "trace_test_util.h"

#define GOLDEN STEPSIM_SOURCE_DIR "/tests/golden/trace_small.json"

static char *write_trace(const char *tag, size_t *len) {
    char *path = tt_temp_path(tag);
    tt_step_t st;
    tt_build(&st);
    const trace_options_t o = tt_options(&st);
    tt_run(&st, path, &o);
    tt_free(&st);
    char *text = tt_slurp(path, len);
    assert_non_null(text);
    remove(path);
    free(path);
    return text;
}

/* Index of the first differing byte and the line it is on, for a readable failure. */
static void report_difference(const char *a, size_t na, const char *b, size_t nb) {
    size_t i = 0, line = 1;
    while (i < na && i < nb && a[i] == b[i])
        line += a[i++] == '\n';
    fail_msg("differs from %s at byte %zu (line %zu): got \"%.60s\", want \"%.60s\"", GOLDEN, i, line, a + i,
             b + i);
}

static void test_twice_identical(void **state) {
    (void)state;
    size_t n1 = 0, n2 = 0;
    char *a = write_trace("twice-a", &n1);
    char *b = write_trace("twice-b", &n2);
    assert_int_equal(n1, n2);
    assert_memory_equal(a, b, n1);
    free(a);
    free(b);
}

static void test_golden(void **state) {
    (void)state;
    size_t n = 0;
    char *got = write_trace("golden", &n);
    const char *update = getenv("STEPSIM_UPDATE_GOLDEN");
    if (update && strcmp(update, "1") == 0) {
        FILE *f = fopen(GOLDEN, "wb");
        assert_non_null(f);
        assert_int_equal(fwrite(got, 1, n, f), n);
        assert_int_equal(fclose(f), 0);
        fprintf(stderr, "wrote %s (%zu bytes)\n", GOLDEN, n);
    }
    size_t nw = 0;
    char *want = tt_slurp(GOLDEN, &nw);
    if (!want)
        fail_msg("cannot read %s (STEPSIM_UPDATE_GOLDEN=1 writes it)", GOLDEN);
    if (n != nw || memcmp(got, want, n) != 0)
        report_difference(got, n, want, nw);
    free(got);
    free(want);
}

/* The golden trace passes the Trace Event Format validator, strictly (no slice of a thread overlaps
 * another in doubles), with its two arrows bound. */
static void test_golden_is_valid(void **state) {
    (void)state;
    size_t n = 0;
    char *text = tt_slurp(GOLDEN, &n);
    assert_non_null(text);
    cJSON *root = cJSON_Parse(text);
    free(text);
    assert_non_null(root);
    tf_stats_t st;
    char msg[300];
    const int problems = tf_check(root, 1, &st, msg, sizeof msg);
    if (problems)
        fail_msg("%s: %d problems, the first: %s", GOLDEN, problems, msg);
    assert_int_equal(st.slices, 28);
    assert_int_equal(st.flow_starts, 2);
    assert_int_equal(st.flow_ends, 2);
    assert_int_equal(st.unbound, 0);
    cJSON_Delete(root);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_twice_identical),
        cmocka_unit_test(test_golden),
        cmocka_unit_test(test_golden_is_valid),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
