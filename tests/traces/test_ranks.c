/* traces/test_ranks.c - trace_ranks_parse (--trace-ranks): lists, ranges, spaces, merging, "all",
 * membership; and every kind of bad input with its exact message naming the bad item. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "trace.h"

/* Parse text and compare the ranges with want[0..2n). */
static void expect_ranges(const char *text, int32_t n_gpus, const int32_t *want, int32_t n) {
    trace_ranks_t r;
    char err[256] = "unset";
    const int rc = trace_ranks_parse(text, n_gpus, &r, err, sizeof err);
    if (rc != TRACE_OK)
        fail_msg("\"%s\": %s", text, err);
    assert_string_equal(err, "");
    assert_int_equal(r.all, 0);
    assert_int_equal(r.n_ranges, n);
    for (int32_t i = 0; i < n; i++) {
        assert_int_equal(r.ranges[i].first, want[2 * i]);
        assert_int_equal(r.ranges[i].last, want[2 * i + 1]);
    }
    trace_ranks_destroy(&r);
}

static void test_parse(void **state) {
    (void)state;
    expect_ranges("0-7,64", 128, (const int32_t[]){0, 7, 64, 64}, 2);
    expect_ranges("64,0-7", 0, (const int32_t[]){0, 7, 64, 64}, 2);
    expect_ranges(" 3 , 1-2 ", 8, (const int32_t[]){1, 3}, 1); /* adjacent ranges merge */
    expect_ranges("0-3,2-5,5", 8, (const int32_t[]){0, 5}, 1);
    expect_ranges("7", 8, (const int32_t[]){7, 7}, 1);
    expect_ranges("5,5,5", 8, (const int32_t[]){5, 5}, 1);
    expect_ranges("2147483647", 0, (const int32_t[]){2147483647, 2147483647}, 1);
    expect_ranges("0-2147483647,5", 0, (const int32_t[]){0, 2147483647}, 1);

    trace_ranks_t r;
    assert_int_equal(trace_ranks_parse(" all ", 8, &r, NULL, 0), TRACE_OK);
    assert_int_equal(r.all, 1);
    assert_true(trace_ranks_contains(&r, 0));
    assert_true(trace_ranks_contains(&r, 100000));
    assert_false(trace_ranks_contains(&r, -1));
    trace_ranks_destroy(&r);

    assert_int_equal(trace_ranks_parse("0-7,64,100-101", 0, &r, NULL, 0), TRACE_OK);
    const int32_t in[] = {0, 3, 7, 64, 100, 101}, out[] = {-1, 8, 63, 65, 99, 102, 1000};
    for (size_t i = 0; i < sizeof in / sizeof in[0]; i++)
        assert_true(trace_ranks_contains(&r, in[i]));
    for (size_t i = 0; i < sizeof out / sizeof out[0]; i++)
        assert_false(trace_ranks_contains(&r, out[i]));
    trace_ranks_destroy(&r);
    assert_false(trace_ranks_contains(NULL, 0));
    trace_ranks_destroy(NULL);
    trace_ranks_destroy(&r); /* zeroed by the first destroy */
}

static void expect_error(const char *text, int32_t n_gpus, const char *msg) {
    trace_ranks_t r;
    memset(&r, 0x55, sizeof r);
    char err[256];
    assert_int_equal(trace_ranks_parse(text, n_gpus, &r, err, sizeof err), TRACE_EINVAL);
    assert_string_equal(err, msg);
    assert_null(r.ranges); /* nothing to free */
    assert_int_equal(r.n_ranges, 0);
}

static void test_errors(void **state) {
    (void)state;
    expect_error(NULL, 8, "no GPU ranks given; expected N or A-B, e.g. 0-7,64");
    expect_error("", 8, "empty list of GPU ranks; expected N or A-B, e.g. 0-7,64");
    expect_error("  ", 8, "empty list of GPU ranks; expected N or A-B, e.g. 0-7,64");
    expect_error("x", 8, "\"x\": not a GPU rank or range (expected N or A-B, e.g. 0-7,64)");
    expect_error("0-7,64x", 128, "\"64x\": not a GPU rank or range (expected N or A-B, e.g. 0-7,64)");
    expect_error("1-", 8, "\"1-\": not a GPU rank or range (expected N or A-B, e.g. 0-7,64)");
    expect_error("-3", 8, "\"-3\": not a GPU rank or range (expected N or A-B, e.g. 0-7,64)");
    expect_error("1-2-3", 8, "\"1-2-3\": not a GPU rank or range (expected N or A-B, e.g. 0-7,64)");
    expect_error("1 - 2", 8, "\"1 - 2\": not a GPU rank or range (expected N or A-B, e.g. 0-7,64)");
    expect_error("+1", 8, "\"+1\": not a GPU rank or range (expected N or A-B, e.g. 0-7,64)");
    expect_error("1;2", 8, "\"1;2\": not a GPU rank or range (expected N or A-B, e.g. 0-7,64)");
    expect_error("ALL", 8, "\"ALL\": not a GPU rank or range (expected N or A-B, e.g. 0-7,64)");
    expect_error("7-3", 8, "\"7-3\": range is descending (7 > 3)");
    expect_error("0,,3", 8, "item 2 of \"0,,3\" is empty; expected N or A-B, e.g. 0-7,64");
    expect_error("0,", 8, "item 2 of \"0,\" is empty; expected N or A-B, e.g. 0-7,64");
    expect_error(",0", 8, "item 1 of \",0\" is empty; expected N or A-B, e.g. 0-7,64");
    expect_error("0-7,64", 64, "\"64\": GPU 64 is beyond the last GPU (63)");
    expect_error("60-70", 64, "\"60-70\": GPU 70 is beyond the last GPU (63)");
    expect_error("99999999999", 0, "\"99999999999\": GPU rank too large (at most 2147483647)");
    expect_error("0-2147483648", 0, "\"0-2147483648\": GPU rank too large (at most 2147483647)");
    /* A tiny buffer is truncated, not overrun. */
    trace_ranks_t r;
    char small[8];
    assert_int_equal(trace_ranks_parse("x", 8, &r, small, sizeof small), TRACE_EINVAL);
    assert_string_equal(small, "\"x\": no");
    assert_int_equal(trace_ranks_parse("x", 8, NULL, NULL, 0), TRACE_EINVAL);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
