/* step/test_traffic.c - the bytes a collective's members send (sim_coll_result_t.sent_bytes) and the
 * bytes each parallel group sends over a step (step_group_traffic) against their closed forms: a ring
 * all-reduce of S bytes on n GPUs sends 2 (n - 1) S (2 (n - 1) / n S per GPU), a ring all-gather or
 * reduce-scatter (n - 1) S, a send S, with or without the protocols' wire overhead; a step's group
 * bytes are the sum of its collectives' closed forms (every ring), the same with every GPU simulated
 * and with the tensor ranks collapsed; and the bytes on all links of a one-switch star are twice the
 * bytes sent (every byte crosses the sender's link and the receiver's). */
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

static double sent_of(sim_coll_op_t op, sim_coll_algo_t algo, int32_t n, double size, int nccl) {
    sim_star_t star;
    const sim_star_params_t sp = {
        .n_gpus = n, .nic_bytes_per_s = 25e9, .nic_latency_s = 1e-6, .gpus_per_domain = 1};
    assert_int_equal(sim_star_init(&star, &sp), SIM_OK);
    sim_network_desc_t d;
    sim_star_network(&star, &d);
    sim_config_t cfg;
    sim_config_default(&cfg);
    if (nccl) { /* a protocol that puts more bytes on the wire than it carries */
        cfg.proto[SIM_PROTO_SIMPLE].efficiency[0] = 0.8;
        cfg.proto[SIM_PROTO_SIMPLE].efficiency[1] = 0.8;
    }
    sim_engine_t *e = NULL;
    assert_int_equal(sim_engine_new(&cfg, &d, &e, NULL, 0), SIM_OK);
    int32_t gpus[64];
    for (int32_t i = 0; i < n; i++)
        gpus[i] = i;
    const sim_coll_desc_t c = {.op = op,
                               .algo = algo,
                               .fidelity = SIM_FIDELITY_DEFAULT,
                               .mode = SIM_COMM_NETWORK,
                               .size_bytes = size,
                               .gpus = gpus,
                               .n_gpus = n,
                               .stream = 1};
    sim_coll_id_t id;
    if (sim_coll_add(e, &c, NULL, &id) != SIM_OK)
        fail_msg("sim_coll_add: %s", sim_engine_last_error(e));
    assert_int_equal(sim_engine_run(e), SIM_OK);
    sim_coll_result_t r;
    assert_int_equal(sim_coll_result(e, id, &r), SIM_OK);
    assert_int_equal(r.members, n);
    double wire = 0;
    for (int32_t l = 0; l < d.n_links; l++) {
        sim_link_stats_t ls;
        sim_link_stats(e, l, &ls);
        wire += ls.bytes;
    }
    /* on the star every byte crosses two links, at the protocol's wire overhead */
    assert_true(fabs(wire - 2.0 * r.sent_bytes / (nccl ? 0.8 : 1.0)) <= 1e-9 * wire);
    sim_engine_free(e);
    sim_star_destroy(&star);
    return r.sent_bytes;
}

static void test_collective_closed_forms(void **state) {
    (void)state;
    const double S = 3.0 * 1024 * 1024 * 1024;
    for (int nccl = 0; nccl < 2; nccl++)
        for (int32_t n = 2; n <= 16; n *= 2) {
            const double ar = sent_of(SIM_COLL_ALLREDUCE, SIM_ALGO_RING, n, S, nccl);
            assert_true(fabs(ar / n - 2.0 * (n - 1) / n * S) <= 1e-12 * S);
            const double ag = sent_of(SIM_COLL_ALLGATHER, SIM_ALGO_RING, n, S, nccl);
            assert_true(fabs(ag - (n - 1) * S) <= 1e-12 * S * n);
            const double rs = sent_of(SIM_COLL_REDUCESCATTER, SIM_ALGO_RING, n, S, nccl);
            assert_true(fabs(rs - (n - 1) * S) <= 1e-12 * S * n);
        }
    const double p2p = sent_of(SIM_COLL_SENDRECV, SIM_ALGO_AUTO, 2, S, 0);
    assert_true(fabs(p2p - S) <= 1e-12 * S);
}

/* 16 GPUs: dp 2, tp 4, pp 2 on NVLink domains of 4. */
static model_job_t small_job(void) {
    return step_test_small_job(2);
}

static int group_index(const char *g) {
    return strcmp(g, "tp") == 0   ? STEP_TRAFFIC_TP
           : strcmp(g, "cp") == 0 ? STEP_TRAFFIC_CP
           : strcmp(g, "pp") == 0 ? STEP_TRAFFIC_PP
           : strcmp(g, "dp") == 0 ? STEP_TRAFFIC_DP
                                  : -1;
}

/* The step on the ideal star, its group traffic, and (with closed) the closed form summed
 * over its collectives: each member of a ring all-reduce of S sends 2 (n - 1) / n S, of an all-gather
 * or reduce-scatter (n - 1) / n S, each end of a send S / 2 (S for the pair). */
static void traffic_of(step_collapse_t collapse, step_traffic_t *t, double closed[STEP_TRAFFIC_GROUPS],
                       double *links_total, double *step_s) {
    const model_job_t job = small_job();
    /* the ideal star: every GPU with its own NIC and NVLink port (the system's bandwidths) */
    sim_star_t star;
    sim_network_desc_t net;
    step_test_star(&job, &star, &net);
    step_config_t cfg;
    step_config_default(&cfg);
    cfg.comm = SIM_COMM_NETWORK;
    cfg.collapse = collapse;
    step_t *s = NULL;
    char err[300];
    assert_int_equal(step_new(&job, &cfg, &net, &s, err, sizeof err), SIM_OK);
    assert_int_equal(step_run(s), SIM_OK);
    step_result_t res;
    assert_int_equal(step_result(s, &res), SIM_OK);
    *step_s = res.step_time_s;
    if (collapse == STEP_COLLAPSE_OFF)
        assert_int_equal(res.simulated_gpus, 16);
    else if (res.simulated_gpus >= 16 || !res.collapse_exact)
        fail_msg("not collapsed exactly: %s", res.collapse_note);
    assert_int_equal(step_group_traffic(s, t), SIM_OK);
    assert_int_equal(t->partial, 0);
    const sim_engine_t *e = step_engine(s);
    for (int g = 0; closed && g < STEP_TRAFFIC_GROUPS; g++)
        closed[g] = 0.0;
    for (sim_op_id_t op = 0; closed && op < sim_op_count(e); op++) {
        const sim_coll_id_t c = sim_op_collective(e, op);
        step_op_t info;
        if (c < 0)
            continue;
        assert_int_equal(step_op(s, op, &info), SIM_OK);
        sim_coll_result_t r;
        assert_int_equal(sim_coll_result(e, c, &r), SIM_OK);
        const double S = info.comm_gb * 1e9, n = r.members;
        const int g = group_index(info.group);
        assert_true(g >= 0);
        if (strcmp(info.collective, "p2p") == 0) {
            closed[g] += S / 2.0;
            continue;
        }
        assert_int_equal(r.algo, SIM_ALGO_RING);
        closed[g] += (strcmp(info.collective, "allreduce") == 0 ? 2.0 : 1.0) * (n - 1) / n * S;
    }
    const int32_t nl = net.n_links;
    double *bytes = malloc((size_t)nl * sizeof *bytes);
    int partial = 1;
    assert_int_equal(step_link_bytes(s, bytes, &partial), SIM_OK);
    assert_int_equal(partial, 0);
    *links_total = 0.0;
    for (int32_t l = 0; l < nl; l++)
        *links_total += bytes[l];
    free(bytes);
    step_free(s);
    sim_star_destroy(&star);
}

static void test_step_groups(void **state) {
    (void)state;
    step_traffic_t full, col;
    double closed[STEP_TRAFFIC_GROUPS], links_full, links_col, t_full, t_col;
    traffic_of(STEP_COLLAPSE_OFF, &full, closed, &links_full, &t_full);
    for (int g = 0; g < STEP_TRAFFIC_GROUPS; g++) {
        assert_true(fabs(full.sent_bytes[g] - closed[g]) <= 1e-9 * closed[g]);
        assert_true(fabs(full.per_gpu_bytes[g] - closed[g] / 16.0) <= 1e-9 * closed[g]);
    }
    assert_true(full.sent_bytes[STEP_TRAFFIC_TP] > 0 && full.sent_bytes[STEP_TRAFFIC_PP] > 0 &&
                full.sent_bytes[STEP_TRAFFIC_DP] > 0);
    assert_true(full.sent_bytes[STEP_TRAFFIC_CP] == 0.0);
    /* the tensor ranks collapsed: the same bytes, the tensor collectives counted from the schedule */
    traffic_of(STEP_COLLAPSE_AUTO, &col, NULL, &links_col, &t_col);
    assert_true(fabs(t_col - t_full) <= 1e-9 * t_full);
    for (int g = 0; g < STEP_TRAFFIC_GROUPS; g++)
        assert_true(fabs(col.sent_bytes[g] - full.sent_bytes[g]) <= 1e-9 * full.sent_bytes[g]);
    assert_true(fabs(links_col - links_full) <= 1e-9 * links_full);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_collective_closed_forms),
        cmocka_unit_test(test_step_groups),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
