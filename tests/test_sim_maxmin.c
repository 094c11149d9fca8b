/* test_sim_maxmin.c - the flow network against hand-computed max-min shares: two flows on a link,
 * a three-bottleneck example, weights, bounds, coflow-free timing (latency before drain, a flow
 * joining midway), per-link byte counters, and that a re-solve touches only the changed component. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sim.h"

/* A hand-made network: n_links links of the given capacities and latencies; no GPU routes are
 * needed for raw flows, so the route function refuses everything. */
static int no_route(void *ctx, int32_t src, int32_t dst, int32_t *links, int32_t cap) {
    (void)ctx, (void)src, (void)dst, (void)links, (void)cap;
    return -1;
}

static sim_engine_t *engine(int n_links, const double *cap, const double *lat) {
    const sim_network_desc_t d = {.n_gpus = 1,
                                  .n_links = n_links,
                                  .capacity_bytes_per_s = cap,
                                  .latency_s = lat,
                                  .route = no_route,
                                  .gpus_per_domain = 1};
    sim_engine_t *e = NULL;
    assert_int_equal(sim_engine_new(NULL, &d, &e, NULL, 0), SIM_OK);
    return e;
}

static sim_flow_id_t flow(sim_engine_t *e, const int32_t *links, int n, double bytes, double weight,
                          double bound, sim_time_ps_t start) {
    const sim_flow_desc_t d = {.links = links,
                               .n_links = n,
                               .bytes = bytes,
                               .weight = weight,
                               .bound_bytes_per_s = bound,
                               .start_ps = start};
    sim_flow_id_t id = -1;
    assert_int_equal(sim_flow_add(e, &d, &id), SIM_OK);
    return id;
}

static void assert_rate(const sim_engine_t *e, sim_flow_id_t f, double want) {
    const double got = sim_flow_rate(e, f);
    if (fabs(got - want) > 1e-9 * want)
        fail_msg("rate %.12g, want %.12g", got, want);
}

static void test_two_flows_half_each(void **state) {
    (void)state;
    const double cap[1] = {10e9}, lat[1] = {0};
    sim_engine_t *e = engine(1, cap, lat);
    const int32_t r[1] = {0};
    const sim_flow_id_t a = flow(e, r, 1, 1e9, 0, 0, 0), b = flow(e, r, 1, 1e9, 0, 0, 0);
    assert_int_equal(sim_engine_run_until(e, 0), SIM_OK);
    assert_rate(e, a, 5e9);
    assert_rate(e, b, 5e9);
    sim_engine_free(e);
}

/* L0 = 10, L1 = 8, L2 = 15; A: L0; B: L0 L1; C: L1 L2; D: L2; E: L2. L1 saturates first at 4
 * (B, C), then L2 at (15 - 4) / 2 = 5.5 (D, E), then L0 at 10 - 4 = 6 (A). */
static void test_three_bottlenecks(void **state) {
    (void)state;
    const double cap[3] = {10, 8, 15}, lat[3] = {0, 0, 0};
    sim_engine_t *e = engine(3, cap, lat);
    const int32_t ra[] = {0}, rb[] = {0, 1}, rc[] = {1, 2}, rd[] = {2};
    const sim_flow_id_t a = flow(e, ra, 1, 100, 0, 0, 0), b = flow(e, rb, 2, 100, 0, 0, 0),
                        c = flow(e, rc, 2, 100, 0, 0, 0), d = flow(e, rd, 1, 100, 0, 0, 0),
                        f = flow(e, rd, 1, 100, 0, 0, 0);
    sim_engine_run_until(e, 0);
    assert_rate(e, a, 6.0);
    assert_rate(e, b, 4.0);
    assert_rate(e, c, 4.0);
    assert_rate(e, d, 5.5);
    assert_rate(e, f, 5.5);
    sim_engine_free(e);
}

static void test_weights_and_bounds(void **state) {
    (void)state;
    const double cap[2] = {8, 10}, lat[2] = {0, 0};
    sim_engine_t *e = engine(2, cap, lat);
    const int32_t r0[] = {0}, r1[] = {1};
    const sim_flow_id_t w1 = flow(e, r0, 1, 100, 1, 0, 0), w3 = flow(e, r0, 1, 100, 3, 0, 0);
    const sim_flow_id_t bounded = flow(e, r1, 1, 100, 0, 2, 0), free_flow = flow(e, r1, 1, 100, 0, 0, 0);
    sim_engine_run_until(e, 0);
    assert_rate(e, w1, 2.0);
    assert_rate(e, w3, 6.0);
    assert_rate(e, bounded, 2.0);
    assert_rate(e, free_flow, 8.0);
    sim_engine_free(e);
}

/* Link 1e9 B/s, latencies 1 us + 2 us. A: 2e6 bytes at 0; B: 1e6 bytes at 0.5 ms. A drains alone
 * from 3 us; B joins at 0.5 ms + 3 us with A 0.5e6 bytes in; they share until B ends at 2.5 ms +
 * 3 us, then A's last 0.5e6 bytes take 0.5 ms: A ends at 3 ms + 3 us. */
static void test_timing_latency_then_share(void **state) {
    (void)state;
    const double cap[2] = {1e9, 1e9}, lat[2] = {1e-6, 2e-6};
    sim_engine_t *e = engine(2, cap, lat);
    const int32_t r[] = {0, 1};
    const sim_flow_id_t a = flow(e, r, 2, 2e6, 0, 0, 0);
    flow(e, r, 2, 1e6, 0, 0, sim_s_to_ps(0.5e-3));
    sim_engine_run_until(e, sim_s_to_ps(2e-6));
    assert_rate(e, a, 0.0); /* still in its latency phase */
    sim_engine_run_until(e, sim_s_to_ps(1e-3));
    assert_rate(e, a, 0.5e9);
    assert_int_equal(sim_engine_run(e), SIM_OK);
    /* Completions are rounded up to whole picoseconds: allow a few. */
    assert_true(llabs(sim_engine_now(e) - sim_s_to_ps(3e-3 + 3e-6)) <= 2);
    sim_link_stats_t ls;
    assert_int_equal(sim_link_stats(e, 0, &ls), SIM_OK);
    assert_true(fabs(ls.bytes - 3e6) < 1.0);
    assert_true(llabs(ls.busy_ps - sim_s_to_ps(3e-3)) <= 2);
    assert_true(fabs(ls.peak_utilization - 1.0) < 1e-12);
    assert_true(ls.load_bytes_per_s == 0.0);
    sim_engine_free(e);
}

/* Two disjoint groups of flows; a flow joining group 1 later re-solves 3 flows, not 5, and re-keys
 * only flows of its own component. */
static void test_component_local_resolve(void **state) {
    (void)state;
    const double cap[4] = {10, 10, 10, 10}, lat[4] = {0, 0, 0, 0};
    sim_engine_t *e = engine(4, cap, lat);
    const int32_t g1[] = {0, 1}, g2[] = {2, 3};
    flow(e, g1, 2, 1000, 0, 0, 0);
    flow(e, g1, 2, 1000, 0, 0, 0);
    flow(e, g2, 2, 1000, 0, 0, 0);
    flow(e, g2, 2, 1000, 0, 0, 0);
    flow(e, g2 + 1, 1, 1000, 0, 0, 0);
    sim_engine_run_until(e, 0);
    sim_engine_stats_t before, after;
    sim_engine_stats(e, &before);
    assert_int_equal(before.solves, 1);
    assert_int_equal(before.solve_flows, 5);
    flow(e, g1, 1, 1000, 0, 0, 5);
    sim_engine_run_until(e, 5);
    sim_engine_stats(e, &after);
    assert_int_equal(after.solves, 2);
    assert_int_equal(after.solve_flows - before.solve_flows, 3);
    assert_int_equal(after.solve_links - before.solve_links, 2);
    assert_int_equal(after.rate_changes - before.rate_changes, 3);
    sim_engine_free(e);
}

/* All starts at one timestamp are one re-solve; a burst of equal flows finishing together is one
 * more. */
static void test_batching(void **state) {
    (void)state;
    const double cap[1] = {1e9}, lat[1] = {0};
    sim_engine_t *e = engine(1, cap, lat);
    const int32_t r[] = {0};
    for (int i = 0; i < 100; i++)
        flow(e, r, 1, 1e6, 0, 0, 0);
    assert_int_equal(sim_engine_run(e), SIM_OK);
    sim_engine_stats_t st;
    sim_engine_stats(e, &st);
    assert_int_equal(st.solves, 2);
    assert_int_equal(st.flows_started, 100);
    assert_int_equal(sim_engine_now(e), sim_s_to_ps(0.1));
    sim_engine_free(e);
}

static void test_bad_input(void **state) {
    (void)state;
    const double cap[2] = {1, 0}, lat[2] = {0, 0};
    const sim_network_desc_t d = {
        .n_gpus = 1, .n_links = 2, .capacity_bytes_per_s = cap, .latency_s = lat, .route = no_route};
    sim_engine_t *e = NULL;
    char err[256];
    assert_int_equal(sim_engine_new(NULL, &d, &e, err, sizeof err), SIM_EINVAL);
    assert_null(e);
    assert_non_null(strstr(err, "link 1: capacity_bytes_per_s 0"));
    e = engine(1, cap, lat);
    const int32_t bad[] = {3}, twice[] = {0, 0};
    sim_flow_desc_t fd = {.links = bad, .n_links = 1, .bytes = 1};
    assert_int_equal(sim_flow_add(e, &fd, NULL), SIM_EINVAL);
    fd.links = twice;
    fd.n_links = 2;
    assert_int_equal(sim_flow_add(e, &fd, NULL), SIM_EINVAL);
    assert_true(sim_engine_last_error(e)[0] != '\0');
    assert_true(sim_flow_rate(e, 12345) < 0.0);
    sim_engine_free(e);
    sim_engine_free(NULL);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_flows_half_each),
        cmocka_unit_test(test_three_bottlenecks),
        cmocka_unit_test(test_weights_and_bounds),
        cmocka_unit_test(test_timing_latency_then_share),
        cmocka_unit_test(test_component_local_resolve),
        cmocka_unit_test(test_batching),
        cmocka_unit_test(test_bad_input),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
