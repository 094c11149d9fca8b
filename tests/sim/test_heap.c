/* sim/test_heap.c - the engine's one binary heap (sim/sim_heap.h): random pushes and pops against a
 * sorted reference, first-in first-out ties by sequence number, removal and re-keying of indexed
 * entries (every entry's recorded position checked after each operation), and heapify with double
 * keys broken by id, as the max-min solver uses it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "sim_heap.h"

static uint64_t rng_next(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* ---- (time, seq) keys with a position index, as the event queue and the flow heap ---------------- */

typedef struct ent {
    int64_t t;
    uint64_t seq;
    int32_t id;
} ent_t;

static int ent_less(const ent_t *a, const ent_t *b) {
    return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

static int ent_cmp(const void *pa, const void *pb) {
    const ent_t *a = pa, *b = pb;
    return ent_less(a, b) ? -1 : ent_less(b, a) ? 1 : 0;
}

#define ENT_PLACE(pos, h, i) ((pos)[(h)[i].id] = (int32_t)(i))

SIM_HEAP_DEFINE(th, ent_t, int32_t *, ent_less, ENT_PLACE)

/* The same entries without an index. */
SIM_HEAP_DEFINE(tq, ent_t, void *, ent_less, SIM_HEAP_NO_PLACE)

/* The heap order holds everywhere and every entry's recorded position is its index. */
static void check_heap(const ent_t *h, size_t n, const int32_t *pos) {
    for (size_t i = 1; i < n; i++)
        assert_false(ent_less(&h[i], &h[(i - 1) / 2]));
    if (pos)
        for (size_t i = 0; i < n; i++)
            assert_int_equal(pos[h[i].id], (int32_t)i);
}

static void test_random_against_sorted(void **state) {
    (void)state;
    uint64_t s = 42;
    for (int round = 0; round < 30; round++) {
        const size_t n = 1 + rng_next(&s) % 3000;
        const uint64_t span = 1 + rng_next(&s) % 40; /* few distinct times: many ties */
        ent_t *h = malloc(n * sizeof *h), *ref = malloc(n * sizeof *ref);
        int32_t *pos = malloc(n * sizeof *pos);
        assert_true(h && ref && pos);
        size_t hn = 0, pushed = 0, popped = 0;
        uint64_t seq = 0;
        /* Pushes and pops interleaved at random; every pop must be the smallest of what was pushed
         * and not yet popped. The reference holds the pushed entries; sorting it gives the order
         * in which they must leave when nothing pushed later is smaller. */
        while (popped < n) {
            if (pushed < n && (hn == 0 || rng_next(&s) % 3 != 0)) {
                const ent_t x = {(int64_t)(rng_next(&s) % span), seq++, (int32_t)pushed};
                ref[pushed++] = x;
                th_push(h, &hn, &x, pos);
            } else {
                /* The smallest entry of ref[popped..pushed) goes to ref[popped]. */
                size_t m = popped;
                for (size_t i = popped + 1; i < pushed; i++)
                    if (ent_less(&ref[i], &ref[m]))
                        m = i;
                const ent_t want = ref[m];
                ref[m] = ref[popped];
                ref[popped++] = want;
                assert_int_equal(h[0].id, want.id);
                assert_int_equal(h[0].seq, want.seq);
                th_remove_at(h, &hn, 0, pos);
            }
            check_heap(h, hn, pos);
        }
        assert_int_equal(hn, 0);
        /* Bulk: push everything, then pop everything; the pops come out exactly sorted. */
        for (size_t i = 0; i < n; i++) {
            ref[i] = (ent_t){(int64_t)(rng_next(&s) % span), seq++, (int32_t)i};
            tq_push(h, &hn, &ref[i], NULL);
        }
        qsort(ref, n, sizeof *ref, ent_cmp);
        for (size_t i = 0; i < n; i++) {
            assert_int_equal(h[0].id, ref[i].id);
            tq_remove_at(h, &hn, 0, NULL);
        }
        free(h);
        free(ref);
        free(pos);
    }
}

/* Equal times leave in the order they were pushed, also when pushes and pops alternate. */
static void test_ties_fifo(void **state) {
    (void)state;
    enum { N = 1000 };
    ent_t h[N + 1];
    size_t n = 0;
    uint64_t seq = 0;
    for (int32_t i = 0; i < N; i++) {
        const ent_t x = {7, seq++, i};
        tq_push(h, &n, &x, NULL);
    }
    /* Hold: pop one, push one at the same time; the pushed ones queue behind every older one. */
    for (int32_t i = 0; i < 5 * N; i++) {
        assert_int_equal(h[0].id, i);
        tq_remove_at(h, &n, 0, NULL);
        const ent_t x = {7, seq++, N + i};
        tq_push(h, &n, &x, NULL);
    }
    for (int32_t i = 5 * N; i < 6 * N; i++) {
        assert_int_equal(h[0].id, i);
        tq_remove_at(h, &n, 0, NULL);
    }
    assert_int_equal(n, 0);
}

/* Removal at any index and re-keying up or down (as the flow heap does when a flow ends early or
 * its rate changes), against a reference of each live id's key. */
static void test_remove_and_rekey(void **state) {
    (void)state;
    enum { IDS = 500 };
    ent_t h[IDS];
    int32_t pos[IDS];
    ent_t key[IDS];
    int live[IDS] = {0};
    size_t n = 0;
    uint64_t s = 9, seq = 0;
    int removed = 0, raised = 0, lowered = 0;
    for (int step = 0; step < 60000; step++) {
        const int32_t id = (int32_t)(rng_next(&s) % IDS);
        const int64_t t = (int64_t)(rng_next(&s) % 64);
        const int op = (int)(rng_next(&s) % 4);
        if (!live[id]) {
            key[id] = (ent_t){t, seq++, id};
            live[id] = 1;
            th_push(h, &n, &key[id], pos);
        } else if (op == 0) {
            th_remove_at(h, &n, (size_t)pos[id], pos);
            live[id] = 0;
            removed++;
        } else if (op == 1 || op == 2) {
            const ent_t x = {t, seq++, id};
            raised += ent_less(&key[id], &x);
            lowered += ent_less(&x, &key[id]);
            key[id] = x;
            h[pos[id]] = x;
            th_fix(h, n, (size_t)pos[id], pos);
        } else {
            /* Pop the top: it must be the smallest live key. */
            int32_t m = -1;
            for (int32_t i = 0; i < IDS; i++)
                if (live[i] && (m < 0 || ent_less(&key[i], &key[m])))
                    m = i;
            assert_int_equal(h[0].id, m);
            live[m] = 0;
            th_remove_at(h, &n, 0, pos);
        }
        check_heap(h, n, pos);
        size_t want = 0;
        for (int32_t i = 0; i < IDS; i++)
            want += (size_t)live[i];
        assert_int_equal(n, want);
    }
    assert_true(removed > 1000 && raised > 1000 && lowered > 1000);
}

/* ---- (double, id) keys and heapify, as the max-min solver's link heap ------------------------------ */

typedef struct dent {
    double share;
    int32_t link;
} dent_t;

static int dent_less(const dent_t *a, const dent_t *b) {
    return a->share < b->share || (a->share == b->share && a->link < b->link);
}

static int dent_cmp(const void *pa, const void *pb) {
    const dent_t *a = pa, *b = pb;
    return dent_less(a, b) ? -1 : dent_less(b, a) ? 1 : 0;
}

SIM_HEAP_DEFINE(dh, dent_t, void *, dent_less, SIM_HEAP_NO_PLACE)

static void test_heapify_double_keys(void **state) {
    (void)state;
    uint64_t s = 5;
    for (int round = 0; round < 30; round++) {
        const size_t n = rng_next(&s) % 2000;
        dent_t *h = malloc((n + 1) * sizeof *h), *ref = malloc((n + 1) * sizeof *ref);
        assert_true(h && ref);
        for (size_t i = 0; i < n; i++) {
            /* Link ids in a shuffled order, shares from a few values: ties by id decide. */
            h[i] = (dent_t){(double)(rng_next(&s) % 7) / 3.0, (int32_t)((i * 7919) % (n + 1))};
            ref[i] = h[i];
        }
        dh_heapify(h, n, NULL);
        qsort(ref, n, sizeof *ref, dent_cmp);
        size_t hn = n;
        for (size_t i = 0; i < n; i++) {
            assert_true(h[0].share == ref[i].share);
            assert_int_equal(h[0].link, ref[i].link);
            dh_remove_at(h, &hn, 0, NULL);
        }
        assert_int_equal(hn, 0);
        free(h);
        free(ref);
    }
}

/* Heapify also records every entry's position, the leaves that never move included. */
static void test_heapify_positions(void **state) {
    (void)state;
    uint64_t s = 11;
    for (size_t n = 0; n < 70; n++) {
        ent_t h[70] = {{0}};
        int32_t pos[70] = {0};
        for (size_t i = 0; i < n; i++) {
            h[i] = (ent_t){(int64_t)(rng_next(&s) % 5), i, (int32_t)i};
            pos[i] = -1;
        }
        th_heapify(h, n, pos);
        check_heap(h, n, pos);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_against_sorted), cmocka_unit_test(test_ties_fifo),
        cmocka_unit_test(test_remove_and_rekey),      cmocka_unit_test(test_heapify_double_keys),
        cmocka_unit_test(test_heapify_positions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
