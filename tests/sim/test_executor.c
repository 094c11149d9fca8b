/* sim/test_executor.c - the DAG executor over GPU streams: in-order streams, dependencies across GPUs,
 * compute/communication overlap, the collective barrier, point-to-point, deadlock detection, the
 * observer, and determinism: the same random DAG gives the same event log twice, also with two
 * engines alive in one process; progress reports every SIM_PROGRESS_EVERY timestamps and at the end
 * of every run, with time and operations that never go back. Identical collectives share one plan
 * and still run apart; the operation queries (GPU, collective), reserving room, and the dependency
 * limit; dependencies implied by a stream's order are not stored. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sim.h"

typedef struct fixture {
    sim_star_t star;
    sim_engine_t *e;
} fixture_t;

/* n GPUs on a star of 10 GB/s links with 1 us latency each (a hop: 2 us). */
static void setup(fixture_t *f, int32_t n, const sim_config_t *cfg) {
    const sim_star_params_t sp = {.n_gpus = n, .nic_bytes_per_s = 10e9, .nic_latency_s = 1e-6};
    assert_int_equal(sim_star_init(&f->star, &sp), SIM_OK);
    sim_network_desc_t d;
    sim_star_network(&f->star, &d);
    assert_int_equal(sim_engine_new(cfg, &d, &f->e, NULL, 0), SIM_OK);
}

static void teardown(fixture_t *f) {
    sim_engine_free(f->e);
    sim_star_destroy(&f->star);
}

static double start_s(const sim_engine_t *e, sim_op_id_t op) {
    sim_time_ps_t s, t;
    sim_op_times(e, op, &s, &t);
    return sim_ps_to_s(s);
}

static double end_s(const sim_engine_t *e, sim_op_id_t op) {
    sim_time_ps_t s, t;
    sim_op_times(e, op, &s, &t);
    return sim_ps_to_s(t);
}

static void assert_s(double got, double want) {
    if (fabs(got - want) > 1e-11 + 1e-9 * fabs(want))
        fail_msg("%.12g s, want %.12g s", got, want);
}

static void test_stream_order_and_dependencies(void **state) {
    (void)state;
    fixture_t f;
    setup(&f, 2, NULL);
    sim_op_id_t a, b, c, d;
    sim_op_compute(f.e, 0, 0, 1e-3, "a", &a);
    sim_op_compute(f.e, 0, 0, 2e-3, "b", &b); /* same stream: after a */
    sim_op_compute(f.e, 1, 0, 0.5e-3, "c", &c);
    sim_op_compute(f.e, 1, 0, 1e-3, "d", &d); /* after c on its stream, and after b */
    assert_int_equal(sim_op_depend(f.e, d, b), SIM_OK);
    assert_int_equal(sim_engine_run(f.e), SIM_OK);
    assert_s(start_s(f.e, b), 1e-3);
    assert_s(end_s(f.e, b), 3e-3);
    assert_s(end_s(f.e, c), 0.5e-3);
    assert_s(start_s(f.e, d), 3e-3);
    assert_s(end_s(f.e, d), 4e-3);
    assert_int_equal(sim_op_compute(f.e, 0, 0, 1.0, "late", NULL), SIM_ESTATE);
    teardown(&f);
}

/* A dependency on an earlier operation of the same stream is implied by the stream's order: accepted,
 * not stored (no successor listed, no edge memory), and the times are those without it; the same
 * dependency across streams or GPUs is stored, and a later operation of the same stream still
 * counts (it is not implied). */
static void test_implied_dependencies(void **state) {
    (void)state;
    fixture_t f;
    setup(&f, 2, NULL);
    sim_op_id_t a, b, c, x, y, out[4];
    sim_op_compute(f.e, 0, 0, 1e-3, "a", &a);
    sim_op_compute(f.e, 0, 0, 2e-3, "b", &b);
    sim_op_compute(f.e, 0, 0, 1e-3, "c", &c);
    sim_op_compute(f.e, 0, 1, 1e-3, "x", &x);           /* GPU 0, another stream */
    sim_op_compute(f.e, 1, 0, 1e-3, "y", &y);           /* another GPU */
    assert_int_equal(sim_op_depend(f.e, c, a), SIM_OK); /* implied */
    assert_int_equal(sim_op_depend(f.e, c, b), SIM_OK); /* implied */
    assert_int_equal(sim_op_successors(f.e, a, out, 4), 0);
    assert_int_equal(sim_op_successors(f.e, b, out, 4), 0);
    assert_int_equal(sim_op_depend(f.e, x, b), SIM_OK); /* another stream: stored */
    assert_int_equal(sim_op_depend(f.e, y, a), SIM_OK); /* another GPU: stored */
    assert_int_equal(sim_op_successors(f.e, b, out, 4), 1);
    assert_int_equal(out[0], x);
    assert_int_equal(sim_op_successors(f.e, a, out, 4), 1);
    assert_int_equal(out[0], y);
    assert_int_equal(sim_op_depend(f.e, c, c), SIM_EINVAL); /* itself: still refused */
    assert_int_equal(sim_op_depend(f.e, c, 99), SIM_EINVAL);
    assert_int_equal(sim_engine_run(f.e), SIM_OK);
    assert_s(start_s(f.e, c), 3e-3);
    assert_s(end_s(f.e, c), 4e-3);
    assert_s(start_s(f.e, x), 3e-3);
    assert_s(start_s(f.e, y), 1e-3);
    teardown(&f);
    /* a later operation of the same stream is not implied: a waits for b behind it, a deadlock */
    setup(&f, 1, NULL);
    sim_op_compute(f.e, 0, 0, 1e-3, "a", &a);
    sim_op_compute(f.e, 0, 0, 1e-3, "b", &b);
    assert_int_equal(sim_op_depend(f.e, a, b), SIM_OK);
    assert_int_equal(sim_op_successors(f.e, b, out, 4), 1);
    assert_int_equal(sim_engine_run(f.e), SIM_EDEADLOCK);
    teardown(&f);
}

/* A collective on a communication stream overlaps compute on stream 0; it starts when its last
 * member arrives (GPU 1's member waits for a compute op). */
static void test_overlap_and_barrier(void **state) {
    (void)state;
    fixture_t f;
    setup(&f, 4, NULL);
    sim_op_id_t busy, pre, members[4];
    sim_op_compute(f.e, 0, 0, 10e-3, "long compute", &busy);
    sim_op_compute(f.e, 1, 0, 1e-3, "pre", &pre);
    const int32_t gpus[4] = {0, 1, 2, 3};
    const sim_coll_desc_t cd = {.op = SIM_COLL_ALLREDUCE,
                                .algo = SIM_ALGO_RING,
                                .size_bytes = 40e6,
                                .gpus = gpus,
                                .n_gpus = 4,
                                .stream = 1,
                                .name = "ar"};
    sim_coll_id_t c;
    assert_int_equal(sim_coll_add(f.e, &cd, members, &c), SIM_OK);
    assert_int_equal(sim_op_depend(f.e, members[1], pre), SIM_OK);
    assert_int_equal(sim_engine_run(f.e), SIM_OK);
    const double t_ar = 2.0 * 3 * (2e-6 + 10e6 / 10e9);
    for (int i = 0; i < 4; i++) {
        assert_s(start_s(f.e, members[i]), i == 1 ? 1e-3 : 0.0);
        assert_s(end_s(f.e, members[i]), 1e-3 + t_ar);
    }
    assert_s(end_s(f.e, busy), 10e-3);
    assert_s(sim_ps_to_s(sim_engine_now(f.e)), 10e-3);
    teardown(&f);
}

static void test_p2p(void **state) {
    (void)state;
    fixture_t f;
    setup(&f, 2, NULL);
    sim_op_id_t s, r, after;
    assert_int_equal(sim_p2p_add(f.e, 0, 1, 1, 2, 1e6, "p2p", &s, &r), SIM_OK);
    sim_op_compute(f.e, 1, 0, 1e-3, "use", &after);
    sim_op_depend(f.e, after, r);
    assert_int_equal(sim_engine_run(f.e), SIM_OK);
    assert_s(end_s(f.e, s), 2e-6 + 1e6 / 10e9);
    assert_s(end_s(f.e, r), 2e-6 + 1e6 / 10e9);
    assert_s(start_s(f.e, after), 2e-6 + 1e6 / 10e9);
    teardown(&f);
}

static void test_deadlock_detected(void **state) {
    (void)state;
    fixture_t f;
    setup(&f, 2, NULL);
    const int32_t ab[2] = {0, 1};
    sim_coll_desc_t cd = {.op = SIM_COLL_ALLGATHER, .size_bytes = 1e6, .gpus = ab, .n_gpus = 2, .stream = 1};
    sim_op_id_t x[2], y[2];
    sim_coll_add(f.e, &cd, x, NULL);
    sim_coll_add(f.e, &cd, y, NULL);
    /* GPU 1 issues y before x on the same stream: y waits for x on GPU 1's stream order, x for y. */
    sim_op_depend(f.e, x[1], y[1]);
    assert_int_equal(sim_engine_run(f.e), SIM_EDEADLOCK);
    assert_non_null(strstr(sim_engine_last_error(f.e), "never"));
    teardown(&f);

    setup(&f, 1, NULL);
    sim_op_id_t a, b;
    sim_op_compute(f.e, 0, 0, 1e-3, "a", &a);
    sim_op_compute(f.e, 0, 1, 1e-3, "b", &b);
    sim_op_depend(f.e, a, b);
    sim_op_depend(f.e, b, a);
    assert_int_equal(sim_engine_run(f.e), SIM_EDEADLOCK);
    assert_int_equal(sim_op_depend(f.e, a, a), SIM_ESTATE);
    teardown(&f);
}

/* ---- determinism -------------------------------------------------------------------------------- */

typedef struct log {
    char *buf;
    size_t len, cap;
    int ops, flows, counters;
} log_t;

static void log_printf(log_t *l, const char *fmt, ...) {
    char line[160];
    va_list ap;
    va_start(ap, fmt);
    const int k = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (l->len + (size_t)k + 1 > l->cap) {
        l->cap = 2 * (l->cap + (size_t)k + 1);
        l->buf = realloc(l->buf, l->cap);
    }
    memcpy(l->buf + l->len, line, (size_t)k + 1);
    l->len += (size_t)k;
}

static void on_op(void *ctx, sim_time_ps_t t, const sim_op_info_t *op, const char *what) {
    log_t *l = ctx;
    l->ops++;
    log_printf(l, "%lld op %s %d gpu %d stream %d coll %d\n", (long long)t, what, op->op, op->gpu, op->stream,
               op->coll);
}

static void on_op_start(void *ctx, sim_time_ps_t t, const sim_op_info_t *op) {
    on_op(ctx, t, op, "start");
}

static void on_op_end(void *ctx, sim_time_ps_t t, const sim_op_info_t *op) {
    on_op(ctx, t, op, "end");
}

static void on_flow(void *ctx, sim_time_ps_t t, const sim_flow_info_t *fl, const char *what) {
    log_t *l = ctx;
    l->flows++;
    log_printf(l, "%lld flow %s %lld %d->%d %.3f coll %d\n", (long long)t, what, (long long)fl->flow,
               fl->src_gpu, fl->dst_gpu, fl->bytes, fl->coll);
}

static void on_flow_start(void *ctx, sim_time_ps_t t, const sim_flow_info_t *fl) {
    on_flow(ctx, t, fl, "start");
}

static void on_flow_end(void *ctx, sim_time_ps_t t, const sim_flow_info_t *fl) {
    on_flow(ctx, t, fl, "end");
}

static void on_counter(void *ctx, sim_time_ps_t t, const sim_counter_t *c) {
    log_t *l = ctx;
    l->counters++;
    log_printf(l, "%lld link %d util %.17g\n", (long long)t, c->link, c->value);
}

static uint64_t rng_next(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* A random training-step-like DAG on 16 GPUs: compute chains, collectives over random groups on
 * random communication streams at both fidelities, and point-to-point messages; dependencies only
 * point backwards, so there is no cycle (streams can still deadlock: those draws are skipped). */
static void build_random(sim_engine_t *e, uint64_t seed) {
    uint64_t s = seed;
    const int32_t n = 16;
    sim_op_id_t last[16];
    for (int32_t g = 0; g < n; g++)
        sim_op_compute(e, g, 0, 1e-6 * (double)(1 + rng_next(&s) % 100), "init", &last[g]);
    for (int k = 0; k < 30; k++) {
        const int kind = (int)(rng_next(&s) % 3);
        if (kind == 0) {
            const int32_t g = (int32_t)(rng_next(&s) % n);
            sim_op_id_t op;
            sim_op_compute(e, g, 0, 1e-6 * (double)(1 + rng_next(&s) % 500), "compute", &op);
            sim_op_depend(e, op, last[g]);
            last[g] = op;
        } else if (kind == 1) {
            const int32_t size = 2 + (int32_t)(rng_next(&s) % 7), base = (int32_t)(rng_next(&s) % 4);
            int32_t gpus[16];
            for (int32_t i = 0; i < size; i++)
                gpus[i] = (base + 2 * i) % n;
            const sim_coll_desc_t cd = {.op = (sim_coll_op_t)(rng_next(&s) % 3),
                                        .algo = SIM_ALGO_AUTO,
                                        .fidelity = rng_next(&s) % 2 ? SIM_FIDELITY_STEP : SIM_FIDELITY_FAST,
                                        .size_bytes = (double)(1 + rng_next(&s) % 1000) * 1e4,
                                        .gpus = gpus,
                                        .n_gpus = size,
                                        .stream = 1};
            sim_op_id_t ops[16];
            assert_int_equal(sim_coll_add(e, &cd, ops, NULL), SIM_OK);
            for (int32_t i = 0; i < size; i++)
                sim_op_depend(e, ops[i], last[gpus[i]]);
        } else {
            const int32_t a = (int32_t)(rng_next(&s) % n),
                          b = (a + 1 + (int32_t)(rng_next(&s) % (n - 1))) % n;
            sim_op_id_t snd, rcv;
            sim_p2p_add(e, a, 2, b, 2, (double)(1 + rng_next(&s) % 100) * 1e5, "p2p", &snd, &rcv);
            sim_op_depend(e, snd, last[a]);
            sim_op_id_t use;
            sim_op_compute(e, b, 0, 1e-6, "use", &use);
            sim_op_depend(e, use, rcv);
            sim_op_depend(e, use, last[b]);
            last[b] = use;
        }
    }
}

static void run_logged(uint64_t seed, log_t *l, int *rc) {
    fixture_t f;
    setup(&f, 16, NULL);
    const sim_observer_t obs = {.ctx = l,
                                .op_start = on_op_start,
                                .op_end = on_op_end,
                                .flow_start = on_flow_start,
                                .flow_end = on_flow_end,
                                .counter = on_counter};
    sim_engine_set_observer(f.e, &obs);
    build_random(f.e, seed);
    *rc = sim_engine_run(f.e);
    log_printf(l, "end %lld rc %d\n", (long long)sim_engine_now(f.e), *rc);
    if (*rc == SIM_OK)
        assert_int_equal(l->ops, 2 * sim_op_count(f.e));
    teardown(&f);
}

static void test_same_input_same_log(void **state) {
    (void)state;
    int ran = 0;
    for (uint64_t seed = 1; seed <= 12; seed++) {
        log_t a = {0}, b = {0};
        int rca, rcb;
        run_logged(seed, &a, &rca);
        run_logged(seed, &b, &rcb);
        assert_int_equal(rca, rcb);
        assert_int_equal(a.len, b.len);
        assert_memory_equal(a.buf, b.buf, a.len);
        if (rca == SIM_OK) {
            ran++;
            assert_true(a.flows > 0 && a.flows % 2 == 0);
            assert_true(a.counters > 0);
        }
        free(a.buf);
        free(b.buf);
    }
    assert_true(ran >= 6);
}

/* Two engines alive at once, stepped alternately, give the same results as one alone. */
static void test_two_engines_interleaved(void **state) {
    (void)state;
    fixture_t f1, f2, solo;
    setup(&f1, 16, NULL);
    setup(&f2, 16, NULL);
    setup(&solo, 16, NULL);
    build_random(f1.e, 5);
    build_random(f2.e, 5);
    build_random(solo.e, 5);
    int rc = sim_engine_run(solo.e);
    for (sim_time_ps_t t = 0; t < sim_engine_now(solo.e); t += sim_s_to_ps(20e-6)) {
        sim_engine_run_until(f1.e, t);
        sim_engine_run_until(f2.e, t);
    }
    assert_int_equal(sim_engine_run(f1.e), rc);
    assert_int_equal(sim_engine_run(f2.e), rc);
    assert_int_equal(sim_engine_now(f1.e), sim_engine_now(solo.e));
    assert_int_equal(sim_engine_now(f2.e), sim_engine_now(solo.e));
    for (sim_op_id_t op = 0; op < sim_op_count(solo.e); op++) {
        sim_time_ps_t a, b, c, d;
        sim_op_times(solo.e, op, &a, &b);
        sim_op_times(f1.e, op, &c, &d);
        assert_int_equal(a, c);
        assert_int_equal(b, d);
    }
    teardown(&f1);
    teardown(&f2);
    teardown(&solo);
}

#define PROGRESS_MAX_CALLS 16

typedef struct progress_calls {
    int n;
    sim_progress_t at[PROGRESS_MAX_CALLS];
} progress_calls_t;

static void note_progress(void *ctx, const sim_progress_t *p) {
    progress_calls_t *c = ctx;
    if (c->n < PROGRESS_MAX_CALLS)
        c->at[c->n] = *p;
    c->n++;
}

/* 1000 compute operations of 1 us in a row on one stream: 1000 timestamps. */
static void test_progress_reports(void **state) {
    (void)state;
    fixture_t f;
    setup(&f, 1, NULL);
    for (int i = 0; i < 1000; i++)
        assert_int_equal(sim_op_compute(f.e, 0, 0, 1e-6, "op", NULL), SIM_OK);
    progress_calls_t c = {0};
    sim_engine_set_progress(f.e, note_progress, &c);
    /* up to 300 us: the 256th timestamp, then the end of the run */
    assert_int_equal(sim_engine_run_until(f.e, sim_s_to_ps(300e-6)), SIM_OK);
    assert_int_equal(c.n, 2);
    /* the rest: 256 and 512 timestamps later, then the end */
    assert_int_equal(sim_engine_run(f.e), SIM_OK);
    assert_int_equal(c.n, 5);
    const int32_t done[5] = {256, 300, 556, 812, 1000};
    for (int i = 0; i < 5; i++) {
        assert_int_equal(c.at[i].ops_done, done[i]);
        assert_int_equal(c.at[i].ops_total, 1000);
        assert_int_equal(c.at[i].now_ps, sim_s_to_ps(done[i] * 1e-6));
        assert_true(i == 0 || c.at[i].events >= c.at[i - 1].events);
    }
    teardown(&f);
}

/* Identical collectives (one plan) run independently: the second of two allreduces on the same GPUs
 * waits for a compute op and ends later by exactly that; results match two separate engines. */
static void test_shared_plan(void **state) {
    (void)state;
    fixture_t f;
    setup(&f, 4, NULL);
    assert_int_equal(sim_engine_reserve(f.e, 100, 100), SIM_OK);
    const int32_t gpus[4] = {0, 1, 2, 3};
    const sim_coll_desc_t cd = {
        .op = SIM_COLL_ALLREDUCE, .size_bytes = 40e6, .gpus = gpus, .n_gpus = 4, .stream = 1, .name = "ar"};
    sim_op_id_t m1[4], m2[4], pre;
    sim_coll_id_t c1, c2;
    assert_int_equal(sim_coll_add(f.e, &cd, m1, &c1), SIM_OK);
    sim_coll_desc_t cd2 = cd;
    cd2.stream = 2; /* another stream: the same plan */
    assert_int_equal(sim_coll_add(f.e, &cd2, m2, &c2), SIM_OK);
    sim_op_compute(f.e, 2, 0, 20e-3, "pre", &pre); /* after the first one ends */
    assert_int_equal(sim_op_depend(f.e, m2[2], pre), SIM_OK);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(sim_op_gpu(f.e, m1[i]), i);
        assert_int_equal(sim_op_collective(f.e, m1[i]), c1);
        assert_int_equal(sim_op_collective(f.e, m2[i]), c2);
    }
    assert_int_equal(sim_op_collective(f.e, pre), -1);
    assert_int_equal(sim_op_gpu(f.e, pre), 2);
    assert_int_equal(sim_op_gpu(f.e, 999), -1);
    assert_int_equal(sim_engine_run(f.e), SIM_OK);
    sim_coll_result_t r1, r2;
    assert_int_equal(sim_coll_result(f.e, c1, &r1), SIM_OK);
    assert_int_equal(sim_coll_result(f.e, c2, &r2), SIM_OK);
    assert_int_equal(r1.algo, r2.algo);
    assert_true(r1.closed_form_s == r2.closed_form_s);
    assert_true(r1.start_ps == 0);
    assert_true(r2.start_ps == sim_s_to_ps(20e-3));
    assert_true(r2.end_ps - r2.start_ps == r1.end_ps - r1.start_ps); /* each alone on the network */
    assert_true(r1.flows > 0 && r1.flows == r2.flows);
    /* the same collective alone on a fresh engine */
    fixture_t g;
    setup(&g, 4, NULL);
    sim_coll_id_t c;
    assert_int_equal(sim_coll_add(g.e, &cd, NULL, &c), SIM_OK);
    assert_int_equal(sim_engine_run(g.e), SIM_OK);
    sim_coll_result_t r;
    assert_int_equal(sim_coll_result(g.e, c, &r), SIM_OK);
    assert_true(r.end_ps == r1.end_ps && r.closed_form_s == r1.closed_form_s && r.flows == r1.flows);
    /* a bad descriptor is refused even when an identical good one was added */
    sim_coll_desc_t bad = cd;
    bad.stream = 0;
    fixture_t h;
    setup(&h, 4, NULL);
    assert_int_equal(sim_coll_add(h.e, &cd, NULL, NULL), SIM_OK);
    assert_int_equal(sim_coll_add(h.e, &bad, NULL, NULL), SIM_EINVAL);
    assert_non_null(strstr(sim_engine_last_error(h.e), "stream 0"));
    teardown(&h);
    teardown(&g);
    teardown(&f);
}

/* sim_engine_reserve: out-of-range counts and after the start are refused; an operation takes at
 * most 65535 dependencies; an engine at most 32767 distinct names. */
static void test_reserve_and_limits(void **state) {
    (void)state;
    fixture_t f;
    setup(&f, 2, NULL);
    assert_int_equal(sim_engine_reserve(f.e, -1, 0), SIM_EINVAL);
    assert_int_equal(sim_engine_reserve(f.e, (int64_t)1 << 32, 0), SIM_EINVAL);
    assert_int_equal(sim_engine_reserve(f.e, 70000, 70000), SIM_OK);
    sim_op_id_t last, op;
    sim_op_compute(f.e, 1, 0, 1e-6, "last", &last);
    for (int i = 0; i < 65535; i++) {
        sim_op_compute(f.e, 0, 0, 1e-9, "dep", &op);
        assert_int_equal(sim_op_depend(f.e, last, op), SIM_OK);
    }
    sim_op_compute(f.e, 0, 0, 1e-9, "one too many", &op);
    assert_int_equal(sim_op_depend(f.e, last, op), SIM_EINVAL);
    assert_non_null(strstr(sim_engine_last_error(f.e), "at most 65535"));
    assert_int_equal(sim_engine_run(f.e), SIM_OK);
    assert_s(start_s(f.e, last), 65536 * 1e-9 - 1e-9); /* after the 65535 ops it depends on */
    assert_int_equal(sim_engine_reserve(f.e, 10, 10), SIM_ESTATE);
    teardown(&f);
    /* names are pointers, at most 32767 distinct ones; a known one is still taken after that */
    static char names[32768];
    setup(&f, 1, NULL);
    for (int i = 0; i < 32767; i++)
        assert_int_equal(sim_op_compute(f.e, 0, 0, 0.0, names + i, NULL), SIM_OK);
    assert_int_equal(sim_op_compute(f.e, 0, 0, 0.0, names + 32767, NULL), SIM_ENOMEM);
    assert_non_null(strstr(sim_engine_last_error(f.e), "at most 32767 distinct"));
    assert_int_equal(sim_op_compute(f.e, 0, 0, 0.0, names + 5, NULL), SIM_OK);
    assert_int_equal(sim_op_compute(f.e, 0, 0, 0.0, NULL, NULL), SIM_OK);
    assert_int_equal(sim_engine_run(f.e), SIM_OK);
    teardown(&f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stream_order_and_dependencies),
        cmocka_unit_test(test_implied_dependencies),
        cmocka_unit_test(test_overlap_and_barrier),
        cmocka_unit_test(test_p2p),
        cmocka_unit_test(test_deadlock_detected),
        cmocka_unit_test(test_same_input_same_log),
        cmocka_unit_test(test_two_engines_interleaved),
        cmocka_unit_test(test_progress_reports),
        cmocka_unit_test(test_shared_plan),
        cmocka_unit_test(test_reserve_and_limits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
