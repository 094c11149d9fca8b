/* step/test_workload.c - workloads as steps (step_new_workload, step_workload_export): an all-reduce
 * of 1 GiB over 64 ranks gives the ring's closed form and what the nccl-tests measurement of the
 * engine gives; dependencies, messages and compute durations (trace and roofline) give their sums;
 * a slow GPU stretches its compute; a step exported and imported again runs every operation at the
 * same times (network and analytic communication, 1F1B and interleaved), the export writing each
 * rank in a topological order; malformed workloads end in
 * one line naming the rank, the node and the field; a collapsed step is not exported. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "step.h"
#include "step_jobs.h"

/* ---- a workload built by hand --------------------------------------------------------------------- */

typedef struct wb {
    step_workload_t w;
    int64_t cap_nodes, cap_deps, n_deps, n_nodes;
    int32_t cap_groups;
    int64_t n_granks;
    int32_t cur_rank;
} wb_t;

static void wb_init(wb_t *b, int32_t n_ranks) {
    memset(b, 0, sizeof *b);
    b->w.n_ranks = n_ranks;
    b->w.rank_nodes_offset = calloc((size_t)n_ranks + 1, sizeof *b->w.rank_nodes_offset);
    b->cap_nodes = 1024;
    b->w.nodes = calloc((size_t)b->cap_nodes, sizeof *b->w.nodes);
    b->cap_deps = 1024;
    b->w.deps = calloc((size_t)b->cap_deps, sizeof *b->w.deps);
    b->w.groups = calloc(64, sizeof *b->w.groups);
    b->w.group_ranks = calloc(4096, sizeof *b->w.group_ranks);
    b->cur_rank = 0;
}

static int32_t wb_group(wb_t *b, const char *name, const int32_t *ranks, int32_t n) {
    step_wl_group_t *g = &b->w.groups[b->w.n_groups];
    snprintf(g->name, sizeof g->name, "%s", name);
    g->n_ranks = n;
    g->ranks_offset = b->n_granks;
    memcpy(b->w.group_ranks + b->n_granks, ranks, (size_t)n * sizeof *ranks);
    b->n_granks += n;
    return b->w.n_groups++;
}

/* Start the nodes of rank r (ranks in increasing order). */
static void wb_rank(wb_t *b, int32_t r) {
    b->cur_rank = r;
}

static step_wl_node_t *wb_node(wb_t *b, uint64_t id, step_wl_kind_t kind, int32_t n_deps,
                               const uint64_t *deps) {
    const int64_t i = b->n_nodes++;
    for (int32_t q = b->cur_rank; q < b->w.n_ranks; q++)
        b->w.rank_nodes_offset[q + 1] = b->n_nodes;
    step_wl_node_t *n = &b->w.nodes[i];
    memset(n, 0, sizeof *n);
    n->id = id;
    n->kind = kind;
    n->duration_s = -1;
    n->peer = -1;
    n->group = -1;
    n->start_hint_s = -1;
    n->deps_offset = b->n_deps;
    n->n_deps = n_deps;
    for (int32_t d = 0; d < n_deps; d++)
        b->w.deps[b->n_deps++] = deps[d];
    char name[32];
    snprintf(name, sizeof name, "node %llu", (unsigned long long)id);
    assert_int_equal(step_workload_name_add(&b->w, name, &n->name), SIM_OK);
    return n;
}

/* A 64-rank star of 25 GB/s NICs and 1 us links (no NVLink domains). */
static void star_of(sim_star_t *star, sim_network_desc_t *net, int32_t n, int32_t per_domain) {
    const sim_star_params_t sp = {.n_gpus = n,
                                  .nic_bytes_per_s = 25e9,
                                  .nic_latency_s = 1e-6,
                                  .gpus_per_domain = per_domain,
                                  .nvlink_bytes_per_s = 300e9,
                                  .nvlink_latency_s = 0.5e-6};
    assert_int_equal(sim_star_init(star, &sp), SIM_OK);
    sim_star_network(star, net);
}

static double run_time(step_t *s) {
    assert_int_equal(step_run(s), SIM_OK);
    step_result_t r;
    assert_int_equal(step_result(s, &r), SIM_OK);
    return r.step_time_s;
}

/* ---- the all-reduce closed form ------------------------------------------------------------------- */

static void test_allreduce_ring(void **state) {
    (void)state;
    const int32_t n = 64;
    const double S = 1024.0 * 1024 * 1024;
    wb_t b;
    wb_init(&b, n);
    for (int32_t r = 0; r < n; r++) {
        wb_rank(&b, r);
        step_wl_node_t *x = wb_node(&b, 0, STEP_WL_COLL, 0, NULL);
        x->coll = STEP_WL_ALLREDUCE;
        x->comm_bytes = S;
    }
    sim_star_t star;
    sim_network_desc_t net;
    star_of(&star, &net, n, 1);
    step_config_t cfg;
    step_config_default(&cfg);
    step_t *s = NULL;
    char err[300];
    if (step_new_workload(&b.w, &cfg, &net, NULL, STEP_WL_COMPUTE_TRACE, &s, err, sizeof err) != SIM_OK)
        fail_msg("%s", err);
    const double t = run_time(s);
    /* the ring: 2 (n - 1) steps of S / n bytes at 25 GB/s, each paying two links' latency */
    const double ring = 2.0 * (n - 1) * (S / n / 25e9 + 2e-6);
    assert_true(fabs(t - ring) <= 1e-3 * ring);
    /* and what the engine's nccl-tests measurement gives (stepsim collective) */
    const sim_coll_bench_t cb = {.op = SIM_COLL_ALLREDUCE, .algo = SIM_ALGO_AUTO, .gpus = n, .size_bytes = S};
    sim_coll_bench_result_t br;
    assert_int_equal(sim_coll_bench_run(&cfg.engine, &net, &cb, &br, NULL, 0), SIM_OK);
    assert_true(fabs(t - br.time_s) <= 1e-9 * br.time_s);
    assert_int_equal(br.algo, SIM_ALGO_RING);
    step_result_t r;
    assert_int_equal(step_result(s, &r), SIM_OK);
    assert_int_equal(r.gpus, n);
    assert_int_equal(r.simulated_gpus, n);
    assert_int_equal(r.operations, n);
    step_op_t op;
    assert_int_equal(step_op(s, 0, &op), SIM_OK);
    assert_int_equal(op.kind, STEP_OP_DP);
    assert_string_equal(op.collective, "allreduce");
    assert_true(fabs(op.comm_gb - S * 1e-9) <= 1e-12);
    /* bytes per link: every rank sends 2 (n - 1) / n S, crossing its NIC and the receiver's */
    double *bytes = calloc((size_t)net.n_links, sizeof *bytes);
    int partial = 1;
    assert_int_equal(step_link_bytes(s, bytes, &partial), SIM_OK);
    assert_int_equal(partial, 0);
    double total = 0;
    for (int32_t l = 0; l < net.n_links; l++)
        total += bytes[l];
    assert_true(fabs(total - 2.0 * n * 2.0 * (n - 1) / n * S) <= 1e-9 * total);
    free(bytes);
    step_free(s);
    sim_star_destroy(&star);
    step_workload_free(&b.w);
}

/* ---- dependencies, messages, compute ------------------------------------------------------------- */

/* rank 0: A (1 s) -> send 1 GB to rank 1; rank 1: receive -> B (2 s); rank 1's C (0.5 s) has no
 * dependency and runs first on the compute stream (the file's order). */
static void build_chain(wb_t *b, int reorder_recv) {
    wb_init(b, 2);
    wb_rank(b, 0);
    step_wl_node_t *a = wb_node(b, 10, STEP_WL_COMPUTE, 0, NULL);
    a->duration_s = 1.0;
    const uint64_t da = 10;
    step_wl_node_t *s1 = wb_node(b, 11, STEP_WL_SEND, 1, &da);
    s1->peer = 1, s1->tag = 7, s1->comm_bytes = 1e9;
    step_wl_node_t *s2 = wb_node(b, 12, STEP_WL_SEND, 1, &da);
    s2->peer = 1, s2->tag = 8, s2->comm_bytes = 1e6;
    wb_rank(b, 1);
    step_wl_node_t *c = wb_node(b, 3, STEP_WL_COMPUTE, 0, NULL);
    c->duration_s = 0.5;
    step_wl_node_t *r1 = wb_node(b, 4, STEP_WL_RECV, 0, NULL);
    r1->peer = 0, r1->tag = reorder_recv ? 8 : 7, r1->comm_bytes = reorder_recv ? 1e6 : 1e9;
    step_wl_node_t *r2 = wb_node(b, 5, STEP_WL_RECV, 0, NULL);
    r2->peer = 0, r2->tag = reorder_recv ? 7 : 8, r2->comm_bytes = reorder_recv ? 1e9 : 1e6;
    const uint64_t dr[2] = {4, 5};
    step_wl_node_t *bb = wb_node(b, 6, STEP_WL_COMPUTE, 2, dr);
    bb->duration_s = 2.0;
}

static void test_chain(void **state) {
    (void)state;
    wb_t b;
    build_chain(&b, 0);
    sim_star_t star;
    sim_network_desc_t net;
    star_of(&star, &net, 2, 1);
    step_config_t cfg;
    step_config_default(&cfg);
    step_t *s = NULL;
    char err[300];
    if (step_new_workload(&b.w, &cfg, &net, NULL, STEP_WL_COMPUTE_TRACE, &s, err, sizeof err) != SIM_OK)
        fail_msg("%s", err);
    const double t = run_time(s);
    /* the two messages (different tags: independent) at once over a route of two 1 us links at
     * 25 GB/s, sharing it max-min: the link is full until the last byte */
    const double want = 1.0 + 2e-6 + (1e9 + 1e6) / 25e9 + 2.0;
    assert_true(fabs(t - want) <= 1e-9 * want);
    step_result_t r;
    assert_int_equal(step_result(s, &r), SIM_OK);
    assert_int_equal(r.critical_gpu, 1);
    assert_true(fabs(r.breakdown.compute_s - 2.5) <= 1e-9);
    assert_true(fabs(r.breakdown.compute_s + r.breakdown.exposed_pp_comm_s + r.breakdown.bubble_idle_s - t) <=
                1e-9);
    step_free(s);
    /* a slow rank 0 (x 1.5) stretches A by half a second */
    const double slow[2] = {1.5, 1.0};
    cfg.compute_slowdown = slow;
    if (step_new_workload(&b.w, &cfg, &net, NULL, STEP_WL_COMPUTE_TRACE, &s, err, sizeof err) != SIM_OK)
        fail_msg("%s", err);
    assert_true(fabs(run_time(s) - (want + 0.5)) <= 1e-9 * want);
    step_free(s);
    step_workload_free(&b.w);
    /* received in another order than sent: tags are independent, the same time */
    build_chain(&b, 1);
    cfg.compute_slowdown = NULL;
    if (step_new_workload(&b.w, &cfg, &net, NULL, STEP_WL_COMPUTE_TRACE, &s, err, sizeof err) != SIM_OK)
        fail_msg("%s", err);
    assert_true(fabs(run_time(s) - want) <= 1e-9 * want);
    step_free(s);
    step_workload_free(&b.w);
    sim_star_destroy(&star);
}

/* More (direction, peer, tag) channels than a GPU has streams: one stream per (direction, peer),
 * so messages must be received in the order they were sent; a workload whose ranks wait on each
 * other runs into the engine's deadlock. */
static void test_channels(void **state) {
    (void)state;
    sim_star_t star;
    sim_network_desc_t net;
    star_of(&star, &net, 2, 1);
    step_t *s = NULL;
    char err[300];
    for (int reverse = 0; reverse < 2; reverse++) {
        wb_t b;
        wb_init(&b, 2);
        for (int32_t r = 0; r < 2; r++) {
            wb_rank(&b, r);
            for (int32_t k = 0; k < 70; k++) {
                step_wl_node_t *x = wb_node(&b, (uint64_t)k, r ? STEP_WL_RECV : STEP_WL_SEND, 0, NULL);
                x->peer = 1 - r;
                x->tag = r && reverse ? 69 - k : k;
                x->comm_bytes = 1e6;
            }
        }
        const int rc = step_new_workload(&b.w, NULL, &net, NULL, STEP_WL_COMPUTE_TRACE, &s, err, sizeof err);
        if (!reverse) {
            if (rc != SIM_OK)
                fail_msg("%s", err);
            /* one after the other: 70 messages of 1 MB, each 2 us of latency */
            const double want = 70 * (1e6 / 25e9 + 2e-6);
            assert_true(fabs(run_time(s) - want) <= 1e-9 * want);
            step_free(s);
        } else {
            assert_int_equal(rc, SIM_EINVAL);
            assert_non_null(
                strstr(err, "rank 1 node 0: receive from rank 0 (tag 69): its match (rank 0 node 69)"));
            assert_non_null(strstr(err, "in the order they are sent"));
        }
        step_workload_free(&b.w);
    }
    /* each rank receives before it sends to the other */
    wb_t b;
    wb_init(&b, 2);
    for (int32_t r = 0; r < 2; r++) {
        wb_rank(&b, r);
        step_wl_node_t *x = wb_node(&b, 0, STEP_WL_RECV, 0, NULL);
        x->peer = 1 - r, x->comm_bytes = 1;
        const uint64_t d0 = 0;
        x = wb_node(&b, 1, STEP_WL_SEND, 1, &d0);
        x->peer = 1 - r, x->comm_bytes = 1;
    }
    if (step_new_workload(&b.w, NULL, &net, NULL, STEP_WL_COMPUTE_TRACE, &s, err, sizeof err) != SIM_OK)
        fail_msg("%s", err);
    assert_int_equal(step_run(s), SIM_EDEADLOCK);
    step_free(s);
    step_workload_free(&b.w);
    sim_star_destroy(&star);
}

/* --compute model: the roofline of the system's GPU from FLOPs and bytes. */
static void test_compute_model(void **state) {
    (void)state;
    model_system_t sys;
    assert_int_equal(model_system_preset("A100", &sys), MODEL_OK);
    wb_t b;
    wb_init(&b, 1);
    wb_rank(&b, 0);
    step_wl_node_t *a = wb_node(&b, 0, STEP_WL_COMPUTE, 0, NULL);
    a->flops = 1e15; /* compute-bound */
    a->mem_bytes = 1e9;
    const uint64_t d0 = 0;
    step_wl_node_t *m = wb_node(&b, 1, STEP_WL_COMPUTE, 1, &d0);
    m->mem_bytes = 1e12; /* memory-bound */
    m->duration_s = 5.0; /* ignored with --compute model */
    const uint64_t d1 = 1;
    step_wl_node_t *t = wb_node(&b, 2, STEP_WL_COMPUTE, 1, &d1);
    t->duration_s = 0.25; /* neither: the trace's duration */
    step_config_t cfg;
    step_config_default(&cfg);
    cfg.comm = SIM_COMM_ANALYTIC;
    step_t *s = NULL;
    char err[300];
    if (step_new_workload(&b.w, &cfg, NULL, &sys, STEP_WL_COMPUTE_MODEL, &s, err, sizeof err) != SIM_OK)
        fail_msg("%s", err);
    const double comp = sys.kernel_overhead_s + 1e15 / (sys.flop_efficiency * sys.matrix_tflop_per_s * 1e12);
    const double mem = 1e12 / (sys.hbm_gb_per_s * 1e9);
    const double want = comp + mem + 0.25;
    assert_true(fabs(run_time(s) - want) <= 1e-9 * want);
    step_free(s);
    /* --compute trace: node 0 has no duration */
    assert_int_equal(step_new_workload(&b.w, &cfg, NULL, &sys, STEP_WL_COMPUTE_TRACE, &s, err, sizeof err),
                     SIM_EINVAL);
    assert_non_null(strstr(err, "rank 0 node 0: duration_s"));
    step_workload_free(&b.w);
}

/* ---- malformed workloads -------------------------------------------------------------------------- */

static void expect_error(wb_t *b, int32_t n_gpus, const char *part1, const char *part2) {
    sim_star_t star;
    sim_network_desc_t net;
    star_of(&star, &net, n_gpus, 1);
    step_t *s = NULL;
    char err[300] = "";
    assert_int_equal(step_new_workload(&b->w, NULL, &net, NULL, STEP_WL_COMPUTE_TRACE, &s, err, sizeof err),
                     SIM_EINVAL);
    assert_null(s);
    if (!strstr(err, part1) || !strstr(err, part2))
        fail_msg("error \"%s\" lacks \"%s\" or \"%s\"", err, part1, part2);
    assert_null(strchr(err, '\n'));
    sim_star_destroy(&star);
    step_workload_free(&b->w);
}

static void test_errors(void **state) {
    (void)state;
    wb_t b;
    /* a cycle */
    wb_init(&b, 1);
    wb_rank(&b, 0);
    const uint64_t d1 = 1, d2 = 2, d0 = 0;
    wb_node(&b, 0, STEP_WL_COMPUTE, 1, &d2)->duration_s = 1;
    wb_node(&b, 1, STEP_WL_COMPUTE, 1, &d0)->duration_s = 1;
    wb_node(&b, 2, STEP_WL_COMPUTE, 1, &d1)->duration_s = 1;
    expect_error(&b, 1, "rank 0 node 0: deps", "cycle");
    /* a dangling dependency */
    wb_init(&b, 1);
    wb_rank(&b, 0);
    const uint64_t d9 = 9;
    wb_node(&b, 0, STEP_WL_COMPUTE, 1, &d9)->duration_s = 1;
    expect_error(&b, 1, "rank 0 node 0: deps", "node 9 is not a node");
    /* a name index outside the name table */
    wb_init(&b, 1);
    wb_rank(&b, 0);
    step_wl_node_t *unnamed = wb_node(&b, 0, STEP_WL_COMPUTE, 0, NULL);
    unnamed->duration_s = 1;
    unnamed->name = b.w.n_names + 5;
    expect_error(&b, 1, "rank 0 node 0: name", "the name table");
    /* two nodes with one id */
    wb_init(&b, 1);
    wb_rank(&b, 0);
    wb_node(&b, 5, STEP_WL_COMPUTE, 0, NULL)->duration_s = 1;
    wb_node(&b, 5, STEP_WL_COMPUTE, 0, NULL)->duration_s = 1;
    expect_error(&b, 1, "rank 0 node 5: id", "two nodes");
    /* an unmatched send */
    wb_init(&b, 2);
    wb_rank(&b, 0);
    step_wl_node_t *x = wb_node(&b, 0, STEP_WL_SEND, 0, NULL);
    x->peer = 1, x->tag = 3, x->comm_bytes = 10;
    expect_error(&b, 2, "rank 0 node 0: send to rank 1 with tag 3", "no matching receive");
    /* a group member out of range */
    wb_init(&b, 2);
    const int32_t bad[2] = {0, 5};
    wb_group(&b, "dp", bad, 2);
    wb_rank(&b, 0);
    wb_node(&b, 0, STEP_WL_COMPUTE, 0, NULL)->duration_s = 1;
    expect_error(&b, 2, "group 0 (dp): member rank 5", "allowed: 0..1");
    /* a collective that differs between members */
    wb_init(&b, 2);
    for (int32_t r = 0; r < 2; r++) {
        wb_rank(&b, r);
        x = wb_node(&b, 0, STEP_WL_COLL, 0, NULL);
        x->coll = STEP_WL_ALLREDUCE;
        x->comm_bytes = r ? 2e6 : 1e6;
    }
    expect_error(&b, 2, "node 0: comm_bytes", "the same collective");
    /* a rank that is not in the collective's group */
    wb_init(&b, 3);
    const int32_t two[2] = {0, 1};
    wb_group(&b, "tp", two, 2);
    wb_rank(&b, 2);
    x = wb_node(&b, 0, STEP_WL_COLL, 0, NULL);
    x->group = 0;
    expect_error(&b, 3, "rank 2 node 0: group 0 (tp)", "not a member");
    /* more than the memory budget */
    wb_init(&b, 1);
    wb_rank(&b, 0);
    wb_node(&b, 0, STEP_WL_COMPUTE, 0, NULL)->duration_s = 1;
    {
        sim_star_t star;
        sim_network_desc_t net;
        star_of(&star, &net, 1, 1);
        step_config_t cfg;
        step_config_default(&cfg);
        cfg.max_memory_gb = 0.1; /* below the fixed 0.2 GB */
        step_t *s = NULL;
        char err[300];
        assert_int_equal(
            step_new_workload(&b.w, &cfg, &net, NULL, STEP_WL_COMPUTE_TRACE, &s, err, sizeof err),
            SIM_EINVAL);
        assert_non_null(strstr(err, "more than the memory budget of 0.1 GB"));
        sim_star_destroy(&star);
        step_workload_free(&b.w);
    }
    /* more ranks than GPUs */
    wb_init(&b, 4);
    wb_rank(&b, 3);
    wb_node(&b, 0, STEP_WL_COMPUTE, 0, NULL)->duration_s = 1;
    expect_error(&b, 2, "network: 2 GPUs", "4 ranks");
}

/* ---- export and import again ---------------------------------------------------------------------- */

static int cmp_key(const void *x, const void *y) {
    const uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return (a > b) - (a < b);
}

/* The engine's operations by (GPU, stream), each stream's in the order they were added (the order
 * they run in): keys gpu << 40 | stream << 32 | op, sorted. */
static uint64_t *stream_order(const sim_engine_t *e) {
    const sim_op_id_t n = sim_op_count(e);
    uint64_t *k = malloc((size_t)(n ? n : 1) * sizeof *k);
    assert_non_null(k);
    for (sim_op_id_t op = 0; op < n; op++) {
        sim_op_desc_t d;
        assert_int_equal(sim_op_describe(e, op, &d), SIM_OK);
        k[op] = (uint64_t)d.gpu << 40 | (uint64_t)d.stream << 32 | (uint32_t)op;
    }
    qsort(k, (size_t)n, sizeof *k, cmp_key);
    return k;
}

static void roundtrip(const model_job_t *job, step_config_t cfg, const sim_network_desc_t *net) {
    cfg.collapse = STEP_COLLAPSE_OFF;
    step_t *a = NULL, *b = NULL;
    char err[300];
    if (step_new(job, &cfg, net, &a, err, sizeof err) != SIM_OK)
        fail_msg("%s", err);
    step_workload_t w;
    if (step_workload_export(a, &w, err, sizeof err) != SIM_OK)
        fail_msg("%s", err);
    assert_int_equal(w.n_ranks, job->gpus);
    assert_int_equal(w.rank_nodes_offset[w.n_ranks], sim_op_count(step_engine(a)));
    /* each rank's nodes in a topological order (every dependency earlier in the rank), the
     * dependencies laid out in node order, and the operations' order wherever it is one: a node
     * comes before a node of higher id unless a dependency puts it after */
    int64_t kd = 0, out_of_id_order = 0;
    for (int32_t r = 0; r < w.n_ranks; r++)
        for (int64_t i = w.rank_nodes_offset[r]; i < w.rank_nodes_offset[r + 1]; i++) {
            if (w.nodes[i].n_deps > 0)
                assert_int_equal(w.nodes[i].deps_offset, kd);
            for (int32_t d = 0; d < w.nodes[i].n_deps; d++) {
                int64_t j = w.rank_nodes_offset[r];
                while (j < i && w.nodes[j].id != w.deps[kd + d])
                    j++;
                if (j == i)
                    fail_msg("rank %d node %llu: dependency %llu is not an earlier node", r,
                             (unsigned long long)w.nodes[i].id, (unsigned long long)w.deps[kd + d]);
            }
            kd += w.nodes[i].n_deps;
            out_of_id_order += i > w.rank_nodes_offset[r] && w.nodes[i].id < w.nodes[i - 1].id;
        }
    if (out_of_id_order > 0) { /* then an engine dependency points to a later operation */
        int forward = 0;
        for (int64_t i = 0; i < w.rank_nodes_offset[w.n_ranks] && !forward; i++)
            for (int32_t d = 0; d < w.nodes[i].n_deps; d++)
                forward |= w.deps[w.nodes[i].deps_offset + d] > w.nodes[i].id;
        assert_true(forward);
    }
    if (step_new_workload(&w, &cfg, net, &job->system, STEP_WL_COMPUTE_TRACE, &b, err, sizeof err) != SIM_OK)
        fail_msg("%s", err);
    const double ta = run_time(a), tb = run_time(b);
    assert_true(fabs(ta - tb) <= 1e-9 * ta);
    /* the same workload with its dependencies laid out in reverse node order (the reader and the
     * export lay them out in node order, which the import uses directly): the same times */
    {
        step_workload_t w3 = w;
        const int64_t nn = w.rank_nodes_offset[w.n_ranks];
        int64_t n_deps = 0;
        for (int64_t i = 0; i < nn; i++)
            n_deps += w.nodes[i].n_deps;
        assert_true(n_deps > 0);
        w3.nodes = malloc((size_t)nn * sizeof *w3.nodes);
        w3.deps = malloc((size_t)n_deps * sizeof *w3.deps);
        assert_non_null(w3.nodes);
        assert_non_null(w3.deps);
        memcpy(w3.nodes, w.nodes, (size_t)nn * sizeof *w3.nodes);
        int64_t k = 0;
        for (int64_t i = nn - 1; i >= 0; i--) {
            w3.nodes[i].deps_offset = k;
            memcpy(w3.deps + k, w.deps + w.nodes[i].deps_offset, (size_t)w.nodes[i].n_deps * sizeof *w3.deps);
            k += w.nodes[i].n_deps;
        }
        step_t *c = NULL;
        if (step_new_workload(&w3, &cfg, net, &job->system, STEP_WL_COMPUTE_TRACE, &c, err, sizeof err) !=
            SIM_OK)
            fail_msg("%s", err);
        assert_true(run_time(c) == tb);
        const sim_engine_t *eb = step_engine(b), *ec = step_engine(c);
        assert_int_equal(sim_op_count(ec), sim_op_count(eb));
        for (sim_op_id_t op = 0; op < sim_op_count(eb); op++) {
            sim_time_ps_t sb, fb, sc, fc;
            sim_op_times(eb, op, &sb, &fb);
            sim_op_times(ec, op, &sc, &fc);
            if (sb != sc || fb != fc)
                fail_msg("deps out of node order: operation %d: %lld..%lld against %lld..%lld", op,
                         (long long)sb, (long long)fb, (long long)sc, (long long)fc);
        }
        step_free(c);
        free(w3.nodes);
        free(w3.deps);
    }
    /* every operation runs at the same times: the import adds them in another order (rank by rank),
     * so they are compared stream by stream, where both keep the order they run in */
    const sim_engine_t *ea = step_engine(a), *eb = step_engine(b);
    assert_int_equal(sim_op_count(ea), sim_op_count(eb));
    uint64_t *ka = stream_order(ea), *kb = stream_order(eb);
    for (sim_op_id_t k = 0; k < sim_op_count(ea); k++) {
        const sim_op_id_t opa = (sim_op_id_t)(uint32_t)ka[k], opb = (sim_op_id_t)(uint32_t)kb[k];
        assert_true(ka[k] >> 32 == kb[k] >> 32); /* the same GPU and stream */
        sim_time_ps_t sa, fa, sb, fb;
        sim_op_times(ea, opa, &sa, &fa);
        sim_op_times(eb, opb, &sb, &fb);
        if (sa != sb || fa != fb)
            fail_msg("operation %d (%d imported): %lld..%lld against %lld..%lld", opa, opb, (long long)sa,
                     (long long)fa, (long long)sb, (long long)fb);
        sim_op_desc_t da, db;
        sim_op_describe(ea, opa, &da);
        sim_op_describe(eb, opb, &db);
        assert_int_equal(da.gpu, db.gpu);
        assert_int_equal(da.kind, db.kind);
        char la[64], lb[64];
        assert_string_equal(step_op_label(a, opa, la, sizeof la), step_op_label(b, opb, lb, sizeof lb));
        step_op_t oa, ob;
        assert_int_equal(step_op(a, opa, &oa), SIM_OK);
        assert_int_equal(step_op(b, opb, &ob), SIM_OK);
        assert_int_equal(oa.kind == STEP_OP_OPTIMIZER ? STEP_OP_COMPUTE : oa.kind, ob.kind);
    }
    free(ka);
    free(kb);
    step_result_t ra, rb;
    assert_int_equal(step_result(a, &ra), SIM_OK);
    assert_int_equal(step_result(b, &rb), SIM_OK);
    assert_int_equal(ra.critical_gpu, rb.critical_gpu);
    assert_true(fabs(ra.breakdown.compute_s - rb.breakdown.compute_s) <= 1e-9 * ta);
    assert_true(fabs(ra.breakdown.exposed_tp_comm_s - rb.breakdown.exposed_tp_comm_s) <= 1e-9 * ta);
    assert_true(fabs(ra.breakdown.exposed_pp_comm_s - rb.breakdown.exposed_pp_comm_s) <= 1e-9 * ta);
    assert_true(fabs(ra.breakdown.exposed_dp_comm_s - rb.breakdown.exposed_dp_comm_s) <= 1e-9 * ta);
    /* after the run the export carries the simulated start times */
    step_workload_t w2;
    assert_int_equal(step_workload_export(a, &w2, err, sizeof err), SIM_OK);
    for (int64_t i = 0; i < w2.rank_nodes_offset[w2.n_ranks]; i++) {
        sim_time_ps_t st, en;
        sim_op_times(ea, (sim_op_id_t)w2.nodes[i].id, &st, &en);
        assert_true(fabs(w2.nodes[i].start_hint_s - sim_ps_to_s(st)) <= 1e-15 + 1e-12 * sim_ps_to_s(st));
        assert_true(w.nodes[i].start_hint_s == -1.0);
    }
    step_workload_free(&w2);
    step_workload_free(&w);
    step_free(a);
    step_free(b);
}

static void test_roundtrip(void **state) {
    (void)state;
    model_job_t job = step_test_small_job(2);
    sim_star_t star;
    sim_network_desc_t net;
    star_of(&star, &net, (int32_t)job.gpus, 4);
    step_config_t cfg;
    step_config_default(&cfg);
    roundtrip(&job, cfg, &net);
    cfg.comm = SIM_COMM_ANALYTIC;
    cfg.engine.compat = job.compat;
    roundtrip(&job, cfg, NULL);
    step_config_default(&cfg);
    cfg.schedule = STEP_SCHEDULE_INTERLEAVED;
    cfg.virtual_stages = 2;
    job.global_batch = 16;
    roundtrip(&job, cfg, &net);
    sim_star_destroy(&star);
}

/* A source on the export one rank at a time (the form the Chakra reader hands over: a workload of
 * every rank where only rank r has nodes, names of its own). */
typedef struct exp_src {
    step_wl_export_t *x;
    step_workload_t cur;
    int32_t next, fail_at;
} exp_src_t;

static int exp_rank(void *ctx, int32_t r, const step_workload_t **out, char *err, size_t err_size) {
    exp_src_t *e = ctx;
    assert_int_equal(r, e->next); /* ranks in order, each once */
    e->next++;
    step_workload_free(&e->cur);
    if (r == e->fail_at) {
        snprintf(err, err_size, "rank %d: unreadable", r);
        return SIM_EINVAL;
    }
    const int rc = step_workload_export_rank(e->x, r, &e->cur, err, err_size);
    *out = &e->cur;
    return rc;
}

/* step_new_workload_source: the same step as the whole workload's, operation for operation; the
 * source's errors passed through; its claims about the groups checked. */
static void test_source(void **state) {
    (void)state;
    model_job_t job = step_test_small_job(2);
    sim_star_t star;
    sim_network_desc_t net;
    star_of(&star, &net, (int32_t)job.gpus, 4);
    step_config_t cfg;
    step_config_default(&cfg);
    cfg.collapse = STEP_COLLAPSE_OFF;
    step_t *a = NULL, *b = NULL, *c = NULL;
    char err[300];
    if (step_new(&job, &cfg, &net, &a, err, sizeof err) != SIM_OK)
        fail_msg("%s", err);
    step_workload_t w, shape;
    assert_int_equal(step_workload_export(a, &w, err, sizeof err), SIM_OK);
    step_wl_export_t *x = NULL;
    assert_int_equal(step_workload_export_begin(a, &x, err, sizeof err), SIM_OK);
    assert_int_equal(step_workload_export_rank(x, 0, &shape, err, sizeof err), SIM_OK); /* every group */
    int64_t sends = 0, recvs_from_later = 0;
    for (int64_t i = 0; i < w.rank_nodes_offset[w.n_ranks]; i++) {
        int32_t r = 0;
        while (w.rank_nodes_offset[r + 1] <= i)
            r++;
        sends += w.nodes[i].kind == STEP_WL_SEND;
        recvs_from_later += w.nodes[i].kind == STEP_WL_RECV && w.nodes[i].peer > r;
    }
    assert_true(sends > 0 && recvs_from_later > 0); /* messages wait for later ranks both ways */
    uint8_t used[64];
    assert_true(shape.n_groups + 1 <= 64);
    for (int32_t g = 0; g <= shape.n_groups; g++)
        used[g] = g < shape.n_groups; /* an export uses every group it lists, never every rank */
    exp_src_t e = {.x = x, .fail_at = -1};
    const step_wl_source_t src = {.shape = &shape, .group_used = used, .rank = exp_rank, .ctx = &e};
    if (step_new_workload_source(&src, &cfg, &net, NULL, STEP_WL_COMPUTE_TRACE, &b, err, sizeof err) !=
        SIM_OK)
        fail_msg("%s", err);
    assert_int_equal(e.next, w.n_ranks);
    step_workload_free(&e.cur);
    if (step_new_workload(&w, &cfg, &net, NULL, STEP_WL_COMPUTE_TRACE, &c, err, sizeof err) != SIM_OK)
        fail_msg("%s", err);
    const double ta = run_time(a), tb = run_time(b), tc = run_time(c);
    assert_true(fabs(ta - tb) <= 1e-9 * ta);
    assert_true(tb == tc);
    const sim_engine_t *eb = step_engine(b), *ec = step_engine(c);
    assert_int_equal(sim_op_count(eb), sim_op_count(ec));
    for (sim_op_id_t op = 0; op < sim_op_count(eb); op++) { /* both built rank by rank: the same ids */
        sim_time_ps_t sb, fb, sc, fc;
        sim_op_times(eb, op, &sb, &fb);
        sim_op_times(ec, op, &sc, &fc);
        assert_true(sb == sc && fb == fc);
        char lb[64], lc[64];
        assert_string_equal(step_op_label(b, op, lb, sizeof lb), step_op_label(c, op, lc, sizeof lc));
    }
    step_free(b);
    step_free(c);
    /* the source's error, as it gave it */
    e = (exp_src_t){.x = x, .fail_at = 1};
    assert_int_equal(
        step_new_workload_source(&src, &cfg, &net, NULL, STEP_WL_COMPUTE_TRACE, &b, err, sizeof err),
        SIM_EINVAL);
    assert_null(b);
    assert_string_equal(err, "rank 1: unreadable");
    step_workload_free(&e.cur);
    /* a group said unused that a collective uses; the every-rank group said used, which none uses */
    for (int lie = 0; lie < 2; lie++) {
        for (int32_t g = 0; g <= shape.n_groups; g++)
            used[g] = g < shape.n_groups;
        used[lie ? shape.n_groups : 0] = (uint8_t)lie;
        e = (exp_src_t){.x = x, .fail_at = -1};
        assert_int_equal(
            step_new_workload_source(&src, &cfg, &net, NULL, STEP_WL_COMPUTE_TRACE, &b, err, sizeof err),
            SIM_EINVAL);
        assert_non_null(
            strstr(err, lie ? "((every rank)): no collective uses it, but its source said one does"
                            : "a collective on a group its source said no collective uses"));
        step_workload_free(&e.cur);
    }
    step_workload_export_end(x);
    step_workload_free(&shape);
    step_workload_free(&w);
    step_free(a);
    sim_star_destroy(&star);
}

static void test_export_refused(void **state) {
    (void)state;
    const model_job_t job = step_test_small_job(2);
    sim_star_t star;
    sim_network_desc_t net;
    star_of(&star, &net, (int32_t)job.gpus, 4);
    step_config_t cfg;
    step_config_default(&cfg);
    cfg.comm = SIM_COMM_ANALYTIC; /* one GPU per stage */
    step_t *s = NULL;
    char err[300];
    assert_int_equal(step_new(&job, &cfg, NULL, &s, err, sizeof err), SIM_OK);
    step_workload_t w;
    assert_int_equal(step_workload_export(s, &w, err, sizeof err), SIM_EINVAL);
    assert_non_null(strstr(err, "2 of 16 GPUs simulated"));
    assert_non_null(strstr(err, "--collapse off"));
    assert_null(w.nodes);
    step_free(s);
    sim_star_destroy(&star);
}

/* Ranks whose name tables look alike (same size, same names where the import samples them) but
 * differ elsewhere, or are equal but use other names: every operation still has its own node's name
 * (the import reuses an earlier rank's names only once each is found equal). */
typedef struct alike_src {
    wb_t rank[3];
    step_workload_t shape;
} alike_src_t;

static int alike_rank(void *ctx, int32_t r, const step_workload_t **out, char *err, size_t err_size) {
    (void)err;
    (void)err_size;
    *out = &((alike_src_t *)ctx)->rank[r].w;
    return SIM_OK;
}

static void test_alike_names(void **state) {
    (void)state;
    static const char *second[3] = {"beta", "BETA", "beta"};
    static const int32_t uses[3][3] = {{2, 1, 5}, {2, 1, 5}, {2, 3, 5}}; /* each node's name */
    static const char *want[3][3] = {
        {"beta", "alpha", "omega"}, {"BETA", "alpha", "omega"}, {"beta", "gamma", "omega"}};
    alike_src_t a;
    memset(&a, 0, sizeof a);
    for (int32_t r = 0; r < 3; r++) {
        wb_t *b = &a.rank[r];
        wb_init(b, 3);
        const char *table[5] = {"alpha", second[r], "gamma", "delta", "omega"};
        for (int k = 0; k < 5; k++) {
            int32_t ix = -1;
            assert_int_equal(step_workload_name_add(&b->w, table[k], &ix), SIM_OK);
            assert_int_equal(ix, k + 1);
        }
        wb_rank(b, r);
        for (int32_t k = 0; k < 3; k++) {
            const uint64_t dep = (uint64_t)k;
            step_wl_node_t *n = wb_node(b, (uint64_t)k + 1, STEP_WL_COMPUTE, k > 0, &dep);
            n->duration_s = 1e-3;
            n->name = uses[r][k];
        }
        assert_int_equal(b->w.n_names, 9); /* and "node 1".."node 3" after them */
    }
    uint8_t used[1] = {0};
    a.shape.n_ranks = 3;
    const step_wl_source_t src = {.shape = &a.shape, .group_used = used, .rank = alike_rank, .ctx = &a};
    sim_star_t star;
    sim_network_desc_t net;
    star_of(&star, &net, 3, 1);
    step_config_t cfg;
    step_config_default(&cfg);
    step_t *s = NULL;
    char err[300];
    if (step_new_workload_source(&src, &cfg, &net, NULL, STEP_WL_COMPUTE_TRACE, &s, err, sizeof err) !=
        SIM_OK)
        fail_msg("%s", err);
    assert_int_equal(sim_op_count(step_engine(s)), 9);
    for (sim_op_id_t op = 0; op < 9; op++) { /* built rank by rank, each rank's nodes in order */
        char label[64];
        assert_string_equal(step_op_label(s, op, label, sizeof label), want[op / 3][op % 3]);
    }
    assert_true(fabs(run_time(s) - 3e-3) < 1e-12);
    step_free(s);
    for (int32_t r = 0; r < 3; r++)
        step_workload_free(&a.rank[r].w);
    sim_star_destroy(&star);
}

/* ---- the name table ------------------------------------------------------------------------------- */

/* Names are interned: one index per distinct name (truncated to 63 bytes), "" and NULL are 0, the
 * index survives step_workload_names_done (adding again rebuilds the hash), step_workload_name of
 * an index out of range is "". */
static void test_names(void **state) {
    (void)state;
    step_workload_t w;
    memset(&w, 0, sizeof w);
    int32_t a = -1, b = -1, c = -1, e = -1, z = -1;
    assert_string_equal(step_workload_name(&w, 1), "");
    assert_int_equal(step_workload_name_add(&w, "", &z), SIM_OK);
    assert_int_equal(z, 0);
    assert_int_equal(step_workload_name_add(&w, NULL, &z), SIM_OK);
    assert_int_equal(z, 0);
    assert_int_equal(step_workload_name_add(&w, "fwd mb 0", &a), SIM_OK);
    assert_int_equal(step_workload_name_add(&w, "bwd mb 0", &b), SIM_OK);
    assert_int_equal(step_workload_name_add(&w, "fwd mb 0", &c), SIM_OK);
    assert_int_equal(a, 1);
    assert_int_equal(b, 2);
    assert_int_equal(c, a);
    char longname[100];
    memset(longname, 'x', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    assert_int_equal(step_workload_name_add(&w, longname, &e), SIM_OK);
    assert_int_equal(strlen(step_workload_name(&w, e)), 63);
    longname[63] = '\0'; /* the same name once truncated */
    assert_int_equal(step_workload_name_add(&w, longname, &c), SIM_OK);
    assert_int_equal(c, e);
    step_workload_names_done(&w);
    assert_null(w.name_index);
    /* thousands of names: the hash grows, every name keeps its index */
    for (int i = 0; i < 5000; i++) {
        char nm[32];
        snprintf(nm, sizeof nm, "op %d", i);
        int32_t k = -1;
        assert_int_equal(step_workload_name_add(&w, nm, &k), SIM_OK);
        assert_int_equal(k, 4 + i);
    }
    assert_int_equal(step_workload_name_add(&w, "bwd mb 0", &c), SIM_OK);
    assert_int_equal(c, b);
    assert_int_equal(w.n_names, 5004);
    assert_string_equal(step_workload_name(&w, 4 + 4321), "op 4321");
    assert_string_equal(step_workload_name(&w, 5004), "");
    assert_string_equal(step_workload_name(&w, -1), "");
    step_workload_free(&w);
    assert_int_equal(w.n_names, 0);
    assert_null(w.name_chars);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_allreduce_ring), cmocka_unit_test(test_chain),
        cmocka_unit_test(test_compute_model),  cmocka_unit_test(test_errors),
        cmocka_unit_test(test_channels),       cmocka_unit_test(test_roundtrip),
        cmocka_unit_test(test_export_refused), cmocka_unit_test(test_source),
        cmocka_unit_test(test_alike_names),    cmocka_unit_test(test_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
