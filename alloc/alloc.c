/* alloc.c - the allocation wrappers and the failure-injection hook (contract in alloc.h). */
#define _DEFAULT_SOURCE /* madvise */
#include "alloc.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif

static atomic_uint_fast64_t n_calls;  /* allocations asked for */
static atomic_uint_fast64_t n_failed; /* allocations that returned NULL */
static atomic_uint_fast64_t fail_at;  /* the call number that fails (1-based); 0: disarmed */

/* Count one call; 1 if this is the call that must fail. */
static int injected(void) {
    const uint_fast64_t k = atomic_fetch_add(&n_calls, 1) + 1;
    uint_fast64_t f = k;
    if (atomic_load(&fail_at) != k || !atomic_compare_exchange_strong(&fail_at, &f, 0))
        return 0;
    atomic_fetch_add(&n_failed, 1);
    return 1;
}

static void *counted(void *p) {
    if (!p)
        atomic_fetch_add(&n_failed, 1);
    return p;
}

/* A block of ALLOC_HUGE_MIN_BYTES or more: transparent huge pages asked for over the 2 MiB-aligned
 * part of it (advice; the system may ignore it). */
static void *huge(void *p, size_t size) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    const uintptr_t huge_page_bytes = (uintptr_t)2 << 20;
    if (p && size >= ALLOC_HUGE_MIN_BYTES) {
        const uintptr_t mask = ~(huge_page_bytes - 1);
        const uintptr_t first = ((uintptr_t)p + huge_page_bytes - 1) & mask,
                        end = ((uintptr_t)p + size) & mask;
        if (end > first)
            (void)madvise((void *)first, end - first, MADV_HUGEPAGE);
    }
#else
    (void)size;
#endif
    return p;
}

void *alloc_malloc(size_t size) {
    return injected() ? NULL : counted(huge(malloc(size), size));
}

void *alloc_calloc(size_t count, size_t size) {
    return injected() ? NULL : counted(huge(calloc(count, size), count * size));
}

void *alloc_realloc(void *ptr, size_t size) {
    return injected() ? NULL : counted(huge(realloc(ptr, size), size));
}

char *alloc_strdup(const char *s) {
    if (injected())
        return NULL;
    const size_t n = strlen(s) + 1;
    char *p = counted(malloc(n));
    if (p)
        memcpy(p, s, n);
    return p;
}

int alloc_grow(void **p, int64_t *cap, int64_t need, size_t elem) {
    if (need <= *cap)
        return 0;
    int64_t c = *cap > 0 ? *cap : 64;
    while (c < need) {
        if (c > INT64_MAX / 2)
            return -1;
        c *= 2;
    }
    if (elem > 0 && (uint64_t)c > SIZE_MAX / elem)
        return -1;
    void *q = alloc_realloc(*p, (size_t)c * elem);
    if (!q)
        return -1;
    *p = q;
    *cap = c;
    return 0;
}

void alloc_fail_at(uint64_t k) {
    atomic_store(&fail_at, k ? atomic_load(&n_calls) + k : 0);
}

uint64_t alloc_count(void) {
    return atomic_load(&n_calls);
}

uint64_t alloc_failures(void) {
    return atomic_load(&n_failed);
}
