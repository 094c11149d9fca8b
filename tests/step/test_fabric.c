/* step/test_fabric.c - several jobs on one engine (step_fabric_*, step_simulate_jobs):
 * - one job on a fabric, its GPUs mapped onto the network in order, is the step on its own engine
 *   with every GPU simulated (step_simulate, collapse off): same step time, breakdown, operations;
 * - a job mapped onto other GPUs of a symmetric network takes the same time, and its critical GPU
 *   is a network GPU id;
 * - two jobs: each job's operations are its own, and the link bytes per job add up to the engine's
 *   link bytes (sim_engine_set_link_classes), less at most a picosecond of the link's rate per flow
 *   (the engine's rounding of completion times);
 * - a GPU in two jobs, or beyond the network, is refused with one line naming the job and GPU;
 *   analytic communication is refused. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <igraph.h>

#include "step.h"
#include "topo.h"
#include "step_jobs.h"

/* 8 GPUs: dp 2, tp 4 on NVLink domains of 4. */
static model_job_t small_job(void) {
    return step_test_small_job(1);
}

static topo_t *perlmutter(int64_t gpus) {
    topo_params_t p;
    assert_int_equal(topo_params_preset("perlmutter", gpus, &p), TOPO_OK);
    topo_t *t = NULL;
    topo_issue_t issue;
    assert_int_equal(topo_new(&p, &t, &issue), TOPO_OK);
    return t;
}

static void defaults(step_sim_options_t *o) {
    memset(o, 0, sizeof *o);
    step_config_default(&o->step);
    o->step.collapse = STEP_COLLAPSE_OFF;
    o->calibrate = 1;
    o->links = 8;
}

static void test_one_job_is_the_step(void **state) {
    (void)state;
    const model_job_t job = small_job();
    topo_t *t = perlmutter(8);
    step_sim_options_t o;
    defaults(&o);
    step_sim_result_t ref;
    assert_int_equal(step_simulate(&job, t, &o, &ref), SIM_OK);
    const int32_t ids[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    const step_fabric_job_t fj = {&job, ids, o.step};
    step_jobs_result_t r;
    assert_int_equal(step_simulate_jobs(&fj, 1, t, &o, &r), SIM_OK);
    assert_int_equal(r.n_jobs, 1);
    assert_true(r.jobs[0].step_time_s == ref.step.step_time_s);
    assert_true(r.jobs[0].breakdown.exposed_tp_comm_s == ref.step.breakdown.exposed_tp_comm_s);
    assert_true(r.jobs[0].breakdown.exposed_dp_comm_s == ref.step.breakdown.exposed_dp_comm_s);
    assert_int_equal(r.jobs[0].operations, ref.step.operations);
    assert_int_equal(r.jobs[0].critical_gpu, ref.step.critical_gpu);
    assert_int_equal(r.met_total, 0);
    step_jobs_result_destroy(&r);
    step_sim_result_destroy(&ref);
    topo_free(t);
}

static void test_two_jobs(void **state) {
    (void)state;
    const model_job_t job = small_job();
    topo_t *t = perlmutter(16);
    step_sim_options_t o;
    defaults(&o);
    /* job 0 on the second half (nodes 2, 3), job 1 on the first (nodes 0, 1) */
    const int32_t g0[8] = {8, 9, 10, 11, 12, 13, 14, 15}, g1[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    step_fabric_job_t fj[2] = {{&job, g0, o.step}, {&job, g1, o.step}};
    step_jobs_result_t alone;
    assert_int_equal(step_simulate_jobs(&fj[0], 1, t, &o, &alone), SIM_OK);
    assert_true(alone.jobs[0].critical_gpu >= 8); /* a network GPU id */
    step_fabric_t *f = NULL;
    char err[300];
    sim_network_desc_t net;
    assert_int_equal(sim_topo_network(t, &net), SIM_OK);
    sim_config_t ec;
    sim_config_default(&ec);
    sim_config_nccl_topology(&ec, t);
    assert_int_equal(step_fabric_new(fj, 2, &ec, &net, &f, err, sizeof err), SIM_OK);
    assert_int_equal(step_fabric_job_of_gpu(f, 3), 1);
    assert_int_equal(step_fabric_job_of_gpu(f, 12), 0);
    assert_int_equal(step_fabric_run(f), SIM_OK);
    assert_int_equal(step_fabric_run(f), SIM_ESTATE);
    const sim_engine_t *e = step_fabric_engine(f);
    step_result_t r0, r1;
    assert_int_equal(step_result(step_fabric_step(f, 0), &r0), SIM_OK);
    assert_int_equal(step_result(step_fabric_step(f, 1), &r1), SIM_OK);
    assert_int_equal(r0.operations + r1.operations, sim_op_count(e));
    assert_true(r0.critical_gpu >= 8 && r1.critical_gpu < 8);
    /* The engine integrates a link's load up to each flow's end, rounded up to a whole picosecond:
     * at most one picosecond at the link's rate more per flow than the flows' own bytes. */
    sim_engine_stats_t es;
    sim_engine_stats(e, &es);
    const double *cap = topo_link_bandwidths_bytes_per_s(t);
    double total = 0.0;
    for (int64_t l = 0; l < topo_link_count(t); l++) {
        sim_link_stats_t ls;
        assert_int_equal(sim_link_stats(e, (int32_t)l, &ls), SIM_OK);
        const double b = step_fabric_link_bytes(f, (int32_t)l, 0) + step_fabric_link_bytes(f, (int32_t)l, 1);
        const double slack = (double)es.flows_started * cap[l] * 1e-12;
        if (b > ls.bytes * (1 + 1e-12) || ls.bytes - b > slack)
            fail_msg("link %lld: %.17g bytes by job, %.17g by the engine", (long long)l, b, ls.bytes);
        total += b;
    }
    assert_true(total > 0.0);
    step_fabric_free(f);
    step_jobs_result_destroy(&alone);
    topo_free(t);
}

static void test_refused(void **state) {
    (void)state;
    const model_job_t job = small_job();
    topo_t *t = perlmutter(16);
    step_sim_options_t o;
    defaults(&o);
    const int32_t a[8] = {0, 1, 2, 3, 4, 5, 6, 7}, b[8] = {8, 9, 10, 11, 12, 13, 14, 3},
                  c[8] = {8, 9, 10, 11, 12, 13, 14, 16};
    step_fabric_job_t fj[2] = {{&job, a, o.step}, {&job, b, o.step}};
    step_jobs_result_t r;
    assert_int_equal(step_simulate_jobs(fj, 2, t, &o, &r), SIM_EINVAL);
    assert_non_null(strstr(r.error, "job 1: GPU 3 is job 0's"));
    step_jobs_result_destroy(&r);
    fj[1].gpus = c;
    assert_int_equal(step_simulate_jobs(fj, 2, t, &o, &r), SIM_EINVAL);
    assert_non_null(strstr(r.error, "job 1: GPU 16"));
    step_jobs_result_destroy(&r);
    fj[1].step.comm = SIM_COMM_ANALYTIC;
    fj[1].gpus = (const int32_t[8]){8, 9, 10, 11, 12, 13, 14, 15};
    assert_int_equal(step_simulate_jobs(fj, 2, t, &o, &r), SIM_EINVAL);
    assert_non_null(strstr(r.error, "job 1: comm"));
    step_jobs_result_destroy(&r);
    topo_free(t);
}

int main(void) {
    igraph_set_error_handler(igraph_error_handler_printignore);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_job_is_the_step),
        cmocka_unit_test(test_two_jobs),
        cmocka_unit_test(test_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
