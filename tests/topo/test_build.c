/* topo/test_build.c - exact counts of every kind: vertices, switches per tier, cables per tier pair,
 * diameter, bisection by max-flow against its closed form, injection, and the cost proxy. Figures
 * come from the published designs (Al-Fares fat-tree, DGX SuperPOD reference architectures, Kim et
 * al. dragonfly, k-ary n-cubes; docs/topology.md). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "topo_test_util.h"

#define LINK 50e9

static void assert_bisection_links(const topo_summary_t *s, double links, double bw) {
    assert_float_equal(s->bisection_bandwidth_bytes_per_s, links * bw, 1e-6 * links * bw);
    if (s->bisection_closed_form_bytes_per_s > 0)
        assert_float_equal(s->bisection_closed_form_bytes_per_s, s->bisection_bandwidth_bytes_per_s,
                           1e-6 * links * bw);
}

static void test_fat_tree_k8(void **state) {
    (void)state;
    topo_params_t p;
    topo_params_init(&p, TOPO_KIND_FAT_TREE); /* tiers 3, k 8, one GPU per endpoint */
    topo_t *t = tt_build(&p);
    topo_summary_t s = tt_summary(t);
    assert_int_equal(s.gpus, 128);    /* k^3/4 endpoints */
    assert_int_equal(s.switches, 80); /* 5k^2/4 */
    assert_int_equal(tt_switches_in_tier(t, 1), 32);
    assert_int_equal(tt_switches_in_tier(t, 2), 32);
    assert_int_equal(tt_switches_in_tier(t, 3), 16);
    assert_int_equal(s.links, 384);
    assert_int_equal(tt_cables_between(t, 0, 1), 128);
    assert_int_equal(tt_cables_between(t, 1, 2), 128);
    assert_int_equal(tt_cables_between(t, 2, 3), 128);
    assert_int_equal(s.diameter_hops, 6);
    assert_true(s.diameter_exhaustive);
    assert_bisection_links(&s, 64, LINK); /* k^3/8 links' worth */
    assert_true(s.bisection_closed_form_bytes_per_s > 0);
    assert_float_equal(s.injection_bandwidth_bytes_per_s, 128 * LINK, 1);
    assert_int_equal(s.nvswitches, 0);
    assert_int_equal(s.nvlink_links, 0);
    assert_int_equal(s.optical_cables, 256); /* every cable above the leaves */
    assert_int_equal(s.optical_transceivers, 512);
    assert_int_equal(topo_link_count(t), 768);
    topo_free(t);
}

static void test_fat_tree_k4_and_two_tier(void **state) {
    (void)state;
    topo_params_t p;
    topo_params_init(&p, TOPO_KIND_FAT_TREE);
    p.fat_tree.k = 4;
    topo_t *t = tt_build(&p);
    topo_summary_t s = tt_summary(t);
    assert_int_equal(s.gpus, 16);
    assert_int_equal(s.switches, 20);
    assert_int_equal(s.diameter_hops, 6);
    assert_bisection_links(&s, 8, LINK);
    topo_free(t);
    p.fat_tree.tiers = 2;
    p.fat_tree.k = 8; /* largest non-blocking 2-tier: k leaves, k/2 spines, k^2/2 endpoints */
    t = tt_build(&p);
    s = tt_summary(t);
    assert_int_equal(s.gpus, 32);
    assert_int_equal(tt_switches_in_tier(t, 1), 8);
    assert_int_equal(tt_switches_in_tier(t, 2), 4);
    assert_int_equal(s.links, 64);
    assert_int_equal(s.diameter_hops, 4);
    assert_bisection_links(&s, 16, LINK);
    topo_free(t);
}

static topo_summary_t two_tier(int64_t spines, int64_t links_per_pair, int64_t *switches) {
    topo_params_t p;
    topo_params_init(&p, TOPO_KIND_FAT_TREE);
    p.fat_tree = (topo_fat_tree_params_t){2, 0, 4, 8, spines, links_per_pair, 0, 0, 0, 0, 0};
    topo_t *t = tt_build(&p);
    topo_summary_t s = tt_summary(t);
    *switches = s.switches;
    topo_free(t);
    return s;
}

static void test_tapered_two_tier(void **state) {
    (void)state;
    int64_t sw;
    topo_summary_t full = two_tier(4, 1, &sw);
    assert_int_equal(sw, 12);
    assert_int_equal(full.links, 32 + 32);
    assert_bisection_links(&full, 16, LINK);
    topo_summary_t taper = two_tier(2, 1, &sw); /* 4 down, 2 up: 2:1 */
    assert_int_equal(sw, 10);
    assert_int_equal(taper.links, 32 + 16);
    assert_bisection_links(&taper, 8, LINK);
    assert_float_equal(taper.bisection_bandwidth_bytes_per_s * 2, full.bisection_bandwidth_bytes_per_s, 1);
    topo_summary_t parallel = two_tier(2, 2, &sw); /* 2 spines, 2 cables each: non-blocking again */
    assert_int_equal(parallel.links, 32 + 32);
    assert_bisection_links(&parallel, 16, LINK);
}

static void test_tapered_three_tier(void **state) {
    (void)state;
    topo_params_t p;
    topo_params_init(&p, TOPO_KIND_FAT_TREE);
    /* k = 8 written out in the general form, then the leaves tapered 2:1 (4 down, 2 up) */
    p.fat_tree = (topo_fat_tree_params_t){3, 0, 4, 0, 0, 1, 8, 4, 4, 4, 1};
    topo_t *t = tt_build(&p);
    topo_summary_t full = tt_summary(t);
    assert_int_equal(full.switches, 80);
    assert_bisection_links(&full, 64, LINK);
    topo_free(t);
    p.fat_tree.spines_per_pod = 2;
    t = tt_build(&p);
    topo_summary_t taper = tt_summary(t);
    assert_int_equal(taper.switches, 32 + 16 + 8);
    assert_bisection_links(&taper, 32, LINK);
    assert_true(taper.bisection_closed_form_bytes_per_s > 0);
    assert_float_equal(taper.bisection_bandwidth_bytes_per_s * 2, full.bisection_bandwidth_bytes_per_s, 1);
    topo_free(t);
}

static void test_partial_tree(void **state) {
    (void)state;
    topo_params_t p;
    topo_params_init(&p, TOPO_KIND_FAT_TREE);
    p.gpus = 20; /* 5 of the 32 leaves used: empty leaves are not built */
    topo_t *t = tt_build(&p);
    topo_summary_t s = tt_summary(t);
    assert_int_equal(s.gpus, 20);
    assert_int_equal(tt_switches_in_tier(t, 1), 5);
    assert_int_equal(tt_switches_in_tier(t, 2), 8); /* pods 0 and 1 */
    assert_int_equal(tt_switches_in_tier(t, 3), 16);
    assert_int_equal(s.diameter_hops, 6);
    topo_free(t);
}

/* DGX H100 RA Table 4: leaves, spines, node-leaf and leaf-spine cables for 1-4 SUs. */
static void test_h100_superpod_units(void **state) {
    (void)state;
    static const int64_t want[4][5] = {
        {248, 8, 4, 248, 256}, {504, 16, 8, 504, 512}, {760, 24, 16, 760, 768}, {1016, 32, 16, 1016, 1024}};
    for (int su = 0; su < 4; su++) {
        topo_params_t p;
        assert_int_equal(topo_params_preset("dgx-h100-superpod", want[su][0], &p), TOPO_OK);
        topo_t *t = tt_build(&p);
        assert_int_equal(topo_node_count(t), want[su][0] / 8);
        assert_int_equal(tt_switches_in_tier(t, 1), want[su][1]);
        assert_int_equal(tt_switches_in_tier(t, 2), want[su][2]);
        assert_int_equal(tt_switches_in_tier(t, 3), 0);
        /* the RA's node-leaf counts add 4 UFM cables (252, 508, ...) that are not modelled */
        assert_int_equal(tt_cables_between(t, 0, 1), want[su][3]);
        assert_int_equal(tt_cables_between(t, 1, 2), want[su][4]);
        topo_free(t);
    }
    topo_params_t p;
    assert_int_equal(topo_params_preset("dgx-h100-superpod", 248, &p), TOPO_OK);
    topo_t *t = tt_build(&p);
    topo_summary_t s = tt_summary(t);
    assert_int_equal(s.nvswitches, 31);
    assert_int_equal(s.nvlink_links, 248);
    assert_int_equal(s.diameter_hops, 4);
    assert_int_equal(s.optical_cables, s.links); /* nodes and switches sit in different racks */
    topo_free(t);
}

/* DGX B200 RA: 16 SU = 128 leaf / 128 spine / 64 core, 64 SU = 512 / 512 / 256, with node-leaf =
 * leaf-spine = spine-core cables (non-blocking). */
static void test_b200_superpod_multi_unit(void **state) {
    (void)state;
    static const int64_t want[2][4] = {{4096, 128, 128, 64}, {16384, 512, 512, 256}};
    for (int k = 0; k < 2; k++) {
        topo_params_t p;
        assert_int_equal(topo_params_preset("dgx-b200-superpod", want[k][0], &p), TOPO_OK);
        topo_t *t = tt_build(&p);
        assert_int_equal(tt_switches_in_tier(t, 1), want[k][1]);
        assert_int_equal(tt_switches_in_tier(t, 2), want[k][2]);
        assert_int_equal(tt_switches_in_tier(t, 3), want[k][3]);
        assert_int_equal(tt_cables_between(t, 0, 1), want[k][0]);
        assert_int_equal(tt_cables_between(t, 1, 2), want[k][0]);
        assert_int_equal(tt_cables_between(t, 2, 3), want[k][0]);
        if (k == 0) {
            topo_summary_t s = tt_summary(t);
            assert_int_equal(s.diameter_hops, 6);
            assert_bisection_links(&s, 2048, LINK);
        }
        topo_free(t);
    }
}

static void test_ideal(void **state) {
    (void)state;
    topo_params_t p;
    topo_params_init(&p, TOPO_KIND_IDEAL);
    p.gpus = 64;
    topo_t *t = tt_build(&p);
    topo_summary_t s = tt_summary(t);
    assert_int_equal(s.nodes, 8);
    assert_int_equal(s.switches, 1);
    assert_int_equal(s.nvswitches, 8);
    assert_int_equal(s.links, 64);
    assert_int_equal(s.nvlink_links, 64);
    assert_int_equal(s.diameter_hops, 2);
    assert_bisection_links(&s, 32, 25e9);
    assert_int_equal(s.optical_cables, 0);
    topo_free(t);
}

/* Balanced dragonflies (a = 2p = 2h): routers a*g, local cables g*a(a-1)/2, global g(g-1)/2 * n. */
static void check_dragonfly(int64_t pp, int64_t a, int64_t h, int64_t g, int64_t n, topo_arrangement_t arr) {
    topo_params_t p;
    topo_params_init(&p, TOPO_KIND_DRAGONFLY);
    p.dragonfly = (topo_dragonfly_params_t){pp, a, h, g, 0, arr, 0, 4, 0};
    topo_t *t = tt_build(&p);
    int64_t local = 0, global = 0;
    for (int64_t l = 0; l < topo_link_count(t); l += 2) {
        topo_link_info_t li;
        topo_vertex_info_t u, v;
        topo_link_get(t, l, &li);
        topo_vertex_get(t, li.from, &u);
        topo_vertex_get(t, li.to, &v);
        if (u.kind == TOPO_VERTEX_SWITCH && v.kind == TOPO_VERTEX_SWITCH) {
            local += u.group == v.group;
            global += u.group != v.group;
        }
    }
    assert_int_equal(tt_switches_in_tier(t, 1), a * g);
    assert_int_equal(local, g * a * (a - 1) / 2);
    assert_int_equal(global, g * (g - 1) / 2 * n);
    assert_int_equal(tt_cables_between(t, 0, 1), pp * a * g);
    assert_int_equal(topo_gpu_count(t), pp * a * g);
    topo_summary_t s = tt_summary(t);
    assert_int_equal(s.diameter_hops, 5); /* terminal, local, global, local, terminal */
    assert_int_equal(s.optical_cables, global);
    if (g % 2 == 0)
        assert_float_equal(s.bisection_bandwidth_bytes_per_s, s.bisection_closed_form_bytes_per_s, 1e3);
    topo_free(t);
}

static void test_dragonfly_counts(void **state) {
    (void)state;
    check_dragonfly(2, 4, 2, 9, 1, TOPO_ARRANGEMENT_ABSOLUTE); /* g = a*h + 1 */
    check_dragonfly(2, 4, 2, 9, 1, TOPO_ARRANGEMENT_RELATIVE);
    check_dragonfly(2, 4, 2, 9, 1, TOPO_ARRANGEMENT_CIRCULANT);
    check_dragonfly(4, 8, 4, 33, 1, TOPO_ARRANGEMENT_ABSOLUTE);
    check_dragonfly(2, 4, 2, 5, 2, TOPO_ARRANGEMENT_ABSOLUTE); /* spare ports become parallel cables */
    check_dragonfly(2, 4, 2, 8, 1, TOPO_ARRANGEMENT_CIRCULANT);
}

/* Every router uses exactly h global ports when n (g-1) = a h. */
static void test_dragonfly_global_ports(void **state) {
    (void)state;
    for (int arr = 0; arr < 3; arr++) {
        topo_params_t p;
        topo_params_init(&p, TOPO_KIND_DRAGONFLY);
        p.dragonfly = (topo_dragonfly_params_t){2, 4, 2, 5, 0, (topo_arrangement_t)arr, 0, 4, 0};
        topo_t *t = tt_build(&p);
        int64_t V = topo_vertex_count(t);
        int64_t *deg = calloc((size_t)V, sizeof *deg);
        for (int64_t l = 0; l < topo_link_count(t); l++) {
            topo_link_info_t li;
            topo_vertex_info_t u, v;
            topo_link_get(t, l, &li);
            topo_vertex_get(t, li.from, &u);
            topo_vertex_get(t, li.to, &v);
            if (u.kind == TOPO_VERTEX_SWITCH && v.kind == TOPO_VERTEX_SWITCH && u.group != v.group)
                deg[li.from]++;
        }
        for (int64_t v = 0; v < V; v++) {
            topo_vertex_info_t vi;
            topo_vertex_get(t, v, &vi);
            if (vi.kind == TOPO_VERTEX_SWITCH)
                assert_int_equal(deg[v], 2);
        }
        free(deg);
        topo_free(t);
    }
}

static void check_torus(int n_dims, const int64_t *dims, int64_t gpus, int64_t links, int64_t diameter,
                        double bisection_links) {
    topo_params_t p;
    topo_params_init(&p, TOPO_KIND_TORUS);
    p.torus.n_dims = n_dims;
    for (int d = 0; d < n_dims; d++)
        p.torus.dims[d] = dims[d];
    topo_t *t = tt_build(&p);
    topo_summary_t s = tt_summary(t);
    assert_int_equal(s.gpus, gpus);
    assert_int_equal(s.switches, 0); /* direct network: the GPUs route */
    assert_int_equal(s.links, links);
    assert_int_equal(s.diameter_hops, diameter);
    assert_float_equal(s.bisection_bandwidth_bytes_per_s, bisection_links * LINK, 1e3);
    if (dims[0] % 2 == 0)
        assert_float_equal(s.bisection_closed_form_bytes_per_s, bisection_links * LINK, 1e3);
    else
        assert_true(s.bisection_closed_form_bytes_per_s == 0);
    topo_free(t);
}

static void test_torus_counts(void **state) {
    (void)state;
    check_torus(3, (int64_t[]){4, 4, 4}, 64, 192, 6, 32); /* 2 N / k */
    check_torus(2, (int64_t[]){8, 8}, 64, 128, 8, 16);
    check_torus(3, (int64_t[]){2, 2, 2}, 8, 12, 3, 4); /* k = 2: one cable per pair */
    check_torus(1, (int64_t[]){6}, 6, 6, 3, 2);        /* a ring */
    check_torus(2, (int64_t[]){3, 4}, 12, 24, 3, 10);  /* odd first dimension: no closed form */
    /* a torus of 8-GPU nodes: one router per node */
    topo_params_t p;
    topo_params_init(&p, TOPO_KIND_TORUS);
    p.torus.n_dims = 2;
    p.torus.dims[0] = p.torus.dims[1] = 4;
    topo_node_preset("dgx-h100", &p.node);
    topo_t *t = tt_build(&p);
    topo_summary_t s = tt_summary(t);
    assert_int_equal(s.gpus, 128);
    assert_int_equal(s.switches, 16);
    assert_int_equal(s.links, 32 + 128);
    assert_int_equal(s.diameter_hops, 6);
    assert_float_equal(s.bisection_bandwidth_bytes_per_s, 8 * LINK, 1e3);
    topo_free(t);
}

static void test_presets_build(void **state) {
    (void)state;
    topo_params_t p;
    assert_int_equal(topo_params_preset("perlmutter", 0, &p), TOPO_OK);
    topo_t *t = tt_build(&p);
    topo_summary_t s = tt_summary(t);
    assert_int_equal(s.gpus, 7168);
    assert_int_equal(s.nodes, 1792);
    assert_int_equal(s.switches, 14 * 32);
    assert_int_equal(s.nvlink_links, 1792 * 6); /* 4-GPU mesh */
    assert_int_equal(s.nics, 0);
    assert_int_equal(s.diameter_hops, 5);
    /* 7 x 7 group pairs x 22 cables across the halves, below half the injection */
    assert_float_equal(s.bisection_bandwidth_bytes_per_s, 49.0 * 22 * 25e9, 1e3);
    assert_float_equal(s.bisection_closed_form_bytes_per_s, 49.0 * 22 * 25e9, 1e3);
    topo_free(t);
    assert_int_equal(topo_params_preset("frontier", 4096, &p), TOPO_OK);
    t = tt_build(&p);
    s = tt_summary(t);
    assert_int_equal(s.nodes, 512);
    assert_int_equal(s.switches, 4 * 32);
    assert_int_equal(s.nics, 512 * 4);
    assert_int_equal(s.pcie_links, 4096);
    assert_int_equal(s.nvlink_links, 512 * 28); /* 8-GCD mesh */
    assert_int_equal(s.links, 2048 + 4 * 496 + 6 * 4);
    assert_int_equal(s.diameter_hops, 7); /* PCIe, NIC-router, L, G, L, router-NIC, PCIe */
    topo_free(t);
}

static void test_build_stats(void **state) {
    (void)state;
    topo_params_t p;
    topo_params_init(&p, TOPO_KIND_FAT_TREE);
    topo_t *t = tt_build(&p);
    topo_build_stats_t st;
    topo_build_stats_get(t, &st);
    assert_true(st.build_s >= 0 && st.graph_s >= 0 && st.check_s >= 0);
    assert_true(st.route_table_bytes > 0);
    char name[64];
    assert_string_equal(topo_link_name(t, 0, name, sizeof name), "gpu0->leaf0");
    assert_string_equal(topo_link_name(t, 1, name, sizeof name), "leaf0->gpu0");
    assert_string_equal(topo_link_name(t, 256, name, sizeof name), "leaf0->spine0");
    topo_vertex_info_t vi;
    assert_int_equal(topo_vertex_get(t, topo_vertex_count(t), &vi), TOPO_ERANGE);
    assert_int_equal(topo_gpu_vertex(t, 128), -1);
    topo_free(t);
    topo_free(NULL);
}

int main(void) {
    igraph_set_error_handler(igraph_error_handler_printignore);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fat_tree_k8),
        cmocka_unit_test(test_fat_tree_k4_and_two_tier),
        cmocka_unit_test(test_tapered_two_tier),
        cmocka_unit_test(test_tapered_three_tier),
        cmocka_unit_test(test_partial_tree),
        cmocka_unit_test(test_h100_superpod_units),
        cmocka_unit_test(test_b200_superpod_multi_unit),
        cmocka_unit_test(test_ideal),
        cmocka_unit_test(test_dragonfly_counts),
        cmocka_unit_test(test_dragonfly_global_ports),
        cmocka_unit_test(test_torus_counts),
        cmocka_unit_test(test_presets_build),
        cmocka_unit_test(test_build_stats),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
