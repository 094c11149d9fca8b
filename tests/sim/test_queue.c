/* sim/test_queue.c - the event queue: non-decreasing time and first-in-first-out ties under random
 * schedules (bulk and hold patterns, many equal times), peek/size, growth past the initial pool. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "sim.h"

static uint64_t rng_next(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Check one popped event against the previous one: time never decreases, and among equal times
 * the insertion index (kept in .b) increases. */
static void check_order(const sim_event_t *prev, const sim_event_t *ev) {
    assert_true(ev->time_ps >= prev->time_ps);
    if (ev->time_ps == prev->time_ps)
        assert_true(ev->b > prev->b);
}

static void test_bulk_random(void **state) {
    (void)state;
    uint64_t seed = 42;
    for (int round = 0; round < 20; round++) {
        sim_queue_t *q = sim_queue_new(4); /* small: forces growth */
        assert_non_null(q);
        const int n = 1 + (int)(rng_next(&seed) % 5000);
        const uint64_t span = 1 + rng_next(&seed) % 50; /* few distinct times: many ties */
        for (int i = 0; i < n; i++) {
            const sim_event_t ev = {.time_ps = (sim_time_ps_t)(rng_next(&seed) % span), .b = i};
            assert_int_equal(sim_queue_push(q, &ev), SIM_OK);
        }
        assert_int_equal(sim_queue_size(q), (size_t)n);
        sim_event_t prev = {.time_ps = -1, .b = -1}, ev;
        int popped = 0;
        while (sim_queue_pop(q, &ev)) {
            check_order(&prev, &ev);
            prev = ev;
            popped++;
        }
        assert_int_equal(popped, n);
        assert_null(sim_queue_peek(q));
        sim_queue_free(q);
    }
}

/* Hold model: pop the earliest, push a new one at its time plus a random increment (often 0). */
static void test_hold_random(void **state) {
    (void)state;
    uint64_t seed = 7;
    sim_queue_t *q = sim_queue_new(16);
    int64_t next_id = 0;
    for (int i = 0; i < 1000; i++) {
        const sim_event_t ev = {.time_ps = (sim_time_ps_t)(rng_next(&seed) % 100), .b = next_id++};
        sim_queue_push(q, &ev);
    }
    sim_event_t prev = {.time_ps = -1, .b = -1}, ev;
    for (int i = 0; i < 100000; i++) {
        assert_int_equal(sim_queue_pop(q, &ev), 1);
        check_order(&prev, &ev);
        prev = ev;
        const sim_event_t nx = {.time_ps = ev.time_ps + (sim_time_ps_t)(rng_next(&seed) % 3), .b = next_id++};
        assert_int_equal(sim_queue_push(q, &nx), SIM_OK);
    }
    assert_int_equal(sim_queue_size(q), 1000);
    sim_queue_free(q);
}

static void test_peek_and_payload(void **state) {
    (void)state;
    sim_queue_t *q = sim_queue_new(0);
    assert_null(sim_queue_peek(q));
    sim_event_t ev = {.time_ps = 5, .kind = 3, .a = -2, .b = 99};
    sim_queue_push(q, &ev);
    ev.time_ps = 2;
    ev.kind = 1;
    sim_queue_push(q, &ev);
    assert_int_equal(sim_queue_peek(q)->time_ps, 2);
    sim_event_t out;
    assert_int_equal(sim_queue_pop(q, &out), 1);
    assert_int_equal(out.kind, 1);
    assert_int_equal(sim_queue_pop(q, &out), 1);
    assert_int_equal(out.kind, 3);
    assert_int_equal(out.a, -2);
    assert_int_equal(out.b, 99);
    assert_int_equal(sim_queue_pop(q, &out), 0);
    sim_queue_free(q);
    sim_queue_free(NULL);
}

static void test_time_conversion(void **state) {
    (void)state;
    assert_int_equal(sim_s_to_ps(1.0), SIM_PS_PER_S);
    assert_int_equal(sim_s_to_ps(1.5e-12), 2);
    assert_int_equal(sim_s_to_ps(1e30), SIM_TIME_NEVER);
    assert_true(sim_ps_to_s(SIM_PS_PER_S) == 1.0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bulk_random),
        cmocka_unit_test(test_hold_random),
        cmocka_unit_test(test_peek_and_payload),
        cmocka_unit_test(test_time_conversion),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
