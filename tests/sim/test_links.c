/* sim/test_links.c - the engine on topologies with slow and failed links (topo_links_change):
 * - a ring all-reduce over the k = 8 fat-tree whose one link runs at a fraction q of its bandwidth
 *   takes the ring's closed form with that link as the bottleneck, 2 (n - 1) (alpha + m / n / (q B));
 * - a failed leaf-spine link carries no byte (the engine's per-link counters), and a permutation
 *   between two leaves of one pod takes the max-min time worked out by hand on the remaining links;
 *   the same pattern on the intact tree takes m / B;
 * - on a dragonfly, failing the global link a minimal route takes moves the flow to another parallel
 *   global cable, or (one cable per group pair) to a Valiant detour through a third group, and the
 *   failed link carries nothing. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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

static void change(topo_t *t, const char *names, double factor, int fail) {
    const topo_link_change_t c = {.names = names, .bandwidth_factor = factor, .fail = fail};
    topo_issue_t issue;
    char msg[400];
    int bad = -1;
    const int rc = topo_links_change(t, &c, 1, 1, &bad, &issue);
    if (rc)
        fail_msg("topo_links_change(%s): %s", names, topo_issue_format(&issue, msg, sizeof msg));
}

static int64_t link_id(const topo_t *t, const char *name) {
    char buf[96];
    for (int64_t l = 0; l < topo_link_count(t); l++)
        if (strcmp(topo_link_name(t, l, buf, sizeof buf), name) == 0)
            return l;
    fail_msg("no link %s", name);
    return -1;
}

static double ring_allreduce(const topo_t *t, int32_t n, double size) {
    sim_network_desc_t d;
    assert_int_equal(sim_topo_network(t, &d), SIM_OK);
    sim_engine_t *e;
    assert_int_equal(sim_engine_new(NULL, &d, &e, NULL, 0), SIM_OK);
    int32_t *gpus = malloc((size_t)n * sizeof *gpus);
    for (int32_t i = 0; i < n; i++)
        gpus[i] = i;
    const sim_coll_desc_t cd = {.op = SIM_COLL_ALLREDUCE,
                                .algo = SIM_ALGO_RING,
                                .fidelity = SIM_FIDELITY_FAST,
                                .size_bytes = size,
                                .gpus = gpus,
                                .n_gpus = n,
                                .stream = 1};
    sim_coll_id_t c;
    if (sim_coll_add(e, &cd, NULL, &c))
        fail_msg("%s", sim_engine_last_error(e));
    assert_int_equal(sim_engine_run(e), SIM_OK);
    sim_coll_result_t r;
    sim_coll_result(e, c, &r);
    sim_engine_free(e);
    free(gpus);
    return sim_ps_to_s(r.end_ps - r.start_ps);
}

/* One link of the ring at q of its bandwidth: gpu15 -> leaf3 carries ring step 15 -> 16, whose route
 * leaves the pod (6 links, like the ring's slowest latency). */
static void test_ring_slow_link(void **state) {
    (void)state;
    const double m = 64e6, alpha = 6 * 0.15e-6, B = 50e9;
    const double qs[] = {0.5, 0.25, 0.1};
    for (size_t i = 0; i < sizeof qs / sizeof qs[0]; i++) {
        topo_params_t p;
        topo_params_init(&p, TOPO_KIND_FAT_TREE);
        topo_t *t = build(&p);
        change(t, "gpu15 -> leaf3", qs[i], 0);
        assert_true(topo_link_bandwidths_bytes_per_s(t)[link_id(t, "gpu15->leaf3")] == qs[i] * B);
        assert_true(topo_link_bandwidth_factor(t, link_id(t, "gpu15->leaf3")) == qs[i]);
        assert_true(topo_link_bandwidth_factor(t, link_id(t, "leaf3->gpu15")) == 1.0);
        const double want = 2.0 * 127 * (alpha + m / 128 / (qs[i] * B));
        const double got = ring_allreduce(t, 128, m);
        if (fabs(got - want) > 1e-3 * want)
            fail_msg("q = %g: ring all-reduce %.9g s, closed form with the bottleneck %.9g s", qs[i], got,
                     want);
        topo_free(t);
    }
}

/* Flows src[i] -> dst[i] of size bytes each at once; returns the time the last one arrives. */
static double permutation(const topo_t *t, const int32_t *src, const int32_t *dst, int n, double bytes,
                          sim_engine_t **keep) {
    sim_network_desc_t d;
    assert_int_equal(sim_topo_network(t, &d), SIM_OK);
    sim_engine_t *e;
    assert_int_equal(sim_engine_new(NULL, &d, &e, NULL, 0), SIM_OK);
    sim_op_id_t recv[16];
    for (int i = 0; i < n; i++) {
        sim_op_id_t send;
        assert_int_equal(sim_p2p_add(e, src[i], 1, dst[i], 2, bytes, "p", &send, &recv[i]), SIM_OK);
    }
    assert_int_equal(sim_engine_run(e), SIM_OK);
    sim_time_ps_t last = 0;
    for (int i = 0; i < n; i++) {
        sim_time_ps_t s, end;
        assert_int_equal(sim_op_times(e, recv[i], &s, &end), SIM_OK);
        if (end > last)
            last = end;
    }
    *keep = e;
    return sim_ps_to_s(last);
}

/* k = 8 fat-tree, d-mod-k: GPUs 0-3 (leaf0) send to 4-7 (leaf1, same pod); destination d goes up
 * through spine d mod 4, so the four flows take spines 0..3, one each, at 50 GB/s: m / B. With
 * leaf0 -> spine0 failed, flow 0 -> 4 (path 0 of the 4 equal-cost paths) takes surviving path
 * 0 mod 3 = spine 1, so flows 0 -> 4 and 1 -> 5 share leaf0 -> spine1 and spine1 -> leaf1: max-min
 * gives them 25 GB/s each (and 50 GB/s to the other two, alone on their spines) for the whole
 * transfer, so the last arrives at alpha + m / (B / 2). */
static void test_fat_tree_failed_uplink(void **state) {
    (void)state;
    const int32_t src[4] = {0, 1, 2, 3}, dst[4] = {4, 5, 6, 7};
    const double m = 100e6, B = 50e9, alpha = 4 * 0.15e-6;
    topo_params_t p;
    topo_params_init(&p, TOPO_KIND_FAT_TREE);
    topo_t *t = build(&p);
    sim_engine_t *e;
    double got = permutation(t, src, dst, 4, m, &e);
    if (fabs(got - (alpha + m / B)) > 1e-6 * got)
        fail_msg("intact: %.9g s, want %.9g s", got, alpha + m / B);
    sim_link_stats_t ls;
    const int64_t failed = link_id(t, "leaf0->spine0");
    assert_int_equal(sim_link_stats(e, (int32_t)failed, &ls), SIM_OK);
    assert_true(ls.bytes > 0.99 * m); /* flow 0 -> 4 used it */
    sim_engine_free(e);

    change(t, "leaf0->spine0", 1.0, 1);
    assert_int_equal(topo_link_failed(t, failed), 1);
    assert_int_equal(topo_link_failed(t, link_id(t, "spine0->leaf0")), 0); /* one direction only */
    assert_int_equal(topo_failed_link_count(t), 1);
    got = permutation(t, src, dst, 4, m, &e);
    const double want = alpha + m / (B / 2);
    if (fabs(got - want) > 1e-6 * want)
        fail_msg("leaf0->spine0 failed: %.9g s, max-min by hand %.9g s", got, want);
    assert_int_equal(sim_link_stats(e, (int32_t)failed, &ls), SIM_OK);
    assert_true(ls.bytes == 0.0);
    assert_int_equal(sim_link_stats(e, (int32_t)link_id(t, "leaf0->spine1"), &ls), SIM_OK);
    assert_true(fabs(ls.bytes - 2 * m) < 1e-6 * m);
    /* every link's bytes: nothing at all on the failed one, every flow delivered */
    double total_from_leaf0 = 0;
    for (int s = 0; s < 4; s++) {
        char name[64];
        snprintf(name, sizeof name, "leaf0->spine%d", s);
        assert_int_equal(sim_link_stats(e, (int32_t)link_id(t, name), &ls), SIM_OK);
        total_from_leaf0 += ls.bytes;
    }
    assert_true(fabs(total_from_leaf0 - 4 * m) < 1e-6 * m);
    sim_engine_free(e);
    topo_free(t);
}

/* The first global link of a route (a router -> router link between groups), -1 if none. */
static int64_t global_of(const topo_t *t, int64_t src, int64_t dst, topo_link_id_t *links, int *len) {
    const topo_flow_t f = {src, dst, ((uint64_t)(uint32_t)src << 32) | (uint32_t)dst, TOPO_ROUTING_DEFAULT,
                           NULL};
    *len = topo_route(t, &f, links, 64);
    assert_true(*len > 0);
    int64_t first = -1, count = 0;
    for (int k = 0; k < *len; k++)
        if (topo_link_in_class(t, links[k], TOPO_CLASS_GLOBAL)) {
            count++;
            if (first < 0)
                first = links[k];
        }
    return count == 1 ? first : -(count + 1); /* count 2: -3 (Valiant) */
}

static void test_dragonfly_global_failure(void **state) {
    (void)state;
    for (int copies = 1; copies <= 2; copies++) {
        topo_params_t p;
        topo_params_init(&p, TOPO_KIND_DRAGONFLY);
        p.dragonfly.p = 2, p.dragonfly.a = 4, p.dragonfly.h = 2, p.dragonfly.g = 5;
        p.dragonfly.global_links_per_pair = copies;
        p.node.gpus_per_node = 1, p.node.nics_per_node = 1;
        topo_t *t = build(&p);
        const int64_t last = topo_gpu_count(t) - 1; /* group 0 -> group 4 */
        topo_link_id_t links[64];
        int len;
        const int64_t g = global_of(t, 0, last, links, &len);
        assert_true(g >= 0); /* minimal: one global link */
        char name[96];
        topo_link_name(t, g, name, sizeof name);
        change(t, name, 1.0, 1);
        const int64_t g2 = global_of(t, 0, last, links, &len);
        if (copies > 1) {
            assert_true(g2 >= 0 && g2 != g); /* another parallel cable of the pair */
        } else {
            assert_int_equal(g2, -3); /* Valiant: two global links through a third group */
        }
        for (int k = 0; k < len; k++)
            assert_int_equal(topo_link_failed(t, links[k]), 0);
        /* the engine moves the bytes and none crosses the failed link */
        const int32_t src[1] = {0}, dst[1] = {(int32_t)last};
        sim_engine_t *e;
        permutation(t, src, dst, 1, 1e6, &e);
        sim_link_stats_t ls;
        assert_int_equal(sim_link_stats(e, (int32_t)g, &ls), SIM_OK);
        assert_true(ls.bytes == 0.0);
        assert_int_equal(sim_link_stats(e, links[len / 2], &ls), SIM_OK);
        assert_true(ls.bytes > 0.99e6);
        sim_engine_free(e);
        topo_free(t);
    }
}

int main(void) {
    igraph_set_error_handler(igraph_error_handler_printignore);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ring_slow_link),
        cmocka_unit_test(test_fat_tree_failed_uplink),
        cmocka_unit_test(test_dragonfly_global_failure),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
