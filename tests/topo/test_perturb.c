/* topo/test_perturb.c - slow and failed links in topo/ (topo_links_change):
 * - classes on the k = 8 fat-tree and a dragonfly count what the wiring says;
 * - a seeded fraction takes ceil(f x cables) cables, the same set whatever the order of the changes,
 *   another set for another seed; names select one direction, "<->" both, spaces ignored; bad names,
 *   factors and fractions are TOPO_EINVAL naming the change;
 * - after failing links every route (d-mod-k, ecmp-hash, dragonfly minimal and UGAL) avoids them,
 *   ecmp-spread spreads over the surviving paths only, GraphML's table is rebuilt around them, and a
 *   torus (dimension order, no detour) or a cut tree is TOPO_EUNREACHABLE naming two GPUs. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "topo_test_util.h"

#define TOPO_TEST_ROUTE 1100

static topo_t *fat_tree_k8(void) {
    topo_params_t p;
    topo_params_init(&p, TOPO_KIND_FAT_TREE);
    return tt_build(&p);
}

static topo_t *small_dragonfly(topo_routing_t r) {
    topo_params_t p;
    topo_params_init(&p, TOPO_KIND_DRAGONFLY);
    p.dragonfly.p = 2, p.dragonfly.a = 4, p.dragonfly.h = 2, p.dragonfly.g = 5;
    p.node.gpus_per_node = 1, p.node.nics_per_node = 1;
    p.routing = r;
    return tt_build(&p);
}

static int change(topo_t *t, const topo_link_change_t *c, int n, uint64_t seed, int *bad,
                  topo_issue_t *issue) {
    memset(issue, 0, sizeof *issue);
    return topo_links_change(t, c, n, seed, bad, issue);
}

static int64_t count_class(const topo_t *t, topo_link_class_t c) {
    int64_t n = 0;
    for (int64_t l = 0; l < topo_link_count(t); l++)
        n += topo_link_in_class(t, l, c);
    return n;
}

static void test_classes(void **state) {
    (void)state;
    topo_t *t = fat_tree_k8();
    /* 128 endpoints, 32 leaves x 4 spines, 32 spines x 4 cores; two directions each */
    assert_int_equal(count_class(t, TOPO_CLASS_ACCESS), 256);
    assert_int_equal(count_class(t, TOPO_CLASS_LEAF_SPINE), 256);
    assert_int_equal(count_class(t, TOPO_CLASS_SPINE_CORE), 256);
    assert_int_equal(count_class(t, TOPO_CLASS_NETWORK), 768);
    assert_int_equal(count_class(t, TOPO_CLASS_GLOBAL), 0);
    topo_link_class_t c;
    assert_int_equal(topo_link_class_parse("leaf-spine", &c), TOPO_OK);
    assert_int_equal(c, TOPO_CLASS_LEAF_SPINE);
    assert_int_equal(topo_link_class_parse("spine", &c), TOPO_EINVAL);
    topo_free(t);
    t = small_dragonfly(TOPO_ROUTING_DEFAULT);
    /* 5 groups of 4 routers: 6 local cables each; 10 group pairs x floor(4 x 2 / 4) = 2 cables */
    assert_int_equal(count_class(t, TOPO_CLASS_LOCAL), 2 * 5 * 6);
    assert_int_equal(count_class(t, TOPO_CLASS_GLOBAL), 2 * 10 * 2);
    assert_int_equal(count_class(t, TOPO_CLASS_LEAF_SPINE), 0);
    topo_free(t);
}

static void failed_set(const topo_t *t, char *out) {
    for (int64_t l = 0; l < topo_link_count(t); l++)
        out[l] = (char)('0' + topo_link_failed(t, l));
    out[topo_link_count(t)] = '\0';
}

static void test_fraction(void **state) {
    (void)state;
    topo_issue_t issue;
    int bad;
    const topo_link_change_t frac = {
        .fraction = 0.1, .has_class = 1, .link_class = TOPO_CLASS_LEAF_SPINE, .fail = 1};
    const topo_link_change_t slow = {.names = "leaf5<->spine5", .bandwidth_factor = 0.5};
    char a[1024], b[1024], c[1024];
    topo_t *t = fat_tree_k8();
    topo_link_change_t order1[2] = {frac, slow}, order2[2] = {slow, frac};
    assert_int_equal(change(t, order1, 2, 2, &bad, &issue), TOPO_OK);
    /* ceil(0.1 x 128 cables) = 13 cables, both directions */
    assert_int_equal(topo_failed_link_count(t), 26);
    failed_set(t, a);
    topo_free(t);
    t = fat_tree_k8();
    assert_int_equal(change(t, order2, 2, 2, &bad, &issue), TOPO_OK);
    failed_set(t, b);
    assert_string_equal(a, b);
    assert_int_equal(topo_slowed_link_count(t), 2);
    topo_free(t);
    t = fat_tree_k8();
    assert_int_equal(change(t, &frac, 1, 3, &bad, &issue), TOPO_OK);
    failed_set(t, c);
    assert_string_not_equal(a, c);
    for (int64_t l = 0; l < topo_link_count(t); l++)
        if (topo_link_failed(t, l))
            assert_true(topo_link_in_class(t, l, TOPO_CLASS_LEAF_SPINE));
    topo_free(t);
}

static int64_t link_id(const topo_t *t, const char *name) {
    char buf[96];
    for (int64_t l = 0; l < topo_link_count(t); l++)
        if (strcmp(topo_link_name(t, l, buf, sizeof buf), name) == 0)
            return l;
    return -1;
}

static void test_names_and_errors(void **state) {
    (void)state;
    topo_issue_t issue;
    int bad;
    topo_t *t = fat_tree_k8();
    const topo_link_change_t ok[2] = {
        {.names = " leaf 3 -> spine 1 ; leaf2<->spine0", .bandwidth_factor = 0.5},
        {.names = "leaf3->spine1", .bandwidth_factor = 0.5}};
    assert_int_equal(change(t, ok, 2, 1, &bad, &issue), TOPO_OK);
    assert_true(topo_link_bandwidth_factor(t, link_id(t, "leaf3->spine1")) == 0.25); /* factors multiply */
    assert_true(topo_link_bandwidth_factor(t, link_id(t, "spine1->leaf3")) == 1.0);
    assert_true(topo_link_bandwidth_factor(t, link_id(t, "leaf2->spine0")) == 0.5);
    assert_true(topo_link_bandwidth_factor(t, link_id(t, "spine0->leaf2")) == 0.5);
    topo_link_info_t li;
    assert_int_equal(topo_link_get(t, link_id(t, "leaf3->spine1"), &li), TOPO_OK);
    assert_true(li.bandwidth_bytes_per_s == 0.25 * 50e9);
    const topo_link_change_t wrong[] = {
        {.names = "leaf3->spine1", .bandwidth_factor = 0.5},
        {.names = "leaf3->spine9", .bandwidth_factor = 0.5},
    };
    assert_int_equal(change(t, wrong, 2, 1, &bad, &issue), TOPO_EINVAL);
    assert_int_equal(bad, 1);
    assert_string_equal(issue.field, "links");
    assert_string_equal(issue.value, "leaf3->spine9");
    const topo_link_change_t factor = {.names = "leaf3->spine1", .bandwidth_factor = 1.5};
    assert_int_equal(change(t, &factor, 1, 1, &bad, &issue), TOPO_EINVAL);
    assert_string_equal(issue.field, "bandwidth");
    const topo_link_change_t fraction = {.fraction = 2, .fail = 1};
    assert_int_equal(change(t, &fraction, 1, 1, &bad, &issue), TOPO_EINVAL);
    assert_string_equal(issue.field, "fraction");
    const topo_link_change_t cls = {.has_class = 1, .link_class = TOPO_CLASS_GLOBAL, .fail = 1};
    assert_int_equal(change(t, &cls, 1, 1, &bad, &issue), TOPO_EINVAL);
    assert_string_equal(issue.field, "class");
    topo_free(t);
}

/* Every ordered GPU pair's route avoids the failed links (and is a valid chain). */
static void all_routes_avoid(const topo_t *t, topo_routing_t r) {
    topo_link_id_t links[64];
    for (int64_t s = 0; s < topo_gpu_count(t); s++)
        for (int64_t d = 0; d < topo_gpu_count(t); d++) {
            const int n = tt_route(t, s, d, r, (uint64_t)(s * 7 + d), links);
            for (int k = 0; k < n; k++)
                assert_int_equal(topo_link_failed(t, links[k]), 0);
        }
}

static void test_routes_avoid(void **state) {
    (void)state;
    topo_issue_t issue;
    int bad;
    /* 5% of the fat-tree's switch-to-switch cables (leaf-spine and spine-core) fail */
    const topo_link_change_t f[2] = {
        {.fraction = 0.05, .has_class = 1, .link_class = TOPO_CLASS_LEAF_SPINE, .fail = 1},
        {.fraction = 0.05, .has_class = 1, .link_class = TOPO_CLASS_SPINE_CORE, .fail = 1}};
    topo_t *t = fat_tree_k8();
    assert_int_equal(change(t, f, 2, 5, &bad, &issue), TOPO_OK);
    assert_int_equal(topo_failed_link_count(t), 2 * (7 + 7));
    all_routes_avoid(t, TOPO_ROUTING_DMODK);
    all_routes_avoid(t, TOPO_ROUTING_ECMP_HASH);
    /* ecmp-spread: 0 -> 127 crosses pods, 16 equal-cost paths; with leaf0 -> spine0 failed, 12 remain */
    topo_free(t);
    t = fat_tree_k8();
    const topo_link_change_t one = {.names = "leaf0->spine0", .fail = 1};
    assert_int_equal(change(t, &one, 1, 1, &bad, &issue), TOPO_OK);
    topo_flow_t fl = {0, 127, 1, TOPO_ROUTING_ECMP_SPREAD, NULL};
    assert_int_equal(topo_route_path_count(t, &fl), 12);
    topo_link_id_t links[16 * 8];
    int len[16];
    double w[16];
    assert_int_equal(topo_route_paths(t, &fl, links, 16 * 8, len, w, 16), 12);
    int off = 0;
    for (int k = 0; k < 12; k++) {
        assert_true(fabs(w[k] - 1.0 / 12) < 1e-15);
        tt_check_route(t, 0, 127, links + off, len[k]);
        for (int j = 0; j < len[k]; j++)
            assert_int_equal(topo_link_failed(t, links[off + j]), 0);
        off += len[k];
    }
    topo_free(t);
    /* dragonfly: a fifth of the global and of the local cables (seeds 2 and 3 leave flows inside a group
     * without a two-hop detour: they go out to another group and back) */
    const topo_link_change_t df[2] = {
        {.fraction = 0.2, .has_class = 1, .link_class = TOPO_CLASS_GLOBAL, .fail = 1},
        {.fraction = 0.2, .has_class = 1, .link_class = TOPO_CLASS_LOCAL, .fail = 1}};
    for (int r = 0; r < 4; r++) {
        t = small_dragonfly(r % 2 ? TOPO_ROUTING_UGAL : TOPO_ROUTING_MINIMAL);
        assert_int_equal(change(t, df, 2, 2 + (uint64_t)r / 2, &bad, &issue), TOPO_OK);
        assert_true(topo_failed_link_count(t) > 0);
        all_routes_avoid(t, TOPO_ROUTING_DEFAULT);
        topo_free(t);
    }
}

static void test_unreachable(void **state) {
    (void)state;
    topo_issue_t issue;
    int bad;
    topo_params_t p;
    topo_params_init(&p, TOPO_KIND_TORUS);
    p.torus.n_dims = 1, p.torus.dims[0] = 8;
    p.node.gpus_per_node = 1, p.node.nics_per_node = 1;
    topo_t *t = tt_build(&p);
    /* dimension order takes the shorter way round and never detours */
    char name[96];
    topo_link_id_t links[32];
    tt_route(t, 0, 1, TOPO_ROUTING_DEFAULT, 0, links);
    topo_link_name(t, links[0], name, sizeof name);
    const topo_link_change_t c = {.names = name, .fail = 1};
    assert_int_equal(change(t, &c, 1, 1, &bad, &issue), TOPO_EUNREACHABLE);
    assert_non_null(strstr(issue.rule, "leave GPU 0 without a route to GPU 1"));
    topo_free(t);
    /* a leaf whose four uplinks fail is cut off from the rest */
    t = fat_tree_k8();
    const topo_link_change_t cut = {.names = "leaf1->spine0;leaf1->spine1;leaf1->spine2;leaf1->spine3",
                                    .fail = 1};
    assert_int_equal(change(t, &cut, 1, 1, &bad, &issue), TOPO_EUNREACHABLE);
    assert_non_null(strstr(issue.rule, "leave GPU 4 without a route to GPU 3"));
    topo_free(t);
}

static void test_graphml_rebuilt(void **state) {
    (void)state;
    topo_t *ft = fat_tree_k8();
    const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    char path[512];
    snprintf(path, sizeof path, "%s/perturb-XXXXXX", dir);
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    topo_issue_t issue;
    assert_int_equal(topo_graphml_write(ft, f, &issue), TOPO_OK);
    fclose(f);
    topo_params_t p;
    topo_params_init(&p, TOPO_KIND_GRAPHML);
    p.graphml_path = path;
    topo_t *t = tt_build(&p);
    unlink(path);
    topo_link_id_t links[32];
    const int n = tt_route(t, 0, 127, TOPO_ROUTING_DEFAULT, 0, links);
    char name[96];
    topo_link_name(t, links[n / 2], name, sizeof name);
    int bad;
    const topo_link_change_t c = {.names = name, .fail = 1};
    assert_int_equal(change(t, &c, 1, 1, &bad, &issue), TOPO_OK);
    const int n2 = tt_route(t, 0, 127, TOPO_ROUTING_DEFAULT, 0, links);
    assert_int_equal(n2, n); /* another shortest path */
    for (int k = 0; k < n2; k++)
        assert_int_equal(topo_link_failed(t, links[k]), 0);
    all_routes_avoid(t, TOPO_ROUTING_DEFAULT);
    topo_free(t);
    topo_free(ft);
}

/* Whether some ordered GPU pair has no route, by routing every pair. */
static int brute_unreachable(const topo_t *t) {
    topo_link_id_t links[TOPO_TEST_ROUTE];
    for (int64_t a = 0; a < topo_gpu_count(t); a++)
        for (int64_t b = 0; b < topo_gpu_count(t); b++) {
            const topo_flow_t f = {a, b, ((uint64_t)(uint32_t)a << 32) | (uint32_t)b, TOPO_ROUTING_DEFAULT,
                                   NULL};
            const int n = topo_route(t, &f, links, TOPO_TEST_ROUTE);
            if (n == TOPO_EUNREACHABLE)
                return 1;
            assert_true(n >= 0);
        }
    return 0;
}

/* topo_links_change's check (every pair inside a node, node-local hops, representatives of endpoint
 * classes) says unreachable exactly when routing every pair finds one, over seeded failures of several
 * classes on trees with NIC vertices and PXN, a rail-optimized fabric, a dragonfly and a torus. */
static void test_check_agrees(void **state) {
    (void)state;
    topo_params_t ps[4];
    topo_params_init(&ps[0], TOPO_KIND_FAT_TREE);
    assert_int_equal(topo_node_preset("dgx-h100", &ps[0].node), TOPO_OK);
    ps[0].node.gpus_per_node = 4, ps[0].node.nics_per_node = 2, ps[0].node.pcie_bandwidth_bytes_per_s = 64e9;
    ps[0].pxn = 1, ps[0].gpus = 128;
    topo_params_init(&ps[1], TOPO_KIND_RAIL_OPTIMIZED);
    ps[1].gpus = 128;
    topo_params_init(&ps[2], TOPO_KIND_DRAGONFLY);
    ps[2].dragonfly.p = 2, ps[2].dragonfly.a = 4, ps[2].dragonfly.h = 2, ps[2].dragonfly.g = 5;
    assert_int_equal(topo_node_preset("dgx-h100", &ps[2].node), TOPO_OK);
    ps[2].node.gpus_per_node = 2, ps[2].node.nics_per_node = 1, ps[2].node.pcie_bandwidth_bytes_per_s = 64e9;
    topo_params_init(&ps[3], TOPO_KIND_TORUS);
    ps[3].torus.n_dims = 2, ps[3].torus.dims[0] = 4, ps[3].torus.dims[1] = 4;
    const topo_link_class_t cls[4][3] = {{TOPO_CLASS_LEAF_SPINE, TOPO_CLASS_SPINE_CORE, TOPO_CLASS_PCIE},
                                         {TOPO_CLASS_LEAF_SPINE, TOPO_CLASS_SPINE_CORE, TOPO_CLASS_NVLINK},
                                         {TOPO_CLASS_GLOBAL, TOPO_CLASS_LOCAL, TOPO_CLASS_ACCESS},
                                         {TOPO_CLASS_NETWORK, TOPO_CLASS_NETWORK, TOPO_CLASS_NETWORK}};
    int cut = 0, whole = 0;
    for (int k = 0; k < 4; k++)
        for (uint64_t seed = 1; seed <= 12; seed++)
            for (int c = 0; c < 3; c++) {
                topo_t *t = tt_build(&ps[k]);
                const topo_link_change_t ch = {.fraction = c == 2 ? 0.01 : 0.04 * (double)(1 + seed % 4),
                                               .has_class = 1,
                                               .link_class = cls[k][c],
                                               .fail = 1};
                topo_issue_t issue;
                int bad;
                const int rc = change(t, &ch, 1, seed, &bad, &issue);
                if (rc == TOPO_EINVAL) { /* a class this topology lacks */
                    topo_free(t);
                    continue;
                }
                const int brute = brute_unreachable(t);
                if ((rc == TOPO_EUNREACHABLE) != brute)
                    fail_msg("topology %d seed %d class %d: check %d, every pair %d", k, (int)seed, c, rc,
                             brute);
                cut += brute, whole += !brute;
                topo_free(t);
            }
    if (cut <= 5 || whole <= 5)
        fail_msg("cut %d, whole %d", cut, whole);
}

int main(void) {
    igraph_set_error_handler(igraph_error_handler_printignore);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_classes),          cmocka_unit_test(test_fraction),
        cmocka_unit_test(test_names_and_errors), cmocka_unit_test(test_routes_avoid),
        cmocka_unit_test(test_unreachable),      cmocka_unit_test(test_graphml_rebuilt),
        cmocka_unit_test(test_check_agrees),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
