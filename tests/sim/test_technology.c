/* sim/test_technology.c - link technologies from topo/ to the engine: the table (names, kinds, rates,
 * NCCL's efficiencies), the technologies presets give their links, GraphML's technology attribute (round
 * trip, a file without it, bad values), NCCL's calibration from the technologies (the platform, each
 * link's own efficiency on a mixed fabric), and a dragonfly and a fat-tree built from the same
 * technology giving the same times for a pattern without contention. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <igraph.h>

#include "sim.h"
#include "topo.h"

static topo_t *build(const topo_params_t *p) {
    topo_t *t = NULL;
    topo_issue_t issue;
    char msg[400];
    const int rc = topo_new(p, &t, &issue);
    if (rc != TOPO_OK)
        fail_msg("topo_new: %s", topo_issue_format(&issue, msg, sizeof msg));
    return t;
}

static topo_t *preset(const char *name, int64_t gpus) {
    topo_params_t p;
    assert_int_equal(topo_params_preset(name, gpus, &p), TOPO_OK);
    return build(&p);
}

/* ---- the table ---------------------------------------------------------------------------------- */

static void test_table(void **state) {
    (void)state;
    static const struct {
        const char *name;
        int kind;
        double bw, eff;
    } want[] = {{"nvlink3", TOPO_LINK_NVLINK, 300e9, 0.67},
                {"nvlink4", TOPO_LINK_NVLINK, 450e9, 20.6 / 25.0},
                {"nvlink5", TOPO_LINK_NVLINK, 900e9, 20.6 / 25.0},
                {"pcie4", TOPO_LINK_PCIE, 32e9, 0.75},
                {"pcie5", TOPO_LINK_PCIE, 64e9, 0.75},
                {"ib-hdr", TOPO_LINK_NETWORK, 25e9, 0.94},
                {"ib-ndr", TOPO_LINK_NETWORK, 50e9, 0.94},
                {"ib-xdr", TOPO_LINK_NETWORK, 100e9, 0.94},
                {"roce-400g", TOPO_LINK_NETWORK, 50e9, 0.94},
                {"slingshot11", TOPO_LINK_NETWORK, 25e9, 0.70}};
    assert_int_equal(sizeof want / sizeof want[0], TOPO_TECH_COUNT - 1);
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        topo_tech_t t = TOPO_TECH_AUTO;
        assert_int_equal(topo_tech_parse(want[i].name, &t), TOPO_OK);
        const topo_tech_info_t *info = topo_tech_info(t);
        assert_non_null(info);
        assert_string_equal(topo_tech_name(t), want[i].name);
        assert_int_equal(info->link_kind, want[i].kind);
        assert_true(info->bandwidth_bytes_per_s == want[i].bw);
        assert_true(info->efficiency == want[i].eff);
        assert_true(info->latency_s > 0 && info->latency_s < 1e-5);
        assert_int_equal(info->nccl_sm, want[i].kind != TOPO_LINK_NVLINK ? 0
                                        : i == 0                         ? 80
                                        : i == 1                         ? 90
                                                                         : 100);
    }
    topo_tech_t t;
    assert_int_equal(topo_tech_parse("auto", &t), TOPO_EINVAL);
    assert_int_equal(topo_tech_parse("ib-ndrr", &t), TOPO_EINVAL);
    assert_int_equal(topo_tech_parse(NULL, &t), TOPO_EINVAL);
    assert_null(topo_tech_info(TOPO_TECH_AUTO));
    assert_null(topo_tech_info((topo_tech_t)TOPO_TECH_COUNT));
    /* by rate */
    assert_int_equal(topo_tech_for_rate(TOPO_LINK_NVLINK, 0), TOPO_TECH_NVLINK3);
    assert_int_equal(topo_tech_for_rate(TOPO_LINK_NVLINK, 450e9), TOPO_TECH_NVLINK4);
    assert_int_equal(topo_tech_for_rate(TOPO_LINK_NVLINK, 900e9), TOPO_TECH_NVLINK5);
    assert_int_equal(topo_tech_for_rate(TOPO_LINK_PCIE, 50e9), TOPO_TECH_PCIE5);
    assert_int_equal(topo_tech_for_rate(TOPO_LINK_NETWORK, 25e9), TOPO_TECH_IB_HDR);
    assert_int_equal(topo_tech_for_rate(TOPO_LINK_NETWORK, 50e9), TOPO_TECH_IB_NDR);
    assert_int_equal(topo_tech_for_rate(TOPO_LINK_NETWORK, 100e9), TOPO_TECH_IB_XDR);
    /* a technology sets its rates, only for its own link kind */
    topo_params_t p;
    topo_params_init(&p, TOPO_KIND_FAT_TREE);
    assert_int_equal(topo_params_set_network(&p, TOPO_TECH_SLINGSHOT11), TOPO_OK);
    assert_true(p.link_bandwidth_bytes_per_s == 25e9 && p.link_latency_s == 0.35e-6);
    assert_int_equal(topo_params_set_network(&p, TOPO_TECH_NVLINK4), TOPO_EINVAL);
    assert_int_equal(p.network, TOPO_TECH_SLINGSHOT11);
    assert_int_equal(topo_node_set_nvlink(&p.node, TOPO_TECH_NVLINK5), TOPO_OK);
    assert_true(p.node.nvlink_bandwidth_bytes_per_s == 900e9);
    assert_int_equal(topo_node_set_pcie(&p.node, TOPO_TECH_IB_HDR), TOPO_EINVAL);
    /* topo_params_check names a technology of the wrong kind */
    p.network = TOPO_TECH_PCIE4;
    topo_issue_t issue;
    char msg[400];
    assert_int_equal(topo_params_check(&p, &issue), TOPO_EINVAL);
    assert_string_equal(topo_issue_format(&issue, msg, sizeof msg),
                        "network: pcie4 is a pcie technology; allowed: a network technology");
}

/* ---- presets -------------------------------------------------------------------------------------- */

/* Every link has a technology of its kind; the topology's technology per kind is want[kind] (AUTO:
 * the kind has no links). */
static void expect_techs(const topo_t *t, topo_tech_t nvlink, topo_tech_t pcie, topo_tech_t network) {
    const topo_tech_t want[3] = {nvlink, pcie, network};
    int64_t seen[3] = {0, 0, 0};
    const double *eff = topo_link_efficiencies(t);
    for (int64_t l = 0; l < topo_link_count(t); l++) {
        topo_link_info_t li;
        assert_int_equal(topo_link_get(t, l, &li), TOPO_OK);
        assert_int_equal(li.tech, want[li.kind]);
        assert_true(eff[l] == topo_tech_info(li.tech)->efficiency);
        seen[li.kind]++;
    }
    for (int k = 0; k < 3; k++)
        if (seen[k])
            assert_int_equal(topo_kind_tech(t, (topo_link_kind_t)k), want[k]);
}

static void test_presets(void **state) {
    (void)state;
    static const struct {
        const char *name;
        topo_tech_t nvlink, pcie, network;
    } cases[] = {
        {"dgx-a100-superpod", TOPO_TECH_NVLINK3, TOPO_TECH_PCIE4, TOPO_TECH_IB_HDR},
        {"dgx-h100-superpod", TOPO_TECH_NVLINK4, TOPO_TECH_PCIE5, TOPO_TECH_IB_NDR},
        {"dgx-b200-superpod", TOPO_TECH_NVLINK5, TOPO_TECH_PCIE5, TOPO_TECH_IB_NDR},
        {"perlmutter", TOPO_TECH_NVLINK3, TOPO_TECH_PCIE4, TOPO_TECH_SLINGSHOT11},
        {"frontier", TOPO_TECH_NVLINK3, TOPO_TECH_PCIE4, TOPO_TECH_SLINGSHOT11},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        topo_t *t = preset(cases[i].name, 64);
        expect_techs(t, cases[i].nvlink, cases[i].pcie, cases[i].network);
        topo_free(t);
    }
    /* the preset's own rates are the technology's, except where the machine differs (Frontier's
     * GCD-NIC links: PCIe Gen4 ESM at 50 GB/s) */
    topo_params_t p;
    assert_int_equal(topo_params_preset("dgx-a100-superpod", 0, &p), TOPO_OK);
    assert_true(p.link_bandwidth_bytes_per_s == topo_tech_info(TOPO_TECH_IB_HDR)->bandwidth_bytes_per_s);
    assert_true(p.node.nvlink_bandwidth_bytes_per_s ==
                topo_tech_info(TOPO_TECH_NVLINK3)->bandwidth_bytes_per_s);
    assert_int_equal(topo_params_preset("frontier", 0, &p), TOPO_OK);
    assert_true(p.node.pcie_bandwidth_bytes_per_s == 50e9);
    topo_node_params_t n;
    assert_int_equal(topo_node_preset("nvl72", &n), TOPO_OK);
    assert_int_equal(n.nvlink_tech, TOPO_TECH_NVLINK5);
    assert_int_equal(topo_node_preset("dgx-h100", &n), TOPO_OK);
    assert_int_equal(n.nvlink_tech, TOPO_TECH_NVLINK4);
    /* kinds: InfiniBand NDR by default, the dragonfly Slingshot-11; the ideal one from its rates */
    topo_params_init(&p, TOPO_KIND_TORUS);
    topo_t *t = build(&p);
    expect_techs(t, TOPO_TECH_NVLINK3, TOPO_TECH_PCIE4, TOPO_TECH_IB_NDR);
    topo_free(t);
    topo_params_init(&p, TOPO_KIND_IDEAL);
    p.gpus = 16;
    t = build(&p);
    expect_techs(t, TOPO_TECH_NVLINK3, TOPO_TECH_PCIE4, TOPO_TECH_IB_HDR);
    topo_free(t);
    p.node.nvlink_bandwidth_bytes_per_s = 450e9;
    p.link_bandwidth_bytes_per_s = 50e9;
    t = build(&p);
    expect_techs(t, TOPO_TECH_NVLINK4, TOPO_TECH_PCIE4, TOPO_TECH_IB_NDR);
    topo_free(t);
}

/* ---- GraphML -------------------------------------------------------------------------------------- */

static char *temp_path(void) {
    const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    char *path = malloc(strlen(dir) + 32);
    sprintf(path, "%s/topo-tech-XXXXXX", dir);
    const int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    return path;
}

static int load(const char *path, topo_t **t, char *msg, size_t size) {
    topo_params_t p;
    topo_params_init(&p, TOPO_KIND_GRAPHML);
    p.graphml_path = path;
    topo_issue_t issue;
    const int rc = topo_new(&p, t, &issue);
    if (rc)
        topo_issue_format(&issue, msg, size);
    return rc;
}

static void test_graphml_round_trip(void **state) {
    (void)state;
    topo_params_t p;
    topo_params_init(&p, TOPO_KIND_FAT_TREE);
    topo_node_preset("frontier-node", &p.node); /* NVLink, PCIe and network links */
    p.gpus = 32;
    assert_int_equal(topo_params_set_network(&p, TOPO_TECH_ROCE_400G), TOPO_OK);
    topo_t *t = build(&p);
    char *path = temp_path();
    FILE *f = fopen(path, "w");
    topo_issue_t issue;
    assert_int_equal(topo_graphml_write(t, f, &issue), TOPO_OK);
    fclose(f);
    topo_t *back = NULL;
    char msg[400];
    assert_int_equal(load(path, &back, msg, sizeof msg), TOPO_OK);
    assert_int_equal(topo_link_count(back), topo_link_count(t));
    int64_t kinds[3] = {0, 0, 0};
    for (int64_t l = 0; l < topo_link_count(t); l++) {
        topo_link_info_t a, b;
        topo_link_get(t, l, &a);
        topo_link_get(back, l, &b);
        assert_int_equal(a.tech, b.tech);
        assert_true(topo_link_efficiencies(t)[l] == topo_link_efficiencies(back)[l]);
        kinds[a.kind]++;
    }
    assert_true(kinds[0] > 0 && kinds[1] > 0 && kinds[2] > 0);
    expect_techs(back, TOPO_TECH_NVLINK3, TOPO_TECH_PCIE4, TOPO_TECH_ROCE_400G);
    topo_free(back);
    topo_free(t);
    unlink(path);
    free(path);
}

/* Two GPUs through one switch; the edges' technology attributes as given ("" for none). */
static char *two_gpus(const char *tech_a, const char *tech_b) {
    char *path = temp_path();
    FILE *f = fopen(path, "w");
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
               "<graphml xmlns=\"http://graphml.graphdrawing.org/xmlns\">\n"
               "  <key id=\"k\" for=\"node\" attr.name=\"kind\" attr.type=\"string\"/>\n"
               "  <key id=\"bw\" for=\"edge\" attr.name=\"bandwidth_bytes_per_s\" attr.type=\"double\"/>\n"
               "  <key id=\"lat\" for=\"edge\" attr.name=\"latency_s\" attr.type=\"double\"/>\n");
    if (tech_a[0] || tech_b[0])
        fprintf(f, "  <key id=\"t\" for=\"edge\" attr.name=\"technology\" attr.type=\"string\"/>\n");
    fprintf(f, "  <graph id=\"G\" edgedefault=\"undirected\">\n"
               "    <node id=\"n0\"><data key=\"k\">gpu</data></node>\n"
               "    <node id=\"n1\"><data key=\"k\">gpu</data></node>\n"
               "    <node id=\"n2\"><data key=\"k\">switch</data></node>\n");
    const char *tech[2] = {tech_a, tech_b};
    for (int e = 0; e < 2; e++) {
        fprintf(f,
                "    <edge source=\"n%d\" target=\"n2\"><data key=\"bw\">25e9</data><data "
                "key=\"lat\">1e-7</data>",
                e);
        if (tech[e][0])
            fprintf(f, "<data key=\"t\">%s</data>", tech[e]);
        fprintf(f, "</edge>\n");
    }
    fprintf(f, "  </graph>\n</graphml>\n");
    fclose(f);
    return path;
}

static void test_graphml_files(void **state) {
    (void)state;
    topo_t *t = NULL;
    char msg[400] = "";
    /* without the attribute: the parameters' network technology (InfiniBand NDR by default) */
    char *path = two_gpus("", "");
    if (load(path, &t, msg, sizeof msg) != TOPO_OK)
        fail_msg("%s", msg);
    expect_techs(t, TOPO_TECH_NVLINK3, TOPO_TECH_PCIE4, TOPO_TECH_IB_NDR);
    topo_free(t);
    unlink(path);
    free(path);
    /* one edge without: that edge the default, the other its own */
    path = two_gpus("slingshot11", "");
    assert_int_equal(load(path, &t, msg, sizeof msg), TOPO_OK);
    topo_link_info_t a, b;
    topo_link_get(t, 0, &a);
    topo_link_get(t, 2, &b);
    assert_int_equal(a.tech, TOPO_TECH_SLINGSHOT11);
    assert_int_equal(b.tech, TOPO_TECH_IB_NDR);
    topo_free(t);
    unlink(path);
    free(path);
    /* an unknown name, and a technology of another kind */
    path = two_gpus("ib-hdr", "ib-ndrr");
    assert_int_equal(load(path, &t, msg, sizeof msg), TOPO_EFORMAT);
    assert_null(t);
    assert_non_null(strstr(msg, "edge 1: technology 'ib-ndrr' is not a link technology; allowed: nvlink3,"));
    assert_null(strchr(msg, '\n'));
    unlink(path);
    free(path);
    path = two_gpus("nvlink4", "ib-hdr");
    assert_int_equal(load(path, &t, msg, sizeof msg), TOPO_EFORMAT);
    assert_non_null(strstr(msg, "edge 0: technology 'nvlink4' is a nvlink technology, the edge is network"));
    unlink(path);
    free(path);
}

/* ---- the engine ------------------------------------------------------------------------------------ */

/* Simulated time of sendrecvs between pairs[2i] and pairs[2i+1] (all at once), or, with n_pairs 0,
 * of a ring all-reduce over GPUs 0..ring-1; NCCL's calibration from t's technologies. */
static int64_t run_ps(const topo_t *t, const int32_t *pairs, int n_pairs, int32_t ring, double size) {
    sim_network_desc_t d;
    assert_int_equal(sim_topo_network(t, &d), SIM_OK);
    sim_config_t cfg;
    sim_config_default(&cfg);
    sim_config_nccl_topology(&cfg, t);
    sim_engine_t *e;
    assert_int_equal(sim_engine_new(&cfg, &d, &e, NULL, 0), SIM_OK);
    sim_coll_id_t ids[8];
    int32_t gpus[16];
    const int n = n_pairs ? n_pairs : 1;
    for (int i = 0; i < n; i++) {
        sim_coll_desc_t cd = {
            .op = SIM_COLL_SENDRECV, .algo = SIM_ALGO_AUTO, .size_bytes = size, .stream = 1};
        if (n_pairs) {
            cd.gpus = pairs + 2 * i;
            cd.n_gpus = 2;
        } else {
            for (int32_t g = 0; g < ring; g++)
                gpus[g] = g;
            cd.op = SIM_COLL_ALLREDUCE;
            cd.algo = SIM_ALGO_RING;
            cd.gpus = gpus;
            cd.n_gpus = ring;
        }
        if (sim_coll_add(e, &cd, NULL, &ids[i]))
            fail_msg("%s", sim_engine_last_error(e));
    }
    assert_int_equal(sim_engine_run(e), SIM_OK);
    int64_t end = 0;
    for (int i = 0; i < n; i++) {
        sim_coll_result_t r;
        sim_coll_result(e, ids[i], &r);
        end = r.end_ps > end ? r.end_ps : end;
    }
    sim_engine_free(e);
    return end;
}

/* A dragonfly and a fat-tree of the same technology: a ring inside a router and inside a leaf, and
 * sendrecvs between GPUs of one router or leaf (one switch crossed), take the same time. */
static void test_same_technology_same_time(void **state) {
    (void)state;
    static const topo_tech_t techs[] = {TOPO_TECH_IB_HDR, TOPO_TECH_SLINGSHOT11, TOPO_TECH_ROCE_400G};
    for (size_t i = 0; i < sizeof techs / sizeof techs[0]; i++) {
        topo_params_t ft, df;
        topo_params_init(&ft, TOPO_KIND_FAT_TREE);
        ft.fat_tree = (topo_fat_tree_params_t){
            .tiers = 2, .endpoints_per_leaf = 4, .leaves = 4, .spines = 4, .links_per_leaf_spine = 1};
        topo_params_init(&df, TOPO_KIND_DRAGONFLY);
        df.dragonfly.p = 4;
        df.dragonfly.a = 2;
        df.dragonfly.h = 1;
        df.dragonfly.g = 3;
        assert_int_equal(topo_params_set_network(&ft, techs[i]), TOPO_OK);
        assert_int_equal(topo_params_set_network(&df, techs[i]), TOPO_OK);
        topo_t *a = build(&ft), *b = build(&df);
        const int32_t pairs[4] = {0, 1, 2, 3};
        for (int k = 0; k < 3; k++) {
            const double size = k == 0 ? 4096.0 : k == 1 ? 1e6 : 64e6;
            const int64_t ta = run_ps(a, NULL, 0, 4, size), tb = run_ps(b, NULL, 0, 4, size);
            assert_true(ta > 0);
            assert_true(ta == tb);
            assert_true(run_ps(a, pairs, 2, 0, size) == run_ps(b, pairs, 2, 0, size));
        }
        topo_free(a);
        topo_free(b);
    }
    /* a different technology takes a different time */
    topo_params_t x, y;
    topo_params_init(&x, TOPO_KIND_FAT_TREE);
    topo_params_init(&y, TOPO_KIND_FAT_TREE);
    topo_params_set_network(&x, TOPO_TECH_IB_HDR);
    topo_params_set_network(&y, TOPO_TECH_SLINGSHOT11);
    y.link_latency_s = x.link_latency_s; /* the same rates: only the efficiency differs */
    topo_t *a = build(&x), *b = build(&y);
    const int32_t pair[2] = {0, 1};
    const double ta = (double)run_ps(a, pair, 1, 0, 1e9), tb = (double)run_ps(b, pair, 1, 0, 1e9);
    assert_true(fabs(tb / ta - 0.94 / 0.70) < 0.01);
    topo_free(a);
    topo_free(b);
}

/* NCCL's platform and each link's efficiency come from the technologies. */
static void test_calibration(void **state) {
    (void)state;
    topo_t *a100 = preset("dgx-a100-superpod", 64), *h100 = preset("dgx-h100-superpod", 64);
    sim_config_t ca, ch;
    sim_config_default(&ca);
    sim_config_default(&ch);
    sim_config_nccl_topology(&ca, a100);
    sim_config_nccl_topology(&ch, h100);
    assert_int_equal(ca.use_link_tech_efficiency, 1);
    sim_network_desc_t d;
    assert_int_equal(sim_topo_network(a100, &d), SIM_OK);
    assert_true(d.link_tech_efficiency == topo_link_efficiencies(a100));
    assert_true(ca.link_kind_efficiency[SIM_LINK_NVLINK] == 0.67);
    assert_true(ch.link_kind_efficiency[SIM_LINK_NVLINK] == 20.6 / 25.0);
    assert_true(ca.link_kind_efficiency[SIM_LINK_NETWORK] == 0.94);
    /* sm80 and sm90: NCCL's LL bandwidth cap inside a node */
    assert_true(ca.proto[SIM_PROTO_LL].max_busbw_bytes_per_s[0] == 87.7e9);
    assert_true(ch.proto[SIM_PROTO_LL].max_busbw_bytes_per_s[0] == 141.0e9);
    topo_free(a100);
    topo_free(h100);

    /* a mixed fabric: each link its own efficiency; a sendrecv is held to the slower link's */
    topo_params_t p;
    topo_params_init(&p, TOPO_KIND_FAT_TREE);
    p.fat_tree = (topo_fat_tree_params_t){
        .tiers = 2, .endpoints_per_leaf = 2, .leaves = 2, .spines = 1, .links_per_leaf_spine = 1};
    topo_params_set_network(&p, TOPO_TECH_IB_HDR);
    topo_t *ib = build(&p);
    /* the same graph through GraphML with one GPU's cable on Slingshot-11 */
    char *path = temp_path();
    FILE *f = fopen(path, "w");
    topo_issue_t issue;
    assert_int_equal(topo_graphml_write(ib, f, &issue), TOPO_OK);
    fclose(f);
    size_t len = 0;
    f = fopen(path, "r");
    char *text = calloc(1 << 20, 1);
    len = fread(text, 1, (1 << 20) - 1, f);
    fclose(f);
    assert_true(len > 0);
    /* the first two edges are GPU 0's cable to its leaf (cable 0, both directions) */
    for (int k = 0; k < 2; k++) {
        char *s = strstr(text, ">ib-hdr<");
        assert_non_null(s);
        memmove(s + 13, s + 8, strlen(s + 8) + 1);
        memcpy(s, ">slingshot11<", 13);
    }
    f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
    free(text);
    topo_t *mixed = NULL;
    char msg[400];
    assert_int_equal(load(path, &mixed, msg, sizeof msg), TOPO_OK);
    unlink(path);
    free(path);
    topo_link_info_t li;
    topo_link_get(mixed, 0, &li);
    assert_int_equal(li.tech, TOPO_TECH_SLINGSHOT11);
    topo_link_get(mixed, 2, &li);
    assert_int_equal(li.tech, TOPO_TECH_IB_HDR);
    const int32_t from0[2] = {0, 1}, from2[2] = {2, 3};
    const double size = 1e9;
    const double t_mixed = (double)run_ps(mixed, from0, 1, 0, size),
                 t_ib = (double)run_ps(mixed, from2, 1, 0, size);
    assert_true(fabs(t_mixed / t_ib - 0.94 / 0.70) < 0.01);
    /* the engine checks each link's fraction, and uses them only when told to */
    sim_network_desc_t dn;
    assert_int_equal(sim_topo_network(ib, &dn), SIM_OK);
    double *bad = malloc((size_t)dn.n_links * sizeof *bad);
    for (int32_t l = 0; l < dn.n_links; l++)
        bad[l] = l == 3 ? 0.0 : 0.5;
    dn.link_tech_efficiency = bad;
    sim_config_t cb;
    sim_config_default(&cb);
    sim_engine_t *e = NULL;
    assert_int_equal(sim_engine_new(&cb, &dn, &e, msg, sizeof msg), SIM_OK); /* not used: fine */
    sim_engine_free(e);
    cb.use_link_tech_efficiency = 1;
    assert_int_equal(sim_engine_new(&cb, &dn, &e, msg, sizeof msg), SIM_EINVAL);
    assert_non_null(strstr(msg, "link 3: efficiency 0 must be in (0, 1]"));
    free(bad);
    topo_free(mixed);
    topo_free(ib);
}

int main(void) {
    igraph_set_error_handler(igraph_error_handler_printignore);
    igraph_set_warning_handler(igraph_warning_handler_ignore);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table),
        cmocka_unit_test(test_presets),
        cmocka_unit_test(test_graphml_round_trip),
        cmocka_unit_test(test_graphml_files),
        cmocka_unit_test(test_same_technology_same_time),
        cmocka_unit_test(test_calibration),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
