/* alloc/test_huge.c - large blocks are advised as transparent huge pages (alloc.h): a block of
 * ALLOC_HUGE_MIN_BYTES or more from alloc_malloc, alloc_calloc or alloc_realloc lies in a mapping
 * whose flags (/proc/self/smaps VmFlags) carry "hg" (MADV_HUGEPAGE); a small one does not ask.
 * Skipped where the system has no /proc/self/smaps or refuses the advice (no THP in the kernel). */
#define _DEFAULT_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif

#include <cmocka.h>

#include "alloc.h"

/* 1: the mapping holding address p has "hg" in its VmFlags, 0: it has not, -1: not found. */
static int advised(const void *p) {
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f)
        return -1;
    char line[512];
    int in = 0, found = -1;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' ')) {
            in = (uintptr_t)p >= lo && (uintptr_t)p < hi;
            continue;
        }
        if (in && strncmp(line, "VmFlags:", 8) == 0) {
            found = strstr(line, " hg") != NULL;
            break;
        }
    }
    fclose(f);
    return found;
}

/* The system takes the advice at all (else the test has nothing to check). */
static int supported(void) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    const size_t n = (size_t)4 << 20;
    void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return 0;
    const int ok = madvise(p, n, MADV_HUGEPAGE) == 0 && advised(p) == 1;
    munmap(p, n);
    return ok;
#else
    return 0;
#endif
}

/* An address inside the block's 2 MiB-aligned part. */
static const void *inside(const void *p) {
    const uintptr_t page = (uintptr_t)2 << 20;
    return (const void *)((((uintptr_t)p + page - 1) & ~(page - 1)) + 4096);
}

static void test_large_blocks(void **state) {
    (void)state;
    if (!supported())
        skip();
    const size_t big = ALLOC_HUGE_MIN_BYTES + ((size_t)8 << 20);
    char *m = alloc_malloc(big);
    assert_non_null(m);
    assert_int_equal(advised(inside(m)), 1);
    int64_t *c = alloc_calloc(big / sizeof *c, sizeof *c);
    assert_non_null(c);
    assert_int_equal(advised(inside(c)), 1);
    assert_int_equal(c[big / sizeof *c - 1], 0);
    m[0] = 'x';
    m = alloc_realloc(m, 2 * big); /* (moved or grown in place: the whole block is advised again) */
    assert_non_null(m);
    assert_int_equal(m[0], 'x');
    assert_int_equal(advised(inside(m + big)), 1);
    free(m);
    free(c);
}

static void test_small_blocks(void **state) {
    (void)state;
    if (!supported())
        skip();
    /* below the threshold, mapped on its own (above malloc's mmap threshold), not advised */
    const size_t small = ALLOC_HUGE_MIN_BYTES / 2;
    char *m = alloc_malloc(small);
    assert_non_null(m);
    assert_int_equal(advised(inside(m)), 0);
    free(m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_large_blocks),
        cmocka_unit_test(test_small_blocks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
