/* queue.c - the event queue: the engine's binary heap (sim_heap.h) of events stored by value, keyed
 * by (time_ps, seq). seq comes from a per-queue counter at push time, so ties pop first-in first-out
 * and the order never depends on heap layout. The array is the event pool: it grows geometrically
 * and is never shrunk, so a steady-state push/pop never allocates. A stand-alone 2-ary heap measured
 * 7-10 M hold operations/s on the development machine and a 4-ary one gained nothing; the engine's
 * own figures are in docs/engine.md, "Speed". */
#include <stdlib.h>

#include "alloc.h"
#include "sim_heap.h"
#include "sim_internal.h"

struct sim_queue {
    sim_event_t *heap;
    int64_t cap;
    size_t n;
    uint64_t next_seq;
};

static int ev_less(const sim_event_t *a, const sim_event_t *b) {
    return a->time_ps < b->time_ps || (a->time_ps == b->time_ps && a->seq < b->seq);
}

SIM_HEAP_DEFINE(evq, sim_event_t, void *, ev_less, SIM_HEAP_NO_PLACE)

sim_queue_t *sim_queue_new(size_t initial_capacity) {
    sim_queue_t *q = alloc_calloc(1, sizeof *q);
    if (!q)
        return NULL;
    q->cap = initial_capacity < 16 ? 16 : (int64_t)initial_capacity;
    q->heap = alloc_malloc((size_t)q->cap * sizeof *q->heap);
    if (!q->heap) {
        free(q);
        return NULL;
    }
    return q;
}

void sim_queue_free(sim_queue_t *q) {
    if (!q)
        return;
    free(q->heap);
    free(q);
}

/* Push keeping ev->seq: the engine numbers queue events and flow-heap keys from one counter so
 * that simultaneous items of both heaps interleave in creation order. */
int sim_i_queue_push_seq(sim_queue_t *q, const sim_event_t *ev) {
    if ((int64_t)q->n == q->cap && sim_i_grow((void **)&q->heap, &q->cap, q->cap + 1, sizeof *q->heap))
        return SIM_ENOMEM;
    evq_push(q->heap, &q->n, ev, NULL);
    return SIM_OK;
}

int sim_queue_pop(sim_queue_t *q, sim_event_t *out) {
    if (q->n == 0)
        return 0;
    *out = q->heap[0];
    evq_remove_at(q->heap, &q->n, 0, NULL);
    return 1;
}

int sim_queue_push(sim_queue_t *q, const sim_event_t *ev) {
    sim_event_t x = *ev;
    x.seq = q->next_seq++;
    return sim_i_queue_push_seq(q, &x);
}

const sim_event_t *sim_queue_peek(const sim_queue_t *q) {
    return q->n ? &q->heap[0] : NULL;
}

size_t sim_queue_size(const sim_queue_t *q) {
    return q->n;
}
