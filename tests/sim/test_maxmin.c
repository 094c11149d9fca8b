/* sim/test_maxmin.c - the flow network against hand-computed max-min shares: two flows on a link,
 * a three-bottleneck example, weights, bounds, timing (latency before drain, a flow joining midway),
 * per-link byte counters, that a re-solve touches only the changed component, and 500 random
 * instances (weights, bounds, shared links) against a brute-force water-filling. */
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

/* Latencies at the bound (SIM_LINK_LATENCY_MAX_S per link) over the longest route sum exactly, far
 * from the clock's limit; one picosecond more than the bound is refused, naming link, value and bound
 * (1e7 s used to saturate the clock and the sum to wrap, so the flow ended before it began). */
static void test_latency_bound(void **state) {
    (void)state;
    static double cap[SIM_ROUTE_MAX], lat[SIM_ROUTE_MAX];
    static int32_t route[SIM_ROUTE_MAX];
    for (int i = 0; i < SIM_ROUTE_MAX; i++) {
        cap[i] = 1e9;
        lat[i] = SIM_LINK_LATENCY_MAX_S;
        route[i] = i;
    }
    sim_engine_t *e = engine(SIM_ROUTE_MAX, cap, lat);
    flow(e, route, SIM_ROUTE_MAX, 0, 0, 0, 0); /* nothing to drain: it ends when its latency does */
    assert_int_equal(sim_engine_run(e), SIM_OK);
    assert_int_equal(sim_engine_now(e), (sim_time_ps_t)SIM_ROUTE_MAX * SIM_PS_PER_S);
    sim_engine_free(e);
    for (int k = 0; k < 2; k++) {
        const double bad[2] = {SIM_LINK_LATENCY_MAX_S * (1 + 1e-12), 1e7};
        lat[7] = bad[k];
        const sim_network_desc_t d = {.n_gpus = 1,
                                      .n_links = SIM_ROUTE_MAX,
                                      .capacity_bytes_per_s = cap,
                                      .latency_s = lat,
                                      .route = no_route};
        char err[256];
        e = NULL;
        assert_int_equal(sim_engine_new(NULL, &d, &e, err, sizeof err), SIM_EINVAL);
        assert_null(e);
        assert_non_null(strstr(err, "link 7: latency_s"));
        assert_non_null(strstr(err, "must be in [0, 1] s"));
    }
}

/* A flow that would end past the clock's end (4e18 ps and more to drain) makes the run fail with a
 * message; it used to end at INT64_MAX - 1 ps as if that were a time. One that ends inside is exact. */
static void test_clock_end(void **state) {
    (void)state;
    const double cap[1] = {1e-3}, lat[1] = {0};
    const int32_t route[1] = {0};
    sim_engine_t *e = engine(1, cap, lat);
    flow(e, route, 1, 1e6, 0, 0, 0); /* 1e9 s */
    assert_int_equal(sim_engine_run(e), SIM_EINVAL);
    assert_non_null(strstr(sim_engine_last_error(e), "clock's end"));
    sim_engine_free(e);
    e = engine(1, cap, lat);
    flow(e, route, 1, 1e3, 0, 0, 0); /* 1e6 s */
    assert_int_equal(sim_engine_run(e), SIM_OK);
    assert_int_equal(sim_engine_now(e), (sim_time_ps_t)1000000 * SIM_PS_PER_S);
    sim_engine_free(e);
}

/* link_efficiency scales what flows can use; utilisation stays relative to the nominal capacity. */
static void test_link_efficiency(void **state) {
    (void)state;
    const double cap[1] = {10e9}, lat[1] = {0};
    const sim_network_desc_t d = {
        .n_gpus = 1, .n_links = 1, .capacity_bytes_per_s = cap, .latency_s = lat, .route = no_route};
    sim_config_t cfg;
    sim_config_default(&cfg);
    sim_engine_t *e = NULL;
    char err[200];
    cfg.link_efficiency = 1.5;
    assert_int_equal(sim_engine_new(&cfg, &d, &e, err, sizeof err), SIM_EINVAL);
    assert_non_null(strstr(err, "link_efficiency 1.5"));
    cfg.link_efficiency = 0.5;
    assert_int_equal(sim_engine_new(&cfg, &d, &e, NULL, 0), SIM_OK);
    const int32_t r[1] = {0};
    const sim_flow_id_t a = flow(e, r, 1, 1e9, 0, 0, 0), b = flow(e, r, 1, 1e9, 0, 0, 0);
    sim_engine_run_until(e, 0);
    assert_rate(e, a, 2.5e9);
    assert_rate(e, b, 2.5e9);
    assert_int_equal(sim_engine_run(e), SIM_OK);
    sim_link_stats_t ls;
    sim_link_stats(e, 0, &ls);
    assert_true(fabs(ls.peak_utilization - 0.5) < 1e-12);
    assert_true(fabs(ls.utilization - 0.5) < 1e-6);
    sim_engine_free(e);
}

/* ---- random instances against a brute-force water-filling ------------------------------------- */

static uint64_t rng_next(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

#define RL 8  /* links */
#define RF 12 /* flows */

typedef struct instance {
    int nl, nf;
    double cap[RL];
    int32_t route[RF][RL];
    int len[RF];
    double weight[RF], bound[RF]; /* bound 0: none */
} instance_t;

/* The max-min allocation is unique; raise a common level and freeze whatever saturates first. */
static void reference_rates(const instance_t *in, double *x) {
    int frozen[RF] = {0}, left = in->nf;
    double rem[RL];
    for (int j = 0; j < in->nl; j++)
        rem[j] = in->cap[j];
    while (left > 0) {
        double level = INFINITY;
        for (int j = 0; j < in->nl; j++) {
            double w = 0.0;
            for (int f = 0; f < in->nf; f++)
                for (int h = 0; h < in->len[f]; h++)
                    w += !frozen[f] && in->route[f][h] == j ? in->weight[f] : 0.0;
            if (w > 0.0)
                level = fmin(level, rem[j] / w);
        }
        for (int f = 0; f < in->nf; f++)
            if (!frozen[f] && in->bound[f] > 0.0)
                level = fmin(level, in->bound[f] / in->weight[f]);
        int saturated[RL] = {0};
        for (int j = 0; j < in->nl; j++) {
            double w = 0.0;
            for (int f = 0; f < in->nf; f++)
                for (int h = 0; h < in->len[f]; h++)
                    w += !frozen[f] && in->route[f][h] == j ? in->weight[f] : 0.0;
            saturated[j] = w > 0.0 && rem[j] / w <= level * (1 + 1e-12);
        }
        for (int f = 0; f < in->nf; f++) {
            if (frozen[f])
                continue;
            int stop = in->bound[f] > 0.0 && in->bound[f] / in->weight[f] <= level * (1 + 1e-12);
            for (int h = 0; h < in->len[f]; h++)
                stop |= saturated[in->route[f][h]];
            if (!stop)
                continue;
            x[f] = level * in->weight[f];
            frozen[f] = 1;
            left--;
        }
        for (int j = 0; j < in->nl; j++) {
            rem[j] = in->cap[j];
            for (int f = 0; f < in->nf; f++)
                for (int h = 0; h < in->len[f]; h++)
                    rem[j] -= frozen[f] && in->route[f][h] == j ? x[f] : 0.0;
        }
    }
}

static void draw_instance(uint64_t *s, instance_t *in) {
    in->nl = 1 + (int)(rng_next(s) % RL);
    in->nf = 1 + (int)(rng_next(s) % RF);
    for (int j = 0; j < in->nl; j++)
        in->cap[j] = (double)(1 + rng_next(s) % 20);
    for (int f = 0; f < in->nf; f++) {
        in->len[f] = 0;
        for (int j = 0; j < in->nl; j++) /* a random subset of the links, at least one */
            if (rng_next(s) % 3 == 0)
                in->route[f][in->len[f]++] = j;
        if (in->len[f] == 0)
            in->route[f][in->len[f]++] = (int32_t)(rng_next(s) % (uint64_t)in->nl);
        in->weight[f] = rng_next(s) % 4 == 0 ? (double)(1 + rng_next(s) % 4) : 1.0;
        in->bound[f] = rng_next(s) % 5 == 0 ? (double)(1 + rng_next(s) % 10) : 0.0;
    }
}

static void test_random_against_reference(void **state) {
    (void)state;
    uint64_t s = 2024;
    for (int round = 0; round < 500; round++) {
        instance_t in;
        draw_instance(&s, &in);
        double lat[RL] = {0}, want[RF];
        reference_rates(&in, want);
        sim_engine_t *e = engine(in.nl, in.cap, lat);
        sim_flow_id_t ids[RF];
        for (int f = 0; f < in.nf; f++)
            ids[f] = flow(e, in.route[f], in.len[f], 1e6, in.weight[f], in.bound[f], 0);
        sim_engine_run_until(e, 0);
        for (int f = 0; f < in.nf; f++) {
            const double got = sim_flow_rate(e, ids[f]);
            if (fabs(got - want[f]) > 1e-9 * want[f])
                fail_msg("round %d flow %d: rate %.12g, reference %.12g", round, f, got, want[f]);
        }
        sim_engine_free(e);
    }
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
        cmocka_unit_test(test_latency_bound),
        cmocka_unit_test(test_clock_end),
        cmocka_unit_test(test_random_against_reference),
        cmocka_unit_test(test_link_efficiency),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
