/* topo/test_params.c - topology parameters: every bad-parameter case names the parameter, its value
 * and what is allowed (the tools layer prints it with exit code 2); presets and names. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "topo_test_util.h"

/* Check p, expect status rc and the exact message. topo_new must agree and return no topology. */
static void expect_issue(const topo_params_t *p, int rc, const char *message) {
    topo_issue_t issue;
    char msg[320];
    memset(&issue, 0, sizeof issue);
    assert_int_equal(topo_params_check(p, &issue), rc);
    assert_string_equal(topo_issue_format(&issue, msg, sizeof msg), message);
    topo_t *t = (topo_t *)&issue; /* any non-NULL value: topo_new must reset it */
    memset(&issue, 0, sizeof issue);
    assert_int_equal(topo_new(p, &t, &issue), rc);
    assert_null(t);
    assert_string_equal(topo_issue_format(&issue, msg, sizeof msg), message);
}

static void test_fat_tree_params(void **state) {
    (void)state;
    topo_params_t p;
    topo_params_init(&p, TOPO_KIND_FAT_TREE);
    assert_int_equal(topo_params_check(&p, NULL), TOPO_OK);
    p.fat_tree.k = 7;
    expect_issue(&p, TOPO_EINVAL, "k: 7 must be even");
    p.fat_tree.k = -2;
    expect_issue(&p, TOPO_EINVAL, "k: -2 must be >= 2 (or 0 for the general form)");
    p.fat_tree.k = 8;
    p.fat_tree.tiers = 4;
    expect_issue(&p, TOPO_EINVAL, "tiers: 4 must be 2 or 3");
    p.fat_tree.tiers = 0;
    expect_issue(&p, TOPO_EINVAL, "tiers: 0 must be 2 or 3");
    p.fat_tree.tiers = 3;
    p.switch_radix = 4;
    expect_issue(&p, TOPO_EINVAL, "switch_radix: 4 is below the 8 ports a leaf needs");
    p.switch_radix = 0;
    p.gpus = 200;
    expect_issue(&p, TOPO_EINVAL, "gpus: 200 exceeds the 128 GPUs the topology holds");
    p.gpus = -1;
    expect_issue(&p, TOPO_EINVAL, "gpus: -1 must be >= 0 (0: the topology's full size)");
    p.gpus = 0;
    p.routing = TOPO_ROUTING_VALIANT;
    expect_issue(&p, TOPO_EINVAL,
                 "routing: valiant is not available on fat-tree (use dmodk, ecmp-hash or ecmp-spread)");
}

static void test_fat_tree_general_params(void **state) {
    (void)state;
    topo_params_t p;
    topo_params_init(&p, TOPO_KIND_FAT_TREE);
    p.fat_tree = (topo_fat_tree_params_t){2, 0, 4, 0, 4, 1, 0, 0, 0, 0, 0};
    expect_issue(&p, TOPO_EINVAL, "leaves: 0 must be >= 1");
    p.fat_tree.leaves = 8;
    p.fat_tree.spines = -3;
    expect_issue(&p, TOPO_EINVAL, "spines: -3 must be >= 1");
    p.fat_tree.spines = 4;
    p.fat_tree.links_per_leaf_spine = 0;
    expect_issue(&p, TOPO_EINVAL, "links_per_leaf_spine: 0 must be >= 1");
    p.fat_tree.links_per_leaf_spine = 1;
    assert_int_equal(topo_params_check(&p, NULL), TOPO_OK);
    p.fat_tree = (topo_fat_tree_params_t){3, 0, 4, 0, 0, 1, -1, 4, 4, 4, 1};
    expect_issue(&p, TOPO_EINVAL, "pods: -1 must be >= 1");
    p.fat_tree.pods = 8;
    p.fat_tree.endpoints_per_leaf = 0;
    expect_issue(&p, TOPO_EINVAL, "endpoints_per_leaf: 0 must be >= 1");
}

static void test_node_and_link_params(void **state) {
    (void)state;
    topo_params_t p;
    topo_params_init(&p, TOPO_KIND_FAT_TREE);
    p.node.gpus_per_node = 0;
    expect_issue(&p, TOPO_EINVAL, "gpus_per_node: 0 must be >= 1");
    assert_int_equal(topo_node_preset("dgx-h100", &p.node), TOPO_OK);
    p.node.nics_per_node = 3;
    expect_issue(&p, TOPO_EINVAL, "nics_per_node: 3 must divide gpus_per_node (8)");
    p.node.nics_per_node = 4;
    expect_issue(&p, TOPO_EINVAL,
                 "pcie_bandwidth_bytes_per_s: 0 must be > 0 when nics_per_node (4) < gpus_per_node (8): GPUs "
                 "reach their shared NIC over PCIe");
    p.node.nics_per_node = 8;
    p.node.nvlink_bandwidth_bytes_per_s = -1;
    expect_issue(&p, TOPO_EINVAL, "nvlink_bandwidth_bytes_per_s: -1 must be a finite number > 0");
    assert_int_equal(topo_node_preset("dgx-h100", &p.node), TOPO_OK);
    p.gpus = 100;
    expect_issue(&p, TOPO_EINVAL, "gpus: 100 must be a multiple of gpus_per_node (8)");
    p.gpus = 0;
    p.link_bandwidth_bytes_per_s = 0;
    expect_issue(&p, TOPO_EINVAL, "link_bandwidth_bytes_per_s: 0 must be a finite number > 0");
    p.link_bandwidth_bytes_per_s = 50e9;
    p.link_latency_s = -1e-6;
    expect_issue(&p, TOPO_EINVAL, "link_latency_s: -1e-06 must be finite and >= 0");
    p.link_latency_s = 0;
    p.pxn = 2;
    expect_issue(&p, TOPO_EINVAL, "pxn: 2 must be 0 or 1");
    p.pxn = 0;
    p.kind = (topo_kind_t)99;
    expect_issue(&p, TOPO_EINVAL,
                 "kind: 99 must be one of ideal, fat-tree, rail-optimized, dragonfly, torus, graphml");
    topo_params_init(&p, TOPO_KIND_IDEAL);
    p.gpus = 0;
    expect_issue(&p, TOPO_EINVAL, "gpus: 0 must be >= 1");
}

static void test_dragonfly_params(void **state) {
    (void)state;
    topo_params_t p;
    topo_params_init(&p, TOPO_KIND_DRAGONFLY);
    assert_int_equal(topo_params_check(&p, NULL), TOPO_OK);
    p.dragonfly.a = 0;
    expect_issue(&p, TOPO_EINVAL, "a: 0 must be >= 1");
    p.dragonfly.a = 8;
    p.dragonfly.p = -4;
    expect_issue(&p, TOPO_EINVAL, "p: -4 must be >= 1");
    p.dragonfly.p = 4;
    p.dragonfly.h = 0;
    expect_issue(&p, TOPO_EINVAL, "h: 0 must be >= 1");
    p.dragonfly.h = 4;
    p.dragonfly.g = 0;
    expect_issue(&p, TOPO_EINVAL, "g: 0 must be >= 1");
    p.dragonfly = (topo_dragonfly_params_t){2, 4, 2, 10, 0, TOPO_ARRANGEMENT_ABSOLUTE, 0, 4, 0};
    expect_issue(&p, TOPO_EINVAL,
                 "g: 10 cannot be wired: a*h = 8 global ports per group reach at most 9 groups");
    p.dragonfly.g = 5;
    p.dragonfly.global_links_per_pair = 3;
    expect_issue(&p, TOPO_EINVAL,
                 "global_links_per_pair: 3 needs (g-1)*3 = 12 global ports per group; a*h = 8");
    p.dragonfly.global_links_per_pair = -1;
    expect_issue(&p, TOPO_EINVAL,
                 "global_links_per_pair: -1 must be >= 0 (0: as many as the global ports allow)");
    p.dragonfly.global_links_per_pair = 2;
    assert_int_equal(topo_params_check(&p, NULL), TOPO_OK);
    p.switch_radix = 7;
    assert_int_equal(topo_params_check(&p, NULL), TOPO_OK);
    p.switch_radix = 6;
    expect_issue(&p, TOPO_EINVAL, "switch_radix: 6 is below the p+a-1+h = 7 router ports");
    p.switch_radix = 0;
    p.dragonfly.chassis_nics = 2;
    expect_issue(&p, TOPO_EINVAL, "chassis_nics: 2 must be 0 or 1");
    p.dragonfly.chassis_nics = 1;
    topo_node_preset("perlmutter-gpu", &p.node); /* 4 NICs per node, a = 4 */
    assert_int_equal(topo_params_check(&p, NULL), TOPO_OK);
    p.dragonfly.a = 6;
    expect_issue(&p, TOPO_EINVAL, "chassis_nics: 1 needs a (6) to be a multiple of nics_per_node (4)");
}

static void test_torus_params(void **state) {
    (void)state;
    topo_params_t p;
    topo_params_init(&p, TOPO_KIND_TORUS);
    assert_int_equal(topo_params_check(&p, NULL), TOPO_OK);
    p.torus.dims[1] = 1;
    expect_issue(&p, TOPO_EINVAL, "dims[1]: 1 must be >= 2");
    p.torus.dims[1] = 4;
    p.torus.n_dims = 0;
    expect_issue(&p, TOPO_EINVAL, "dims: 0 dimensions given; 1 to 6 allowed");
    p.torus.n_dims = 3;
    p.gpus = 100;
    expect_issue(&p, TOPO_EINVAL, "gpus: 100 must equal the torus size 64 (or be 0)");
    p.gpus = 64;
    assert_int_equal(topo_params_check(&p, NULL), TOPO_OK);
    p.gpus = 0;
    p.torus.n_dims = 1;
    p.torus.dims[0] = 1024; /* a ring of 1,024 GPUs: 512 links on its longest route */
    assert_int_equal(topo_params_check(&p, NULL), TOPO_OK);
    p.torus.dims[0] = 2200;
    expect_issue(&p, TOPO_EINVAL, "dims: 1100 links on the longest route; at most 1032 allowed");
    topo_params_init(&p, TOPO_KIND_TORUS);
    p.routing = TOPO_ROUTING_MINIMAL;
    expect_issue(&p, TOPO_EINVAL, "routing: minimal is not available on torus (use dor)");
}

static void test_rail_params(void **state) {
    (void)state;
    topo_params_t p;
    assert_int_equal(topo_params_preset("dgx-h100-superpod", 100000, &p), TOPO_OK);
    expect_issue(&p, TOPO_EINVAL,
                 "gpus: 100000 needs more than 3 tiers of radix-64 switches; raise switch_radix");
    p.switch_radix = 128;
    assert_int_equal(topo_params_check(&p, NULL), TOPO_OK);
    assert_int_equal(topo_params_preset("dgx-h100-superpod", 0, &p), TOPO_OK);
    p.rail.nodes_per_su = 40;
    expect_issue(&p, TOPO_EINVAL, "nodes_per_su: 40 plus leaf_up (40) exceeds switch_radix (64)");
    p.rail.nodes_per_su = 0;
    expect_issue(&p, TOPO_EINVAL, "nodes_per_su: 0 must be >= 1");
    assert_int_equal(topo_params_preset("dgx-b200-superpod", 0, &p), TOPO_OK);
    p.rail.tiers = 2;
    expect_issue(&p, TOPO_EINVAL, "tiers: 2 cannot hold 128 leaves on radix-64 spines");
    p.rail.tiers = 1;
    expect_issue(&p, TOPO_EINVAL, "tiers: 1 must be 2, 3 or 0 (automatic)");
    p.rail.tiers = 0;
    p.gpus = 0;
    expect_issue(&p, TOPO_EINVAL, "gpus: 0 must be >= 1");
}

static void test_graphml_params(void **state) {
    (void)state;
    topo_params_t p;
    topo_params_init(&p, TOPO_KIND_GRAPHML);
    expect_issue(&p, TOPO_EINVAL, "file: (none) must name a GraphML file");
    p.graphml_path = "/nonexistent/stepsim.graphml";
    topo_t *t = NULL;
    topo_issue_t issue;
    char msg[320];
    assert_int_equal(topo_new(&p, &t, &issue), TOPO_EIO);
    assert_null(t);
    assert_string_equal(topo_issue_format(&issue, msg, sizeof msg),
                        "file: /nonexistent/stepsim.graphml cannot be opened: No such file or directory");
}

static void test_presets_and_names(void **state) {
    (void)state;
    topo_params_t p;
    for (size_t i = 0; topo_preset_name(i); i++) {
        const char *name = topo_preset_name(i);
        assert_int_equal(topo_params_preset(name, 0, &p), TOPO_OK);
        assert_string_equal(p.name, name);
        assert_non_null(topo_preset_summary(name));
        assert_int_equal(topo_params_check(&p, NULL), TOPO_OK);
    }
    assert_int_equal(topo_params_preset("dgx-z900-superpod", 0, &p), TOPO_EINVAL);
    topo_node_params_t n;
    for (size_t i = 0; topo_node_preset_name(i); i++) {
        assert_int_equal(topo_node_preset(topo_node_preset_name(i), &n), TOPO_OK);
        assert_non_null(topo_node_preset_summary(topo_node_preset_name(i)));
    }
    assert_int_equal(topo_node_preset("nvl72", &n), TOPO_OK);
    assert_int_equal(n.gpus_per_node, 72);
    assert_int_equal(topo_node_preset("dgx-x", &n), TOPO_EINVAL);
    for (int k = 0; k < TOPO_KIND_COUNT; k++) {
        topo_kind_t back;
        assert_int_equal(topo_kind_parse(topo_kind_name((topo_kind_t)k), &back), TOPO_OK);
        assert_int_equal(back, k);
        topo_params_init(&p, (topo_kind_t)k);
        if (k != TOPO_KIND_GRAPHML)
            assert_int_equal(topo_params_check(&p, NULL), TOPO_OK);
    }
    for (int r = 0; r < TOPO_ROUTING_COUNT; r++) {
        topo_routing_t back;
        assert_int_equal(topo_routing_parse(topo_routing_name((topo_routing_t)r), &back), TOPO_OK);
        assert_int_equal(back, r);
    }
    topo_arrangement_t a;
    assert_int_equal(topo_arrangement_parse("circulant", &a), TOPO_OK);
    assert_int_equal(a, TOPO_ARRANGEMENT_CIRCULANT);
    assert_int_equal(topo_arrangement_parse("random", &a), TOPO_EINVAL);
    topo_scaleup_t s;
    assert_int_equal(topo_scaleup_parse("mesh", &s), TOPO_OK);
    assert_int_equal(topo_kind_parse("fattree", &(topo_kind_t){0}), TOPO_EINVAL);
    /* presets sized by GPUs */
    assert_int_equal(topo_params_preset("frontier", 16384, &p), TOPO_OK);
    assert_int_equal(p.dragonfly.g, 16);
    assert_int_equal(p.dragonfly.global_links_per_pair, 4);
    assert_int_equal(topo_params_preset("perlmutter", 0, &p), TOPO_OK);
    assert_int_equal(p.dragonfly.g, 14);
    assert_int_equal(p.gpus, 7168);
}

int main(void) {
    igraph_set_error_handler(igraph_error_handler_printignore);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fat_tree_params),      cmocka_unit_test(test_fat_tree_general_params),
        cmocka_unit_test(test_node_and_link_params), cmocka_unit_test(test_dragonfly_params),
        cmocka_unit_test(test_torus_params),         cmocka_unit_test(test_rail_params),
        cmocka_unit_test(test_graphml_params),       cmocka_unit_test(test_presets_and_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
