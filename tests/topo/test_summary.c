/* topo/test_summary.c - summaries beyond single counts: the representative-source diameter of large
 * graphs equals an exhaustive BFS from every GPU (partly filled units and groups included), and the
 * max-flow bisection equals its closed form wherever the builder has one. White-box: uses
 * topo_internal.h for the BFS. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "topo_internal.h"
#include "topo_test_util.h"

static int64_t exhaustive_diameter(const topo_t *t) {
    int32_t *dist = malloc((size_t)t->n_vertices * sizeof *dist);
    int32_t *queue = malloc((size_t)t->n_vertices * sizeof *queue);
    int64_t far = 0;
    for (int64_t s = 0; s < t->n_gpus; s++) {
        topo_i_bfs(t, t->gpu_vertex[s], dist, queue);
        for (int64_t g = 0; g < t->n_gpus; g++) {
            assert_true(dist[t->gpu_vertex[g]] >= 0);
            far = dist[t->gpu_vertex[g]] > far ? dist[t->gpu_vertex[g]] : far;
        }
    }
    free(dist);
    free(queue);
    return far;
}

static void check_representatives(const topo_params_t *p, int64_t want) {
    topo_t *t = tt_build(p);
    topo_summary_t s = tt_summary(t);
    assert_false(s.diameter_exhaustive); /* large enough to use representatives */
    assert_int_equal(s.diameter_hops, want);
    assert_int_equal(exhaustive_diameter(t), want);
    topo_free(t);
}

static void test_diameter_representatives(void **state) {
    (void)state;
    topo_params_t p;
    /* 9 full units of B200 nodes: 72 leaves, more than radix-64 spines hold, so 3 tiers */
    assert_int_equal(topo_params_preset("dgx-b200-superpod", 2304, &p), TOPO_OK);
    check_representatives(&p, 6);
    /* the last unit only partly filled */
    assert_int_equal(topo_params_preset("dgx-b200-superpod", 2104, &p), TOPO_OK);
    check_representatives(&p, 6);
    /* Frontier nodes on 3 groups, the last one partly filled */
    assert_int_equal(topo_params_preset("frontier", 2504, &p), TOPO_OK);
    check_representatives(&p, 7);
}

static void check_closed_form(const topo_params_t *p) {
    topo_t *t = tt_build(p);
    topo_summary_t s = tt_summary(t);
    assert_true(s.bisection_closed_form_bytes_per_s > 0);
    assert_float_equal(s.bisection_bandwidth_bytes_per_s, s.bisection_closed_form_bytes_per_s,
                       1e-9 * s.bisection_closed_form_bytes_per_s);
    topo_free(t);
}

static void test_bisection_closed_forms(void **state) {
    (void)state;
    topo_params_t p;
    for (int64_t k = 2; k <= 8; k += 2) {
        topo_params_init(&p, TOPO_KIND_FAT_TREE);
        p.fat_tree.k = k;
        check_closed_form(&p);
        p.fat_tree.tiers = 2;
        check_closed_form(&p);
    }
    /* tapered at the leaves and at the spines, parallel cables, 8-GPU nodes with one NIC each */
    topo_params_init(&p, TOPO_KIND_FAT_TREE);
    p.fat_tree = (topo_fat_tree_params_t){3, 0, 6, 0, 0, 1, 4, 3, 2, 3, 2};
    check_closed_form(&p);
    p.fat_tree.cores_per_spine = 1;
    check_closed_form(&p);
    topo_node_preset("dgx-h100", &p.node);
    p.node.nics_per_node = 1;
    p.node.pcie_bandwidth_bytes_per_s = 64e9;
    p.fat_tree = (topo_fat_tree_params_t){2, 0, 4, 6, 2, 2, 0, 0, 0, 0, 0};
    check_closed_form(&p);
    p.node.pcie_bandwidth_bytes_per_s = 5e9; /* 8 x 5 GB/s of PCIe into a 50 GB/s NIC: the bottleneck */
    check_closed_form(&p);
    /* rail-optimized with an even node count */
    assert_int_equal(topo_params_preset("dgx-h100-superpod", 512, &p), TOPO_OK);
    check_closed_form(&p);
    assert_int_equal(topo_params_preset("dgx-a100-superpod", 0, &p), TOPO_OK);
    check_closed_form(&p);
    /* dragonflies with an even number of groups, cut- and injection-limited */
    topo_params_init(&p, TOPO_KIND_DRAGONFLY);
    p.dragonfly = (topo_dragonfly_params_t){2, 4, 2, 8, 0, TOPO_ARRANGEMENT_ABSOLUTE, 0, 4, 0};
    check_closed_form(&p);
    p.dragonfly = (topo_dragonfly_params_t){1, 4, 3, 4, 4, TOPO_ARRANGEMENT_RELATIVE, 0, 4, 0};
    check_closed_form(&p);
    /* tori: ring, k = 2 dimensions, routers with 8-GPU nodes */
    topo_params_init(&p, TOPO_KIND_TORUS);
    p.torus.n_dims = 2;
    p.torus.dims[0] = 6;
    p.torus.dims[1] = 3;
    check_closed_form(&p);
    p.torus.dims[0] = 2;
    check_closed_form(&p);
    topo_node_preset("dgx-b200", &p.node);
    check_closed_form(&p);
    topo_params_init(&p, TOPO_KIND_IDEAL);
    p.gpus = 96;
    check_closed_form(&p);
}

static void test_cost_proxy(void **state) {
    (void)state;
    topo_params_t p;
    topo_params_init(&p, TOPO_KIND_TORUS);
    p.torus.dims[0] = 8; /* two 4 x 4 x 4 racks: 2 x 16 wrap and middle cables cross */
    topo_t *t = tt_build(&p);
    topo_summary_t s = tt_summary(t);
    assert_int_equal(s.links, 384);
    assert_int_equal(s.optical_cables, 32);
    assert_int_equal(s.cables, s.links);
    assert_int_equal(s.optical_transceivers, 64);
    topo_free(t);
}

int main(void) {
    igraph_set_error_handler(igraph_error_handler_printignore);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_diameter_representatives),
        cmocka_unit_test(test_bisection_closed_forms),
        cmocka_unit_test(test_cost_proxy),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
