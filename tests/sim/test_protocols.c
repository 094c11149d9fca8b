/* sim/test_protocols.c - the engine's NCCL cost model against hand-computed times: protocols (launch
 * latency, per-step latencies by where a step goes, wire efficiency, the LL bandwidth cap), the auto
 * choice of (algorithm, protocol), pipelined ring latencies, per-kind link efficiencies, NCCL-like
 * channels (rings that use every NIC of a node, every Hamiltonian cycle of a 4-GPU mesh) and the
 * adaptive tree chunk; sim_config_nccl and the checks of the new configuration fields.
 *
 * Every network is a star (sim_star_*): NIC links 1 us, NVLink links 0.25 us, so a step between
 * domains has route latency 2 us and one inside a domain 0.5 us. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sim.h"

#define TOL 1e-3
#define MIB (1024.0 * 1024.0)

typedef struct star_run {
    double time_s, closed_s;
    sim_coll_algo_t algo;
    sim_proto_t proto;
    int32_t channels;
} star_run_t;

/* n GPUs in domains of g: NIC 25 GB/s (1 us per link), NVLink 300 GB/s per GPU (0.25 us). */
static star_run_t run_star(const sim_config_t *cfg, int32_t n, int32_t g, sim_coll_op_t op,
                           sim_coll_algo_t algo, sim_proto_t proto, int32_t channels, sim_fidelity_t fid,
                           double size) {
    sim_star_t star;
    const sim_star_params_t sp = {.n_gpus = n,
                                  .nic_bytes_per_s = 25e9,
                                  .nic_latency_s = 1e-6,
                                  .gpus_per_domain = g,
                                  .nvlink_bytes_per_s = 300e9,
                                  .nvlink_latency_s = 0.25e-6};
    assert_int_equal(sim_star_init(&star, &sp), SIM_OK);
    sim_network_desc_t d;
    sim_star_network(&star, &d);
    sim_engine_t *e = NULL;
    char err[256];
    if (sim_engine_new(cfg, &d, &e, err, sizeof err) != SIM_OK)
        fail_msg("sim_engine_new: %s", err);
    int32_t *gpus = malloc((size_t)n * sizeof *gpus);
    for (int32_t i = 0; i < n; i++)
        gpus[i] = i;
    const sim_coll_desc_t cd = {.op = op,
                                .algo = algo,
                                .fidelity = fid,
                                .size_bytes = size,
                                .gpus = gpus,
                                .n_gpus = n,
                                .channels = channels,
                                .stream = 1,
                                .proto = proto};
    sim_coll_id_t c;
    if (sim_coll_add(e, &cd, NULL, &c) != SIM_OK)
        fail_msg("sim_coll_add: %s", sim_engine_last_error(e));
    assert_int_equal(sim_engine_run(e), SIM_OK);
    sim_coll_result_t r;
    assert_int_equal(sim_coll_result(e, c, &r), SIM_OK);
    const star_run_t out = {sim_ps_to_s(r.end_ps - r.start_ps), r.closed_form_s, r.algo, r.proto, r.channels};
    sim_engine_free(e);
    sim_star_destroy(&star);
    free(gpus);
    return out;
}

static void expect_time(const char *what, const star_run_t *r, double want) {
    if (fabs(r->time_s - want) > TOL * want || fabs(r->closed_s - want) > 1e-6 * want)
        fail_msg("%s: simulated %.9g s, closed form %.9g s, want %.9g s", what, r->time_s, r->closed_s, want);
}

/* A hand-made protocol table, the same for rings and trees: Simple launch 10 us, NVLink step 3 us,
 * network step 15 us; LL launch 5 us, steps 0.5 / 4 us, half the wire. */
static void hand_protocols(sim_config_t *cfg) {
    sim_config_default(cfg);
    sim_proto_params_t *s = &cfg->proto[SIM_PROTO_SIMPLE], *l = &cfg->proto[SIM_PROTO_LL];
    l->enabled = l->network = 1;
    for (int a = 0; a < 2; a++) {
        s->launch_s[a] = 10e-6;
        s->nvlink_step_s[a] = 3e-6;
        s->net_step_s[a] = 15e-6;
        l->launch_s[a] = 5e-6;
        l->nvlink_step_s[a] = 0.5e-6;
        l->net_step_s[a] = 4e-6;
        l->efficiency[a] = 0.5;
    }
}

/* One domain of 8 (a switch): ring all-reduce, 14 steps of 0.5 us route + the protocol's step. */
static void test_protocol_costs(void **state) {
    (void)state;
    sim_config_t cfg;
    hand_protocols(&cfg);
    const double m = 64 * MIB;
    for (int f = 0; f < 2; f++) {
        const sim_fidelity_t fid = f ? SIM_FIDELITY_STEP : SIM_FIDELITY_FAST;
        star_run_t r = run_star(&cfg, 8, 8, SIM_COLL_ALLREDUCE, SIM_ALGO_RING, SIM_PROTO_SIMPLE, 1, fid, m);
        expect_time("simple", &r, 10e-6 + 14 * (3.5e-6 + m / 8 / 300e9));
        assert_int_equal(r.proto, SIM_PROTO_SIMPLE);
        r = run_star(&cfg, 8, 8, SIM_COLL_ALLREDUCE, SIM_ALGO_RING, SIM_PROTO_LL, 1, fid, m);
        expect_time("ll", &r, 5e-6 + 14 * (1e-6 + m / 8 / 150e9));
        /* Across two domains of 4 with slowest-member latencies: every step pays the network's. */
        r = run_star(&cfg, 8, 4, SIM_COLL_ALLGATHER, SIM_ALGO_RING, SIM_PROTO_SIMPLE, 1, fid, m);
        expect_time("crossing", &r, 10e-6 + 7 * (17e-6 + m / 8 / 25e9));
    }
    /* Auto takes the tree with LL for small messages (6 steps of 1 us after a 5 us launch, where the
     * LL ring takes 14) and the ring with Simple for large ones. */
    star_run_t r =
        run_star(&cfg, 8, 8, SIM_COLL_ALLREDUCE, SIM_ALGO_AUTO, SIM_PROTO_AUTO, 1, SIM_FIDELITY_FAST, 8192);
    assert_int_equal(r.proto, SIM_PROTO_LL);
    assert_int_equal(r.algo, SIM_ALGO_TREE);
    r = run_star(&cfg, 8, 8, SIM_COLL_ALLREDUCE, SIM_ALGO_AUTO, SIM_PROTO_AUTO, 1, SIM_FIDELITY_FAST,
                 64 * MIB);
    assert_int_equal(r.proto, SIM_PROTO_SIMPLE);
    assert_int_equal(r.algo, SIM_ALGO_RING);
    /* A protocol disabled for the network is not chosen across domains. */
    cfg.proto[SIM_PROTO_LL].network = 0;
    r = run_star(&cfg, 8, 4, SIM_COLL_ALLREDUCE, SIM_ALGO_RING, SIM_PROTO_AUTO, 1, SIM_FIDELITY_FAST, 8192);
    assert_int_equal(r.proto, SIM_PROTO_SIMPLE);
}

/* Pipelined rings: every step pays the mean of the ring's hop latencies. 16 GPUs in domains of 4:
 * 4 of the ring's 16 hops cross (2 + 15 us), 12 stay inside (0.5 + 3 us). */
static void test_mean_ring_latency(void **state) {
    (void)state;
    sim_config_t cfg;
    hand_protocols(&cfg);
    cfg.ring_latency = SIM_RING_LATENCY_MEAN;
    const double m = 16 * MIB, alpha = (4 * 17e-6 + 12 * 3.5e-6) / 16;
    for (int f = 0; f < 2; f++) {
        const star_run_t r = run_star(&cfg, 16, 4, SIM_COLL_REDUCESCATTER, SIM_ALGO_RING, SIM_PROTO_SIMPLE, 1,
                                      f ? SIM_FIDELITY_STEP : SIM_FIDELITY_FAST, m);
        expect_time("mean latency", &r, 10e-6 + 15 * (alpha + m / 16 / 25e9));
    }
    /* NVLink steps of a crossing ring cost at least crossing_nvlink_step_min_s (here 6 us). */
    cfg.proto[SIM_PROTO_SIMPLE].crossing_nvlink_step_min_s = 6e-6;
    const double alpha6 = (4 * 17e-6 + 12 * 6.5e-6) / 16;
    const star_run_t r = run_star(&cfg, 16, 4, SIM_COLL_REDUCESCATTER, SIM_ALGO_RING, SIM_PROTO_SIMPLE, 1,
                                  SIM_FIDELITY_FAST, m);
    expect_time("nvlink floor", &r, 10e-6 + 15 * (alpha6 + m / 16 / 25e9));
}

/* NCCL's rings across domains: with g channels each domain is entered once at every member, so
 * every NIC sends one channel and receives one; a GPU's NVLink carries g - 1 channels. */
static void test_node_rings(void **state) {
    (void)state;
    sim_config_t cfg;
    sim_config_default(&cfg);
    const double m = 256 * MIB, alpha = 2e-6; /* slowest member: a NIC hop */
    for (int f = 0; f < 2; f++) {
        const sim_fidelity_t fid = f ? SIM_FIDELITY_STEP : SIM_FIDELITY_FAST;
        star_run_t r = run_star(&cfg, 16, 4, SIM_COLL_ALLREDUCE, SIM_ALGO_RING, SIM_PROTO_AUTO,
                                SIM_CHANNELS_AUTO, fid, m);
        assert_int_equal(r.channels, 4);
        expect_time("4 channels", &r, 30 * (alpha + m / 4 / 16 / fmin(25e9, 300e9 / 3)));
        /* One channel crosses every domain boundary on one NIC: a quarter of the bandwidth. */
        r = run_star(&cfg, 16, 4, SIM_COLL_ALLREDUCE, SIM_ALGO_RING, SIM_PROTO_AUTO, 1, fid, m);
        expect_time("1 channel", &r, 30 * (alpha + m / 16 / 25e9));
    }
    /* With NCCL's rings the flat ring beats the hierarchical one, and auto takes it. */
    cfg.ring_latency = SIM_RING_LATENCY_MEAN;
    const star_run_t r = run_star(&cfg, 16, 4, SIM_COLL_ALLREDUCE, SIM_ALGO_AUTO, SIM_PROTO_AUTO,
                                  SIM_CHANNELS_AUTO, SIM_FIDELITY_FAST, m);
    assert_int_equal(r.algo, SIM_ALGO_RING);
}

/* A 4-GPU NVLink mesh as one domain (every pair a direct 100 GB/s link): the 6 Hamiltonian cycles
 * use each of the 12 directed links twice, so 6 channels get 300 GB/s of bus bandwidth per GPU where
 * strides (channels 0 and 1) get 200. */
static int mesh_route(void *ctx, int32_t src, int32_t dst, int32_t *links, int32_t cap) {
    (void)ctx;
    if (src == dst || cap < 1)
        return -1;
    links[0] = src * 4 + dst;
    return 1;
}

static int mesh_kind(void *ctx, int32_t link) {
    (void)ctx;
    (void)link;
    return SIM_LINK_NVLINK;
}

static double mesh_allreduce(const sim_config_t *cfg, int32_t channels, sim_fidelity_t fid, double m,
                             int32_t *used_channels) {
    double cap[16], lat[16];
    for (int i = 0; i < 16; i++) {
        cap[i] = 100e9;
        lat[i] = 1e-6;
    }
    const sim_network_desc_t d = {.n_gpus = 4,
                                  .n_links = 16,
                                  .capacity_bytes_per_s = cap,
                                  .latency_s = lat,
                                  .route = mesh_route,
                                  .gpus_per_domain = 4,
                                  .link_kind = mesh_kind};
    sim_engine_t *e;
    assert_int_equal(sim_engine_new(cfg, &d, &e, NULL, 0), SIM_OK);
    const int32_t gpus[4] = {0, 1, 2, 3};
    const sim_coll_desc_t cd = {.op = SIM_COLL_ALLREDUCE,
                                .algo = SIM_ALGO_RING,
                                .fidelity = fid,
                                .size_bytes = m,
                                .gpus = gpus,
                                .n_gpus = 4,
                                .channels = channels,
                                .stream = 1};
    sim_coll_id_t c;
    assert_int_equal(sim_coll_add(e, &cd, NULL, &c), SIM_OK);
    assert_int_equal(sim_engine_run(e), SIM_OK);
    sim_coll_result_t r;
    sim_coll_result(e, c, &r);
    *used_channels = r.channels;
    assert_true(fabs(r.closed_form_s - sim_ps_to_s(r.end_ps - r.start_ps)) <= TOL * r.closed_form_s);
    sim_engine_free(e);
    return sim_ps_to_s(r.end_ps - r.start_ps);
}

static void test_mesh_cycles(void **state) {
    (void)state;
    sim_config_t cfg;
    sim_config_default(&cfg);
    const double m = 1e9;
    for (int f = 0; f < 2; f++) {
        const sim_fidelity_t fid = f ? SIM_FIDELITY_STEP : SIM_FIDELITY_FAST;
        int32_t k;
        double t = mesh_allreduce(&cfg, SIM_CHANNELS_AUTO, fid, m, &k);
        assert_int_equal(k, 6);
        assert_true(fabs(t - 6 * (1e-6 + m / 6 / 4 / 50e9)) < TOL * t);
        t = mesh_allreduce(&cfg, 2, fid, m, &k);
        assert_true(fabs(t - 6 * (1e-6 + m / 2 / 4 / 100e9)) < TOL * t);
        /* NVLink at 80% of its rate */
        cfg.link_kind_efficiency[SIM_LINK_NVLINK] = 0.8;
        t = mesh_allreduce(&cfg, 2, fid, m, &k);
        assert_true(fabs(t - 6 * (1e-6 + m / 2 / 4 / 80e9)) < TOL * t);
        cfg.link_kind_efficiency[SIM_LINK_NVLINK] = 1.0;
    }
}

/* LL's bus-bandwidth cap (NCCL llMaxBw): 8 channels inside one domain capped at 40 GB/s of bus
 * bandwidth; and one member per domain across the network pays the single-member efficiency. */
static void test_caps_and_single_member(void **state) {
    (void)state;
    sim_config_t cfg;
    hand_protocols(&cfg);
    cfg.proto[SIM_PROTO_LL].max_busbw_bytes_per_s[0] = 40e9;
    const double m = 64 * MIB;
    for (int f = 0; f < 2; f++) {
        const sim_fidelity_t fid = f ? SIM_FIDELITY_STEP : SIM_FIDELITY_FAST;
        star_run_t r = run_star(&cfg, 8, 8, SIM_COLL_ALLGATHER, SIM_ALGO_RING, SIM_PROTO_LL, 8, fid, m);
        expect_time("capped", &r, 5e-6 + 7 * (1e-6 + m / 8 / 8 / (40e9 / 8)));
        cfg.single_member_efficiency = 0.8;
        r = run_star(&cfg, 8, 1, SIM_COLL_ALLGATHER, SIM_ALGO_RING, SIM_PROTO_SIMPLE, 1, fid, m);
        expect_time("single member", &r, 10e-6 + 7 * (17e-6 + m / 8 / (0.8 * 25e9)));
        cfg.single_member_efficiency = 1.0;
    }
}

/* NCCL's tree chunk: halved (down to 128 KiB) until each tree holds 8 x depth chunks. */
static void test_tree_chunk(void **state) {
    (void)state;
    sim_config_t cfg;
    sim_config_default(&cfg);
    cfg.tree_chunk_min_bytes = 128.0 * 1024;
    const double m = 8 * MIB;
    int32_t depth, load;
    sim_dbtree_shape(16, &depth, &load);
    double chunk = 512.0 * 1024;
    while (m / 2 / chunk < 8.0 * depth && chunk / 2 >= 128.0 * 1024)
        chunk /= 2;
    assert_true(chunk < 512.0 * 1024);
    const double k = ceil(m / 2 / chunk), c = m / 2 / k;
    const star_run_t r =
        run_star(&cfg, 16, 1, SIM_COLL_ALLREDUCE, SIM_ALGO_TREE, SIM_PROTO_AUTO, 1, SIM_FIDELITY_FAST, m);
    expect_time("tree chunk", &r, 2.0 * depth * (2e-6 + 2 * c / 25e9) + (k - 1) * load * c / 25e9);
}

/* Across domains the tree's ranks are rail-major: 16 GPUs in domains of 4 give a tree whose idle
 * time is its closed form, and sendrecv does not pay the single-member efficiency. */
static void test_tree_across_domains(void **state) {
    (void)state;
    sim_config_t cfg;
    sim_config_default(&cfg);
    cfg.single_member_efficiency = 0.5;
    const star_run_t r = run_star(&cfg, 16, 4, SIM_COLL_ALLREDUCE, SIM_ALGO_TREE, SIM_PROTO_AUTO, 1,
                                  SIM_FIDELITY_FAST, 64 * MIB);
    assert_true(fabs(r.time_s - r.closed_s) < 1e-6 * r.closed_s);
    const star_run_t p = run_star(&cfg, 2, 1, SIM_COLL_SENDRECV, SIM_ALGO_AUTO, SIM_PROTO_AUTO, 1,
                                  SIM_FIDELITY_STEP, 64 * MIB);
    expect_time("sendrecv", &p, 2e-6 + 64 * MIB / 25e9);
}

static void test_nccl_config(void **state) {
    (void)state;
    sim_config_t cfg;
    sim_config_default(&cfg);
    const sim_nccl_platform_t perlmutter = {.sm = 80, .amd_host = 1, .ll128_network = 0};
    sim_config_nccl(&cfg, &perlmutter);
    const sim_proto_params_t *s = &cfg.proto[SIM_PROTO_SIMPLE], *ll = &cfg.proto[SIM_PROTO_LL];
    assert_true(fabs(s->launch_s[0] - 8.4e-6) < 1e-12);
    assert_true(fabs(s->net_step_s[0] - 18e-6) < 1e-12); /* 14 + 2 x 2 us on AMD */
    assert_true(fabs(ll->net_step_s[1] - 7e-6) < 1e-12); /* the tree's: 5 + 2 us */
    assert_true(fabs(s->crossing_nvlink_step_min_s - 6e-6) < 1e-12);
    assert_true(fabs(ll->efficiency[0] - 0.5) < 1e-12);
    assert_int_equal(cfg.proto[SIM_PROTO_LL128].network, 0);
    assert_true(fabs(cfg.link_kind_efficiency[SIM_LINK_NVLINK] - 0.8) < 1e-12);
    assert_int_equal(cfg.ring_latency, SIM_RING_LATENCY_MEAN);
    /* An engine takes it; a small all-reduce on one domain picks LL, a large one Simple. */
    star_run_t r = run_star(&cfg, 8, 8, SIM_COLL_ALLREDUCE, SIM_ALGO_AUTO, SIM_PROTO_AUTO, SIM_CHANNELS_AUTO,
                            SIM_FIDELITY_FAST, 4096);
    assert_int_equal(r.proto, SIM_PROTO_LL);
    r = run_star(&cfg, 8, 8, SIM_COLL_ALLREDUCE, SIM_ALGO_AUTO, SIM_PROTO_AUTO, SIM_CHANNELS_AUTO,
                 SIM_FIDELITY_FAST, 1024 * MIB);
    assert_int_equal(r.proto, SIM_PROTO_SIMPLE);
    sim_proto_t p;
    assert_int_equal(sim_proto_parse("ll128", &p), SIM_OK);
    assert_int_equal(p, SIM_PROTO_LL128);
    assert_string_equal(sim_proto_name(SIM_PROTO_SIMPLE), "simple");
    assert_int_equal(sim_proto_parse("LL", &p), SIM_EINVAL);
}

static void expect_config_error(const sim_config_t *cfg, const char *frag) {
    sim_star_t star;
    const sim_star_params_t sp = {.n_gpus = 2, .nic_bytes_per_s = 25e9};
    sim_star_init(&star, &sp);
    sim_network_desc_t d;
    sim_star_network(&star, &d);
    sim_engine_t *e = NULL;
    char err[256];
    assert_int_equal(sim_engine_new(cfg, &d, &e, err, sizeof err), SIM_EINVAL);
    if (!strstr(err, frag))
        fail_msg("\"%s\" not in \"%s\"", frag, err);
    assert_null(e);
    sim_star_destroy(&star);
}

static void test_config_errors(void **state) {
    (void)state;
    sim_config_t cfg;
    sim_config_default(&cfg);
    cfg.link_kind_efficiency[SIM_LINK_NVLINK] = 0.0;
    expect_config_error(&cfg, "link_kind_efficiency[1] 0 must be in (0, 1]");
    sim_config_default(&cfg);
    cfg.proto[SIM_PROTO_LL].efficiency[1] = 1.5;
    expect_config_error(&cfg, "proto[ll].efficiency[1] 1.5");
    sim_config_default(&cfg);
    cfg.proto[SIM_PROTO_SIMPLE].net_step_s[0] = -1e-6;
    expect_config_error(&cfg, "proto[simple].net_step_s[0]");
    sim_config_default(&cfg);
    cfg.proto[SIM_PROTO_SIMPLE].enabled = 0;
    expect_config_error(&cfg, "no protocol is enabled");
    sim_config_default(&cfg);
    cfg.single_member_efficiency = 2.0;
    expect_config_error(&cfg, "single_member_efficiency 2");
    /* channels below -1 and unknown protocols are refused by sim_coll_add */
    sim_star_t star;
    const sim_star_params_t sp = {.n_gpus = 4, .nic_bytes_per_s = 25e9};
    sim_star_init(&star, &sp);
    sim_network_desc_t d;
    sim_star_network(&star, &d);
    sim_engine_t *e;
    assert_int_equal(sim_engine_new(NULL, &d, &e, NULL, 0), SIM_OK);
    const int32_t gpus[4] = {0, 1, 2, 3};
    sim_coll_desc_t cd = {
        .op = SIM_COLL_ALLREDUCE, .size_bytes = 1e6, .gpus = gpus, .n_gpus = 4, .channels = -2, .stream = 1};
    assert_int_equal(sim_coll_add(e, &cd, NULL, NULL), SIM_EINVAL);
    cd.channels = 1;
    cd.proto = (sim_proto_t)7;
    assert_int_equal(sim_coll_add(e, &cd, NULL, NULL), SIM_EINVAL);
    sim_engine_free(e);
    sim_star_destroy(&star);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_protocol_costs),
        cmocka_unit_test(test_mean_ring_latency),
        cmocka_unit_test(test_node_rings),
        cmocka_unit_test(test_mesh_cycles),
        cmocka_unit_test(test_caps_and_single_member),
        cmocka_unit_test(test_tree_chunk),
        cmocka_unit_test(test_tree_across_domains),
        cmocka_unit_test(test_nccl_config),
        cmocka_unit_test(test_config_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
