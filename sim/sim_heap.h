/* sim_heap.h - the engine's binary min-heap, written once and instantiated per entry type.
 *
 * Every priority queue of the engine is this heap: the event queue (queue.c: sim_event_t keyed by
 * (time_ps, seq)), the flow heap (network.c: flows keyed by (time of their next transition, seq),
 * with a position index for re-keying and removal) and the two heaps of the max-min solver
 * (maxmin.c: links keyed by (share, link id), bounded flows by (bound / weight, flow id)). The keys
 * differ in type (integer picoseconds, doubles) and the entries in payload, so the heap is a macro
 * over the entry type rather than code over void pointers: each instance compiles to the same code
 * as a hand-written heap with its comparison inlined, which keeps the per-event cost where it was.
 *
 * SIM_HEAP_DEFINE(NAME, T, CTX, LESS, PLACE) defines static functions over an array h[0..n) of T:
 *   NAME_push(h, &n, x, ctx)     insert x; h must have room for n + 1 entries (the owner grows it
 *                                geometrically: nothing here allocates)
 *   NAME_remove_at(h, &n, i, ctx) remove the entry at index i (the top is index 0)
 *   NAME_fix(h, n, i, ctx)       restore the order after the key of h[i] changed either way
 *   NAME_heapify(h, n, ctx)      order an unordered array in O(n)
 * LESS(a, b) compares two const T * and must be a strict total order: every key ends in a unique
 * tie-breaker (a sequence number or an id, never a pointer), so the order in which entries leave
 * the heap depends only on the keys, never on the heap's layout or on how it was built.
 * PLACE(ctx, h, i) is called whenever an entry is written to h[i] by push, remove, fix or heapify,
 * so that a heap whose entries must be found again (decrease-key, removal) can keep each entry's
 * index; heaps without an index pass SIM_HEAP_NO_PLACE. CTX is the type of the ctx argument.
 *
 * Removal moves the last entry into the hole and sifts it up or down. Floyd's bottom-up variant (the
 * hole down to a leaf first, then the last entry up) measured the same, within the noise, on the
 * event queue's hold benchmark and on the step-fidelity rings (whose flow heap removes one entry
 * per flow), so the heap keeps the two sifts only.
 *
 * Not a heap: model/search.c keeps its best top_k layouts by sorted insertion, since it returns
 * them sorted, nearly every candidate is rejected by one comparison with the worst kept, and model/
 * sits below sim/. */
#ifndef STEPSIM_SIM_HEAP_H
#define STEPSIM_SIM_HEAP_H

#include <stddef.h>

#define SIM_HEAP_NO_PLACE(ctx, h, i) ((void)(ctx), (void)(h), (void)(i))

#define SIM_HEAP_DEFINE(NAME, T, CTX, LESS, PLACE)                                                           \
    /* Fill the hole at h[i] with x, moving x up past the larger ancestors (one write per level). */         \
    static inline __attribute__((unused)) void NAME##_up(T *h, size_t i, T x, CTX ctx) {                     \
        while (i > 0) {                                                                                      \
            const size_t p = (i - 1) / 2;                                                                    \
            if (!LESS(&x, &h[p]))                                                                            \
                break;                                                                                       \
            h[i] = h[p];                                                                                     \
            PLACE(ctx, h, i);                                                                                \
            i = p;                                                                                           \
        }                                                                                                    \
        h[i] = x;                                                                                            \
        PLACE(ctx, h, i);                                                                                    \
    }                                                                                                        \
                                                                                                             \
    /* Fill the hole at h[i] with x, moving x down past the smaller children within h[0..n). */              \
    static inline __attribute__((unused)) void NAME##_down(T *h, size_t n, size_t i, T x, CTX ctx) {         \
        for (;;) {                                                                                           \
            size_t c = 2 * i + 1;                                                                            \
            if (c >= n)                                                                                      \
                break;                                                                                       \
            if (c + 1 < n && LESS(&h[c + 1], &h[c]))                                                         \
                c++;                                                                                         \
            if (!LESS(&h[c], &x))                                                                            \
                break;                                                                                       \
            h[i] = h[c];                                                                                     \
            PLACE(ctx, h, i);                                                                                \
            i = c;                                                                                           \
        }                                                                                                    \
        h[i] = x;                                                                                            \
        PLACE(ctx, h, i);                                                                                    \
    }                                                                                                        \
                                                                                                             \
    static inline __attribute__((unused)) void NAME##_push(T *h, size_t *n, const T *x, CTX ctx) {           \
        NAME##_up(h, (*n)++, *x, ctx);                                                                       \
    }                                                                                                        \
                                                                                                             \
    static inline __attribute__((unused)) void NAME##_remove_at(T *h, size_t *n, size_t i, CTX ctx) {        \
        const size_t last = --*n;                                                                            \
        if (i == last)                                                                                       \
            return;                                                                                          \
        const T x = h[last];                                                                                 \
        if (i > 0 && LESS(&x, &h[(i - 1) / 2]))                                                              \
            NAME##_up(h, i, x, ctx);                                                                         \
        else                                                                                                 \
            NAME##_down(h, last, i, x, ctx);                                                                 \
    }                                                                                                        \
                                                                                                             \
    static inline __attribute__((unused)) void NAME##_fix(T *h, size_t n, size_t i, CTX ctx) {               \
        const T x = h[i];                                                                                    \
        if (i > 0 && LESS(&x, &h[(i - 1) / 2]))                                                              \
            NAME##_up(h, i, x, ctx);                                                                         \
        else                                                                                                 \
            NAME##_down(h, n, i, x, ctx);                                                                    \
    }                                                                                                        \
                                                                                                             \
    static inline __attribute__((unused)) void NAME##_heapify(T *h, size_t n, CTX ctx) {                     \
        for (size_t i = n / 2; i < n; i++) /* the leaves stay where they are unless moved below */           \
            PLACE(ctx, h, i);                                                                                \
        for (size_t i = n / 2; i-- > 0;)                                                                     \
            NAME##_down(h, n, i, h[i], ctx);                                                                 \
    }

#endif
