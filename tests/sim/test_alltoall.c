/* sim/test_alltoall.c - alltoall as flows against its closed form (docs/engine.md, "Collectives as
 * flows"): the flat algorithm (every member sends M / n to every other at once) and the
 * hierarchical one (NVLink to the member on the destination's rail, then one exchange per rail) on
 * an idle star with and without NVLink domains, 2..1024 GPUs; nccl-tests' busbw factor (n - 1)/n;
 * the hierarchical algorithm beating the flat one on a rail-optimized fabric with a tapered spine
 * (and auto choosing it), not on a non-blocking one; link counters: inside one NVLink domain no byte
 * crosses the network.
 *
 * The expected times are written out here again, independently of sim/closed_form.c: with the
 * star a pair's latency is 2 x link latency + step overhead and a member's link is shared by its
 * pairs. Step fidelity is kept to groups of at most 64 (n (n - 1) flows). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sim.h"
#include "topo.h"

#define MIB (1024.0 * 1024.0)
#define TOL 1e-3 /* the acceptance bound: 0.1% */

typedef struct run {
    double time_s, closed_form_s;
    sim_coll_algo_t algo;
} run_t;

static const double NIC_BW = 50e9, NIC_LAT = 1e-6, NV_BW = 450e9, NV_LAT = 0.25e-6, OVERHEAD = 2e-6;

static run_t run_net(const sim_network_desc_t *d, const sim_config_t *cfg, int32_t n, sim_coll_algo_t algo,
                     sim_fidelity_t fid, double size) {
    sim_engine_t *e = NULL;
    assert_int_equal(sim_engine_new(cfg, d, &e, NULL, 0), SIM_OK);
    int32_t *gpus = malloc((size_t)n * sizeof *gpus);
    for (int32_t i = 0; i < n; i++)
        gpus[i] = i;
    const sim_coll_desc_t cd = {.op = SIM_COLL_ALLTOALL,
                                .algo = algo,
                                .fidelity = fid,
                                .size_bytes = size,
                                .gpus = gpus,
                                .n_gpus = n,
                                .stream = 1};
    sim_coll_id_t c;
    if (sim_coll_add(e, &cd, NULL, &c) != SIM_OK)
        fail_msg("sim_coll_add: %s", sim_engine_last_error(e));
    assert_int_equal(sim_engine_run(e), SIM_OK);
    sim_coll_result_t r;
    assert_int_equal(sim_coll_result(e, c, &r), SIM_OK);
    const run_t out = {sim_ps_to_s(r.end_ps - r.start_ps), r.closed_form_s, r.algo};
    sim_engine_free(e);
    free(gpus);
    return out;
}

static run_t run_star(int32_t n, int32_t g, sim_coll_algo_t algo, sim_fidelity_t fid, double size) {
    sim_star_t star;
    const sim_star_params_t sp = {.n_gpus = n,
                                  .nic_bytes_per_s = NIC_BW,
                                  .nic_latency_s = NIC_LAT,
                                  .gpus_per_domain = g,
                                  .nvlink_bytes_per_s = NV_BW,
                                  .nvlink_latency_s = NV_LAT};
    assert_int_equal(sim_star_init(&star, &sp), SIM_OK);
    sim_network_desc_t d;
    sim_star_network(&star, &d);
    sim_config_t cfg;
    sim_config_default(&cfg);
    cfg.step_overhead_s = OVERHEAD;
    const run_t r = run_net(&d, &cfg, n, algo, fid, size);
    sim_star_destroy(&star);
    return r;
}

/* Flat: every pair after the slowest pair's latency, at the rate of its most shared link: a member's
 * NIC carries its n - g pairs out of the domain, its NVLink its g - 1 pairs inside. */
static double flat_expected(int32_t n, int32_t g, double m) {
    const double a = 2.0 * (n > g ? NIC_LAT : NV_LAT) + OVERHEAD;
    const double per_pair = fmax(n > g ? (n - g) / NIC_BW : 0.0, g > 1 ? (g - 1.0) / NV_BW : 0.0);
    return a + m / n * per_pair;
}

/* Hierarchical: M / g to each of g - 1 domain peers over NVLink, then M / N to each of N - 1 rail peers. */
static double hier_expected(int32_t n, int32_t g, double m) {
    const int32_t nd = n / g;
    return (g > 1 ? 2.0 * NV_LAT + OVERHEAD + (g - 1.0) * (m / g) / NV_BW : 0.0) +
           (nd > 1 ? 2.0 * NIC_LAT + OVERHEAD + (nd - 1.0) * (m / nd) / NIC_BW : 0.0);
}

static void assert_close(double got, double want, const char *what, int32_t n, int32_t g, double m) {
    if (!(fabs(got - want) <= TOL * want))
        fail_msg("%s n=%d g=%d size=%g: %.9g s, expected %.9g s (%.4f%%)", what, n, g, m, got, want,
                 100.0 * (got / want - 1.0));
}

static void test_flat_star(void **state) {
    (void)state;
    static const int32_t ns[] = {2, 3, 8, 16, 64, 256, 1024};
    static const double sizes[] = {4096.0, 1 * MIB, 256 * MIB};
    for (size_t i = 0; i < sizeof ns / sizeof *ns; i++)
        for (size_t j = 0; j < 3; j++)
            for (int32_t g = 1; g <= 8; g *= 8) {
                const int32_t n = ns[i];
                if (n % g)
                    continue;
                const run_t r = run_star(n, g, SIM_ALGO_DIRECT, SIM_FIDELITY_FAST, sizes[j]);
                assert_int_equal(r.algo, SIM_ALGO_DIRECT);
                const double want = flat_expected(n, g, sizes[j]);
                assert_close(r.closed_form_s, want, "flat closed form", n, g, sizes[j]);
                assert_close(r.time_s, want, "flat fast", n, g, sizes[j]);
                if (n <= 64 && g == 1) /* every pair alike: each flow is the closed form */
                    assert_close(run_star(n, g, SIM_ALGO_DIRECT, SIM_FIDELITY_STEP, sizes[j]).time_s, want,
                                 "flat step", n, g, sizes[j]);
            }
}

static void test_hier_star(void **state) {
    (void)state;
    static const int32_t ns[] = {16, 64, 256, 1024};
    static const double sizes[] = {4096.0, 1 * MIB, 256 * MIB};
    for (size_t i = 0; i < sizeof ns / sizeof *ns; i++)
        for (size_t j = 0; j < 3; j++)
            for (int f = 0; f < 2; f++) {
                const int32_t n = ns[i], g = 8;
                if (f == 1 && n > 64)
                    continue;
                const run_t r = run_star(n, g, SIM_ALGO_HIERARCHICAL,
                                         f ? SIM_FIDELITY_STEP : SIM_FIDELITY_FAST, sizes[j]);
                const double want = hier_expected(n, g, sizes[j]);
                assert_close(r.closed_form_s, want, "hierarchical closed form", n, g, sizes[j]);
                assert_close(r.time_s, want, f ? "hierarchical step" : "hierarchical fast", n, g, sizes[j]);
            }
}

/* A rail-optimized fabric of one scalable unit: NIC r of every node on leaf r, leaves joined by the
 * spine. The flat algorithm sends 7/8 of a member's network bytes to other rails, through the
 * spine; the hierarchical one keeps them on their rail's leaf. */
static run_t run_rail(int32_t n, int64_t leaf_up, sim_coll_algo_t algo, double size) {
    topo_params_t p;
    topo_params_init(&p, TOPO_KIND_RAIL_OPTIMIZED);
    p.gpus = n;
    p.rail.nodes_per_su = 8;
    p.rail.leaf_up = leaf_up;
    topo_t *t = NULL;
    topo_issue_t issue;
    char msg[400];
    if (topo_new(&p, &t, &issue) != TOPO_OK)
        fail_msg("topo_new: %s", topo_issue_format(&issue, msg, sizeof msg));
    sim_network_desc_t d;
    assert_int_equal(sim_topo_network(t, &d), SIM_OK);
    sim_config_t cfg;
    sim_config_default(&cfg);
    cfg.step_overhead_s = OVERHEAD;
    const run_t r = run_net(&d, &cfg, n, algo, SIM_FIDELITY_FAST, size);
    topo_free(t);
    return r;
}

static void test_hier_beats_flat_on_tapered_rails(void **state) {
    (void)state;
    const int32_t n = 64;
    const double m = 256 * MIB;
    /* non-blocking (leaf_up 0 = nodes_per_su, 8): flat wins, it does not wait for the NVLink stage */
    const run_t flat_nb = run_rail(n, 0, SIM_ALGO_DIRECT, m),
                hier_nb = run_rail(n, 0, SIM_ALGO_HIERARCHICAL, m);
    assert_close(flat_nb.time_s, flat_nb.closed_form_s, "rail flat", n, 8, m);
    assert_close(hier_nb.time_s, hier_nb.closed_form_s, "rail hierarchical", n, 8, m);
    assert_true(flat_nb.closed_form_s < hier_nb.closed_form_s);
    assert_int_equal(run_rail(n, 0, SIM_ALGO_AUTO, m).algo, SIM_ALGO_DIRECT);
    /* a 4:1 tapered spine (leaf_up 2 of 8): the flat algorithm's cross-rail bytes queue at it */
    const run_t flat = run_rail(n, 2, SIM_ALGO_DIRECT, m), hier = run_rail(n, 2, SIM_ALGO_HIERARCHICAL, m);
    assert_close(flat.time_s, flat.closed_form_s, "tapered flat", n, 8, m);
    assert_close(hier.time_s, hier.closed_form_s, "tapered hierarchical", n, 8, m);
    assert_true(hier.closed_form_s < 0.8 * flat.closed_form_s);
    assert_true(hier.time_s < 0.8 * flat.time_s);
    const run_t a = run_rail(n, 2, SIM_ALGO_AUTO, m);
    assert_int_equal(a.algo, SIM_ALGO_HIERARCHICAL);
    assert_close(a.time_s, hier.time_s, "tapered auto", n, 8, m);
}

/* Bytes an alltoall over `gpus` puts on the NVLink and on the network links of a rail-optimized fabric
 * of 16 GPUs (2 nodes). */
static void link_bytes(const int32_t *gpus, int32_t n, sim_fidelity_t fid, double size, double *nvlink,
                       double *network) {
    topo_params_t p;
    topo_params_init(&p, TOPO_KIND_RAIL_OPTIMIZED);
    p.gpus = 16;
    topo_t *t = NULL;
    topo_issue_t issue;
    assert_int_equal(topo_new(&p, &t, &issue), TOPO_OK);
    sim_network_desc_t d;
    assert_int_equal(sim_topo_network(t, &d), SIM_OK);
    sim_engine_t *e = NULL;
    assert_int_equal(sim_engine_new(NULL, &d, &e, NULL, 0), SIM_OK);
    const sim_coll_desc_t cd = {
        .op = SIM_COLL_ALLTOALL, .fidelity = fid, .size_bytes = size, .gpus = gpus, .n_gpus = n, .stream = 1};
    assert_int_equal(sim_coll_add(e, &cd, NULL, NULL), SIM_OK);
    assert_int_equal(sim_engine_run(e), SIM_OK);
    *nvlink = *network = 0.0;
    for (int64_t l = 0; l < topo_link_count(t); l++) {
        topo_link_info_t info;
        sim_link_stats_t st;
        assert_int_equal(topo_link_get(t, l, &info), TOPO_OK);
        assert_int_equal(sim_link_stats(e, (int32_t)l, &st), SIM_OK);
        if (info.kind == TOPO_LINK_NVLINK)
            *nvlink += st.bytes;
        else if (info.kind == TOPO_LINK_NETWORK)
            *network += st.bytes;
    }
    sim_engine_free(e);
    topo_free(t);
}

/* Inside one NVLink domain not a byte reaches the network, and every GPU sends (n - 1)/n of its
 * buffer (each crossing two NVLink links, GPU -> NVSwitch -> GPU); across two domains it does. */
static void test_link_counters(void **state) {
    (void)state;
    const double m = 64 * MIB;
    const int32_t node0[8] = {0, 1, 2, 3, 4, 5, 6, 7}, both[4] = {0, 1, 8, 9};
    for (int f = 0; f < 2; f++) {
        double nv, net;
        link_bytes(node0, 8, f ? SIM_FIDELITY_STEP : SIM_FIDELITY_FAST, m, &nv, &net);
        assert_true(net == 0.0);
        assert_close(nv, 2.0 * 8 * (7.0 / 8.0) * m, "nvlink bytes", 8, 8, m);
        link_bytes(both, 4, f ? SIM_FIDELITY_STEP : SIM_FIDELITY_FAST, m, &nv, &net);
        assert_true(net > 0.0);
        assert_close(nv, 2.0 * 4 * (1.0 / 4.0) * m, "nvlink bytes, two nodes", 4, 2, m);
    }
}

static void test_busbw_and_errors(void **state) {
    (void)state;
    sim_star_t star;
    const sim_star_params_t sp = {.n_gpus = 16, .nic_bytes_per_s = NIC_BW, .gpus_per_domain = 1};
    assert_int_equal(sim_star_init(&star, &sp), SIM_OK);
    sim_network_desc_t d;
    sim_star_network(&star, &d);
    const sim_coll_bench_t b = {
        .op = SIM_COLL_ALLTOALL, .fidelity = SIM_FIDELITY_FAST, .gpus = 16, .size_bytes = 64 * MIB};
    sim_coll_bench_result_t r;
    assert_int_equal(sim_coll_bench_run(NULL, &d, &b, &r, NULL, 0), SIM_OK);
    assert_true(fabs(r.busbw_bytes_per_s - r.algbw_bytes_per_s * 15.0 / 16.0) <= 1e-9 * r.busbw_bytes_per_s);
    assert_true(fabs(r.busbw_bytes_per_s / NIC_BW - 1.0) < TOL); /* the NIC, full */
    /* the ring does not apply */
    sim_engine_t *e = NULL;
    assert_int_equal(sim_engine_new(NULL, &d, &e, NULL, 0), SIM_OK);
    int32_t gpus[4] = {0, 1, 2, 3};
    const sim_coll_desc_t cd = {.op = SIM_COLL_ALLTOALL,
                                .algo = SIM_ALGO_RING,
                                .size_bytes = 1e6,
                                .gpus = gpus,
                                .n_gpus = 4,
                                .stream = 1};
    assert_int_equal(sim_coll_add(e, &cd, NULL, NULL), SIM_EINVAL);
    assert_non_null(strstr(sim_engine_last_error(e), "ring applies to"));
    sim_engine_free(e);
    sim_star_destroy(&star);
    sim_coll_op_t op;
    assert_int_equal(sim_coll_op_parse("alltoall", &op), SIM_OK);
    assert_int_equal(op, SIM_COLL_ALLTOALL);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_flat_star),
        cmocka_unit_test(test_hier_star),
        cmocka_unit_test(test_hier_beats_flat_on_tapered_rails),
        cmocka_unit_test(test_link_counters),
        cmocka_unit_test(test_busbw_and_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
