/* alloc.h - the project's allocation wrappers and their failure-injection hook.
 *
 * Contract:
 * - Every allocation in model/, topo/, sim/, sim/step/, traces/ and tools/ goes through
 *   alloc_malloc, alloc_calloc, alloc_realloc or alloc_strdup (cJSON's too: the command line
 *   installs them with cJSON_InitHooks). They behave as malloc, calloc, realloc and strdup; memory
 *   they return is released with free(). Allocations made inside igraph and inside the C library
 *   (stdio buffers, getline) do not pass through here.
 * - The hook: each call counts one allocation. alloc_fail_at(k) arms the k-th allocation from now to
 *   fail (return NULL as if the system were out of memory) exactly once; alloc_fail_at(0) disarms.
 *   alloc_count() is the number of calls so far, alloc_failures() the number that returned NULL
 *   (injected or real). A caller that gets NULL from a library which hides the cause (a parser that
 *   reports "syntax error" for both) compares alloc_failures() before and after to tell them apart.
 * - Large blocks (ALLOC_HUGE_MIN_BYTES or more) are advised to Linux as transparent huge pages
 *   (madvise MADV_HUGEPAGE over their 2 MiB-aligned part): the engine's and the step's arrays of
 *   operations are visited out of address order by a run, and with 4 KiB pages most of those visits
 *   miss the TLB, and filling them costs a page fault per 4 KiB (docs/performance.md, "Huge pages").
 *   Advice only: with THP set to "never", on other systems or on failure nothing changes.
 * - This counter is the one piece of process-wide mutable state in the project: a test hook, never
 *   armed unless a test calls alloc_fail_at (tests/stepsim/test_alloc_fail.c fails every allocation
 *   of every command in turn). Its counters are atomic, so threads may allocate concurrently.
 */
#ifndef STEPSIM_ALLOC_H
#define STEPSIM_ALLOC_H

#include <stddef.h>
#include <stdint.h>

#define ALLOC_HUGE_MIN_BYTES ((size_t)32 << 20)

void *alloc_malloc(size_t size);
void *alloc_calloc(size_t count, size_t size);
void *alloc_realloc(void *ptr, size_t size);
char *alloc_strdup(const char *s);
/* Grow the array *p of *cap elements of elem bytes to hold at least need, doubling from *cap (64
 * when 0) through alloc_realloc; the new elements are not initialised. 0 (also when need <= *cap), or
 * -1 (out of memory, or a size beyond SIZE_MAX / INT64_MAX) leaving *p and *cap as they were. */
int alloc_grow(void **p, int64_t *cap, int64_t need, size_t elem);

/* Fail the k-th allocation counted from this call (k >= 1), once; 0 disarms. */
void alloc_fail_at(uint64_t k);
/* Allocations asked for since the process started. */
uint64_t alloc_count(void);
/* Allocations that returned NULL since the process started (injected or real). */
uint64_t alloc_failures(void);

#endif
