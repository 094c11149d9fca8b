/* topo_test_util.h - helpers shared by the topo unit tests: build-or-fail, route validity, counts of
 * switches per tier and cables per tier pair. Include after <cmocka.h>. */
#ifndef STEPSIM_TOPO_TEST_UTIL_H
#define STEPSIM_TOPO_TEST_UTIL_H

#include <stdio.h>
#include <string.h>

#include <igraph.h>

#include "topo.h"

/* topo_new that must succeed; prints the issue otherwise. */
static inline topo_t *tt_build(const topo_params_t *p) {
    topo_t *t = NULL;
    topo_issue_t issue;
    char msg[320];
    memset(&issue, 0, sizeof issue);
    int rc = topo_new(p, &t, &issue);
    if (rc != TOPO_OK)
        fprintf(stderr, "topo_new(%s): %s: %s\n", p->name, topo_status_name(rc),
                topo_issue_format(&issue, msg, sizeof msg));
    assert_int_equal(rc, TOPO_OK);
    assert_non_null(t);
    return t;
}

static inline topo_summary_t tt_summary(const topo_t *t) {
    topo_summary_t s;
    topo_issue_t issue;
    assert_int_equal(topo_summary_compute(t, &s, &issue), TOPO_OK);
    return s;
}

/* The links chain from src's vertex to dst's vertex. */
static inline void tt_check_route(const topo_t *t, int64_t src, int64_t dst, const topo_link_id_t *links,
                                  int n) {
    if (src == dst) {
        assert_int_equal(n, 0);
        return;
    }
    assert_true(n > 0);
    assert_true(n <= topo_route_max_links(t));
    int64_t v = topo_gpu_vertex(t, src);
    for (int k = 0; k < n; k++) {
        topo_link_info_t li;
        assert_int_equal(topo_link_get(t, links[k], &li), TOPO_OK);
        assert_int_equal(li.from, v);
        v = li.to;
    }
    assert_int_equal(v, topo_gpu_vertex(t, dst));
}

/* Route src -> dst with routing r and key; check and return the length. */
static inline int tt_route(const topo_t *t, int64_t src, int64_t dst, topo_routing_t r, uint64_t key,
                           topo_link_id_t *links) {
    topo_flow_t f = {src, dst, key, r, NULL};
    int n = topo_route(t, &f, links, 256);
    assert_true(n >= 0);
    tt_check_route(t, src, dst, links, n);
    return n;
}

static inline int64_t tt_switches_in_tier(const topo_t *t, int64_t tier) {
    int64_t n = 0;
    for (int64_t v = 0; v < topo_vertex_count(t); v++) {
        topo_vertex_info_t vi;
        assert_int_equal(topo_vertex_get(t, v, &vi), TOPO_OK);
        n += vi.kind == TOPO_VERTEX_SWITCH && vi.tier == tier;
    }
    return n;
}

/* Network cables (built kinds: link 2c is cable c) between a vertex of tier a and one of tier b;
 * tier 0 means a GPU or NIC endpoint. */
static inline int64_t tt_cables_between(const topo_t *t, int64_t a, int64_t b) {
    int64_t n = 0;
    for (int64_t l = 0; l < topo_link_count(t); l += 2) {
        topo_link_info_t li;
        topo_vertex_info_t u, v;
        assert_int_equal(topo_link_get(t, l, &li), TOPO_OK);
        if (li.kind != TOPO_LINK_NETWORK)
            continue;
        topo_vertex_get(t, li.from, &u);
        topo_vertex_get(t, li.to, &v);
        int64_t tu = u.kind == TOPO_VERTEX_SWITCH ? u.tier : 0,
                tv = v.kind == TOPO_VERTEX_SWITCH ? v.tier : 0;
        n += (tu == a && tv == b) || (tu == b && tv == a);
    }
    return n;
}

#endif
