/* topo/test_nvl72.c - the NVL72 rack presets (gb200-nvl72-superpod, gb300-nvl72-superpod): each rack
 * is one 72-GPU NVLink domain behind one NVSwitch crossbar, every GPU has its own network port (the
 * ConnectX NIC, 400 Gb/s NDR on GB200, 800 Gb/s XDR on GB300) into a non-blocking fat-tree sized to
 * the racks. Exact counts at one, eight and 32 racks, the routes (NVLink only inside a rack, the
 * fabric only between racks), and one-line errors for sizes the presets cannot build. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "topo_test_util.h"

typedef struct want {
    const char *preset;
    int64_t gpus, leaves, spines, cores, leaf_spine, spine_core;
    topo_tech_t network;
    double link_bytes_per_s;
} want_t;

/* Leaves hold radix/2 GPUs (32 on NDR radix 64, 72 on XDR radix 144); spines are the fewest whose
 * ports hold every leaf's radix/2 up-cables; beyond radix leaves, pods of radix/2 leaves and spines
 * under core planes. */
static const want_t WANT[] = {
    {"gb200-nvl72-superpod", 72, 3, 2, 0, 96, 0, TOPO_TECH_IB_NDR, 50e9},
    {"gb200-nvl72-superpod", 576, 18, 16, 0, 576, 0, TOPO_TECH_IB_NDR, 50e9},
    {"gb200-nvl72-superpod", 2304, 72, 96, 64, 2304, 3072, TOPO_TECH_IB_NDR, 50e9},
    {"gb300-nvl72-superpod", 576, 8, 4, 0, 576, 0, TOPO_TECH_IB_XDR, 100e9},
};

static void test_counts(void **state) {
    (void)state;
    for (size_t k = 0; k < sizeof WANT / sizeof WANT[0]; k++) {
        const want_t *w = &WANT[k];
        topo_params_t p;
        assert_int_equal(topo_params_preset(w->preset, w->gpus, &p), TOPO_OK);
        topo_t *t = tt_build(&p);
        topo_summary_t s = tt_summary(t);
        int64_t racks = w->gpus / 72;
        assert_int_equal(s.gpus, w->gpus);
        assert_int_equal(s.nodes, racks);
        assert_int_equal(topo_node_params(t)->gpus_per_node, 72);
        assert_int_equal(s.nvswitches, racks);     /* one crossbar per rack (its 9 switch trays) */
        assert_int_equal(s.nvlink_links, w->gpus); /* one GPU-NVSwitch cable per GPU */
        assert_int_equal(s.nics, 0);               /* each GPU's NIC is its own network port... */
        assert_int_equal(s.pcie_links, 0);
        assert_int_equal(tt_cables_between(t, 0, 1), w->gpus); /* ...one cable per GPU into a leaf */
        assert_int_equal(tt_switches_in_tier(t, 1), w->leaves);
        assert_int_equal(tt_switches_in_tier(t, 2), w->spines);
        assert_int_equal(tt_switches_in_tier(t, 3), w->cores);
        assert_int_equal(s.switches, w->leaves + w->spines + w->cores);
        assert_int_equal(tt_cables_between(t, 1, 2), w->leaf_spine);
        assert_int_equal(tt_cables_between(t, 2, 3), w->spine_core);
        assert_int_equal(s.links, w->gpus + w->leaf_spine + w->spine_core);
        assert_int_equal(topo_kind_tech(t, TOPO_LINK_NVLINK), TOPO_TECH_NVLINK5);
        assert_int_equal(topo_kind_tech(t, TOPO_LINK_NETWORK), w->network);
        for (int64_t l = 0; l < topo_link_count(t); l++) {
            topo_link_info_t li;
            assert_int_equal(topo_link_get(t, l, &li), TOPO_OK);
            assert_float_equal(li.bandwidth_bytes_per_s,
                               li.kind == TOPO_LINK_NVLINK ? 900e9 : w->link_bytes_per_s, 1e-3);
        }
        if (racks >= 2) { /* non-blocking: half the GPUs' network ports across the rank halves */
            double half = (double)w->gpus / 2 * w->link_bytes_per_s;
            assert_float_equal(s.bisection_bandwidth_bytes_per_s, half, 1e-6 * half);
            assert_float_equal(s.bisection_closed_form_bytes_per_s, half, 1e-6 * half);
        }
        topo_free(t);
    }
}

/* Default size: one scalable unit of 8 racks (576 GPUs). */
static void test_default_size(void **state) {
    (void)state;
    topo_params_t p;
    assert_int_equal(topo_params_preset("gb200-nvl72-superpod", 0, &p), TOPO_OK);
    assert_int_equal(p.gpus, 576);
    assert_string_equal(p.name, "gb200-nvl72-superpod");
    assert_int_equal(topo_params_preset("gb300-nvl72-superpod", 0, &p), TOPO_OK);
    assert_int_equal(p.gpus, 576);
}

/* Every ordered GPU pair of 4 racks: inside a rack GPU -> NVSwitch -> GPU over NVLink only; between
 * racks only network links (GPU -> leaf [-> spine -> leaf] -> GPU), never an NVLink. */
static void test_routes(void **state) {
    (void)state;
    static const char *const PRESETS[2] = {"gb200-nvl72-superpod", "gb300-nvl72-superpod"};
    for (int k = 0; k < 2; k++) {
        topo_params_t p;
        assert_int_equal(topo_params_preset(PRESETS[k], 288, &p), TOPO_OK);
        topo_t *t = tt_build(&p);
        topo_link_id_t links[256];
        int64_t inside = 0, across = 0;
        for (int64_t a = 0; a < 288; a++) {
            for (int64_t b = 0; b < 288; b++) {
                if (a == b)
                    continue;
                int n = tt_route(t, a, b, TOPO_ROUTING_DEFAULT, (uint64_t)(a * 288 + b), links);
                int same = a / 72 == b / 72;
                if (same)
                    assert_int_equal(n, 2);
                else
                    assert_true(n == 2 || n == 4);
                for (int i = 0; i < n; i++) {
                    topo_link_info_t li;
                    assert_int_equal(topo_link_get(t, links[i], &li), TOPO_OK);
                    assert_int_equal(li.kind, same ? TOPO_LINK_NVLINK : TOPO_LINK_NETWORK);
                }
                inside += same;
                across += !same;
            }
        }
        assert_int_equal(inside, 4 * 72 * 71);
        assert_int_equal(across, 288 * 287 - 4 * 72 * 71);
        topo_free(t);
    }
}

static void expect_error(const char *preset, int64_t gpus, const char *msg) {
    topo_params_t p;
    assert_int_equal(topo_params_preset(preset, gpus, &p), TOPO_OK);
    topo_t *t = NULL;
    topo_issue_t issue;
    char buf[320];
    assert_int_equal(topo_new(&p, &t, &issue), TOPO_EINVAL);
    assert_null(t);
    assert_string_equal(topo_issue_format(&issue, buf, sizeof buf), msg);
}

/* Whole racks only; beyond 64 pods of 1,024 GPUs the radix-64 cores run out of ports. */
static void test_errors(void **state) {
    (void)state;
    expect_error("gb200-nvl72-superpod", 100, "gpus: 100 must be a multiple of gpus_per_node (72)");
    expect_error("gb300-nvl72-superpod", 36, "gpus: 36 must be a multiple of gpus_per_node (72)");
    expect_error("gb200-nvl72-superpod", 911 * 72, "switch_radix: 64 is below the 65 ports a core needs");
}

int main(void) {
    igraph_set_error_handler(igraph_error_handler_printignore);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counts),
        cmocka_unit_test(test_default_size),
        cmocka_unit_test(test_routes),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
