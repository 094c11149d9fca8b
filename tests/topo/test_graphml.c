/* topo/test_graphml.c - GraphML export loads back identically (same bytes when written again, same
 * vertices, links, summaries and route lengths), DOT export, a hand-written undirected file, and
 * every bad-file case (missing attribute, bad value, no GPUs, disconnected, unreadable). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "topo_test_util.h"

#define FIXTURE(name) STEPSIM_FIXTURE_DIR "/topo/" name

/* Write t as GraphML to a fresh temporary file; returns its malloc'd path. */
static char *write_temp(const topo_t *t, int dot) {
    const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    char *path = malloc(strlen(dir) + 32);
    sprintf(path, "%s/topo-test-XXXXXX", dir);
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    assert_non_null(f);
    topo_issue_t issue;
    assert_int_equal(dot ? topo_dot_write(t, f, &issue) : topo_graphml_write(t, f, &issue), TOPO_OK);
    assert_int_equal(fclose(f), 0);
    return path;
}

static char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    *len = (size_t)n;
    return buf;
}

static topo_t *load(const char *path) {
    topo_params_t p;
    topo_params_init(&p, TOPO_KIND_GRAPHML);
    p.graphml_path = path;
    return tt_build(&p);
}

static void same_graph(const topo_t *a, const topo_t *b) {
    assert_int_equal(topo_vertex_count(a), topo_vertex_count(b));
    assert_int_equal(topo_link_count(a), topo_link_count(b));
    assert_int_equal(topo_gpu_count(a), topo_gpu_count(b));
    assert_int_equal(topo_node_count(a), topo_node_count(b));
    assert_string_equal(topo_name(a), topo_name(b));
    for (int64_t v = 0; v < topo_vertex_count(a); v++) {
        topo_vertex_info_t x, y;
        topo_vertex_get(a, v, &x);
        topo_vertex_get(b, v, &y);
        assert_int_equal(x.kind, y.kind);
        assert_int_equal(x.node, y.node);
        assert_int_equal(x.tier, y.tier);
        assert_int_equal(x.group, y.group);
        assert_int_equal(x.rack, y.rack);
        assert_int_equal(x.rank, y.rank);
    }
    for (int64_t l = 0; l < topo_link_count(a); l++) {
        topo_link_info_t x, y;
        topo_link_get(a, l, &x);
        topo_link_get(b, l, &y);
        assert_int_equal(x.from, y.from);
        assert_int_equal(x.to, y.to);
        assert_int_equal(x.cable, y.cable);
        assert_int_equal(x.kind, y.kind);
        assert_int_equal(x.tech, y.tech);
        assert_true(x.bandwidth_bytes_per_s == y.bandwidth_bytes_per_s);
        assert_true(x.latency_s == y.latency_s);
    }
}

static void same_summary(const topo_t *a, const topo_t *b) {
    topo_summary_t x = tt_summary(a), y = tt_summary(b);
    assert_int_equal(x.gpus, y.gpus);
    assert_int_equal(x.nodes, y.nodes);
    assert_int_equal(x.switches, y.switches);
    assert_int_equal(x.nvswitches, y.nvswitches);
    assert_int_equal(x.nics, y.nics);
    assert_int_equal(x.links, y.links);
    assert_int_equal(x.nvlink_links, y.nvlink_links);
    assert_int_equal(x.pcie_links, y.pcie_links);
    assert_int_equal(x.diameter_hops, y.diameter_hops);
    assert_int_equal(x.optical_cables, y.optical_cables);
    assert_float_equal(x.bisection_bandwidth_bytes_per_s, y.bisection_bandwidth_bytes_per_s, 1);
    assert_float_equal(x.injection_bandwidth_bytes_per_s, y.injection_bandwidth_bytes_per_s, 1);
}

static void round_trip(const topo_params_t *p) {
    topo_t *t = tt_build(p);
    char *first = write_temp(t, 0);
    topo_t *back = load(first);
    assert_int_equal(topo_kind(back), TOPO_KIND_GRAPHML);
    same_graph(t, back);
    same_summary(t, back);
    char *second = write_temp(back, 0);
    size_t n1, n2;
    char *a = slurp(first, &n1), *b = slurp(second, &n2);
    assert_int_equal(n1, n2);
    assert_memory_equal(a, b, n1); /* exported again: the same bytes */
    assert_non_null(strstr(a, "attr.name=\"bandwidth_bytes_per_s\""));
    /* shortest-path routes on the import are no longer than the original routing's */
    topo_link_id_t la[256], lb[256];
    for (int64_t s = 0; s < topo_gpu_count(t); s += 3)
        for (int64_t d = 0; d < topo_gpu_count(t); d++)
            assert_true(tt_route(back, s, d, TOPO_ROUTING_DEFAULT, 0, lb) <=
                        tt_route(t, s, d, TOPO_ROUTING_DEFAULT, 0, la));
    free(a);
    free(b);
    unlink(first);
    unlink(second);
    free(first);
    free(second);
    topo_free(back);
    topo_free(t);
}

static void test_round_trip(void **state) {
    (void)state;
    topo_params_t p;
    topo_params_init(&p, TOPO_KIND_FAT_TREE);
    p.fat_tree.k = 4;
    round_trip(&p); /* switches only */
    assert_int_equal(topo_params_preset("dgx-h100-superpod", 248, &p), TOPO_OK);
    round_trip(&p); /* NVSwitches, racks */
    topo_params_init(&p, TOPO_KIND_DRAGONFLY);
    p.dragonfly = (topo_dragonfly_params_t){4, 4, 2, 5, 0, TOPO_ARRANGEMENT_CIRCULANT, 0, 4, 0};
    topo_node_preset("frontier-node", &p.node);
    round_trip(&p); /* NICs, PCIe, an NVLink mesh, parallel global cables */
    topo_params_init(&p, TOPO_KIND_TORUS);
    p.torus.dims[0] = 2;
    round_trip(&p); /* direct network, k = 2 */
}

static void test_dot(void **state) {
    (void)state;
    topo_params_t p;
    topo_params_init(&p, TOPO_KIND_FAT_TREE);
    p.fat_tree.k = 4;
    topo_t *t = tt_build(&p);
    char *path = write_temp(t, 1);
    size_t n;
    char *text = slurp(path, &n);
    assert_non_null(strstr(text, "digraph"));
    assert_non_null(strstr(text, "bandwidth_bytes_per_s"));
    free(text);
    unlink(path);
    free(path);
    topo_free(t);
}

static void test_undirected_file(void **state) {
    (void)state;
    topo_t *t = load(FIXTURE("undirected.graphml"));
    topo_summary_t s = tt_summary(t);
    assert_string_equal(topo_name(t), FIXTURE("undirected.graphml"));
    assert_int_equal(s.gpus, 4);
    assert_int_equal(s.nodes, 2);
    assert_int_equal(s.switches, 1);
    assert_int_equal(s.nvswitches, 2);
    assert_int_equal(s.links, 2);        /* undirected edge = one full-duplex cable */
    assert_int_equal(s.nvlink_links, 4); /* GPU-NVSwitch edges default to NVLink */
    assert_int_equal(topo_link_count(t), 12);
    assert_int_equal(s.diameter_hops, 6); /* gpu1 -> nvs0 -> gpu0 -> sw -> gpu2 -> nvs1 -> gpu3 */
    topo_link_id_t links[16];
    assert_int_equal(tt_route(t, 1, 3, TOPO_ROUTING_DEFAULT, 0, links), 6);
    assert_int_equal(tt_route(t, 0, 2, TOPO_ROUTING_SHORTEST, 0, links), 2);
    assert_float_equal(s.bisection_bandwidth_bytes_per_s, 25e9, 1);
    topo_flow_t f = {0, 2, 0, TOPO_ROUTING_DMODK, NULL};
    assert_int_equal(topo_route(t, &f, links, 16), TOPO_EINVAL);
    topo_free(t);
}

static void expect_bad_file(const char *path, int rc, const char *message) {
    topo_params_t p;
    topo_params_init(&p, TOPO_KIND_GRAPHML);
    p.graphml_path = path;
    topo_t *t = NULL;
    topo_issue_t issue;
    char msg[400], want[400];
    memset(&issue, 0, sizeof issue);
    assert_int_equal(topo_new(&p, &t, &issue), rc);
    assert_null(t);
    snprintf(want, sizeof want, "file: %s %s", path, message);
    assert_string_equal(topo_issue_format(&issue, msg, sizeof msg), want);
}

static void test_bad_files(void **state) {
    (void)state;
    expect_bad_file(FIXTURE("no_kind.graphml"), TOPO_EFORMAT,
                    "has no vertex attribute 'kind' (required: gpu, nvswitch, nic or switch)");
    expect_bad_file(FIXTURE("no_bandwidth.graphml"), TOPO_EFORMAT,
                    "has no edge attribute 'bandwidth_bytes_per_s' (required)");
    expect_bad_file(FIXTURE("bad_kind.graphml"), TOPO_EFORMAT,
                    "vertex 6: kind 'router' must be gpu, nvswitch, nic or switch");
    expect_bad_file(FIXTURE("bad_bandwidth.graphml"), TOPO_EFORMAT,
                    "edge 0: bandwidth_bytes_per_s must be > 0 and latency_s >= 0");
    expect_bad_file(FIXTURE("no_gpus.graphml"), TOPO_EFORMAT, "has no GPU vertices (vertex kind gpu)");
    expect_bad_file(FIXTURE("disconnected.graphml"), TOPO_EUNREACHABLE,
                    "is disconnected: GPU 0 (vertex 0) cannot reach GPU 2 (vertex 2)");
    expect_bad_file(FIXTURE("missing.graphml"), TOPO_EIO, "cannot be opened: No such file or directory");
    topo_params_t p;
    topo_params_init(&p, TOPO_KIND_GRAPHML);
    p.graphml_path = FIXTURE("malformed.graphml");
    topo_t *t = NULL;
    topo_issue_t issue;
    assert_int_equal(topo_new(&p, &t, &issue), TOPO_EFORMAT);
    assert_string_equal(issue.field, "file");
    assert_non_null(strstr(issue.rule, "is not readable GraphML"));
    p.graphml_path = FIXTURE("undirected.graphml");
    p.gpus = 8;
    assert_int_equal(topo_new(&p, &t, &issue), TOPO_EFORMAT);
    assert_string_equal(issue.rule, "holds 4 GPUs, not the 8 asked for");
}

int main(void) {
    igraph_set_error_handler(igraph_error_handler_printignore);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_dot),
        cmocka_unit_test(test_undirected_file),
        cmocka_unit_test(test_bad_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
