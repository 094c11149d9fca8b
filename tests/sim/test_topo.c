/* sim/test_topo.c - the engine on topo/'s topologies through sim_topo_network: a ring all-reduce on
 * the default k = 8 fat-tree (128 GPUs, D-mod-k) reproduces its closed form in both fidelities (ring
 * neighbours never share a link), NVLink domains come from topo nodes, and a hierarchical
 * all-reduce on the `ideal` topology matches its two-tier closed form; a ring of 1,024 GPUs (routes of
 * 512 links) builds and simulates. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>
#include <igraph.h>

#include "sim.h"
#include "topo.h"

static topo_t *build(topo_params_t *p) {
    topo_t *t = NULL;
    topo_issue_t issue;
    assert_int_equal(topo_new(p, &t, &issue), TOPO_OK);
    return t;
}

/* Run one collective over GPUs 0..n-1; return its simulated time, and its engine closed form. */
static double run(const topo_t *t, int32_t n, sim_coll_op_t op, sim_coll_algo_t algo, sim_fidelity_t fid,
                  double size, double *closed_s) {
    sim_network_desc_t d;
    assert_int_equal(sim_topo_network(t, &d), SIM_OK);
    sim_engine_t *e;
    assert_int_equal(sim_engine_new(NULL, &d, &e, NULL, 0), SIM_OK);
    int32_t *gpus = malloc((size_t)n * sizeof *gpus);
    for (int32_t i = 0; i < n; i++)
        gpus[i] = i;
    const sim_coll_desc_t cd = {
        .op = op, .algo = algo, .fidelity = fid, .size_bytes = size, .gpus = gpus, .n_gpus = n, .stream = 1};
    sim_coll_id_t c;
    if (sim_coll_add(e, &cd, NULL, &c))
        fail_msg("%s", sim_engine_last_error(e));
    assert_int_equal(sim_engine_run(e), SIM_OK);
    sim_coll_result_t r;
    sim_coll_result(e, c, &r);
    *closed_s = r.closed_form_s;
    sim_engine_free(e);
    free(gpus);
    return sim_ps_to_s(r.end_ps - r.start_ps);
}

static void test_fat_tree_ring(void **state) {
    (void)state;
    topo_params_t p;
    topo_params_init(&p, TOPO_KIND_FAT_TREE);
    topo_t *t = build(&p);
    sim_network_desc_t d;
    assert_int_equal(sim_topo_network(t, &d), SIM_OK);
    assert_int_equal(d.n_gpus, 128);
    assert_int_equal(d.gpus_per_domain, 1);
    /* Neighbours in other pods are 6 links apart: alpha = 6 x 0.15 us; every link 50 GB/s. */
    const double m = 64e6, want = 2.0 * 127 * (6 * 0.15e-6 + m / 128 / 50e9);
    for (int f = 0; f < 2; f++) {
        double closed;
        const double got = run(t, 128, SIM_COLL_ALLREDUCE, SIM_ALGO_RING,
                               f ? SIM_FIDELITY_STEP : SIM_FIDELITY_FAST, m, &closed);
        assert_true(fabs(got - want) < 1e-3 * want);
        assert_true(fabs(closed - want) < 1e-6 * want);
    }
    topo_free(t);
}

static void test_ideal_hierarchical(void **state) {
    (void)state;
    topo_params_t p;
    topo_params_init(&p, TOPO_KIND_IDEAL);
    p.gpus = 32;
    topo_t *t = build(&p);
    sim_network_desc_t d;
    assert_int_equal(sim_topo_network(t, &d), SIM_OK);
    assert_int_equal(d.gpus_per_domain, p.node.gpus_per_node);
    const int32_t g = (int32_t)p.node.gpus_per_node, nd = 32 / g;
    const double m = 1e9, ia = 2 * p.node.nvlink_latency_s, ib = p.node.nvlink_bandwidth_bytes_per_s;
    const double a = 2 * p.link_latency_s, b = p.link_bandwidth_bytes_per_s;
    const double want = 2.0 * (g - 1) * (ia + m / g / ib) + 2.0 * (nd - 1) * (a + m / g / nd / b);
    double closed;
    const double got = run(t, 32, SIM_COLL_ALLREDUCE, SIM_ALGO_HIERARCHICAL, SIM_FIDELITY_FAST, m, &closed);
    if (fabs(got - want) > 1e-3 * want)
        fail_msg("hierarchical on ideal: %.9g s, closed form %.9g s", got, want);
    topo_free(t);
}

/* A ring of 1,024 GPUs (a 1-D torus) builds and simulates: its longest route has 512 network links,
 * and a ring all-reduce over it reproduces the engine's closed form. */
static void test_long_ring(void **state) {
    (void)state;
    topo_params_t p;
    topo_params_init(&p, TOPO_KIND_TORUS);
    p.torus.n_dims = 1;
    p.torus.dims[0] = 1024;
    topo_t *t = build(&p);
    sim_network_desc_t d;
    assert_int_equal(sim_topo_network(t, &d), SIM_OK);
    assert_int_equal(d.n_gpus, 1024);
    int32_t *buf = malloc(SIM_ROUTE_MAX * sizeof *buf);
    const int len = d.route(d.route_ctx, 0, 512, buf, SIM_ROUTE_MAX);
    assert_true(len >= 512 && len <= 512 + 4);
    free(buf);
    double closed;
    const double got = run(t, 1024, SIM_COLL_ALLREDUCE, SIM_ALGO_RING, SIM_FIDELITY_FAST, 64e6, &closed);
    assert_true(fabs(got - closed) < 1e-3 * closed);
    topo_free(t);
}

int main(void) {
    igraph_set_error_handler(igraph_error_handler_printignore);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fat_tree_ring),
        cmocka_unit_test(test_ideal_hierarchical),
        cmocka_unit_test(test_long_ring),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
