/* alloc/test_grow.c - alloc_grow (alloc.h): capacities double from the old one (64 from none), the
 * contents survive, a need already met allocates nothing, and a failed or impossible growth leaves
 * the array and its capacity as they were. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "alloc.h"

static void test_doubling(void **state) {
    (void)state;
    int32_t *a = NULL;
    int64_t cap = 0;
    assert_int_equal(alloc_grow((void **)&a, &cap, 1, sizeof *a), 0);
    assert_non_null(a);
    assert_int_equal(cap, 64);
    for (int32_t i = 0; i < 64; i++)
        a[i] = i;
    const uint64_t before = alloc_count();
    assert_int_equal(alloc_grow((void **)&a, &cap, 64, sizeof *a), 0); /* met: no allocation */
    assert_int_equal(alloc_count(), before);
    assert_int_equal(alloc_grow((void **)&a, &cap, 300, sizeof *a), 0);
    assert_int_equal(cap, 512);
    for (int32_t i = 0; i < 64; i++)
        assert_int_equal(a[i], i);
    free(a);
}

static void test_failure_keeps_the_array(void **state) {
    (void)state;
    int32_t *a = NULL;
    int64_t cap = 0;
    assert_int_equal(alloc_grow((void **)&a, &cap, 10, sizeof *a), 0);
    int32_t *const kept = a;
    a[9] = 7;
    alloc_fail_at(1);
    assert_int_equal(alloc_grow((void **)&a, &cap, 65, sizeof *a), -1);
    alloc_fail_at(0);
    assert_ptr_equal(a, kept);
    assert_int_equal(cap, 64);
    assert_int_equal(a[9], 7);
    /* sizes no allocator can give: refused before asking */
    const uint64_t before = alloc_count();
    assert_int_equal(alloc_grow((void **)&a, &cap, INT64_MAX, sizeof *a), -1);
    assert_int_equal(alloc_grow((void **)&a, &cap, (int64_t)1 << 62, 64), -1);
    assert_int_equal(alloc_count(), before);
    assert_int_equal(cap, 64);
    free(a);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_doubling),
        cmocka_unit_test(test_failure_keeps_the_array),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
