/* sim/test_nvls.c - NVLink SHARP (SIM_ALGO_NVLS, docs/engine.md "In-network reductions") on the star
 * with NVLink domains, whose routes inside a domain are GPU -> switch -> GPU: the simulated time
 * against the closed form written out again here (seeded draws of op, group size, size, link rates,
 * latencies, step latency and efficiency, both fidelities), the auto choice (NVLS for large allreduce
 * on 4+ GPUs, never for allgather and reducescatter, never with config.nvls 0 or across domains),
 * contention (two NVLS allreduces sharing a domain's switch links get half each), and the refusals
 * (a mesh without a switch, a group across domains, an LL request, config.nvls 0). */
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
    int32_t domain, n; /* GPUs per domain; members: GPUs 0..n-1 (or as given) */
    double nv_bw, nv_lat, overhead_s, step_s, eff;
} draw_t;

typedef struct result {
    int rc;
    double time_s, closed_form_s;
    sim_coll_algo_t algo;
} result_t;

/* Run collectives of one op, algo and size over the member lists gpus[k][0..n) at once on a star of
 * 2 domains of x->domain GPUs (NIC 50 GB/s). Results of the first. */
static result_t run(const draw_t *x, int nvls, sim_coll_op_t op, sim_coll_algo_t algo, sim_proto_t proto,
                    sim_fidelity_t fid, double size, const int32_t *const *gpus, int32_t groups, int32_t n) {
    sim_star_t star;
    const sim_star_params_t sp = {.n_gpus = 2 * x->domain,
                                  .nic_bytes_per_s = 50e9,
                                  .nic_latency_s = 1e-6,
                                  .gpus_per_domain = x->domain,
                                  .nvlink_bytes_per_s = x->nv_bw,
                                  .nvlink_latency_s = x->nv_lat};
    assert_int_equal(sim_star_init(&star, &sp), SIM_OK);
    sim_network_desc_t d;
    sim_star_network(&star, &d);
    sim_config_t cfg;
    sim_config_default(&cfg);
    cfg.step_overhead_s = x->overhead_s;
    cfg.nvls = nvls;
    cfg.nvls_step_s = x->step_s;
    cfg.nvls_efficiency = x->eff;
    sim_engine_t *e = NULL;
    assert_int_equal(sim_engine_new(&cfg, &d, &e, NULL, 0), SIM_OK);
    result_t out = {0};
    sim_coll_id_t first = -1;
    for (int32_t k = 0; k < groups && !out.rc; k++) {
        const sim_coll_desc_t cd = {.op = op,
                                    .algo = algo,
                                    .fidelity = fid,
                                    .size_bytes = size,
                                    .gpus = gpus[k],
                                    .n_gpus = n,
                                    .stream = 1 + k % 2,
                                    .proto = proto};
        sim_coll_id_t c;
        out.rc = sim_coll_add(e, &cd, NULL, &c);
        if (out.rc)
            print_message("sim_coll_add: %s\n", sim_engine_last_error(e));
        if (k == 0)
            first = c;
    }
    if (!out.rc) {
        assert_int_equal(sim_engine_run(e), SIM_OK);
        sim_coll_result_t r;
        assert_int_equal(sim_coll_result(e, first, &r), SIM_OK);
        out.time_s = sim_ps_to_s(r.end_ps - r.start_ps);
        out.closed_form_s = r.closed_form_s;
        out.algo = r.algo;
    }
    sim_engine_free(e);
    sim_star_destroy(&star);
    return out;
}

static result_t run_first(const draw_t *x, int nvls, sim_coll_op_t op, sim_coll_algo_t algo, double size) {
    int32_t g[128];
    for (int32_t i = 0; i < x->n; i++)
        g[i] = i;
    const int32_t *gs[1] = {g};
    return run(x, nvls, op, algo, SIM_PROTO_AUTO, SIM_FIDELITY_DEFAULT, size, gs, 1, x->n);
}

/* The switch reduces what enters it and multicasts what leaves it: per shard of M / n, every GPU's
 * link into the switch carries u_up shards and every link out of it u_down. */
static double nvls_time(sim_coll_op_t op, double m, const draw_t *x) {
    const double n = x->n,
                 up = op == SIM_COLL_ALLREDUCE   ? n + 1
                      : op == SIM_COLL_ALLGATHER ? 1
                                                 : n,
                 down = op == SIM_COLL_ALLREDUCE   ? n + 1
                        : op == SIM_COLL_ALLGATHER ? n
                                                   : 1;
    const double alpha = 2.0 * x->nv_lat + x->overhead_s + x->step_s;
    return alpha + m / n * fmax(up, down) / (x->nv_bw * x->eff);
}

static void test_closed_form(void **state) {
    (void)state;
    uint64_t s = 42;
    const sim_coll_op_t ops[3] = {SIM_COLL_ALLREDUCE, SIM_COLL_ALLGATHER, SIM_COLL_REDUCESCATTER};
    for (int i = 0; i < 90; i++) {
        draw_t x = {.domain = 2 + (int32_t)(rng_next(&s) % 71)};
        x.n = 2 + (int32_t)(rng_next(&s) % (uint64_t)(x.domain - 1));
        x.nv_bw = log_uniform(&s, 50e9, 2000e9);
        x.nv_lat = uniform(&s) < 0.2 ? 0.0 : log_uniform(&s, 0.05e-6, 2e-6);
        x.overhead_s = uniform(&s) < 0.3 ? 0.0 : log_uniform(&s, 0.1e-6, 10e-6);
        x.step_s = uniform(&s) < 0.3 ? 0.0 : log_uniform(&s, 1e-6, 50e-6);
        x.eff = uniform(&s) < 0.3 ? 1.0 : 0.5 + 0.5 * uniform(&s);
        const sim_coll_op_t op = ops[i % 3];
        const double m = log_uniform(&s, 1024.0, 8.0 * 1024 * 1024 * 1024);
        const double want = nvls_time(op, m, &x);
        for (int f = 0; f < 2; f++) {
            int32_t g[128];
            for (int32_t k = 0; k < x.n; k++)
                g[k] = k;
            const int32_t *gs[1] = {g};
            const result_t r = run(&x, 1, op, SIM_ALGO_NVLS, SIM_PROTO_AUTO,
                                   f ? SIM_FIDELITY_STEP : SIM_FIDELITY_FAST, m, gs, 1, x.n);
            assert_int_equal(r.rc, SIM_OK);
            assert_int_equal(r.algo, SIM_ALGO_NVLS);
            if (!NEAR(r.time_s, want) || !NEAR(r.closed_form_s, want))
                fail_msg("draw %d: %s n %d m %.0f: simulated %.9g, closed form %.9g, want %.9g", i,
                         sim_coll_op_name(op), x.n, m, r.time_s, r.closed_form_s, want);
        }
        /* the engine's closed form, from its own alpha-beta parameters */
        const sim_ab_params_t ab = {.alpha_s = 2.0 * x.nv_lat + x.overhead_s + x.step_s,
                                    .bytes_per_s = x.nv_bw * x.eff,
                                    .intra_bytes_per_s = x.nv_bw * x.eff};
        assert_true(fabs(sim_closed_form_s(op, SIM_ALGO_NVLS, m, x.n, &ab) / want - 1.0) < 1e-12);
    }
}

/* Two groups of one domain share nothing (each GPU has its own links into and out of the switch);
 * two NVLS allreduces over the same GPUs (on two streams) share every link: each takes twice as long. */
static void test_contention(void **state) {
    (void)state;
    const draw_t x = {.domain = 8, .n = 4, .nv_bw = 400e9, .eff = 1.0};
    const double m = 1 << 30, alone = nvls_time(SIM_COLL_ALLREDUCE, m, &x);
    int32_t a[4] = {0, 1, 2, 3}, b[4] = {4, 5, 6, 7};
    const int32_t *disjoint[2] = {a, b}, *same[2] = {a, a};
    for (int f = 0; f < 2; f++) {
        const sim_fidelity_t fid = f ? SIM_FIDELITY_STEP : SIM_FIDELITY_FAST;
        result_t r = run(&x, 1, SIM_COLL_ALLREDUCE, SIM_ALGO_NVLS, SIM_PROTO_AUTO, fid, m, disjoint, 2, 4);
        assert_int_equal(r.rc, SIM_OK);
        assert_true(fabs(r.time_s / alone - 1.0) < TOL);
        r = run(&x, 1, SIM_COLL_ALLREDUCE, SIM_ALGO_NVLS, SIM_PROTO_AUTO, fid, m, same, 2, 4);
        assert_int_equal(r.rc, SIM_OK);
        assert_true(fabs(r.time_s / (2.0 * alone) - 1.0) < TOL);
    }
}

/* auto: NVLS beats the ring's 2 (n - 1) / n M b for allreduce when (n + 1) / n < 2 (n - 1) / n, n > 3;
 * allgather and reducescatter keep the ring ((n - 1) / n M b < M b), as NCCL's tuner on one node. */
static void test_auto(void **state) {
    (void)state;
    draw_t x = {.domain = 8, .n = 8, .nv_bw = 400e9, .step_s = 25e-6, .eff = 0.85};
    const double big = 1 << 30;
    assert_int_equal(run_first(&x, 1, SIM_COLL_ALLREDUCE, SIM_ALGO_AUTO, big).algo, SIM_ALGO_NVLS);
    assert_int_equal(run_first(&x, 0, SIM_COLL_ALLREDUCE, SIM_ALGO_AUTO, big).algo, SIM_ALGO_RING);
    assert_int_equal(run_first(&x, 1, SIM_COLL_ALLGATHER, SIM_ALGO_AUTO, big).algo, SIM_ALGO_RING);
    assert_int_equal(run_first(&x, 1, SIM_COLL_REDUCESCATTER, SIM_ALGO_AUTO, big).algo, SIM_ALGO_RING);
    const result_t nv = run_first(&x, 1, SIM_COLL_ALLREDUCE, SIM_ALGO_NVLS, big),
                   ring = run_first(&x, 1, SIM_COLL_ALLREDUCE, SIM_ALGO_RING, big);
    assert_true(nv.time_s < ring.time_s);
    /* at 8 GPUs the switch moves (n + 1) / n = 1.125 M per link against the ring's 1.75 M */
    assert_true(fabs(ring.time_s / nv.time_s - 1.75 / 1.125 * 0.85) < 0.01);
    x.n = 3; /* (n + 1) / n = 2 (n - 1) / n: the ring keeps it, NVLS paying the efficiency */
    assert_int_equal(run_first(&x, 1, SIM_COLL_ALLREDUCE, SIM_ALGO_AUTO, big).algo, SIM_ALGO_RING);
    /* across two domains NVLS is no candidate (NCCL: NVLS across nodes needs CollNet) */
    x.n = 16;
    const result_t across = run_first(&x, 1, SIM_COLL_ALLREDUCE, SIM_ALGO_AUTO, big);
    assert_int_equal(across.rc, SIM_OK);
    assert_true(across.algo != SIM_ALGO_NVLS);
}

/* A mesh: a link per ordered pair of GPUs, routes of one link, no switch. */
static int mesh_route(void *ctx, int32_t src, int32_t dst, int32_t *links, int32_t cap) {
    const int32_t n = *(const int32_t *)ctx;
    (void)cap;
    links[0] = src * n + dst;
    return 1;
}

static void test_refusals(void **state) {
    (void)state;
    const draw_t x = {.domain = 8, .n = 16, .nv_bw = 400e9, .eff = 1.0};
    /* across domains, config.nvls 0, an LL request */
    assert_int_equal(run_first(&x, 1, SIM_COLL_ALLREDUCE, SIM_ALGO_NVLS, 1e6).rc, SIM_EINVAL);
    draw_t y = x;
    y.n = 8;
    assert_int_equal(run_first(&y, 0, SIM_COLL_ALLREDUCE, SIM_ALGO_NVLS, 1e6).rc, SIM_EINVAL);
    assert_int_equal(run_first(&y, 1, SIM_COLL_BROADCAST, SIM_ALGO_NVLS, 1e6).rc, SIM_EINVAL);
    int32_t g[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    const int32_t *gs[1] = {g};
    assert_int_equal(
        run(&y, 1, SIM_COLL_ALLREDUCE, SIM_ALGO_NVLS, SIM_PROTO_LL, SIM_FIDELITY_FAST, 1e6, gs, 1, 8).rc,
        SIM_EINVAL);
    /* a mesh of 4 GPUs: explicit NVLS is refused naming the route, auto takes another algorithm */
    int32_t n = 4;
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
                                  .route_ctx = &n,
                                  .gpus_per_domain = 4};
    sim_config_t cfg;
    sim_config_default(&cfg);
    cfg.nvls = 1;
    sim_engine_t *e = NULL;
    assert_int_equal(sim_engine_new(&cfg, &d, &e, NULL, 0), SIM_OK);
    const sim_coll_desc_t cd = {.op = SIM_COLL_ALLREDUCE,
                                .algo = SIM_ALGO_NVLS,
                                .size_bytes = 1 << 28,
                                .gpus = g,
                                .n_gpus = 4,
                                .stream = 1};
    assert_int_equal(sim_coll_add(e, &cd, NULL, NULL), SIM_EINVAL);
    assert_non_null(strstr(sim_engine_last_error(e), "GPU -> NVSwitch -> GPU"));
    sim_coll_desc_t ad = cd;
    ad.algo = SIM_ALGO_AUTO;
    sim_coll_id_t c;
    assert_int_equal(sim_coll_add(e, &ad, NULL, &c), SIM_OK);
    assert_int_equal(sim_engine_run(e), SIM_OK);
    sim_coll_result_t r;
    assert_int_equal(sim_coll_result(e, c, &r), SIM_OK);
    assert_true(r.algo != SIM_ALGO_NVLS);
    sim_engine_free(e);
    /* names */
    sim_coll_algo_t a;
    assert_int_equal(sim_coll_algo_parse("nvls", &a), SIM_OK);
    assert_int_equal(a, SIM_ALGO_NVLS);
    assert_string_equal(sim_coll_algo_name(SIM_ALGO_NVLS), "nvls");
    /* configuration */
    sim_config_default(&cfg);
    cfg.nvls_efficiency = 0.0;
    assert_int_equal(sim_engine_new(&cfg, &d, &e, NULL, 0), SIM_EINVAL);
    sim_config_default(&cfg);
    const sim_nccl_platform_t a100 = {.sm = 80}, h100 = {.sm = 90}, b200 = {.sm = 100};
    sim_config_nccl(&cfg, &a100);
    assert_int_equal(cfg.nvls, 0);
    sim_config_nccl(&cfg, &h100);
    assert_int_equal(cfg.nvls, 1);
    assert_true(cfg.nvls_efficiency == 0.85 && cfg.nvls_step_s == 25e-6);
    sim_config_nccl(&cfg, &b200);
    assert_true(cfg.nvls && cfg.nvls_efficiency == 0.74);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_closed_form),
        cmocka_unit_test(test_contention),
        cmocka_unit_test(test_auto),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
