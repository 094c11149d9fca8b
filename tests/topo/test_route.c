/* topo/test_route.c - routing: ECMP path counts and the dmodk rule on trees, hashed and spread ECMP,
 * PXN, NVLink meshes and PCIe NICs, dragonfly minimal hop counts, Valiant through an intermediate
 * group and UGAL under load, torus dimension order, and every GPU pair routable on every preset. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "topo_test_util.h"

static int64_t to_index(const topo_t *t, topo_link_id_t l) {
    topo_link_info_t li;
    topo_vertex_info_t vi;
    topo_link_get(t, l, &li);
    topo_vertex_get(t, li.to, &vi);
    return vi.index;
}

static topo_t *k8(topo_routing_t r) {
    topo_params_t p;
    topo_params_init(&p, TOPO_KIND_FAT_TREE);
    p.routing = r;
    return tt_build(&p);
}

static void test_ecmp_path_counts(void **state) {
    (void)state;
    topo_t *t = k8(TOPO_ROUTING_ECMP_SPREAD);
    topo_flow_t same_leaf = {0, 1, 0, TOPO_ROUTING_DEFAULT, NULL},
                same_pod = {0, 4, 0, TOPO_ROUTING_DEFAULT, NULL},
                other_pod = {0, 16, 0, TOPO_ROUTING_DEFAULT, NULL};
    assert_int_equal(topo_route_path_count(t, &same_leaf), 1);
    assert_int_equal(topo_route_path_count(t, &same_pod), 4);   /* k/2 */
    assert_int_equal(topo_route_path_count(t, &other_pod), 16); /* (k/2)^2 */
    topo_link_id_t links[16 * 6];
    int len[16];
    double w[16];
    assert_int_equal(topo_route_paths(t, &other_pod, links, 16 * 6, len, w, 16), 16);
    int off = 0;
    for (int i = 0; i < 16; i++) {
        assert_int_equal(len[i], 6);
        assert_float_equal(w[i], 1.0 / 16, 1e-15);
        tt_check_route(t, 0, 16, links + off, len[i]);
        for (int j = 0; j < i; j++) /* distinct: the core link differs */
            assert_true(links[off + 2] != links[j * 6 + 2]);
        off += len[i];
    }
    assert_int_equal(topo_route_paths(t, &other_pod, links, 16 * 6, len, w, 15), TOPO_ERANGE);
    assert_int_equal(topo_route_paths(t, &other_pod, links, 16 * 6 - 1, len, w, 16), TOPO_ERANGE);
    topo_flow_t dm = other_pod;
    dm.routing = TOPO_ROUTING_DMODK;
    assert_int_equal(topo_route_path_count(t, &dm), 1);
    assert_int_equal(topo_route_paths(t, &dm, links, 16 * 6, len, w, 16), 1);
    assert_float_equal(w[0], 1.0, 0);
    topo_free(t);
}

/* The documented D-mod-k rule (docs/topology.md, Routing): on a 2-tier tree with dmodk a flow to endpoint d
 * leaves its leaf through spine d mod S; flows to one destination converge on one down path. */
static void test_dmodk_two_tier(void **state) {
    (void)state;
    for (int64_t links_per_pair = 1; links_per_pair <= 2; links_per_pair++) {
        topo_params_t p;
        topo_params_init(&p, TOPO_KIND_FAT_TREE);
        p.fat_tree = (topo_fat_tree_params_t){2, 0, 4, 8, 3, links_per_pair, 0, 0, 0, 0, 0};
        topo_t *t = tt_build(&p);
        topo_link_id_t links[8];
        for (int64_t d = 4; d < 32; d++) {
            assert_int_equal(tt_route(t, 0, d, TOPO_ROUTING_DEFAULT, 0, links), 4);
            assert_int_equal(to_index(t, links[1]), d % 3);
        }
        topo_link_id_t down = -1;
        for (int64_t s = 4; s < 32; s += 4) { /* one source per other leaf, all to endpoint 1 */
            assert_int_equal(tt_route(t, s, 1, TOPO_ROUTING_DMODK, (uint64_t)s, links), 4);
            if (down < 0)
                down = links[2];
            assert_int_equal(links[2], down);
        }
        topo_free(t);
    }
}

static void test_ecmp_hash(void **state) {
    (void)state;
    topo_t *t = k8(TOPO_ROUTING_ECMP_HASH);
    topo_link_id_t links[8], again[8], cores[16];
    int distinct = 0;
    for (uint64_t key = 0; key < 256; key++) {
        assert_int_equal(tt_route(t, 0, 16, TOPO_ROUTING_DEFAULT, key, links), 6);
        assert_int_equal(tt_route(t, 0, 16, TOPO_ROUTING_DEFAULT, key, again), 6);
        assert_memory_equal(links, again, sizeof links[0] * 6); /* deterministic per flow */
        int known = 0;
        for (int i = 0; i < distinct; i++)
            known |= cores[i] == links[2];
        if (!known) {
            assert_true(distinct < 16);
            cores[distinct++] = links[2];
        }
    }
    assert_int_equal(distinct, 16); /* 256 flows reach all 16 equal-cost paths */
    /* ecmp-spread asked of topo_route hashes like ecmp-hash */
    assert_int_equal(tt_route(t, 0, 16, TOPO_ROUTING_ECMP_SPREAD, 7, links), 6);
    topo_free(t);
}

static void test_route_errors(void **state) {
    (void)state;
    topo_t *t = k8(TOPO_ROUTING_DEFAULT);
    topo_link_id_t links[8];
    topo_flow_t f = {0, 16, 0, TOPO_ROUTING_DEFAULT, NULL};
    assert_int_equal(topo_route(t, &f, links, 5), TOPO_ERANGE);
    f.routing = TOPO_ROUTING_VALIANT;
    assert_int_equal(topo_route(t, &f, links, 8), TOPO_EINVAL);
    f.routing = TOPO_ROUTING_DEFAULT;
    f.dst_gpu = 128;
    assert_int_equal(topo_route(t, &f, links, 8), TOPO_ERANGE);
    f.src_gpu = -1;
    f.dst_gpu = 3;
    assert_int_equal(topo_route(t, &f, links, 8), TOPO_ERANGE);
    f.src_gpu = 3;
    assert_int_equal(topo_route(t, &f, links, 8), 0);
    assert_int_equal(topo_routing(t), TOPO_ROUTING_DMODK);
    topo_free(t);
}

static void test_rail_pxn_and_nodes(void **state) {
    (void)state;
    topo_params_t p;
    assert_int_equal(topo_params_preset("dgx-h100-superpod", 248, &p), TOPO_OK);
    topo_t *t = tt_build(&p);
    topo_link_id_t links[16];
    /* same rail, same unit: leaf only */
    assert_int_equal(tt_route(t, 0, 8, TOPO_ROUTING_DEFAULT, 0, links), 2);
    /* same node: over the NVSwitch */
    assert_int_equal(tt_route(t, 0, 5, TOPO_ROUTING_DEFAULT, 0, links), 2);
    topo_link_info_t li;
    topo_link_get(t, links[0], &li);
    assert_int_equal(li.kind, TOPO_LINK_NVLINK);
    /* rail 0 to rail 3 of another node: through a spine */
    assert_int_equal(tt_route(t, 0, 11, TOPO_ROUTING_DEFAULT, 0, links), 4);
    topo_free(t);
    p.pxn = 1; /* NVLink to GPU 3 first, then rail 3's leaf */
    t = tt_build(&p);
    assert_int_equal(tt_route(t, 0, 11, TOPO_ROUTING_DEFAULT, 0, links), 4);
    topo_link_get(t, links[1], &li);
    assert_int_equal(li.to, topo_gpu_vertex(t, 3));
    topo_link_get(t, links[2], &li);
    assert_int_equal(li.kind, TOPO_LINK_NETWORK);
    topo_free(t);
}

static void test_mesh_and_pcie(void **state) {
    (void)state;
    topo_params_t p;
    assert_int_equal(topo_params_preset("frontier", 4096, &p), TOPO_OK);
    topo_t *t = tt_build(&p);
    topo_link_id_t links[16];
    topo_link_info_t li;
    assert_int_equal(tt_route(t, 0, 7, TOPO_ROUTING_DEFAULT, 0, links), 1); /* mesh cable */
    topo_link_get(t, links[0], &li);
    assert_int_equal(li.kind, TOPO_LINK_NVLINK);
    assert_float_equal(li.bandwidth_bytes_per_s, 50e9, 1);
    assert_int_equal(tt_route(t, 7, 0, TOPO_ROUTING_DEFAULT, 0, links), 1);
    /* GCDs 0 and 1 share NIC 0 of node 0; to node 1: PCIe, NIC-router, router-NIC, PCIe */
    assert_int_equal(tt_route(t, 1, 8, TOPO_ROUTING_MINIMAL, 0, links), 4);
    topo_link_get(t, links[0], &li);
    assert_int_equal(li.kind, TOPO_LINK_PCIE);
    topo_link_get(t, links[3], &li);
    assert_int_equal(li.kind, TOPO_LINK_PCIE);
    topo_free(t);
}

static int count_global(const topo_t *t, const topo_link_id_t *links, int n, int64_t *first_landing_group) {
    int g = 0;
    for (int k = 0; k < n; k++) {
        topo_link_info_t li;
        topo_vertex_info_t u, v;
        topo_link_get(t, links[k], &li);
        topo_vertex_get(t, li.from, &u);
        topo_vertex_get(t, li.to, &v);
        if (u.kind == TOPO_VERTEX_SWITCH && v.kind == TOPO_VERTEX_SWITCH && u.group != v.group) {
            if (g == 0 && first_landing_group)
                *first_landing_group = v.group;
            g++;
        }
    }
    return g;
}

static topo_t *balanced_dragonfly(topo_routing_t r) {
    topo_params_t p;
    topo_params_init(&p, TOPO_KIND_DRAGONFLY);
    p.dragonfly = (topo_dragonfly_params_t){2, 4, 2, 9, 0, TOPO_ARRANGEMENT_ABSOLUTE, 0, 4, 0};
    p.routing = r;
    return tt_build(&p);
}

/* Minimal routes: 2 links on one router, 3 in one group, 3 to 5 between groups with one global. */
static void test_dragonfly_minimal_hops(void **state) {
    (void)state;
    topo_t *t = balanced_dragonfly(TOPO_ROUTING_MINIMAL);
    topo_link_id_t links[16];
    int64_t hist[8] = {0};
    for (int64_t s = 0; s < 72; s++) {
        for (int64_t d = 0; d < 72; d++) {
            int n = tt_route(t, s, d, TOPO_ROUTING_DEFAULT, 0, links);
            int same_router = s / 2 == d / 2, same_group = s / 8 == d / 8;
            if (s == d)
                continue;
            if (same_router)
                assert_int_equal(n, 2);
            else if (same_group)
                assert_int_equal(n, 3);
            else
                assert_int_equal(count_global(t, links, n, NULL), 1);
            hist[n]++;
        }
    }
    /* between groups: 3 when both routers sit on the global cable, 5 when neither does */
    assert_int_equal(hist[2], 72);
    assert_true(hist[3] > 0 && hist[4] > 0 && hist[5] > 0);
    assert_int_equal(hist[6] + hist[7], 0);
    assert_int_equal(hist[2] + hist[3] + hist[4] + hist[5], 72 * 71);
    topo_free(t);
}

static void test_valiant(void **state) {
    (void)state;
    topo_t *t = balanced_dragonfly(TOPO_ROUTING_VALIANT);
    topo_link_id_t links[16];
    int seen[9] = {0}, distinct = 0;
    for (uint64_t key = 0; key < 64; key++) {
        int n = tt_route(t, 0, 8, TOPO_ROUTING_DEFAULT, key, links); /* group 0 -> group 1 */
        int64_t mid = -1;
        assert_int_equal(count_global(t, links, n, &mid), 2);
        assert_true(mid != 0 && mid != 1 && mid >= 0 && mid < 9);
        assert_true(n <= 2 + 5);
        distinct += !seen[mid];
        seen[mid] = 1;
    }
    assert_int_equal(distinct, 7); /* every group but the two ends */
    /* inside one group Valiant stays minimal */
    assert_int_equal(tt_route(t, 0, 2, TOPO_ROUTING_DEFAULT, 5, links), 3);
    topo_free(t);
}

static void test_ugal(void **state) {
    (void)state;
    topo_t *t = balanced_dragonfly(TOPO_ROUTING_UGAL);
    topo_link_id_t minimal[16], links[16];
    int nm = tt_route(t, 0, 8, TOPO_ROUTING_MINIMAL, 3, minimal);
    int n = tt_route(t, 0, 8, TOPO_ROUTING_DEFAULT, 3, links); /* idle network: minimal */
    assert_int_equal(n, nm);
    assert_memory_equal(links, minimal, sizeof links[0] * (size_t)n);
    double *load = calloc((size_t)topo_link_count(t), sizeof *load);
    for (int k = 0; k < nm; k++)
        load[minimal[k]] = 5.0; /* the minimal path is congested */
    topo_flow_t f = {0, 8, 3, TOPO_ROUTING_DEFAULT, load};
    n = topo_route(t, &f, links, 16);
    tt_check_route(t, 0, 8, links, n);
    assert_int_equal(count_global(t, links, n, NULL), 2);
    free(load);
    topo_free(t);
    topo_params_t p;
    topo_params_init(&p, TOPO_KIND_DRAGONFLY);
    p.dragonfly = (topo_dragonfly_params_t){2, 4, 2, 9, 0, TOPO_ARRANGEMENT_ABSOLUTE, 1e9, 4, 0};
    p.routing = TOPO_ROUTING_UGAL;
    t = tt_build(&p);
    load = calloc((size_t)topo_link_count(t), sizeof *load);
    for (int k = 0; k < nm; k++)
        load[minimal[k]] = 5.0;
    f.link_load = load;
    n = topo_route(t, &f, links, 16); /* a huge threshold keeps the minimal path */
    assert_int_equal(count_global(t, links, n, NULL), 1);
    free(load);
    topo_free(t);
}

static void test_torus_dor(void **state) {
    (void)state;
    topo_params_t p;
    topo_params_init(&p, TOPO_KIND_TORUS);
    p.torus.dims[2] = 5;
    topo_t *t = tt_build(&p);
    topo_link_id_t links[32];
    int64_t k[3] = {4, 4, 5};
    for (int64_t s = 0; s < 80; s++) {
        for (int64_t d = 0; d < 80; d++) {
            int64_t cs[3] = {s / 20, s / 5 % 4, s % 5}, cd[3] = {d / 20, d / 5 % 4, d % 5}, want = 0;
            for (int i = 0; i < 3; i++) {
                int64_t delta = (cd[i] - cs[i] + k[i]) % k[i];
                want += delta < k[i] - delta ? delta : k[i] - delta;
            }
            assert_int_equal(tt_route(t, s, d, TOPO_ROUTING_DEFAULT, 0, links), want);
        }
    }
    /* dimension order: 0 -> (1,1,1) = 26 moves along dim 0 first, then 1, then 2 */
    assert_int_equal(tt_route(t, 0, 26, TOPO_ROUTING_DOR, 0, links), 3);
    topo_link_info_t li;
    topo_link_get(t, links[0], &li);
    assert_int_equal(li.to, 20);
    topo_link_get(t, links[1], &li);
    assert_int_equal(li.to, 25);
    topo_free(t);
}

/* Every GPU pair has a valid route: all pairs up to 300 GPUs, beyond that every destination from 16
 * sources spread over the ranks (the first and the last included). */
static void all_pairs_routable(const topo_params_t *p) {
    topo_t *t = tt_build(p);
    int64_t G = topo_gpu_count(t), sources = G <= 300 ? G : 16;
    topo_link_id_t links[256];
    for (int64_t k = 0; k < sources; k++) {
        int64_t s = sources == G ? k : k * (G - 1) / (sources - 1);
        for (int64_t d = 0; d < G; d++) {
            topo_flow_t f = {s, d, (uint64_t)(s * 31 + d), TOPO_ROUTING_DEFAULT, NULL};
            int n = topo_route(t, &f, links, 256);
            assert_true(n >= 0);
            tt_check_route(t, s, d, links, n);
        }
    }
    topo_free(t);
}

/* Perlmutter's chassis: 16 nodes share 4 routers, NIC k of each on router k. Rails stay on one
 * router inside a chassis (2 links); another rail is one local hop away (3 links). */
static void test_chassis_nics(void **state) {
    (void)state;
    topo_params_t p;
    assert_int_equal(topo_params_preset("perlmutter", 512, &p), TOPO_OK);
    assert_int_equal(p.dragonfly.chassis_nics, 1);
    topo_t *t = tt_build(&p);
    topo_link_id_t links[16];
    assert_int_equal(tt_route(t, 0, 4, TOPO_ROUTING_MINIMAL, 0, links), 2);  /* node 0 -> 1, NIC 0 */
    assert_int_equal(tt_route(t, 0, 60, TOPO_ROUTING_MINIMAL, 0, links), 2); /* node 15, NIC 0 */
    assert_int_equal(tt_route(t, 3, 4, TOPO_ROUTING_MINIMAL, 0, links), 3);  /* NIC 3 -> NIC 0 */
    assert_int_equal(tt_route(t, 0, 64, TOPO_ROUTING_MINIMAL, 0, links), 3); /* next chassis */
    topo_free(t);
    p.dragonfly.chassis_nics = 0; /* the 4 NICs of a node on one router, 4 nodes per router */
    t = tt_build(&p);
    assert_int_equal(tt_route(t, 3, 4, TOPO_ROUTING_MINIMAL, 0, links), 2);
    assert_int_equal(tt_route(t, 0, 16, TOPO_ROUTING_MINIMAL, 0, links), 3);
    topo_free(t);
}

static void test_every_preset_routable(void **state) {
    (void)state;
    topo_params_t p;
    for (size_t i = 0; topo_preset_name(i); i++) {
        const char *name = topo_preset_name(i);
        /* Frontier at 16,384 GPUs keeps the test fast; its full size is built by bench_topo */
        assert_int_equal(topo_params_preset(name, strcmp(name, "frontier") == 0 ? 16384 : 0, &p), TOPO_OK);
        all_pairs_routable(&p);
    }
    for (int k = 0; k < TOPO_KIND_COUNT; k++) {
        if (k == TOPO_KIND_GRAPHML)
            continue;
        topo_params_init(&p, (topo_kind_t)k);
        if (k == TOPO_KIND_IDEAL)
            p.gpus = 256;
        all_pairs_routable(&p);
    }
    static const topo_routing_t df[3] = {TOPO_ROUTING_MINIMAL, TOPO_ROUTING_VALIANT, TOPO_ROUTING_UGAL};
    for (int r = 0; r < 3; r++) {
        topo_params_init(&p, TOPO_KIND_DRAGONFLY);
        p.dragonfly.arrangement = (topo_arrangement_t)r;
        p.routing = df[r];
        all_pairs_routable(&p);
    }
}

int main(void) {
    igraph_set_error_handler(igraph_error_handler_printignore);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ecmp_path_counts),
        cmocka_unit_test(test_dmodk_two_tier),
        cmocka_unit_test(test_ecmp_hash),
        cmocka_unit_test(test_route_errors),
        cmocka_unit_test(test_rail_pxn_and_nodes),
        cmocka_unit_test(test_mesh_and_pcie),
        cmocka_unit_test(test_dragonfly_minimal_hops),
        cmocka_unit_test(test_valiant),
        cmocka_unit_test(test_ugal),
        cmocka_unit_test(test_torus_dor),
        cmocka_unit_test(test_chassis_nics),
        cmocka_unit_test(test_every_preset_routable),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
