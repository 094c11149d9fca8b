/* topo/test_memory.c - topo_memory_estimate counts exactly the vertices and links topo_new builds, for
 * every kind (partly filled trees, rail-optimized units, dragonflies, direct tori and rings of 2); a
 * topology over its budget is refused before anything is allocated, with the estimate and the budget
 * in the message; a GraphML file is checked once its counts are known; and a GraphML cable id costs
 * nothing by its value (a four-edge file with the id 2^31 - 2 loads under a 1 GB address-space limit). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <igraph.h>

#include "topo.h"
#include "topo_test_util.h"

#define FIXTURE(name) STEPSIM_FIXTURE_DIR "/topo/" name

static void expect_counts(const topo_params_t *p) {
    topo_memory_t m;
    topo_issue_t issue;
    assert_int_equal(topo_memory_estimate(p, &m, &issue), TOPO_OK);
    topo_t *t = tt_build(p);
    if (m.vertices != topo_vertex_count(t) || m.links != topo_link_count(t))
        fprintf(stderr, "%s: estimate %lld vertices %lld links, built %lld %lld\n", p->name,
                (long long)m.vertices, (long long)m.links, (long long)topo_vertex_count(t),
                (long long)topo_link_count(t));
    assert_int_equal(m.vertices, topo_vertex_count(t));
    assert_int_equal(m.links, topo_link_count(t));
    assert_int_equal(m.cables * 2, m.links);
    assert_true(m.bytes == topo_memory_bytes_for(m.vertices, m.links, m.table_bytes));
    topo_build_stats_t st;
    topo_build_stats_get(t, &st);
    assert_true(m.table_bytes >= (double)st.route_table_bytes); /* and the slot maps besides */
    topo_free(t);
}

static void test_counts_trees(void **state) {
    (void)state;
    topo_params_t p;
    topo_params_init(&p, TOPO_KIND_FAT_TREE);
    p.fat_tree.tiers = 3, p.fat_tree.k = 8, p.gpus = 0;
    expect_counts(&p);
    p.gpus = 40; /* partly filled: only switches whose subtree holds a node */
    expect_counts(&p);
    topo_params_init(&p, TOPO_KIND_FAT_TREE);
    p.fat_tree.tiers = 2, p.fat_tree.k = 0, p.fat_tree.endpoints_per_leaf = 4, p.fat_tree.leaves = 6;
    p.fat_tree.spines = 3, p.fat_tree.links_per_leaf_spine = 2, p.gpus = 0;
    expect_counts(&p);
    topo_params_init(&p, TOPO_KIND_IDEAL);
    expect_counts(&p);
    assert_int_equal(topo_params_preset("dgx-h100-superpod", 0, &p), TOPO_OK);
    expect_counts(&p);
    assert_int_equal(topo_params_preset("dgx-h100-superpod", 1000, &p), TOPO_OK); /* a partial unit */
    expect_counts(&p);
    assert_int_equal(topo_params_preset("dgx-h100-superpod", 16384, &p), TOPO_OK); /* three tiers */
    expect_counts(&p);
}

static void test_counts_other_kinds(void **state) {
    (void)state;
    topo_params_t p;
    assert_int_equal(topo_params_preset("frontier", 1000, &p), TOPO_OK);
    expect_counts(&p);
    assert_int_equal(topo_params_preset("perlmutter", 0, &p), TOPO_OK);
    expect_counts(&p);
    topo_params_init(&p, TOPO_KIND_TORUS); /* direct: GPUs are the torus' vertices */
    p.torus.n_dims = 3, p.torus.dims[0] = 4, p.torus.dims[1] = 2, p.torus.dims[2] = 3, p.gpus = 0;
    expect_counts(&p);
    assert_int_equal(topo_node_preset("dgx-h100", &p.node), TOPO_OK); /* routers and NICs */
    expect_counts(&p);
}

static void test_budget_refuses_before_building(void **state) {
    (void)state;
    topo_params_t p;
    topo_params_init(&p, TOPO_KIND_FAT_TREE);
    p.fat_tree.tiers = 3, p.fat_tree.k = 406, p.gpus = 0;
    p.max_memory_bytes = 4e9;
    topo_memory_t m;
    topo_issue_t issue;
    assert_int_equal(topo_memory_estimate(&p, &m, &issue), TOPO_OK);
    /* 5k^2/4 switches and k^3/4 GPUs; 3 k^3/4 cables */
    assert_int_equal(m.vertices, 5 * 406 * 406 / 4 + 406LL * 406 * 406 / 4);
    assert_int_equal(m.links, 2 * 3 * (406LL * 406 * 406 / 4));
    topo_t *t = (topo_t *)&p; /* must come back NULL */
    assert_int_equal(topo_new(&p, &t, &issue), TOPO_ETOOBIG);
    assert_null(t);
    char msg[400];
    topo_issue_format(&issue, msg, sizeof msg);
    assert_non_null(strstr(msg,
                           "topology: fat-tree needs about 13.6 GB (16936899 vertices, 100385124 links), "
                           "more than the memory budget of 4 GB (--max-memory)"));
    p.max_memory_bytes = 0.999 * m.bytes; /* just below */
    assert_int_equal(topo_new(&p, &t, &issue), TOPO_ETOOBIG);
    p.fat_tree.k = 8; /* within it */
    assert_int_equal(topo_memory_estimate(&p, &m, &issue), TOPO_OK);
    p.max_memory_bytes = m.bytes;
    topo_free(tt_build(&p));
    p.max_memory_bytes = 0.999 * m.bytes;
    assert_int_equal(topo_new(&p, &t, &issue), TOPO_ETOOBIG);
}

static void test_graphml_budget(void **state) {
    (void)state;
    topo_params_t p;
    topo_params_init(&p, TOPO_KIND_GRAPHML);
    p.graphml_path = FIXTURE("undirected.graphml");
    topo_memory_t m;
    topo_issue_t issue;
    assert_int_equal(topo_memory_estimate(&p, &m, &issue), TOPO_OK);
    assert_true(m.bytes == 0.0); /* the counts are in the file */
    p.max_memory_bytes = 1e3;
    topo_t *t = NULL;
    assert_int_equal(topo_new(&p, &t, &issue), TOPO_ETOOBIG);
    assert_null(t);
    char msg[400];
    topo_issue_format(&issue, msg, sizeof msg);
    assert_non_null(
        strstr(msg, "(7 vertices, 12 links), more than the memory budget of 1e-06 GB (--max-memory)"));
    p.max_memory_bytes = 0;
    topo_free(tt_build(&p));
}

/* The file's ids 2^31 - 2 and 7 become cables 0 and 1 (first appearance), with both directions each. */
static void load_big_cable_id(void) {
    topo_params_t p;
    topo_params_init(&p, TOPO_KIND_GRAPHML);
    p.graphml_path = FIXTURE("big_cable_id.graphml");
    topo_t *t = tt_build(&p);
    static const int64_t want[4] = {0, 1, 0, 1};
    for (int64_t l = 0; l < 4; l++) {
        topo_link_info_t li;
        assert_int_equal(topo_link_get(t, l, &li), TOPO_OK);
        assert_int_equal(li.cable, want[l]);
    }
    topo_free(t);
}

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif

static void test_graphml_cable_id_costs_nothing(void **state) {
    (void)state;
#ifdef UNDER_ASAN
    load_big_cable_id(); /* ASan reserves terabytes of address space: no limit to set */
#else
    fflush(NULL);
    const pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) { /* an array sized by the id would need 8.6 GB: far over the limit */
        struct rlimit lim = {1u << 30, 1u << 30};
        if (setrlimit(RLIMIT_AS, &lim) != 0)
            _exit(3);
        igraph_set_error_handler(igraph_error_handler_printignore);
        load_big_cable_id();
        _exit(0);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
#endif
}

/* Without max_memory_bytes the default budget holds: half the address-space limit of a process run
 * under `ulimit -v` 3 GB (what used to grow until the allocator failed is refused up front). */
static void test_default_budget_follows_the_limit(void **state) {
    (void)state;
#ifndef UNDER_ASAN
    fflush(NULL);
    const pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        struct rlimit lim = {3ull << 30, 3ull << 30};
        if (setrlimit(RLIMIT_AS, &lim) != 0)
            _exit(3);
        if (topo_memory_budget_bytes() != 0.5 * (double)(3ull << 30))
            _exit(4);
        topo_params_t p;
        topo_params_init(&p, TOPO_KIND_FAT_TREE);
        p.fat_tree.tiers = 3, p.fat_tree.k = 406, p.gpus = 0;
        topo_t *t = NULL;
        topo_issue_t issue;
        char msg[400];
        const int rc = topo_new(&p, &t, &issue);
        topo_issue_format(&issue, msg, sizeof msg);
        _exit(rc == TOPO_ETOOBIG && strstr(msg, "more than the memory budget of 1.61 GB") ? 0 : 5);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
#endif
}

int main(void) {
    igraph_set_error_handler(igraph_error_handler_printignore);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counts_trees),
        cmocka_unit_test(test_counts_other_kinds),
        cmocka_unit_test(test_budget_refuses_before_building),
        cmocka_unit_test(test_graphml_budget),
        cmocka_unit_test(test_graphml_cable_id_costs_nothing),
        cmocka_unit_test(test_default_budget_follows_the_limit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
