/* sim/test_collnet.c - InfiniBand SHARP (SIM_ALGO_COLLNET, docs/engine.md "In-network reductions") on
 * the star with NVLink domains, whose network is one switch: the simulated time against the closed form
 * written out again here (seeded draws of domains, members per domain, size, link rates and latencies,
 * aggregation latency and efficiency, both fidelities), the auto choice (only with config.collnet), and
 * the refusals (one domain, broadcast, LL, config.collnet 0, uneven domains). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sim.h"

#define TOL 1e-6
/* times are whole picoseconds (latencies rounded to nearest, completions up): a few ps either way */
#define NEAR(got, want) (fabs((got) - (want)) <= fmax(TOL * (want), 5e-12))

static uint64_t rng_next(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static double uniform(uint64_t *s) {
    return (double)(rng_next(s) >> 11) / 9007199254740992.0;
}

static double log_uniform(uint64_t *s, double lo, double hi) {
    return exp(log(lo) + uniform(s) * (log(hi) - log(lo)));
}

typedef struct draw {
    int32_t g, nd; /* members per domain (the domain's size), domains */
    double nic_bw, nic_lat, nv_bw, nv_lat, overhead_s, step_s, eff;
} draw_t;

typedef struct result {
    int rc;
    double time_s, closed_form_s;
    sim_coll_algo_t algo;
} result_t;

static result_t run(const draw_t *x, int collnet, sim_coll_op_t op, sim_coll_algo_t algo, sim_proto_t proto,
                    sim_fidelity_t fid, double size, const int32_t *gpus, int32_t n) {
    sim_star_t star;
    const sim_star_params_t sp = {.n_gpus = x->g * x->nd,
                                  .nic_bytes_per_s = x->nic_bw,
                                  .nic_latency_s = x->nic_lat,
                                  .gpus_per_domain = x->g,
                                  .nvlink_bytes_per_s = x->nv_bw,
                                  .nvlink_latency_s = x->nv_lat};
    assert_int_equal(sim_star_init(&star, &sp), SIM_OK);
    sim_network_desc_t d;
    sim_star_network(&star, &d);
    sim_config_t cfg;
    sim_config_default(&cfg);
    cfg.step_overhead_s = x->overhead_s;
    cfg.collnet = collnet;
    cfg.collnet_step_s = x->step_s;
    cfg.collnet_efficiency = x->eff;
    sim_engine_t *e = NULL;
    assert_int_equal(sim_engine_new(&cfg, &d, &e, NULL, 0), SIM_OK);
    result_t out = {0};
    const sim_coll_desc_t cd = {.op = op,
                                .algo = algo,
                                .fidelity = fid,
                                .size_bytes = size,
                                .gpus = gpus,
                                .n_gpus = n,
                                .stream = 1,
                                .proto = proto};
    sim_coll_id_t c;
    out.rc = sim_coll_add(e, &cd, NULL, &c);
    if (out.rc)
        print_message("sim_coll_add: %s\n", sim_engine_last_error(e));
    if (!out.rc) {
        assert_int_equal(sim_engine_run(e), SIM_OK);
        sim_coll_result_t r;
        assert_int_equal(sim_coll_result(e, c, &r), SIM_OK);
        out.time_s = sim_ps_to_s(r.end_ps - r.start_ps);
        out.closed_form_s = r.closed_form_s;
        out.algo = r.algo;
    }
    sim_engine_free(e);
    sim_star_destroy(&star);
    return out;
}

static result_t run_all(const draw_t *x, int collnet, sim_coll_op_t op, sim_coll_algo_t algo,
                        sim_fidelity_t fid, double size) {
    int32_t *g = malloc((size_t)(x->g * x->nd) * sizeof *g);
    for (int32_t i = 0; i < x->g * x->nd; i++)
        g[i] = i;
    const result_t r = run(x, collnet, op, algo, SIM_PROTO_AUTO, fid, size, g, x->g * x->nd);
    free(g);
    return r;
}

/* Inside each domain a ring reduce-scatter and a ring allgather of M share the NVLink links (g - 1
 * steps of M / g each, at half the link); at the same time every rail's members all-reduce M / g in
 * the switch: up the NIC links and back down, each link once, after a route up, a route down and the
 * aggregation's latency. */
static double collnet_time(double m, const draw_t *x) {
    const double g = x->g;
    const double intra =
        x->g > 1 ? (g - 1.0) * (2.0 * x->nv_lat + x->overhead_s + 2.0 * m / g / x->nv_bw) : 0.0;
    const double sharp = 2.0 * (2.0 * x->nic_lat + x->overhead_s) + x->step_s + m / g / (x->nic_bw * x->eff);
    return fmax(intra, sharp);
}

static void test_closed_form(void **state) {
    (void)state;
    uint64_t s = 7;
    static const int32_t gs[] = {1, 2, 4, 8};
    int intra_bound = 0, net_bound = 0;
    for (int i = 0; i < 80; i++) {
        draw_t x = {.g = gs[rng_next(&s) % 4], .nd = 2 + (int32_t)(rng_next(&s) % 63)};
        x.nic_bw = log_uniform(&s, 10e9, 400e9);
        x.nic_lat = uniform(&s) < 0.2 ? 0.0 : log_uniform(&s, 0.1e-6, 5e-6);
        x.nv_bw = x.nic_bw * log_uniform(&s, 1.0, 20.0);
        x.nv_lat = x.nic_lat * uniform(&s);
        x.overhead_s = uniform(&s) < 0.3 ? 0.0 : log_uniform(&s, 0.1e-6, 10e-6);
        x.step_s = uniform(&s) < 0.3 ? 0.0 : log_uniform(&s, 1e-6, 40e-6);
        x.eff = uniform(&s) < 0.3 ? 1.0 : 0.5 + 0.5 * uniform(&s);
        const double m = log_uniform(&s, 1024.0, 8.0 * 1024 * 1024 * 1024), want = collnet_time(m, &x);
        const double g = x.g;
        if (x.g > 1 && (g - 1.0) * (2.0 * x.nv_lat + x.overhead_s + 2.0 * m / g / x.nv_bw) >
                           2.0 * (2.0 * x.nic_lat + x.overhead_s) + x.step_s + m / g / (x.nic_bw * x.eff))
            intra_bound++;
        else
            net_bound++;
        for (int f = 0; f < 2; f++) {
            const result_t r = run_all(&x, 1, SIM_COLL_ALLREDUCE, SIM_ALGO_COLLNET,
                                       f ? SIM_FIDELITY_STEP : SIM_FIDELITY_FAST, m);
            assert_int_equal(r.rc, SIM_OK);
            assert_int_equal(r.algo, SIM_ALGO_COLLNET);
            if (!NEAR(r.time_s, want) || !NEAR(r.closed_form_s, want))
                fail_msg("draw %d: g %d, %d domains, m %.0f: simulated %.9g, closed form %.9g, want %.9g", i,
                         x.g, x.nd, m, r.time_s, r.closed_form_s, want);
        }
    }
    print_message("%d draws bound inside the domains, %d by the network\n", intra_bound, net_bound);
    assert_true(intra_bound >= 10 && net_bound >= 10);
}

static void test_auto_and_refusals(void **state) {
    (void)state;
    const draw_t x = {
        .g = 4, .nd = 8, .nic_bw = 50e9, .nic_lat = 1e-6, .nv_bw = 300e9, .step_s = 30e-6, .eff = 0.85};
    const double big = 1 << 30;
    assert_int_equal(run_all(&x, 1, SIM_COLL_ALLREDUCE, SIM_ALGO_AUTO, SIM_FIDELITY_FAST, big).algo,
                     SIM_ALGO_COLLNET);
    const result_t off = run_all(&x, 0, SIM_COLL_ALLREDUCE, SIM_ALGO_AUTO, SIM_FIDELITY_FAST, big);
    assert_true(off.algo != SIM_ALGO_COLLNET);
    assert_true(run_all(&x, 1, SIM_COLL_ALLREDUCE, SIM_ALGO_COLLNET, SIM_FIDELITY_FAST, big).time_s <
                off.time_s);
    assert_int_equal(run_all(&x, 0, SIM_COLL_ALLREDUCE, SIM_ALGO_COLLNET, SIM_FIDELITY_FAST, big).rc,
                     SIM_EINVAL);
    assert_int_equal(run_all(&x, 1, SIM_COLL_ALLGATHER, SIM_ALGO_COLLNET, SIM_FIDELITY_FAST, big).rc,
                     SIM_EINVAL);
    assert_true(run_all(&x, 1, SIM_COLL_ALLGATHER, SIM_ALGO_AUTO, SIM_FIDELITY_FAST, big).algo !=
                SIM_ALGO_COLLNET);
    int32_t one[4] = {0, 1, 2, 3}, uneven[5] = {0, 1, 2, 3, 4}, all[32];
    for (int i = 0; i < 32; i++)
        all[i] = i;
    assert_int_equal(
        run(&x, 1, SIM_COLL_ALLREDUCE, SIM_ALGO_COLLNET, SIM_PROTO_AUTO, SIM_FIDELITY_FAST, big, one, 4).rc,
        SIM_EINVAL);
    assert_int_equal(
        run(&x, 1, SIM_COLL_ALLREDUCE, SIM_ALGO_COLLNET, SIM_PROTO_AUTO, SIM_FIDELITY_FAST, big, uneven, 5)
            .rc,
        SIM_EINVAL);
    assert_int_equal(
        run(&x, 1, SIM_COLL_ALLREDUCE, SIM_ALGO_COLLNET, SIM_PROTO_LL, SIM_FIDELITY_FAST, big, all, 32).rc,
        SIM_EINVAL);
    sim_coll_algo_t a;
    assert_int_equal(sim_coll_algo_parse("collnet", &a), SIM_OK);
    assert_int_equal(a, SIM_ALGO_COLLNET);
    sim_config_t cfg;
    sim_config_default(&cfg);
    assert_int_equal(cfg.collnet, 0);
    const sim_nccl_platform_t h100 = {.sm = 90};
    sim_config_nccl(&cfg, &h100);
    assert_int_equal(cfg.collnet, 0); /* NCCL: only with its SHARP plugin and NCCL_COLLNET_ENABLE=1 */
    assert_true(cfg.collnet_efficiency == 0.85 && fabs(cfg.collnet_step_s - 33e-6) < 1e-12);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_closed_form),
        cmocka_unit_test(test_auto_and_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
