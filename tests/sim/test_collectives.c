/* sim/test_collectives.c - collectives as flows on an idle non-blocking star against their alpha-beta
 * closed forms (docs/engine.md, "Collectives as flows"), as property tests over seeded random draws of
 * size (1 KiB..8 GiB), group size (2..1024), link bandwidth, latency and step overhead; fast vs
 * step agreement under contention; the auto choice; analytic mode; invalid requests.
 *
 * The expected times are written out here again, independently of sim/closed_form.c: with the
 * star, a step's latency is alpha = 2 x link latency + step overhead and its bandwidth the NIC's
 * (NVLink's inside a domain). Step fidelity runs are kept to groups of at most 256 (rings have
 * 2n(n-1) step flows) and chain chunks to 32, tree chunks to 16 per draw, to keep the test well under a
 * second; tools/bench_sim covers step fidelity at 1024 and 4096 GPUs. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sim.h"

#define KIB 1024.0
#define GIB (1024.0 * 1024.0 * 1024.0)
#define TOL 1e-3 /* the acceptance bound: 0.1% */

static uint64_t rng_next(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static double uniform(uint64_t *s) {
    return (double)(rng_next(s) >> 11) / 9007199254740992.0;
}

/* Log-uniform in [lo, hi]. */
static double log_uniform(uint64_t *s, double lo, double hi) {
    return exp(log(lo) + uniform(s) * (log(hi) - log(lo)));
}

static int32_t log_uniform_int(uint64_t *s, int32_t lo, int32_t hi) {
    int32_t v = (int32_t)floor(log_uniform(s, lo, hi + 1.0));
    return v > hi ? hi : v;
}

/* One drawn network: NIC and (when g > 1) NVLink parameters, step overhead and chunk. */
typedef struct net {
    int32_t n, g;
    double nic_bw, nic_lat, nv_bw, nv_lat, overhead_s, chunk;
    int32_t window; /* config.chain_window (0: NCCL's 8) */
} net_t;

static net_t draw_net(uint64_t *s, int32_t n, int32_t g) {
    net_t x = {.n = n, .g = g};
    x.nic_bw = log_uniform(s, 10e9, 400e9);
    x.nic_lat = uniform(s) < 0.2 ? 0.0 : log_uniform(s, 0.1e-6, 5e-6);
    x.nv_bw = x.nic_bw * log_uniform(s, 1.0, 20.0); /* NVLink at least as fast as the NIC ... */
    x.nv_lat = x.nic_lat * uniform(s);              /* ... and no slower */
    x.overhead_s = uniform(s) < 0.3 ? 0.0 : log_uniform(s, 0.1e-6, 10e-6);
    x.chunk = 512.0 * KIB;
    return x;
}

typedef struct run {
    double time_s, closed_form_s;
    sim_coll_algo_t algo;
    int64_t flows;
} run_t;

/* Run one collective over GPUs 0..n-1 of a fresh star built from *x. */
static run_t run_coll(const net_t *x, sim_coll_op_t op, sim_coll_algo_t algo, sim_fidelity_t fid, double size,
                      int32_t root) {
    sim_star_t star;
    const sim_star_params_t sp = {.n_gpus = x->n,
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
    cfg.chunk_bytes = x->chunk;
    cfg.chain_window = x->window;
    sim_engine_t *e = NULL;
    assert_int_equal(sim_engine_new(&cfg, &d, &e, NULL, 0), SIM_OK);
    int32_t *gpus = malloc((size_t)x->n * sizeof *gpus);
    for (int32_t i = 0; i < x->n; i++)
        gpus[i] = i;
    const sim_coll_desc_t cd = {.op = op,
                                .algo = algo,
                                .fidelity = fid,
                                .size_bytes = size,
                                .gpus = gpus,
                                .n_gpus = x->n,
                                .root = root,
                                .stream = 1};
    sim_coll_id_t c;
    if (sim_coll_add(e, &cd, NULL, &c) != SIM_OK)
        fail_msg("sim_coll_add: %s", sim_engine_last_error(e));
    assert_int_equal(sim_engine_run(e), SIM_OK);
    sim_coll_result_t r;
    assert_int_equal(sim_coll_result(e, c, &r), SIM_OK);
    const run_t out = {sim_ps_to_s(r.end_ps - r.start_ps), r.closed_form_s, r.algo, r.flows};
    sim_engine_free(e);
    sim_star_destroy(&star);
    free(gpus);
    return out;
}

/* ---- the closed forms, written out independently ------------------------------------------------ */

static double alpha_nic(const net_t *x) {
    return 2.0 * x->nic_lat + x->overhead_s;
}

static double alpha_nv(const net_t *x) {
    return 2.0 * x->nv_lat + x->overhead_s;
}

static double ring_time(sim_coll_op_t op, double m, int32_t n, double a, double bw) {
    if (n < 2)
        return 0.0;
    const double steps = (op == SIM_COLL_ALLREDUCE ? 2.0 : 1.0) * (n - 1);
    return steps * (a + m / n / bw);
}

/* The chain with w chunks in flight per edge: chunk i starts across edge 0 at a + i T + floor(i / w)
 * max(0, a - (w - 1) T) (a window of w chunks takes the longer of w transfers and one latency plus
 * a transfer), and every later edge repeats that a + T later; T = c / bw. */
static double chain_time(double m, int32_t n, double a, double bw, double chunk, int32_t w) {
    const double k = fmax(1.0, ceil(m / chunk)), t = m / k / bw;
    return (n - 1.0) * (a + t) + (k - 1.0) * t + floor((k - 1.0) / w) * fmax(0.0, a - (w - 1.0) * t);
}

static double expected_s(const net_t *x, sim_coll_op_t op, sim_coll_algo_t algo, double m) {
    const int32_t n = x->n;
    const double a = alpha_nic(x), b = x->nic_bw;
    switch (algo) {
    case SIM_ALGO_RING:
        return ring_time(op, m, n, a, b);
    case SIM_ALGO_HALVING_DOUBLING: {
        const double lg = log2(n), bwt = (n - 1.0) / n * m / b;
        return op == SIM_COLL_ALLREDUCE ? 2.0 * (lg * a + bwt) : lg * a + bwt;
    }
    case SIM_ALGO_CHAIN: /* W chunks in flight per edge */
        return chain_time(m, n, a, b, x->chunk, x->window > 0 ? x->window : SIM_NCCL_STEPS);
    case SIM_ALGO_TREE: { /* chunk 0 of both trees crosses 2D edges; the others follow bandwidth-bound */
        int32_t depth, load;
        sim_dbtree_shape(n, &depth, &load);
        const double k = fmax(1.0, ceil(m / 2.0 / x->chunk)), c = m / 2.0 / k;
        return 2.0 * depth * (a + 2.0 * c / b) + (k - 1.0) * load * c / b;
    }
    case SIM_ALGO_HIERARCHICAL: {
        const int32_t g = x->g, nd = n / g;
        const double ia = alpha_nv(x), ib = x->nv_bw;
        if (op == SIM_COLL_ALLREDUCE)
            return ring_time(SIM_COLL_REDUCESCATTER, m, g, ia, ib) + ring_time(op, m / g, nd, a, b) +
                   ring_time(SIM_COLL_ALLGATHER, m, g, ia, ib);
        return ring_time(op, m, g, ia, ib) + ring_time(op, m / g, nd, a, b);
    }
    case SIM_ALGO_DIRECT:
        return a + m / b;
    default:
        return -1.0;
    }
}

static void check(const char *what, const net_t *x, sim_coll_op_t op, sim_coll_algo_t algo,
                  sim_fidelity_t fid, double m) {
    const run_t r = run_coll(x, op, algo, fid, m, 0);
    const double want = expected_s(x, op, algo, m);
    if (fabs(r.time_s - want) > TOL * want || fabs(r.closed_form_s - want) > 1e-5 * want)
        fail_msg("%s %s %s n=%d g=%d size=%.0f: simulated %.9g s, closed form %.9g s (engine's %.9g)", what,
                 sim_coll_op_name(op), sim_coll_algo_name(algo), x->n, x->g, m, r.time_s, want,
                 r.closed_form_s);
}

/* ---- property tests ----------------------------------------------------------------------------- */

static void test_ring_fast(void **state) {
    (void)state;
    uint64_t s = 101;
    for (int i = 0; i < 120; i++) {
        const net_t x = draw_net(&s, log_uniform_int(&s, 2, 1024), 1);
        check("fast", &x, (sim_coll_op_t)(i % 3), SIM_ALGO_RING, SIM_FIDELITY_FAST,
              log_uniform(&s, KIB, 8 * GIB));
    }
}

static void test_ring_step(void **state) {
    (void)state;
    uint64_t s = 102;
    for (int i = 0; i < 45; i++) {
        const net_t x = draw_net(&s, log_uniform_int(&s, 2, i == 0 ? 256 : 128), 1);
        check("step", &x, (sim_coll_op_t)(i % 3), SIM_ALGO_RING, SIM_FIDELITY_STEP,
              log_uniform(&s, KIB, 8 * GIB));
    }
}

static void test_halving_doubling(void **state) {
    (void)state;
    uint64_t s = 103;
    for (int i = 0; i < 60; i++) {
        const net_t x = draw_net(&s, 1 << (1 + rng_next(&s) % 10), 1);
        check(i % 2 ? "fast" : "step", &x, (sim_coll_op_t)(i % 3), SIM_ALGO_HALVING_DOUBLING,
              i % 2 ? SIM_FIDELITY_FAST : SIM_FIDELITY_STEP, log_uniform(&s, KIB, 8 * GIB));
    }
}

static void test_chain(void **state) {
    (void)state;
    uint64_t s = 104;
    for (int i = 0; i < 80; i++) {
        const int step = i % 2 == 0;
        net_t x = draw_net(&s, log_uniform_int(&s, 2, step ? 256 : 1024), 1);
        const double m = log_uniform(&s, KIB, 8 * GIB);
        if (step) /* at most 32 chunks */
            x.chunk = fmax(x.chunk, m / 32.0);
        check(step ? "step" : "fast", &x, i % 4 < 2 ? SIM_COLL_BROADCAST : SIM_COLL_REDUCE, SIM_ALGO_CHAIN,
              step ? SIM_FIDELITY_STEP : SIM_FIDELITY_FAST, m);
    }
}

/* The chain over windows of 1 to 16 chunks and smaller chunks, so both regimes come up: latency-bound
 * (alpha > (W - 1) c beta, a window of chunks costs alpha + c beta) and bandwidth-bound (chunks cross
 * back to back, only n - 1 latencies show). W = 1 is the one-chunk-in-flight chain,
 * (n + k - 2)(alpha + c beta). */
static void test_chain_windows(void **state) {
    (void)state;
    static const int32_t windows[6] = {1, 2, 3, 8, 16, 0};
    uint64_t s = 112;
    int latency_bound = 0, bandwidth_bound = 0;
    for (int i = 0; i < 80; i++) {
        const int step = i % 2 == 0;
        net_t x = draw_net(&s, log_uniform_int(&s, 2, step ? 128 : 1024), 1);
        x.window = windows[rng_next(&s) % 6];
        x.chunk = log_uniform(&s, KIB, 512 * KIB);
        const double m = log_uniform(&s, 64 * KIB, GIB);
        if (step) /* at most 32 chunks */
            x.chunk = fmax(x.chunk, m / 32.0);
        const double k = fmax(1.0, ceil(m / x.chunk)), w = x.window > 0 ? x.window : SIM_NCCL_STEPS;
        if (k - 1.0 >= w) { /* floor((k - 1) / W) > 0: the regimes differ */
            if (alpha_nic(&x) > (w - 1.0) * (m / k / x.nic_bw))
                latency_bound++;
            else
                bandwidth_bound++;
        }
        check(step ? "step" : "fast", &x, i % 4 < 2 ? SIM_COLL_BROADCAST : SIM_COLL_REDUCE, SIM_ALGO_CHAIN,
              step ? SIM_FIDELITY_STEP : SIM_FIDELITY_FAST, m);
        if (x.window == 1) { /* the old form, written out */
            const double want = (x.n + k - 2.0) * (alpha_nic(&x) + m / k / x.nic_bw);
            const run_t r = run_coll(&x, SIM_COLL_BROADCAST, SIM_ALGO_CHAIN,
                                     step ? SIM_FIDELITY_STEP : SIM_FIDELITY_FAST, m, 0);
            assert_true(fabs(r.time_s - want) <= TOL * want);
        }
    }
    print_message("chain draws with k > W: %d latency-bound, %d bandwidth-bound\n", latency_bound,
                  bandwidth_bound);
    assert_true(latency_bound >= 10);
    assert_true(bandwidth_bound >= 10);
}

/* A chain of k >> W chunks with the latency large against a chunk's transfer is latency-pipelined:
 * W chunks share each latency, so it takes (n - 2 + ceil(k / W)) latencies plus transfers, far below
 * the one-chunk-in-flight (n + k - 2)(alpha + c beta); both fidelities give the closed form, and a
 * window of 1 gives the old chain. With a small latency the chain is bandwidth-bound: only the first
 * chunk's n - 1 latencies show. */
static void test_chain_latency_pipelined(void **state) {
    (void)state;
    net_t x = {.n = 8, .g = 1, .nic_bw = 100e9, .overhead_s = 100e-6, .chunk = 512 * KIB};
    const double m = 64 * x.chunk, k = 64, a = alpha_nic(&x), t = x.chunk / x.nic_bw;
    const double w = SIM_NCCL_STEPS, old = (x.n + k - 2.0) * (a + t);
    const double lat = (x.n - 2.0 + ceil(k / w)) * a; /* 14 latencies of 100 us, against 70 before */
    for (int f = 0; f < 2; f++) {
        const sim_fidelity_t fid = f ? SIM_FIDELITY_STEP : SIM_FIDELITY_FAST;
        x.window = 0;
        const run_t r = run_coll(&x, SIM_COLL_BROADCAST, SIM_ALGO_CHAIN, fid, m, 3);
        const double want = chain_time(m, x.n, a, x.nic_bw, x.chunk, SIM_NCCL_STEPS);
        assert_true(fabs(r.time_s - want) <= TOL * want);
        assert_true(fabs(r.closed_form_s - want) <= 1e-9 * want);
        assert_true(r.time_s >= lat && r.time_s <= lat + (x.n + k - 2.0) * t);
        assert_true(r.time_s < 0.25 * old);
        x.window = 1;
        const run_t r1 = run_coll(&x, SIM_COLL_REDUCE, SIM_ALGO_CHAIN, fid, m, 3);
        assert_true(fabs(r1.time_s - old) <= TOL * old);
        assert_true(fabs(r1.closed_form_s - old) <= 1e-9 * old);
    }
    /* Bandwidth-bound: alpha = 2 us < 7 transfers of 5.2 us. */
    x.overhead_s = 2e-6;
    x.window = 0;
    const double a2 = alpha_nic(&x), want = (x.n - 1.0) * (a2 + t) + (k - 1.0) * t;
    for (int f = 0; f < 2; f++) {
        const run_t r =
            run_coll(&x, SIM_COLL_BROADCAST, SIM_ALGO_CHAIN, f ? SIM_FIDELITY_STEP : SIM_FIDELITY_FAST, m, 0);
        assert_true(fabs(r.time_s - want) <= TOL * want);
        assert_true(fabs(r.closed_form_s - want) <= 1e-9 * want);
    }
}

static void test_tree_fast(void **state) {
    (void)state;
    uint64_t s = 105;
    for (int i = 0; i < 80; i++) {
        const net_t x = draw_net(&s, log_uniform_int(&s, 2, 1024), 1);
        check("fast", &x, SIM_COLL_ALLREDUCE, SIM_ALGO_TREE, SIM_FIDELITY_FAST,
              log_uniform(&s, KIB, 8 * GIB));
    }
}

/* The step-exact tree has no exact closed form: links with fewer than `load` flows run ahead while
 * the pipeline fills and drains, and a chunk pays its latency unless it follows the previous one on
 * its edge back to back. It is held between two bounds instead: no slower than every chunk paying
 * (alpha + load c / B), (k + 2D - 1)(alpha + load c / B), and no faster than the critical path of
 * chunk 0 (2D hops of alpha + c/B) nor the busiest link (load x M/2 bytes). Its distance to the
 * fast form is printed (docs/engine.md). */
static void test_tree_step_bounds(void **state) {
    (void)state;
    uint64_t s = 106;
    double lo = 0.0, hi = 0.0;
    for (int i = 0; i < 24; i++) {
        net_t x = draw_net(&s, log_uniform_int(&s, 2, 64), 1);
        const double m = log_uniform(&s, KIB, 8 * GIB);
        x.chunk = fmax(x.chunk, m / 2.0 / 16.0);
        const run_t r = run_coll(&x, SIM_COLL_ALLREDUCE, SIM_ALGO_TREE, SIM_FIDELITY_STEP, m, 0);
        int32_t depth, load;
        sim_dbtree_shape(x.n, &depth, &load);
        const double k = fmax(1.0, ceil(m / 2.0 / x.chunk)), c = m / 2.0 / k;
        const double upper = (k + 2.0 * depth - 1.0) * (alpha_nic(&x) + load * c / x.nic_bw);
        const double lower = fmax(2.0 * depth * (alpha_nic(&x) + c / x.nic_bw), load * m / 2.0 / x.nic_bw);
        if (r.time_s > upper * (1 + TOL) || r.time_s < lower * (1 - TOL))
            fail_msg("step tree n=%d size=%.0f: %.9g s not in [%.9g, %.9g]", x.n, m, r.time_s, lower, upper);
        const double dev = r.time_s / expected_s(&x, SIM_COLL_ALLREDUCE, SIM_ALGO_TREE, m) - 1.0;
        lo = fmin(lo, dev);
        hi = fmax(hi, dev);
    }
    print_message("step-exact tree: %+.1f%% to %+.1f%% of the fast form over these draws\n", 100 * lo,
                  100 * hi);
}

static void test_hierarchical(void **state) {
    (void)state;
    uint64_t s = 107;
    for (int i = 0; i < 90; i++) {
        const int step = i % 3 == 0;
        const int32_t g = 2 << (rng_next(&s) % 3); /* 2, 4, 8 */
        const int32_t nd = log_uniform_int(&s, 1, (step ? 256 : 1024) / g);
        const net_t x = draw_net(&s, g * nd, g);
        check(step ? "step" : "fast", &x, (sim_coll_op_t)(i % 3), SIM_ALGO_HIERARCHICAL,
              step ? SIM_FIDELITY_STEP : SIM_FIDELITY_FAST, log_uniform(&s, KIB, 8 * GIB));
    }
}

static void test_sendrecv(void **state) {
    (void)state;
    uint64_t s = 108;
    for (int i = 0; i < 20; i++) {
        const net_t x = draw_net(&s, 2, 1);
        check("step", &x, SIM_COLL_SENDRECV, SIM_ALGO_DIRECT, SIM_FIDELITY_STEP,
              log_uniform(&s, KIB, 8 * GIB));
    }
}

/* The flat ring across NVLink domains: every step waits for its slowest (NIC) member, so the ring
 * takes steps x (NIC alpha + chunk / NIC bandwidth) in both fidelities. */
static void test_flat_ring_across_domains(void **state) {
    (void)state;
    uint64_t s = 109;
    for (int i = 0; i < 20; i++) {
        net_t x = draw_net(&s, 8 * log_uniform_int(&s, 2, 16), 8);
        const double m = log_uniform(&s, KIB, 8 * GIB);
        const sim_fidelity_t fid = i % 2 ? SIM_FIDELITY_FAST : SIM_FIDELITY_STEP;
        const run_t r = run_coll(&x, SIM_COLL_ALLREDUCE, SIM_ALGO_RING, fid, m, 0);
        const double want = ring_time(SIM_COLL_ALLREDUCE, m, x.n, alpha_nic(&x), x.nic_bw);
        if (fabs(r.time_s - want) > TOL * want)
            fail_msg("flat ring n=%d: %.9g vs %.9g", x.n, r.time_s, want);
    }
}

/* ---- structure, agreement, choice --------------------------------------------------------------- */

static void test_dbtree_shape(void **state) {
    (void)state;
    for (int32_t n = 2; n <= 1024; n++) {
        int32_t depth, load;
        sim_dbtree_shape(n, &depth, &load);
        int32_t lg = 0;
        while ((1 << lg) < n)
            lg++;
        assert_true(depth >= 1 && depth <= lg);
        assert_true(load >= 2 && load <= 4);
    }
}

/* Two all-reduces on the same GPUs (two communication streams) share every link: each takes twice
 * the bandwidth time, in both fidelities, and they agree. */
static void test_fast_vs_step_contended(void **state) {
    (void)state;
    const int32_t n = 16;
    double t[2];
    for (int f = 0; f < 2; f++) {
        sim_star_t star;
        const sim_star_params_t sp = {.n_gpus = n, .nic_bytes_per_s = 25e9, .nic_latency_s = 1e-6};
        sim_star_init(&star, &sp);
        sim_network_desc_t d;
        sim_star_network(&star, &d);
        sim_engine_t *e;
        assert_int_equal(sim_engine_new(NULL, &d, &e, NULL, 0), SIM_OK);
        int32_t gpus[16];
        for (int i = 0; i < n; i++)
            gpus[i] = i;
        sim_coll_desc_t cd = {.op = SIM_COLL_ALLREDUCE,
                              .algo = SIM_ALGO_RING,
                              .fidelity = f ? SIM_FIDELITY_FAST : SIM_FIDELITY_STEP,
                              .size_bytes = 256e6,
                              .gpus = gpus,
                              .n_gpus = n,
                              .stream = 1};
        assert_int_equal(sim_coll_add(e, &cd, NULL, NULL), SIM_OK);
        cd.stream = 2;
        cd.size_bytes = 128e6;
        assert_int_equal(sim_coll_add(e, &cd, NULL, NULL), SIM_OK);
        assert_int_equal(sim_engine_run(e), SIM_OK);
        t[f] = sim_ps_to_s(sim_engine_now(e));
        sim_engine_free(e);
        sim_star_destroy(&star);
    }
    /* Shared until the smaller one ends, then alone: the larger one ends as if run back to back. */
    const double want = 2.0 * 15 * 2e-6 + 2.0 * 15 / 16 * (256e6 + 128e6) / 25e9;
    assert_true(fabs(t[0] - want) < 0.01 * want);
    assert_true(fabs(t[1] - want) < 0.01 * want);
    assert_true(fabs(t[0] - t[1]) < 0.01 * t[0]);
}

static void test_auto_choice(void **state) {
    (void)state;
    const sim_ab_params_t p = {.alpha_s = 5e-6,
                               .bytes_per_s = 25e9,
                               .intra_alpha_s = 1e-6,
                               .intra_bytes_per_s = 300e9,
                               .per_domain = 1,
                               .chunk_bytes = 512 * KIB};
    assert_int_equal(sim_coll_algo_choose(SIM_COLL_ALLREDUCE, 8 * KIB, 512, &p), SIM_ALGO_TREE);
    assert_int_equal(sim_coll_algo_choose(SIM_COLL_ALLREDUCE, 4 * GIB, 8, &p), SIM_ALGO_RING);
    assert_int_equal(sim_coll_algo_choose(SIM_COLL_ALLGATHER, 8 * KIB, 512, &p), SIM_ALGO_RING);
    assert_int_equal(sim_coll_algo_choose(SIM_COLL_BROADCAST, GIB, 64, &p), SIM_ALGO_CHAIN);
    assert_int_equal(sim_coll_algo_choose(SIM_COLL_SENDRECV, GIB, 2, &p), SIM_ALGO_DIRECT);
    sim_ab_params_t h = p;
    h.per_domain = 8;
    assert_int_equal(sim_coll_algo_choose(SIM_COLL_ALLREDUCE, 4 * GIB, 64, &h), SIM_ALGO_HIERARCHICAL);
    assert_int_equal(sim_coll_algo_choose(SIM_COLL_REDUCESCATTER, 4 * GIB, 64, &h), SIM_ALGO_HIERARCHICAL);
    /* Through the engine: auto resolves, and the time matches the chosen algorithm's form. */
    uint64_t s = 110;
    net_t x = draw_net(&s, 64, 8);
    const run_t r = run_coll(&x, SIM_COLL_ALLREDUCE, SIM_ALGO_AUTO, SIM_FIDELITY_FAST, GIB, 0);
    assert_int_equal(r.algo, SIM_ALGO_HIERARCHICAL);
    assert_true(fabs(r.time_s - expected_s(&x, SIM_COLL_ALLREDUCE, SIM_ALGO_HIERARCHICAL, GIB)) <
                TOL * r.time_s);
}

static void test_analytic_mode(void **state) {
    (void)state;
    sim_star_t star;
    const sim_star_params_t sp = {.n_gpus = 16,
                                  .nic_bytes_per_s = 25e9,
                                  .nic_latency_s = 1e-6,
                                  .gpus_per_domain = 4,
                                  .nvlink_bytes_per_s = 300e9,
                                  .nvlink_latency_s = 1e-6};
    sim_star_init(&star, &sp);
    sim_network_desc_t d;
    sim_star_network(&star, &d);
    sim_config_t cfg;
    sim_config_default(&cfg);
    sim_engine_t *e;
    assert_int_equal(sim_engine_new(&cfg, &d, &e, NULL, 0), SIM_OK);
    int32_t gpus[16];
    for (int i = 0; i < 16; i++)
        gpus[i] = i;
    sim_coll_desc_t cd = {.op = SIM_COLL_ALLREDUCE,
                          .mode = SIM_COMM_ANALYTIC,
                          .size_bytes = 1e9,
                          .gpus = gpus,
                          .n_gpus = 16,
                          .stream = 1};
    assert_int_equal(sim_coll_add(e, &cd, NULL, NULL), SIM_EINVAL); /* no system configured */
    sim_engine_free(e);
    cfg.has_system = 1;
    assert_int_equal(model_system_preset("A100", &cfg.system), MODEL_OK);
    assert_int_equal(sim_engine_new(&cfg, &d, &e, NULL, 0), SIM_OK);
    sim_coll_id_t c;
    assert_int_equal(sim_coll_add(e, &cd, NULL, &c), SIM_OK);
    assert_int_equal(sim_engine_run(e), SIM_OK);
    sim_coll_result_t r;
    sim_coll_result(e, c, &r);
    const double want = model_collective_time_s(&cfg.system, cfg.compat, MODEL_COLL_ALLREDUCE, 1.0, 16, 4);
    assert_true(fabs(sim_ps_to_s(r.end_ps) - want) <= 1e-12 + 1e-9 * want);
    assert_int_equal(r.flows, 0);
    sim_engine_free(e);
    sim_star_destroy(&star);
}

static void test_invalid_requests(void **state) {
    (void)state;
    sim_star_t star;
    const sim_star_params_t sp = {
        .n_gpus = 12, .nic_bytes_per_s = 25e9, .gpus_per_domain = 4, .nvlink_bytes_per_s = 300e9};
    sim_star_init(&star, &sp);
    sim_network_desc_t d;
    sim_star_network(&star, &d);
    sim_engine_t *e;
    assert_int_equal(sim_engine_new(NULL, &d, &e, NULL, 0), SIM_OK);
    const int32_t gpus[12] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, uneven[5] = {0, 1, 2, 4, 5};
    const int32_t dup[3] = {0, 1, 1};
    sim_coll_desc_t cd = {.op = SIM_COLL_ALLGATHER,
                          .algo = SIM_ALGO_TREE,
                          .size_bytes = 1e6,
                          .gpus = gpus,
                          .n_gpus = 12,
                          .stream = 1};
    assert_int_equal(sim_coll_add(e, &cd, NULL, NULL), SIM_EINVAL);
    cd.algo = SIM_ALGO_HALVING_DOUBLING; /* 12 is not a power of two */
    assert_int_equal(sim_coll_add(e, &cd, NULL, NULL), SIM_EINVAL);
    cd.algo = SIM_ALGO_HIERARCHICAL;
    cd.gpus = uneven; /* 3 in domain 0, 2 in domain 1 */
    cd.n_gpus = 5;
    assert_int_equal(sim_coll_add(e, &cd, NULL, NULL), SIM_EINVAL);
    cd.gpus = dup;
    cd.n_gpus = 3;
    cd.algo = SIM_ALGO_RING;
    assert_int_equal(sim_coll_add(e, &cd, NULL, NULL), SIM_EINVAL);
    cd.gpus = gpus;
    cd.stream = 0; /* the compute stream */
    assert_int_equal(sim_coll_add(e, &cd, NULL, NULL), SIM_EINVAL);
    cd.stream = 1;
    cd.op = SIM_COLL_SENDRECV;
    assert_int_equal(sim_coll_add(e, &cd, NULL, NULL), SIM_EINVAL);
    cd.op = SIM_COLL_BROADCAST;
    cd.root = 3;
    cd.n_gpus = 3;
    assert_int_equal(sim_coll_add(e, &cd, NULL, NULL), SIM_EINVAL);
    assert_int_equal(sim_op_count(e), 0);
    sim_coll_algo_t a;
    sim_coll_op_t o;
    assert_int_equal(sim_coll_algo_parse("halving-doubling", &a), SIM_OK);
    assert_int_equal(a, SIM_ALGO_HALVING_DOUBLING);
    assert_int_equal(sim_coll_op_parse("reducescatter", &o), SIM_OK);
    assert_int_equal(sim_coll_op_parse("nope", &o), SIM_EINVAL);
    sim_engine_free(e);
    /* A chain window beyond 1024 is refused when a chain is added; 1024 itself is accepted. */
    sim_config_t cfg;
    sim_config_default(&cfg);
    cfg.chain_window = 1025;
    assert_int_equal(sim_engine_new(&cfg, &d, &e, NULL, 0), SIM_OK);
    cd.algo = SIM_ALGO_CHAIN;
    cd.root = 0;
    assert_int_equal(sim_coll_add(e, &cd, NULL, NULL), SIM_EINVAL);
    assert_non_null(strstr(sim_engine_last_error(e), "chain_window 1025"));
    sim_engine_free(e);
    cfg.chain_window = 1024;
    assert_int_equal(sim_engine_new(&cfg, &d, &e, NULL, 0), SIM_OK);
    assert_int_equal(sim_coll_add(e, &cd, NULL, NULL), SIM_OK);
    assert_int_equal(sim_engine_run(e), SIM_OK);
    sim_engine_free(e);
    sim_star_destroy(&star);
}

/* Every NIC up link of a step-exact ring all-reduce carries 2 (n-1)/n M bytes. */
static void test_link_bytes(void **state) {
    (void)state;
    const int32_t n = 8;
    sim_star_t star;
    const sim_star_params_t sp = {.n_gpus = n, .nic_bytes_per_s = 25e9, .nic_latency_s = 1e-6};
    sim_star_init(&star, &sp);
    sim_network_desc_t d;
    sim_star_network(&star, &d);
    sim_engine_t *e;
    assert_int_equal(sim_engine_new(NULL, &d, &e, NULL, 0), SIM_OK);
    const int32_t gpus[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    const sim_coll_desc_t cd = {.op = SIM_COLL_ALLREDUCE,
                                .algo = SIM_ALGO_RING,
                                .fidelity = SIM_FIDELITY_STEP,
                                .size_bytes = 8e6,
                                .gpus = gpus,
                                .n_gpus = n,
                                .stream = 1};
    assert_int_equal(sim_coll_add(e, &cd, NULL, NULL), SIM_OK);
    assert_int_equal(sim_engine_run(e), SIM_OK);
    for (int32_t l = 0; l < 2 * n; l++) {
        sim_link_stats_t ls;
        sim_link_stats(e, l, &ls);
        assert_true(fabs(ls.bytes - 2.0 * 7 / 8 * 8e6) < 1.0);
        assert_true(ls.utilization > 0.0 && ls.utilization < 1.0);
    }
    /* Every link carried the same bytes: the busiest are the lowest ids. */
    int32_t top[3];
    double util[3];
    assert_int_equal(sim_links_busiest(e, 3, top, util), 3);
    assert_true(util[0] >= util[1] && util[1] >= util[2] && util[2] > 0.0);
    assert_int_equal(sim_links_busiest(e, 0, top, util), 0);
    sim_engine_free(e);
    sim_star_destroy(&star);
}

/* ---- nccl-tests-like measurements --------------------------------------------------------------- */

static sim_coll_bench_result_t bench(const sim_star_t *star, const sim_coll_bench_t *b) {
    sim_network_desc_t d;
    sim_star_network(star, &d);
    sim_coll_bench_result_t r;
    char err[200];
    if (sim_coll_bench_run(NULL, &d, b, &r, err, sizeof err))
        fail_msg("sim_coll_bench_run: %s", err);
    return r;
}

/* 32 GPUs in domains of 8 (NVLink 300 GB/s, 0.5 us; NIC 25 GB/s, 1 us). Four contiguous groups of 8
 * are four NVLink rings; four strided groups cross domains (NIC rings); two GPUs per node select
 * 0, 1, 8, 9, ... */
static void test_bench_groups_and_placement(void **state) {
    (void)state;
    sim_star_t star;
    const sim_star_params_t sp = {.n_gpus = 32,
                                  .nic_bytes_per_s = 25e9,
                                  .nic_latency_s = 1e-6,
                                  .gpus_per_domain = 8,
                                  .nvlink_bytes_per_s = 300e9,
                                  .nvlink_latency_s = 0.5e-6};
    assert_int_equal(sim_star_init(&star, &sp), SIM_OK);
    const double m = 64e6;
    sim_coll_bench_t b = {
        .op = SIM_COLL_ALLREDUCE, .algo = SIM_ALGO_RING, .gpus = 32, .groups = 4, .size_bytes = m};
    sim_coll_bench_result_t r = bench(&star, &b);
    const double t_nv = ring_time(SIM_COLL_ALLREDUCE, m, 8, 1e-6, 300e9),
                 t_nic = ring_time(SIM_COLL_ALLREDUCE, m, 8, 2e-6, 25e9);
    assert_true(fabs(r.time_s - t_nv) < TOL * t_nv);
    assert_true(fabs(r.closed_form_s - t_nv) < 1e-6 * t_nv);
    assert_true(fabs(r.algbw_bytes_per_s - m / r.time_s) < 1e-9 * r.algbw_bytes_per_s);
    assert_true(fabs(r.busbw_bytes_per_s - r.algbw_bytes_per_s * 14.0 / 8.0) < 1e-9 * r.busbw_bytes_per_s);
    b.strided = 1;
    r = bench(&star, &b);
    assert_true(fabs(r.time_s - t_nic) < TOL * t_nic);
    /* Two GPUs per node, one group of 8: GPUs 0, 1, 8, 9, 16, 17, 24, 25; hierarchical by auto. */
    b = (sim_coll_bench_t){.op = SIM_COLL_ALLREDUCE, .gpus = 8, .gpus_per_node = 2, .size_bytes = m};
    r = bench(&star, &b);
    assert_int_equal(r.algo, SIM_ALGO_HIERARCHICAL);
    const double t_h = ring_time(SIM_COLL_REDUCESCATTER, m, 2, 1e-6, 300e9) +
                       ring_time(SIM_COLL_ALLREDUCE, m / 2, 4, 2e-6, 25e9) +
                       ring_time(SIM_COLL_ALLGATHER, m, 2, 1e-6, 300e9);
    assert_true(fabs(r.time_s - t_h) < TOL * t_h);
    /* Pairwise exchange: both directions at once, no contention on full-duplex links. */
    b = (sim_coll_bench_t){.op = SIM_COLL_SENDRECV, .gpus = 32, .groups = 16, .strided = 1, .size_bytes = m};
    r = bench(&star, &b);
    assert_true(fabs(r.time_s - (2e-6 + m / 25e9)) < TOL * r.time_s);
    /* Errors name the field. */
    sim_network_desc_t d;
    sim_star_network(&star, &d);
    char err[200];
    b = (sim_coll_bench_t){.op = SIM_COLL_ALLREDUCE, .gpus = 30, .groups = 4, .size_bytes = m};
    assert_int_equal(sim_coll_bench_run(NULL, &d, &b, &r, err, sizeof err), SIM_EINVAL);
    assert_non_null(strstr(err, "gpus: 30"));
    b = (sim_coll_bench_t){.op = SIM_COLL_ALLREDUCE, .gpus = 32, .gpus_per_node = 16, .size_bytes = m};
    assert_int_equal(sim_coll_bench_run(NULL, &d, &b, &r, err, sizeof err), SIM_EINVAL);
    assert_non_null(strstr(err, "gpus_per_node: 16"));
    b = (sim_coll_bench_t){.op = SIM_COLL_SENDRECV, .gpus = 32, .groups = 8, .size_bytes = m};
    assert_int_equal(sim_coll_bench_run(NULL, &d, &b, &r, err, sizeof err), SIM_EINVAL);
    sim_star_destroy(&star);
}

/* ---- channels ------------------------------------------------------------------------------------ */

/* A full mesh of 4 GPUs: one direct link per ordered pair, link a*4+b for a -> b. */
static int mesh_route(void *ctx, int32_t src, int32_t dst, int32_t *links, int32_t cap) {
    (void)ctx;
    if (src == dst || cap < 1)
        return -1;
    links[0] = src * 4 + dst;
    return 1;
}

static double mesh_ring(int32_t channels, sim_fidelity_t fid, double m, double *closed_s) {
    double cap[16], lat[16];
    for (int i = 0; i < 16; i++) {
        cap[i] = 100e9;
        lat[i] = 1e-6;
    }
    const sim_network_desc_t d = {
        .n_gpus = 4, .n_links = 16, .capacity_bytes_per_s = cap, .latency_s = lat, .route = mesh_route};
    sim_engine_t *e;
    assert_int_equal(sim_engine_new(NULL, &d, &e, NULL, 0), SIM_OK);
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
    *closed_s = r.closed_form_s;
    sim_engine_free(e);
    return sim_ps_to_s(r.end_ps - r.start_ps);
}

/* On a mesh, channel 0 (stride 1) and channel 1 (stride 3) use different links: twice the
 * bandwidth. A third channel shares the stride-1 links with channel 0: each of those gets half.
 * On a switch (the star) every channel shares the GPU's links: channels change nothing, for the
 * flat ring on a plain star and for the hierarchical rings on a two-tier one. */
static void test_channels(void **state) {
    (void)state;
    const double m = 1e9;
    for (int f = 0; f < 2; f++) {
        const sim_fidelity_t fid = f ? SIM_FIDELITY_STEP : SIM_FIDELITY_FAST;
        const double want[4] = {0, 6 * (1e-6 + m / 4 / 100e9), 6 * (1e-6 + m / 8 / 100e9),
                                6 * (1e-6 + m / 6 / 100e9)};
        for (int k = 1; k <= 3; k++) {
            double closed;
            const double t = mesh_ring(k, fid, m, &closed);
            if (fabs(t - want[k]) > TOL * want[k] || fabs(closed - want[k]) > 1e-6 * want[k])
                fail_msg("mesh, %d channels: %.9g s (closed form %.9g), want %.9g", k, t, closed, want[k]);
        }
        uint64_t s = 111;
        net_t x = draw_net(&s, 16, 4);
        sim_star_t star;
        const sim_star_params_t sp = {.n_gpus = 16,
                                      .nic_bytes_per_s = x.nic_bw,
                                      .nic_latency_s = x.nic_lat,
                                      .gpus_per_domain = 4,
                                      .nvlink_bytes_per_s = x.nv_bw,
                                      .nvlink_latency_s = x.nv_lat};
        sim_star_init(&star, &sp);
        sim_network_desc_t d;
        sim_star_network(&star, &d);
        /* Flat ring on a plain star (with domains, strided channels would cross more NICs and
         * gain bandwidth); hierarchical on the two-tier star. */
        sim_star_t flat;
        const sim_star_params_t fp = {.n_gpus = 16, .nic_bytes_per_s = x.nic_bw, .nic_latency_s = x.nic_lat};
        sim_star_init(&flat, &fp);
        for (int a = 0; a < 2; a++) {
            const sim_coll_algo_t algo = a ? SIM_ALGO_HIERARCHICAL : SIM_ALGO_RING;
            sim_star_network(a ? &star : &flat, &d);
            const sim_coll_bench_t b1 = {
                .op = SIM_COLL_ALLREDUCE, .algo = algo, .fidelity = fid, .gpus = 16, .size_bytes = m};
            sim_coll_bench_t b3 = b1;
            b3.channels = 3;
            sim_coll_bench_result_t r1, r3;
            assert_int_equal(sim_coll_bench_run(NULL, &d, &b1, &r1, NULL, 0), SIM_OK);
            assert_int_equal(sim_coll_bench_run(NULL, &d, &b3, &r3, NULL, 0), SIM_OK);
            assert_true(fabs(r3.time_s - r1.time_s) < TOL * r1.time_s);
            assert_true(fabs(r3.closed_form_s - r1.closed_form_s) < 1e-6 * r1.closed_form_s);
        }
        sim_star_destroy(&flat);
        sim_star_destroy(&star);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ring_fast),
        cmocka_unit_test(test_ring_step),
        cmocka_unit_test(test_halving_doubling),
        cmocka_unit_test(test_chain),
        cmocka_unit_test(test_chain_windows),
        cmocka_unit_test(test_chain_latency_pipelined),
        cmocka_unit_test(test_tree_fast),
        cmocka_unit_test(test_tree_step_bounds),
        cmocka_unit_test(test_hierarchical),
        cmocka_unit_test(test_sendrecv),
        cmocka_unit_test(test_flat_ring_across_domains),
        cmocka_unit_test(test_dbtree_shape),
        cmocka_unit_test(test_fast_vs_step_contended),
        cmocka_unit_test(test_auto_choice),
        cmocka_unit_test(test_analytic_mode),
        cmocka_unit_test(test_invalid_requests),
        cmocka_unit_test(test_link_bytes),
        cmocka_unit_test(test_bench_groups_and_placement),
        cmocka_unit_test(test_channels),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
